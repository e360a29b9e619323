// add_kernels instantiates a kernel factory for every dtype the dispatch switch knows; this
// wrapper instantiates the real one only for float and double, whose kernels the CPU backend
// registers, so the kernels themselves need not compile for half or integers.
#pragma once

#include <type_traits>

#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::cpu {

template <class F>
auto float_only(F make) {
  return [make]<class T>() -> KernelFn {
    if constexpr (std::is_floating_point_v<T>) return make.template operator()<T>();
    else return nullptr;
  };
}

}  // namespace dagrad::cpu

namespace dagrad::cpu {

// As float_only, for kernels that also handle half and bfloat16 (accumulating in float).
template <class F>
auto any_float(F make) {
  return [make]<class T>() -> KernelFn {
    if constexpr (is_floating_v<T>) return make.template operator()<T>();
    else return nullptr;
  };
}

}  // namespace dagrad::cpu
