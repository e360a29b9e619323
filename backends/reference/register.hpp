// Registration of the reference kernels: plain loops, the oracle every fast kernel is tested against.
#pragma once

#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::reference {

inline constexpr const char* kBackend = "reference";
inline constexpr int kPriority = 0;

// Every reference kernel (backends/reference/register.cpp).
void register_kernels(KernelRegistry& registry);

// One per op family, each defined beside its kernels.

void register_array_kernels(KernelRegistry& registry);
void register_math_kernels(KernelRegistry& registry);
void register_state_kernels(KernelRegistry& registry);
void register_conv2d_kernels(KernelRegistry& registry);    // conv2d_kernels.cpp
void register_nn_kernels(KernelRegistry& registry);        // nn_kernels.cpp
void register_pooling_kernels(KernelRegistry& registry);   // pooling_kernels.cpp
void register_matrix_kernels(KernelRegistry& registry);    // matrix_kernels.cpp
void register_compare_kernels(KernelRegistry& registry);   // compare_kernels.cpp
void register_training_kernels(KernelRegistry& registry);  // training_kernels.cpp
void register_shape_kernels(KernelRegistry& registry);
void register_collective_kernels(KernelRegistry& registry);  // collective_kernels.cpp

}  // namespace dagrad::reference
