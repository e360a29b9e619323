// AVX-512 BF16 kernels for the native bfloat16 conv paths (interface: bf16_kernels.hpp): the
// pair packer (vpermt2w) and register-tiled vdpbf16ps kernels (up to 6 rows x 4 vectors of float32
// accumulators; `grid` up to 12 rows): `pairs` and `grid` for the filter gradient, `rows` for Conv2D
// and its input gradient. Compiled with AVX-512 BF16 flags for this file only and called only
// after a CPUID check; like conv_microkernels.inc it includes no header with inline functions.
#include <immintrin.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"

namespace dagrad::cpu::avx512bf16 {
namespace {

using i64 = long long;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

inline __mmask32 mask32(i64 n) { return n >= 32 ? ~__mmask32{0} : n <= 0 ? __mmask32{0} : (__mmask32{1} << n) - 1; }
inline __mmask16 mask16(i64 n) { return static_cast<__mmask16>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); }

// Calls f(Vectors<NV>{}, col, last) for the columns in chunks of up to 4 vectors of 16 (64
// columns): NV vectors from column col, the last one's lanes masked by `last`.
template <int N>
struct Vectors {
  static constexpr int value = N;
};
template <class F>
void for_column_chunks(i64 n, F&& f) {
  for (i64 col = 0; col < n; col += 64) {
    const i64 left = n - col < 64 ? n - col : 64;
    const int nv = static_cast<int>((left + 15) / 16);
    const __mmask16 last = mask16(left - 16 * (nv - 1));
    if (nv == 4)
      f(Vectors<4>{}, col, last);
    else if (nv == 3)
      f(Vectors<3>{}, col, last);
    else if (nv == 2)
      f(Vectors<2>{}, col, last);
    else
      f(Vectors<1>{}, col, last);
  }
}

void pack_pairs(const u16* const* rows, i64 off, i64 m, i64 n, u32* out, i64 ld) {
  // Word i of lo is a[i/2] (even i) or b[i/2] (odd i); hi does the same for elements 16..31.
  alignas(64) short lo_idx[32], hi_idx[32];
  for (int i = 0; i < 32; ++i) {
    lo_idx[i] = static_cast<short>(i / 2 + (i % 2) * 32);
    hi_idx[i] = static_cast<short>(16 + i / 2 + (i % 2) * 32);
  }
  const __m512i lo_perm = _mm512_load_si512(lo_idx), hi_perm = _mm512_load_si512(hi_idx);
  // The rows come from anywhere in the activations (often from memory, not cache) and packing
  // has little arithmetic to hide their latency behind: prefetch the rows a few pairs ahead.
  constexpr i64 kAhead = 16;
  for (i64 q = 0; 2 * q < m; ++q) {
    for (i64 r = 2 * (q + kAhead); r < 2 * (q + kAhead) + 2 && r < m; ++r)
      if (rows[r])
        for (i64 j = 0; j < n; j += 32) _mm_prefetch(reinterpret_cast<const char*>(rows[r] + off + j), _MM_HINT_T0);
    const u16* a = rows[2 * q] ? rows[2 * q] + off : nullptr;
    const u16* b = 2 * q + 1 < m && rows[2 * q + 1] ? rows[2 * q + 1] + off : nullptr;
    u32* o = out + q * ld;
    for (i64 j = 0; j < ld; j += 32) {
      const __mmask32 in = mask32(n - j);
      const __m512i va = a ? _mm512_maskz_loadu_epi16(in, a + j) : _mm512_setzero_si512();
      const __m512i vb = b ? _mm512_maskz_loadu_epi16(in, b + j) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(o + j, mask16(ld - j), _mm512_permutex2var_epi16(va, lo_perm, vb));
      _mm512_mask_storeu_epi32(o + j + 16, mask16(ld - j - 16), _mm512_permutex2var_epi16(va, hi_perm, vb));
    }
  }
}

// One grid tile: MR rows at their own offsets x NV vectors, nrows x cols pixel pairs.
template <int MR, int NV>
void grid_tile(const u32* x, const i64* off, i64 sx, i64 rs, i64 cols, i64 nrows, const u32* y, i64 ldy, float* d,
               i64 ldd, __mmask16 last) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = v + 1 < NV || last == 0xffff ? _mm512_loadu_ps(d + r * ldd + 16 * v)
                                               : _mm512_maskz_loadu_ps(last, d + r * ldd + 16 * v);
  for (i64 i = 0; i < nrows; ++i) {
    const u32* xr[MR];
    for (int r = 0; r < MR; ++r) xr[r] = x + i * rs + off[r];
    const u32* yi = y + i * cols * ldy;
    for (i64 q = 0, xq = 0; q < cols; ++q, xq += sx) {
      __m512i b[NV];
      for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_si512(yi + q * ldy + 16 * v);
      for (int r = 0; r < MR; ++r) {
        const __m512i a = _mm512_set1_epi32(static_cast<int>(xr[r][xq]));
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)a, (__m512bh)b[v]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      if (v + 1 < NV || last == 0xffff)
        _mm512_storeu_ps(d + r * ldd + 16 * v, acc[r][v]);
      else
        _mm512_mask_storeu_ps(d + r * ldd + 16 * v, last, acc[r][v]);
    }
}

// Rows a grid tile of nv vectors holds: the accumulators and nv operands fit the 32 registers.
constexpr int grid_rows_cap(int nv) {
  const int fit = (32 - nv - 1) / nv;
  return fit < kBf16MaxGridRows ? fit : kBf16MaxGridRows;
}

template <int NV, int MR = 1>
void grid_rows(int mr, const u32* x, const i64* off, i64 sx, i64 rs, i64 cols, i64 nrows, const u32* y, i64 ldy,
               float* d, i64 ldd, __mmask16 last) {
  if constexpr (MR < grid_rows_cap(NV)) {
    if (mr != MR) return grid_rows<NV, MR + 1>(mr, x, off, sx, rs, cols, nrows, y, ldy, d, ldd, last);
  }
  grid_tile<MR, NV>(x, off, sx, rs, cols, nrows, y, ldy, d, ldd, last);
}

int grid_max_rows(i64 n) { return grid_rows_cap(n >= 64 ? 4 : static_cast<int>((n + 15) / 16)); }

// Columns in chunks of up to 4 vectors; mr <= grid_max_rows(n) fits every chunk.
void grid(int mr, i64 n, const u32* x, const i64* off, i64 sx, i64 rs, i64 cols, i64 nrows, const u32* y, i64 ldy,
          float* d, i64 ldd) {
  for_column_chunks(n, [&](auto nv, i64 col, __mmask16 last) {
    grid_rows<decltype(nv)::value>(mr, x, off, sx, rs, cols, nrows, y + col, ldy, d + col, ldd, last);
  });
}

// The grid kernel on dy rows as they are (pixel-major, ldy values each, ow pixels per row) for
// up to 32 columns: each pixel pair's two rows are interleaved in registers by vpunpck{l,h}wd,
// which pairs columns within 128-bit lanes, so the accumulators hold the columns in that order
// (acc[r][0]: 0-3, 8-11, 16-19, 24-27; acc[r][1]: the others), put back in order once, at the end.
template <int MR>
void grid_dy_tile(const u32* x, const i64* off, i64 sx, i64 rs, i64 nrows, const u16* y, i64 ldy, i64 ow, i64 n,
                  float* d, i64 ldd) {
  __m512 acc[MR][2];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const __mmask32 in = mask32(n);
  for (i64 i = 0; i < nrows; ++i) {
    const u32* xr = x + i * rs;
    const u16* yi = y + i * ow * ldy;
    for (i64 p = 0, xq = 0; p < ow; p += 2, xq += sx) {
      // A lone last pixel's partner: a load with no lanes (zeros, and no access past the row).
      const __m512i a = _mm512_maskz_loadu_epi16(in, yi + p * ldy);
      const __m512i b = _mm512_maskz_loadu_epi16(p + 1 < ow ? in : 0, yi + (p + 1) * ldy);
      const __m512i pl = _mm512_unpacklo_epi16(a, b), ph = _mm512_unpackhi_epi16(a, b);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const __m512i w = _mm512_set1_epi32(static_cast<int>(xr[xq + off[r]]));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)w, (__m512bh)pl);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], (__m512bh)w, (__m512bh)ph);
      }
    }
  }
  alignas(64) static constexpr int first[16] = {0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23};
  alignas(64) static constexpr int second[16] = {8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31};
  const __m512i i0 = _mm512_load_si512(first), i1 = _mm512_load_si512(second);
  const __mmask16 m0 = mask16(n), m1 = mask16(n - 16);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    float* dr = d + r * ldd;
    const __m512 c0 = _mm512_permutex2var_ps(acc[r][0], i0, acc[r][1]);
    const __m512 c1 = _mm512_permutex2var_ps(acc[r][0], i1, acc[r][1]);
    _mm512_mask_storeu_ps(dr, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, dr), c0));
    _mm512_mask_storeu_ps(dr + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, dr + 16), c1));
  }
}

