// add_kernels instantiates a kernel factory for every dtype the dispatch switch knows; this
// wrapper instantiates the real one only for the four float types (half and bfloat16 accumulate
// in float32), so the kernels themselves need not compile for integers or bool.
#pragma once

#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::cpu {

template <class F>
auto any_float(F make) {
  return [make]<class T>() -> KernelFn {
    if constexpr (is_floating_v<T>)
      return make.template operator()<T>();
    else
      return nullptr;
  };
}

}  // namespace dagrad::cpu
