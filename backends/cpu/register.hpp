// Registration of the CPU backend: oneTBB-parallel, vectorised, deterministic kernels that
// outrank the reference kernels, so sessions and raw ops pick them unless asked otherwise.
#pragma once

#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::cpu {

inline constexpr const char* kBackend = "cpu";
inline constexpr int kPriority = 10;

// Every CPU kernel (backends/cpu/register.cpp).
void register_kernels(KernelRegistry& registry);

// One per op family, each defined beside its kernels.

void register_math_kernels(KernelRegistry& registry);
void register_array_kernels(KernelRegistry& registry);
void register_conv2d_kernels(KernelRegistry& registry);
void register_nn_kernels(KernelRegistry& registry);        // nn_kernels.cpp
void register_softmax_kernels(KernelRegistry& registry);   // softmax_kernels.cpp
void register_max_pool_kernels(KernelRegistry& registry);  // max_pool_kernels.cpp
void register_avg_pool_kernels(KernelRegistry& registry);  // avg_pool_kernels.cpp
void register_matmul_kernels(KernelRegistry& registry);    // matmul_kernels.cpp
void register_training_kernels(KernelRegistry& registry);  // training_kernels.cpp
void register_compare_kernels(KernelRegistry& registry);   // compare_kernels.cpp
void register_layout_kernels(KernelRegistry& registry);    // layout_kernels.cpp (Transpose, BroadcastTo)

}  // namespace dagrad::cpu
