// Picks the widest build of the per-ISA micro-kernel tables (isa/*.cpp) that the running CPU
// supports (cpu_info(), under DAGRAD_MAX_CPU_ISA): AVX-512, AVX2 + FMA, or the portable one.
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/backends/cpu/depthwise_microkernels.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/nchw_microkernels.hpp"

namespace dagrad::cpu {

#define DAGRAD_ISA_TABLES                     \
  extern const MicroKernels kernels;          \
  extern const NchwMicroKernels nchw_kernels; \
  extern const DepthwiseKernels depthwise_kernels;
namespace portable {
DAGRAD_ISA_TABLES
}
#if defined(__x86_64__)
namespace avx512 {
DAGRAD_ISA_TABLES
}
namespace avx2 {
DAGRAD_ISA_TABLES
}
#endif
#undef DAGRAD_ISA_TABLES

namespace {

enum class Isa { Portable, Avx2, Avx512 };

Isa best_isa() {
  const CpuInfo& cpu = cpu_info();
  return cpu.avx512 ? Isa::Avx512 : cpu.avx2_fma ? Isa::Avx2 : Isa::Portable;
}

// The table of the best ISA; `member` names the same table in each ISA's namespace.
#if defined(__x86_64__)
#define DAGRAD_PICK(member)    \
  switch (best_isa()) {        \
    case Isa::Avx512:          \
      return avx512::member;   \
    case Isa::Avx2:            \
      return avx2::member;     \
    default:                   \
      return portable::member; \
  }
#else
#define DAGRAD_PICK(member) return portable::member;
#endif

}  // namespace

const MicroKernels& micro_kernels() { DAGRAD_PICK(kernels) }
const NchwMicroKernels& nchw_micro_kernels() { DAGRAD_PICK(nchw_kernels) }
const DepthwiseKernels& depthwise_kernels() { DAGRAD_PICK(depthwise_kernels) }
#undef DAGRAD_PICK

}  // namespace dagrad::cpu
