// Picks the widest NCHW micro-kernel set the running CPU supports; the others stay unused.
#include "dagrad/backends/cpu/nchw_microkernels.hpp"

namespace dagrad::cpu {
namespace portable { extern const NchwMicroKernels nchw_kernels; }
#if defined(__x86_64__)
namespace avx512 { extern const NchwMicroKernels nchw_kernels; }
namespace avx2 { extern const NchwMicroKernels nchw_kernels; }
#endif

const NchwMicroKernels& nchw_micro_kernels() {
  static const NchwMicroKernels& chosen = []() -> const NchwMicroKernels& {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return avx512::nchw_kernels;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2::nchw_kernels;
#endif
    return portable::nchw_kernels;
  }();
  return chosen;
}

}  // namespace dagrad::cpu
