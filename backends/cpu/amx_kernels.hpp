// The interface of the AMX-BF16 tile product (isa/amx_bf16.cpp) behind the AMX bfloat16 conv
// path, and a portable emulation of the same arithmetic (amx_emulated.cpp) so that the path's
// packing and index arithmetic run and are tested on any CPU. Operands are bfloat16 pairs in 32-bit
// words {even, odd} (low half the even element), as in bf16_kernels.hpp:
//   a: m rows of `pairs` words (row r at a + r * lda): the left operand, rows-major as tiles load it;
//   b: `pairs` rows of n words (row q at b + q * ldb): the pair panels of bf16_kernels.hpp.
// Included by the ISA file: no header with inline functions here.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

// Rows and columns of one product call at most (2 x 2 tiles of 16 x 16 float32), and the pair
// step of a tile (64 bytes of pairs per row): `pairs` must be a multiple of it.
inline constexpr long long kAmxMaxRows = 32;
inline constexpr long long kAmxMaxCols = 32;
inline constexpr long long kAmxPairStep = 16;

struct AmxKernels {
  // c[r*ldc + j] += sum_{q<pairs} (a_r[q].even * b_q[j].even + a_r[q].odd * b_q[j].odd) for r < m,
  // j < n, in float32, pair by pair in ascending q, even product first (the SDM's order for
  // TDPBF16PS; bfloat16 denormals read as zero, float32 denormal sums flushed to zero).
  // 1 <= m <= kAmxMaxRows, 1 <= n <= kAmxMaxCols, pairs a multiple of kAmxPairStep.
  void (*product)(long long m, long long n, const std::uint32_t* a, long long lda, const std::uint32_t* b,
                  long long ldb, long long pairs, float* c, long long ldc);
};

// The tile kernels where this CPU has AMX-BF16 and the OS granted tile data, else nullptr.
const AmxKernels* amx_kernels();
// The same arithmetic in portable C++ (slow): for tests on any CPU.
const AmxKernels& amx_emulated_kernels();

}  // namespace dagrad::cpu
