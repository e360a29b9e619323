// bfloat16 MatMul on AMX tiles: B packed once into pair panels (blocks of 32 along k), then each
// task takes blocks of 32 rows of A, whose rows are tile operands as they lie (k apart), gathered
// with zeros only for the last block of k when k is no multiple of 32.
#include "dagrad/backends/cpu/matmul_amx.hpp"

#include <algorithm>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_blocks.hpp"

namespace dagrad::cpu {

void matmul_bf16_amx(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, std::int64_t m, std::int64_t k,
                     std::int64_t n, const AmxKernels& tiles) {
  using i64 = std::int64_t;
  constexpr i64 kBlock = 2 * kAmxPairStep;  // k per operand
  const i64 blocks = (k + kBlock - 1) / kBlock, ld = (n + 15) / 16 * 16;
  const std::vector<std::uint32_t> panels = amx_pair_panels(blocks, n, ld, [&](i64 block, i64 e, i64 j) {
    const i64 p = block * kBlock + e;
    return p < k ? b[p * n + j] : std::uint16_t{0};
  });
  const i64 row_blocks = (m + kAmxMaxRows - 1) / kAmxMaxRows;
  tbb::parallel_for(tbb::blocked_range<i64>(0, row_blocks), [&](const tbb::blocked_range<i64>& range) {
    std::vector<AmxOperands> operands(static_cast<std::size_t>(blocks));
    std::vector<std::uint16_t> tail(static_cast<std::size_t>(kAmxMaxRows * kBlock));
    for (i64 rb = range.begin(); rb < range.end(); ++rb) {
      const i64 r0 = rb * kAmxMaxRows, rows = std::min<i64>(kAmxMaxRows, m - r0);
      for (i64 i = 0; i < blocks; ++i) {
        const i64 p0 = i * kBlock, pn = std::min(kBlock, k - p0);
        AmxOperands& op = operands[static_cast<std::size_t>(i)];
        if (pn == kBlock) {
          op.a = a + r0 * k + p0;
          op.lda = k;
        } else {
          for (i64 r = 0; r < rows; ++r) amx_fill_row(a + (r0 + r) * k + p0, pn, tail.data() + r * kBlock);
          op.a = tail.data();
          op.lda = kBlock;
        }
      }
      amx_rows_to_bfloat16(tiles, rows, n, operands.data(), nullptr, blocks, panels.data(), ld, c + r0 * n, n);
    }
  });
}

}  // namespace dagrad::cpu
