// half/bfloat16 <-> float32 conversion of whole arrays with AVX2 + F16C (8 lanes a step), bitwise
// equal to Eigen's scalar casts: Eigen quiets a NaN (half -> float keeps the payload; float ->
// half and float -> bfloat16 give sign | the canonical quiet NaN), rounds to nearest even, keeps
// denormals. Like isa/conv_microkernels.inc this file includes no library header with inline
// functions: they would be compiled here with AVX2 flags and could be picked for any x86-64.
#include <immintrin.h>

#include <cstdint>

namespace dagrad::cpu::f16c {
namespace {

using i64 = long long;

// half bits (8 lanes, zero-extended to 32 bits) -> float bits. F16C converts; NaN lanes take
// Eigen's bits (payload shifted up, exponent all ones, no quieting), which F16C would quiet.
inline __m256 half8_to_float(__m128i h16) {
  const __m256 f = _mm256_cvtph_ps(h16);
  const __m256i h = _mm256_cvtepu16_epi32(h16);
  const __m256i mag = _mm256_and_si256(h, _mm256_set1_epi32(0x7fff));
  const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7c00));
  const __m256i nan_bits = _mm256_or_si256(_mm256_add_epi32(_mm256_slli_epi32(mag, 13), _mm256_set1_epi32(224 << 23)),
                                           _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16));
  return _mm256_blendv_ps(f, _mm256_castsi256_ps(nan_bits), _mm256_castsi256_ps(nan));
}

// 8 x 32-bit lanes, each < 0x10000, -> 8 x 16 bits in lane order.
inline __m128i pack_low_halves(__m256i v) {
  return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

// float -> half bits, round to nearest even (F16C); NaN lanes become sign | 0x7e00 as in Eigen.
inline __m128i float8_to_half(__m256 f) {
  const __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i bits = _mm256_castps_si256(f);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  const __m256i nan_bits = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x8000)),
                                           _mm256_set1_epi32(0x7e00));
  const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
  return _mm_blendv_epi8(h, pack_low_halves(nan_bits), nan16);
}

// float -> bfloat16 bits: (u + 0x7fff + lsb) >> 16 rounds to nearest even (Inf stays Inf, a
// denormal rounds like any other value); NaN lanes become sign | 0x7fc0 as in Eigen.
inline __m128i float8_to_bf16(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  const __m256i nan_bits =
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7fc0));
  return pack_low_halves(_mm256_blendv_epi8(rounded, nan_bits, nan));
}

inline __m256 bf16x8_to_float(__m128i b) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}

// Runs `step(in, out)` on 8 elements at a time; the tail goes through an 8-element stack copy so
// every element takes the same instructions.
template <class In, class Out, class Step>
inline void convert(const In* in, Out* out, i64 count, Step step) {
  i64 i = 0;
  for (; i + 8 <= count; i += 8) step(in + i, out + i);
  if (i < count) {
    In tmp_in[8] = {};
    Out tmp_out[8];
    __builtin_memcpy(tmp_in, in + i, static_cast<unsigned long>(count - i) * sizeof(In));
    step(tmp_in, tmp_out);
    __builtin_memcpy(out + i, tmp_out, static_cast<unsigned long>(count - i) * sizeof(Out));
  }
}

}  // namespace

void half_to_float(const std::uint16_t* in, float* out, i64 count) {
  convert(in, out, count, [](const std::uint16_t* a, float* b) {
    _mm256_storeu_ps(b, half8_to_float(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))));
  });
}

void float_to_half(const float* in, std::uint16_t* out, i64 count) {
  convert(in, out, count, [](const float* a, std::uint16_t* b) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b), float8_to_half(_mm256_loadu_ps(a)));
  });
}

void bf16_to_float(const std::uint16_t* in, float* out, i64 count) {
  convert(in, out, count, [](const std::uint16_t* a, float* b) {
    _mm256_storeu_ps(b, bf16x8_to_float(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))));
  });
}

void float_to_bf16(const float* in, std::uint16_t* out, i64 count) {
  convert(in, out, count, [](const float* a, std::uint16_t* b) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b), float8_to_bf16(_mm256_loadu_ps(a)));
  });
}

}  // namespace dagrad::cpu::f16c
