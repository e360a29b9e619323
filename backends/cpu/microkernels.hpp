// The interface of the per-ISA float32 conv micro-kernels (isa/conv_microkernels.inc) and the
// run-time choice among them (AVX-512, AVX2+FMA, SSE2), so the library runs on any x86-64.
#pragma once

namespace dagrad::cpu {

// Register tiles hold at most kMaxRows rows; one call takes at most kMaxTaps filter taps.
inline constexpr int kMaxRows = 8;
inline constexpr int kMaxTaps = 64;
// Grid tiles (few columns, registers to spare) hold at most kMaxGridRows rows.
inline constexpr int kMaxGridRows = 12;
// Winograd's generic tile transforms: to n x n (n = 6 or 8) from 3 to 5 a side (the filters'),
// or from 6 x 6 to 2 to 5 a side (outputs on 6 x 6 tiles, the filter gradient's taps); 8 x 8
// tiles leave through winograd_output, and dy's tiles enter through winograd_dy.
constexpr bool winograd_tile(int n) { return n == 6 || n == 8; }
constexpr bool transform_supported(int ni, int nj, int na, int nb) {
  const auto within = [](int s, int low, int high) { return s >= low && s <= high; };
  return (ni == nj && winograd_tile(ni) && within(na, 3, 5) && within(nb, 3, 5)) ||
         (na == 6 && nb == 6 && within(ni, 2, 5) && within(nj, 2, 5));
}

struct MicroKernels {
  int vector_width;  // floats per vector register
  int tile_rows;     // preferred tile rows (mr) for this ISA's register file
  // C[r][c_off + 0:n] (+)= sum_{t<taps} sum_{j<len} a[t*mr + r][a_off + j] * b[t][j*ldb + 0:n], r < mr.
  void (*rows)(int mr, long long n, const float* const* a, long long a_off, const float* const* b, long long taps,
               long long len, long long ldb, float* const* c, long long c_off, bool accumulate);
  // The same with b transposed: b[t][col*ldb + j]. Vectorised along j; for n below a vector.
  void (*rows_t)(int mr, long long n, const float* const* a, long long a_off, const float* const* b, long long taps,
                 long long len, long long ldb, float* const* c, long long c_off, bool accumulate);
  // d[r*ldd + 0:n] += sum_{p<npix} x[p][c0 + r] * y[p][k0 + 0:n], r < mr.
  void (*pixels)(int mr, long long n, const float* const* x, long long c0, const float* const* y, long long k0,
                 long long npix, float* d, long long ldd);
  // d[r*ldd + 0:n] (+)= sum_{i<nrows} sum_{j<cols} x[i*rs + j*sx + off[r]] * y[(i*cols + j)*sy + 0:n],
  // r < mr <= grid_max_rows(n): pixels on a regular grid, each tile row at its own offset.
  void (*grid)(int mr, long long n, const float* x, const long long* off, long long sx, long long rs, long long cols,
               long long nrows, const float* y, long long sy, float* d, long long ldd, bool accumulate);
  int (*grid_max_rows)(long long n);
  // grid with off[r] = r and sx = 1, for len of 3, 5 or 7 (a strip of one channel at stride 1),
  // on a run of `pixels` in equal tiles of at most max_rows (equal_tiles' split), one call a row:
  // d[r*ldd + 0:n] (+)= sum_{i<nrows} sum_{j<len} x[i*rs + r + j] * y[(i*len + j)*sy + 0:n], r < pixels,
  // with grid's bits. Returns false, doing nothing, for other lengths or tiles taller than fit.
  bool (*slide)(long long pixels, int max_rows, long long n, long long len, const float* x, long long rs,
                long long nrows, const float* y, long long sy, float* d, long long ldd, bool accumulate);
  // out[i*nj + j][0:n] = sum_{a<na} sum_{b<nb} L[i*na + a] * in[a*nb + b][0:n] * R[j*nb + b]: the
  // two-sided tile transform L X R^T of Winograd's algorithm for n channels side by side; sizes as
  // transform_supported says, a null `in` pointer reads zeros. Every product is formed, zeros included.
  void (*transform)(int ni, int nj, int na, int nb, const float* L, const float* R, const float* const* in,
                    float* const* out, long long n);
  // transform's input side for the t x t tiles of winograd_matrices.hpp (t = 6 or 8), L = R = BT,
  // with BT's zeros and units skipped and its rows formed in pairs (16 operations a row instead of
  // 36; 26 instead of 64): out[i*t + j] = (BT X B)[i][j].
  void (*winograd_input)(int t, const float* const* in, float* const* out, long long n);
  // transform's output side for 8 x 8 tiles, L = AT of F(mi, 9 - mi), R = AT of F(mj, 9 - mj),
  // 4 <= mi, mj <= 6, by pairs of points (3 multiply-adds a row instead of 8), every input still
  // reaching every output; `in` holds no null pointer: out[i*mj + j] = (AT X A)[i][j].
  void (*winograd_output)(int mi, int mj, const float* const* in, float* const* out, long long n);
  // The filter gradient's transform of dy's mi x mj tiles to 6 x 6, L = AT^T of F(mi, 7 - mi),
  // R = AT^T of F(mj, 7 - mj), 2 <= mi, mj <= 4, as polynomial values (4 operations a row for
  // m = 2 instead of 12); a null `in` pointer reads zeros: out[i*6 + j] = (AT^T Y AT)[i][j].
  void (*winograd_dy)(int mi, int mj, const float* const* in, float* const* out, long long n);
  // _FusedConv2D's epilogue on `pixels` pixels of n channels at y (conv2d/epilogue.hpp): y
  // rounded to bfloat16's precision first where asked, y = y + bias[0:n], then y < 0 ? 0 : y
  // where relu; returns whether every y was finite before.
  bool (*epilogue)(float* y, const float* bias, long long pixels, long long n, bool relu, bool round_to_bfloat16);
};

// The best set this CPU supports (checked once).
const MicroKernels& micro_kernels();

}  // namespace dagrad::cpu
