// half/bfloat16 <-> float32 conversion of whole arrays with AVX-512 (F, BW, VL: 16 lanes a step),
// the same numerics as convert_f16c.cpp, bitwise equal to Eigen's scalar casts: NaN takes Eigen's
// bits, rounding is to nearest even, denormals are kept. The tail is one masked step, so every
// element takes the same instructions. No library header with inline functions (see
// convert_f16c.cpp).
#include <immintrin.h>

#include <cstdint>

namespace dagrad::cpu::avx512_convert {
namespace {

using i64 = long long;

// half bits -> float; NaN lanes take Eigen's bits (payload shifted up, exponent all ones, not
// quieted), which the hardware conversion would quiet.
inline __m512 half16_to_float(__m256i h16) {
  const __m512 f = _mm512_cvtph_ps(h16);
  const __m512i h = _mm512_cvtepu16_epi32(h16);
  const __m512i mag = _mm512_and_si512(h, _mm512_set1_epi32(0x7fff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7c00));
  const __m512i nan_bits = _mm512_or_si512(_mm512_add_epi32(_mm512_slli_epi32(mag, 13), _mm512_set1_epi32(224 << 23)),
                                           _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16));
  return _mm512_mask_blend_ps(nan, f, _mm512_castsi512_ps(nan_bits));
}

// float -> half bits, round to nearest even; NaN lanes become sign | 0x7e00 as in Eigen.
inline __m256i float16_to_half(__m512 f) {
  const __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(f), 16), _mm512_set1_epi32(0x8000));
  const __m256i nan_bits = _mm512_cvtepi32_epi16(_mm512_or_si512(sign, _mm512_set1_epi32(0x7e00)));
  return _mm256_mask_blend_epi16(nan, h, nan_bits);
}

// float -> bfloat16 bits: (u + 0x7fff + lsb) >> 16 rounds to nearest even; NaN lanes become
// sign | 0x7fc0 as in Eigen. (vcvtneps2bf16 would flush denormals: not Eigen's numerics.)
inline __m256i float16_to_bf16(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i nan_bits =
      _mm512_or_si512(_mm512_and_si512(high, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0x7fc0));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, nan_bits));
}

inline __m512 bf16x16_to_float(__m256i b) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

// Loads and stores of 16 lanes under a mask; whole steps (kAll, a constant once inlined) take
// the plain instructions, which Zen 4 ran faster than masked ones with every lane set (bfloat16
// 3x3 1->32 Conv2D, which narrows its whole output, 1.05x).
constexpr __mmask16 kAll = 0xffff;
inline __m512 load16(__mmask16 m, const float* p) {
  return m == kAll ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
inline __m256i load16(__mmask16 m, const std::uint16_t* p) {
  return m == kAll ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)) : _mm256_maskz_loadu_epi16(m, p);
}
inline void store16(__mmask16 m, float* p, __m512 v) {
  if (m == kAll)
    _mm512_storeu_ps(p, v);
  else
    _mm512_mask_storeu_ps(p, m, v);
}
inline void store16(__mmask16 m, std::uint16_t* p, __m256i v) {
  if (m == kAll)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  else
    _mm256_mask_storeu_epi16(p, m, v);
}

// Runs `step(mask, offset)` over 16 elements at a time, the tail as one masked step.
template <class Step>
inline void convert(i64 count, Step step) {
  i64 i = 0;
  for (; i + 16 <= count; i += 16) step(kAll, i);
  if (i < count) step(static_cast<__mmask16>((1u << (count - i)) - 1), i);
}

}  // namespace

void half_to_float(const std::uint16_t* in, float* out, i64 count) {
  convert(count, [&](__mmask16 m, i64 i) { store16(m, out + i, half16_to_float(load16(m, in + i))); });
}

void float_to_half(const float* in, std::uint16_t* out, i64 count) {
  convert(count, [&](__mmask16 m, i64 i) { store16(m, out + i, float16_to_half(load16(m, in + i))); });
}

void bf16_to_float(const std::uint16_t* in, float* out, i64 count) {
  convert(count, [&](__mmask16 m, i64 i) { store16(m, out + i, bf16x16_to_float(load16(m, in + i))); });
}

void float_to_bf16(const float* in, std::uint16_t* out, i64 count) {
  convert(count, [&](__mmask16 m, i64 i) { store16(m, out + i, float16_to_bf16(load16(m, in + i))); });
}

namespace {
// The lanes vcvtneps2bf16 treats otherwise than Eigen: QNaN, denormal, SNaN.
inline __mmask16 bf16_special_lanes(__m512 f) { return _mm512_fpclass_ps_mask(f, 0x01 | 0x20 | 0x80); }

// 16 lanes by vcvtneps2bf16, its special lanes by the integer path.
__attribute__((target("avx512bf16"))) inline __m256i bf16_native16(__m512 f) {
  const __mmask16 special = bf16_special_lanes(f);
  const __m256i r = (__m256i)_mm512_cvtneps_pbh(f);
  return special ? _mm256_mask_blend_epi16(special, r, float16_to_bf16(f)) : r;
}
}  // namespace

// float -> bfloat16 where the CPU also has AVX-512 BF16: vcvtneps2bf16 rounds every normal, zero
// and infinite lane as Eigen does; the lanes it treats otherwise (NaN: payload kept; denormal:
// flushed) take the integer path above. Compiled for AVX-512 BF16 in this function only, and
// called only where the CPU has it (convert.cpp).
__attribute__((target("avx512bf16"))) void float_to_bf16_native(const float* in, std::uint16_t* out, i64 count) {
  // 32 at a time: where no lane is special, one two-source conversion and one 64-byte store
  // (bfloat16 3x3 1->32 Conv2D, which narrows its whole output, 1.08x on Zen 4).
  i64 i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512 lo = _mm512_loadu_ps(in + i), hi = _mm512_loadu_ps(in + i + 16);
    if (bf16_special_lanes(lo) | bf16_special_lanes(hi)) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bf16_native16(lo));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i + 16), bf16_native16(hi));
    } else {
      _mm512_storeu_si512(out + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
  // The rest 16 at a time, the last step masked (convert()'s loop written out: a lambda would not
  // take this function's target).
  for (; i < count; i += 16) {
    const __mmask16 m = count - i >= 16 ? kAll : static_cast<__mmask16>((1u << (count - i)) - 1);
    store16(m, out + i, bf16_native16(load16(m, in + i)));
  }
}

}  // namespace dagrad::cpu::avx512_convert