template <int MR = 1>
void grid_dy_rows(int mr, const u32* x, const i64* off, i64 sx, i64 rs, i64 nrows, const u16* y, i64 ldy, i64 ow, i64 n,
                  float* d, i64 ldd) {
  if constexpr (MR < kBf16MaxGridRows) {
    if (mr != MR) return grid_dy_rows<MR + 1>(mr, x, off, sx, rs, nrows, y, ldy, ow, n, d, ldd);
  }
  grid_dy_tile<MR>(x, off, sx, rs, nrows, y, ldy, ow, n, d, ldd);
}

// Columns in chunks of 32; mr <= kBf16MaxGridRows.
void grid_dy(int mr, i64 n, const u32* x, const i64* off, i64 sx, i64 rs, i64 nrows, const u16* y, i64 ldy, i64 ow,
             float* d, i64 ldd) {
  for (i64 col = 0; col < n; col += 32)
    grid_dy_rows(mr, x, off, sx, rs, nrows, y + col, ldy, ow, n - col < 32 ? n - col : 32, d + col, ldd);
}

// The pairs kernel is the grid kernel on one row of pixel pairs, channel r at offset r.
void pairs(int mr, i64 n, const u32* x, i64 ldx, const u32* y, i64 ldy, i64 npairs, float* d, i64 ldd) {
  static constexpr i64 kChannel[kBf16MaxRows] = {0, 1, 2, 3, 4, 5};
  static_assert(kBf16MaxRows == 6 && kBf16MaxRows <= grid_rows_cap(4));
  grid(mr, n, x, kChannel, ldx, 0, npairs, 1, y, ldy, d, ldd);
}

