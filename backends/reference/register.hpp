// Registration of the reference kernels: plain loops, the oracle every fast kernel is tested against.
#pragma once

#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::reference {

inline constexpr const char* kBackend = "reference";
inline constexpr int kPriority = 0;

void register_array_kernels(KernelRegistry& registry);
void register_math_kernels(KernelRegistry& registry);
void register_state_kernels(KernelRegistry& registry);

}  // namespace dagrad::reference
