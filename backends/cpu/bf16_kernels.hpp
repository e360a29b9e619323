// The interface of the AVX-512 BF16 kernels (isa/conv_bf16_avx512.cpp) behind the native bfloat16
// conv paths. vdpbf16ps multiplies bfloat16 pairs and adds both products to a float32 lane, so
// the reduction dimension is packed in pairs: a panel holds 32-bit words {v[2q][j], v[2q+1][j]}
// (low half the even element). Included by the ISA file: no header with inline functions here.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

// Channel rows one pairs-kernel call holds in registers (x 4 vectors of 16 columns).
inline constexpr int kBf16MaxRows = 6;
// Rows one grid-kernel tile holds at most (tall tiles where few columns leave registers spare).
inline constexpr int kBf16MaxGridRows = 12;

struct Bf16Kernels {
  // out[q*ld + j] = {rows[2q][off + j], rows[2q+1][off + j]} for q < ceil(m/2), j < ld; columns
  // j >= n, the partner of an odd m's last row and rows given as nullptr are zero.
  void (*pack_pairs)(const std::uint16_t* const* rows, long long off, long long m, long long n, std::uint32_t* out,
                     long long ld);
  // d[r*ldd + j] += sum_{q<npairs} dot2(x[q*ldx + r], y[q*ldy + j]) for r < mr (<= kBf16MaxRows),
  // j < n, in float32: each step adds the two exact products in a fixed order.
  void (*pairs)(int mr, long long n, const std::uint32_t* x, long long ldx, const std::uint32_t* y, long long ldy,
                long long npairs, float* d, long long ldd);
  // out[r][out_off + j] = bf16(sum_{t<taps} sum_{i<len} a[t*mr + r][a_off + i] * B_t[i][j]) for r < mr,
  // j < n, rounded once to nearest even; B_t is the pair panel b[t] + b_off (row stride ldb,
  // readable up to n rounded up to 16, zero partner for an odd len). Rows a are plain bfloat16.
  void (*rows)(int mr, long long n, const std::uint16_t* const* a, long long a_off, const std::uint32_t* const* b,
               long long b_off, long long taps, long long len, long long ldb, std::uint16_t* const* out,
               long long out_off);
  // The pair form of the float32 grid kernel (microkernels.hpp), for the strips filter gradient:
  // d[r*ldd + j] += sum_{i<nrows} sum_{q<cols} dot2(x[i*rs + q*sx + off[r]], y[(i*cols + q)*ldy + j])
  // for r < mr <= grid_max_rows(n), j < n; y rows readable up to n rounded up to 16.
  void (*grid)(int mr, long long n, const std::uint32_t* x, const long long* off, long long sx, long long rs,
               long long cols, long long nrows, const std::uint32_t* y, long long ldy, float* d, long long ldd);
  int (*grid_max_rows)(long long n);
  // The same with y as plain bfloat16 rows, pixel-major (pixel 2q + j of row i at
  // y[(i*ow + 2q + j)*ldy], j < 2; a lone last pixel is paired with zeros), for mr <= kBf16MaxGridRows:
  // the pairs are formed in registers, with no pass over y to pack them. Adds to d once, at the end.
  void (*grid_dy)(int mr, long long n, const std::uint32_t* x, const long long* off, long long sx, long long rs,
                  long long nrows, const std::uint16_t* y, long long ldy, long long ow, float* d, long long ldd);
};

// The kernels when this CPU (and OS) runs AVX-512 BF16, else nullptr (checked once).
const Bf16Kernels* bf16_kernels();

}  // namespace dagrad::cpu
