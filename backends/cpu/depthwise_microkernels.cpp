// Picks the widest depthwise micro-kernel build the running CPU supports; the others stay unused.
#include "dagrad/backends/cpu/depthwise_microkernels.hpp"

namespace dagrad::cpu {
namespace portable { extern const DepthwiseKernels depthwise_kernels; }
#if defined(__x86_64__)
namespace avx512 { extern const DepthwiseKernels depthwise_kernels; }
namespace avx2 { extern const DepthwiseKernels depthwise_kernels; }
#endif

const DepthwiseKernels& depthwise_kernels() {
  static const DepthwiseKernels& chosen = []() -> const DepthwiseKernels& {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return avx512::depthwise_kernels;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2::depthwise_kernels;
#endif
    return portable::depthwise_kernels;
  }();
  return chosen;
}

}  // namespace dagrad::cpu
