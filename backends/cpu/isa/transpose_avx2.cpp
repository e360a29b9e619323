// Block transposes in 8 x 8 register tiles (AVX2 for 4-byte elements, SSE2 for 2-byte ones),
// the edges element by element. Like isa/conv_microkernels.inc this file includes no library
// header with inline functions: they would be compiled here with AVX2 flags and could be picked
// for any x86-64.
#include <immintrin.h>

#include <cstdint>

namespace dagrad::cpu::avx2_transpose {
namespace {

using i64 = long long;

// out column j (8 values) = in column j of the 8 rows.
inline void tile32(const float* in, i64 in_stride, float* out, i64 out_stride) {
  __m256 r[8], t[8], s[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(in + k * in_stride);
  for (int k = 0; k < 8; k += 2) {  // pairs of rows interleaved, per 128-bit lane
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {  // four rows' values of columns {0, 4}, {1, 5}, {2, 6}, {3, 7}
    s[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    s[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    s[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    s[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int j = 0; j < 4; ++j) {  // rows 0-3 from s[j], rows 4-7 from s[j + 4]
    _mm256_storeu_ps(out + j * out_stride, _mm256_permute2f128_ps(s[j], s[j + 4], 0x20));
    _mm256_storeu_ps(out + (j + 4) * out_stride, _mm256_permute2f128_ps(s[j], s[j + 4], 0x31));
  }
}

inline void tile16(const std::uint16_t* in, i64 in_stride, std::uint16_t* out, i64 out_stride) {
  __m128i r[8], a[8], b[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k * in_stride));
  for (int k = 0; k < 8; k += 2) {  // 2 rows x columns 0-3, then 4-7
    a[k] = _mm_unpacklo_epi16(r[k], r[k + 1]);
    a[k + 1] = _mm_unpackhi_epi16(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {  // 4 rows x columns {0, 1}, {2, 3}, {4, 5}, {6, 7}
    b[k] = _mm_unpacklo_epi32(a[k], a[k + 2]);
    b[k + 1] = _mm_unpackhi_epi32(a[k], a[k + 2]);
    b[k + 2] = _mm_unpacklo_epi32(a[k + 1], a[k + 3]);
    b[k + 3] = _mm_unpackhi_epi32(a[k + 1], a[k + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // columns 2j and 2j + 1: rows 0-3 from b[j], 4-7 from b[j + 4]
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * j * out_stride), _mm_unpacklo_epi64(b[j], b[j + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * j + 1) * out_stride), _mm_unpackhi_epi64(b[j], b[j + 4]));
  }
}

template <class E, class Tile>
void block(const E* in, i64 in_stride, E* out, i64 out_stride, i64 rows, i64 cols, Tile tile) {
  const i64 rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (i64 i = 0; i < rows8; i += 8)
    for (i64 j = 0; j < cols8; j += 8) tile(in + i * in_stride + j, in_stride, out + j * out_stride + i, out_stride);
  for (i64 j = 0; j < cols; ++j)  // the edges: rows past rows8 of every column, columns past cols8 of the others
    for (i64 i = j < cols8 ? rows8 : 0; i < rows; ++i) out[j * out_stride + i] = in[i * in_stride + j];
}

}  // namespace

void block32(const float* in, i64 in_stride, float* out, i64 out_stride, i64 rows, i64 cols) {
  block(in, in_stride, out, out_stride, rows, cols, tile32);
}

void block16(const std::uint16_t* in, i64 in_stride, std::uint16_t* out, i64 out_stride, i64 rows, i64 cols) {
  block(in, in_stride, out, out_stride, rows, cols, tile16);
}

}  // namespace dagrad::cpu::avx2_transpose
