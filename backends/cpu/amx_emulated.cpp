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

// A bfloat16 half of a pair as float32; denormals read as zero (the tiles' DAZ).
float half_value(u32 word, int half) {
  const float v = std::bit_cast<float>(half == 0 ? word << 16 : word & 0xffff0000u);
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}
// A float32 sum with a denormal result flushed to zero (the tiles' FTZ).
float flushed(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

void product(i64 m, i64 n, const u32* a, i64 lda, const u32* b, i64 ldb, i64 pairs, float* c, i64 ldc) {
  for (i64 r = 0; r < m; ++r)
    for (i64 j = 0; j < n; ++j) {
      float acc = c[r * ldc + j];
      for (i64 q = 0; q < pairs; ++q) {
        const u32 x = a[r * lda + q], y = b[q * ldb + j];
        // Products of two bfloat16 are exact in float32: one rounding per sum.
        acc = flushed(acc + half_value(x, 0) * half_value(y, 0));
        acc = flushed(acc + half_value(x, 1) * half_value(y, 1));
      }
      c[r * ldc + j] = acc;
    }
}

constexpr AmxKernels kEmulated{&product};

}  // namespace

const AmxKernels& amx_emulated_kernels() { return kEmulated; }

}  // namespace dagrad::cpu
