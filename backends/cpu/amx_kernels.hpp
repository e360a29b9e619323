// The interface of the AMX-BF16 tile kernel (isa/amx_bf16.cpp) behind the AMX bfloat16 conv
// paths, and a portable emulation of the same arithmetic (amx_emulated.cpp) so that the paths'
// packing and index arithmetic run and are tested on any CPU. The reduction runs over bfloat16
// pairs {even, odd}: in memory, two adjacent bfloat16 (a 32-bit word, low half the even one), so
// 32 adjacent channels of an NHWC pixel are one tile row as they lie. A batch (as oneDNN's brgemm)
// adds the products of `count` operand pairs to one float32 block held in tiles:
//   a: m rows of 32 bfloat16 (16 pairs), row r at a + r * lda (lda in bfloat16);
//   b: 16 rows of n pair words, row q at b + q * ldb (ldb in words): the pair panels of bf16_kernels.hpp.
// Included by the ISA file: no header with inline functions here.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

// Rows and columns of one batch at most (2 x 2 tiles of 16 x 16 float32), and the pairs of one
// operand pair (64 bytes of a tile row).
inline constexpr long long kAmxMaxRows = 32;
inline constexpr long long kAmxMaxCols = 32;
inline constexpr long long kAmxPairStep = 16;

// One operand pair of a batch.
struct AmxOperands {
  const std::uint16_t* a;
  long long lda;
  const std::uint32_t* b;
};

struct AmxKernels {
  // c[r*ldc + j] += sum_{i<count} sum_{q<16} (a_i[r][2q] * b_i[q][j].even + a_i[r][2q+1] * b_i[q][j].odd)
  // for r < m, j < n, in float32: operand pairs in order, pairs in ascending q, the even product
  // first (the SDM's order for TDPBF16PS), bfloat16 denormals read as zero, float32 denormal sums
  // flushed to zero. 1 <= m <= kAmxMaxRows, 1 <= n <= kAmxMaxCols.
  void (*batch)(long long m, long long n, const AmxOperands* operands, long long count, long long ldb, float* c,
                long long ldc);
};

// The tile kernels where this CPU has AMX-BF16 and the OS granted tile data, else nullptr.
const AmxKernels* amx_kernels();
// The same arithmetic in portable C++ (slow): for tests on any CPU.
const AmxKernels& amx_emulated_kernels();

}  // namespace dagrad::cpu
