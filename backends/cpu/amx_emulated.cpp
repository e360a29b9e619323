// The AMX tile product in portable C++ (amx_kernels.hpp), for tests of the AMX path's packing and
// index arithmetic on any CPU, and the run-time choice of the hardware kernels.
#include <bit>
#include <cmath>
#include <cstdint>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {
#if defined(__x86_64__)
namespace amx {
extern const AmxKernels kernels;
}
#endif

const AmxKernels* amx_kernels() {
#if defined(__x86_64__)
  return cpu_info().amx_bf16 ? &amx::kernels : nullptr;
#else
  return nullptr;
#endif
}

namespace {

using i64 = long long;
using u32 = std::uint32_t;

// A bfloat16 as float32; denormals read as zero (the tiles' DAZ).
float value(std::uint16_t bits) {
  const float v = std::bit_cast<float>(std::uint32_t{bits} << 16);
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}
// A float32 sum with a denormal result flushed to zero (the tiles' FTZ).
float flushed(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

void batch(i64 m, i64 n, const AmxOperands* operands, i64 count, i64 ldb, float* c, i64 ldc) {
  for (i64 r = 0; r < m; ++r)
    for (i64 j = 0; j < n; ++j) {
      float acc = c[r * ldc + j];
      for (i64 i = 0; i < count; ++i)
        for (i64 q = 0; q < kAmxPairStep; ++q) {
          const std::uint16_t* x = operands[i].a + r * operands[i].lda + 2 * q;
          const u32 y = operands[i].b[q * ldb + j];
          // Products of two bfloat16 are exact in float32: one rounding per sum.
          acc = flushed(acc + value(x[0]) * value(static_cast<std::uint16_t>(y)));
          acc = flushed(acc + value(x[1]) * value(static_cast<std::uint16_t>(y >> 16)));
        }
      c[r * ldc + j] = acc;
    }
}

constexpr AmxKernels kEmulated{&batch};

}  // namespace

const AmxKernels& amx_emulated_kernels() { return kEmulated; }

}  // namespace dagrad::cpu
