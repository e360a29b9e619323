// What the AMX bfloat16 paths (conv2d/*_amx.cpp, MatMul) share around the tile kernel: packing a
// right operand into pair panels, and running one block of up to 32 output rows over all its
// columns with one rounding to bfloat16.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/core/dtype.hpp"

namespace dagrad::cpu {

// Right operands for `items` reduction blocks of 32 as pair panels, `ld` (>= cols, a multiple of 16)
// words per row: panel i, row q, column j = {value(i, 2q, j), value(i, 2q + 1, j)}, the bfloat16 bits
// of the block's elements (value gives 0 past the reduction's end); columns cols..ld are zero.
template <class Value>
std::vector<std::uint32_t> amx_pair_panels(std::int64_t items, std::int64_t cols, std::int64_t ld, const Value& value) {
  std::vector<std::uint32_t> panels(static_cast<std::size_t>(items * kAmxPairStep * ld), 0);
  tbb::parallel_for(std::int64_t{0}, items, [&](std::int64_t i) {
    for (std::int64_t q = 0; q < kAmxPairStep; ++q) {
      std::uint32_t* row = panels.data() + (i * kAmxPairStep + q) * ld;
      for (std::int64_t j = 0; j < cols; ++j)
        row[j] = std::uint32_t{value(i, 2 * q, j)} | std::uint32_t{value(i, 2 * q + 1, j)} << 16;
    }
  });
  return panels;
}

// out[r * out_stride + j] = bfloat16(sum_i a_i[r] . panel(i)[., j]) for r < m, j < n: operand i's
// right side is panel panel_of[i] of `panels` (ld words per row; panel i where panel_of is
// nullptr), its columns in blocks of 32. The operands' b members are overwritten. A block with no
// operands is zero.
void amx_rows_to_bfloat16(const AmxKernels& tiles, std::int64_t m, std::int64_t n, AmxOperands* operands,
                          const std::int64_t* panel_of, std::int64_t count, const std::uint32_t* panels,
                          std::int64_t ld, std::uint16_t* out, std::int64_t out_stride);

// The bits of a bfloat16, as tile operands hold them.
inline std::uint16_t bfloat16_bits(bfloat16 v) { return std::bit_cast<std::uint16_t>(v); }

// A tile row of 32 bfloat16: `count` of them from src (nullptr: none), zeros after.
void amx_fill_row(const std::uint16_t* src, std::int64_t count, std::uint16_t* row);

}  // namespace dagrad::cpu