// float32 -> bfloat16 bits, round to nearest even, NaN -> sign | 0x7fc0 (as Eigen's cast; the
// vcvtneps2bf16 instruction would flush denormals instead).
inline __m256i exact_bf16(__m512 v) {
  // GCC vector arithmetic rather than the shift intrinsics, whose undefined-source idiom GCC 12
  // reports as uninitialised.
  typedef unsigned v16u __attribute__((vector_size(64)));
  const v16u u = (v16u)_mm512_castps_si512(v);
  const v16u r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const v16u nan_bits = ((u >> 16) & 0x8000u) | 0x7fc0u;
  const __m512i out = _mm512_mask_mov_epi32((__m512i)r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), (__m512i)nan_bits);
  return _mm512_maskz_cvtepi32_epi16(0xffff, out);
}

// The same, faster: vcvtneps2bf16 rounds every normal, zero and infinite lane as Eigen does (to
// nearest even, overflow to Inf), in one instruction where exact_bf16 takes eleven; the lanes it
// treats otherwise (NaN: payload kept; denormal: flushed) are redone by exact_bf16.
inline __m256i to_bf16(__m512 v) {
  const __mmask16 special = _mm512_fpclass_ps_mask(v, 0x01 | 0x20 | 0x80);  // QNaN, denormal, SNaN
  const __m256i fast = (__m256i)_mm512_cvtneps_pbh(v);
  return special ? _mm256_mask_blend_epi16(special, fast, exact_bf16(v)) : fast;
}

// One tile of the rows kernel: MR rows x NV vectors, all taps and pairs in registers, then one
// rounding to bfloat16. Row r of tap t reads a[t * MR + r][a_off + 0:len] two elements a step; an
// odd len's last element steps alone (its pair partner is zero in the panel and never read here).
template <int MR, int NV>
void rows_tile(const u16* const* a, i64 a_off, const u32* const* b, i64 b_off, i64 taps, i64 len, i64 ldb,
               u16* const* out, i64 out_off, __mmask16 last) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  const i64 full = len / 2;
  for (i64 t = 0; t < taps; ++t) {
    const u16* ar[MR];
    for (int r = 0; r < MR; ++r) ar[r] = a[t * MR + r] + a_off;
    const u32* bt = b[t] + b_off;
    for (i64 q = 0; q < full + (len & 1); ++q) {
      __m512i bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(bt + q * ldb + 16 * v);
      for (int r = 0; r < MR; ++r) {
        int word;
        if (q < full)
          __builtin_memcpy(&word, ar[r] + 2 * q, 4);
        else
          word = ar[r][2 * q];  // {a[len-1], 0}
        const __m512i w = _mm512_set1_epi32(word);
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)w, (__m512bh)bv[v]);
      }
    }
  }
  // Whole vectors by plain stores (Zen 4 ran masked ones with every lane set slower: 1x1 64->256
  // Conv2D 1.03x).
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      u16* dst = out[r] + out_off + 16 * v;
      if (v + 1 < NV || last == 0xffff)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), to_bf16(acc[r][v]));
      else
        _mm256_mask_storeu_epi16(dst, last, to_bf16(acc[r][v]));
    }
}

template <int NV, int MR = 1>
void rows_rows(int mr, const u16* const* a, i64 a_off, const u32* const* b, i64 b_off, i64 taps, i64 len, i64 ldb,
               u16* const* out, i64 out_off, __mmask16 last) {
  if constexpr (MR < kBf16MaxRows) {
    if (mr != MR) return rows_rows<NV, MR + 1>(mr, a, a_off, b, b_off, taps, len, ldb, out, out_off, last);
  }
  rows_tile<MR, NV>(a, a_off, b, b_off, taps, len, ldb, out, out_off, last);
}

void rows(int mr, i64 n, const u16* const* a, i64 a_off, const u32* const* b, i64 b_off, i64 taps, i64 len, i64 ldb,
          u16* const* out, i64 out_off) {
  for_column_chunks(n, [&](auto nv, i64 col, __mmask16 last) {
    rows_rows<decltype(nv)::value>(mr, a, a_off, b, b_off + col, taps, len, ldb, out, out_off + col, last);
  });
}

}  // namespace

extern const Bf16Kernels kernels{&pack_pairs, &pairs, &rows, &grid, &grid_max_rows, &grid_dy};

}  // namespace dagrad::cpu::avx512bf16
