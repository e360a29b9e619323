// The shared block runner of the AMX bfloat16 paths (amx_blocks.hpp).
#include "dagrad/backends/cpu/amx_blocks.hpp"

#include <algorithm>

namespace dagrad::cpu {

void amx_rows_to_bfloat16(const AmxKernels& tiles, std::int64_t m, std::int64_t n, AmxOperands* operands,
                          const std::int64_t* panel_of, std::int64_t count, const std::uint32_t* panels,
                          std::int64_t ld, std::uint16_t* out, std::int64_t out_stride) {
  float acc[kAmxMaxRows * kAmxMaxCols];
  for (std::int64_t j = 0; j < n; j += kAmxMaxCols) {
    const std::int64_t nj = std::min<std::int64_t>(kAmxMaxCols, n - j);
    for (std::int64_t i = 0; i < count; ++i)
      operands[i].b = panels + (panel_of ? panel_of[i] : i) * kAmxPairStep * ld + j;
    std::fill_n(acc, m * kAmxMaxCols, 0.0f);
    if (count > 0) tiles.batch(m, nj, operands, count, ld, acc, kAmxMaxCols);
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t c = 0; c < nj; ++c)
        out[r * out_stride + j + c] = bfloat16_bits(static_cast<bfloat16>(acc[r * kAmxMaxCols + c]));
  }
}

void amx_fill_row(const std::uint16_t* src, std::int64_t count, std::uint16_t* row) {
  const std::int64_t copied = src ? count : 0;
  std::copy_n(src, copied, row);
  std::fill(row + copied, row + 2 * kAmxPairStep, std::uint16_t{0});
}

}  // namespace dagrad::cpu
