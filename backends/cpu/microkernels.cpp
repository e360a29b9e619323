// Picks the widest micro-kernel set the running CPU supports; the others stay unused.
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace portable { extern const MicroKernels kernels; }
#if defined(__x86_64__)
namespace avx512 { extern const MicroKernels kernels; }
namespace avx2 { extern const MicroKernels kernels; }
#endif

const MicroKernels& micro_kernels() {
  static const MicroKernels& chosen = []() -> const MicroKernels& {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return avx512::kernels;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2::kernels;
#endif
    return portable::kernels;
  }();
  return chosen;
}

}  // namespace dagrad::cpu
