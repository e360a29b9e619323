// bfloat16 NHWC Conv2D (groups = 1, any stride/dilation/padding) on AMX-BF16 tiles:
// y[p][k] = sum_t sum_c x_t[p][c] * f[t][c][k], float32 in the tiles over every tap and channel,
// one rounding to bfloat16. Output pixels go in runs of up to 32 along one output row (a batch's
// rows); each (tap, block of 32 channels) is one operand pair of the batch. A run's 32 channels
// under a tap are read in place, rows stride_cols * C apart, where every pixel of the run reads a
// real input pixel and the block is whole; otherwise they are gathered, with zeros for the padding
// and past C. No im2col: gathering touches only the runs at the image's edges and channel tails.
// The filter is packed once per call into pair panels [tap][channel block][16 pairs][K to 16],
// zero past C and K. Each output is summed in an order fixed by the shapes: no thread dependence.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_blocks.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kRun = kAmxMaxRows;                // output pixels per batch
constexpr i64 kChannelBlock = 2 * kAmxPairStep;  // channels per operand: one tile row

}  // namespace

void conv2d_forward_amx(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y) {
  conv2d_forward_amx_with(g, x, f, y, *amx_kernels());
}

void conv2d_forward_amx_with(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y,
                             const AmxKernels& tiles) {
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
  const i64 taps = g.filter_rows * g.filter_cols, blocks = (C + kChannelBlock - 1) / kChannelBlock;
  const i64 items = taps * blocks, kpad = (K + 15) / 16 * 16;
  // Panel (t, cb): row q, column k = {f[t][c][k], f[t][c + 1][k]}, c = 32 cb + 2q.
  const std::vector<u32> panels = amx_pair_panels(items, K, kpad, [&](i64 item, i64 e, i64 k) {
    const i64 t = item / blocks, c = item % blocks * kChannelBlock + e;
    return c < C ? bfloat16_bits(f[(t * C + c) * K + k]) : u16{0};
  });
  const i64 runs_per_row = (g.out_cols + kRun - 1) / kRun;
  const u16* xs = reinterpret_cast<const u16*>(x);
  u16* ys = reinterpret_cast<u16*>(y);
  tbb::parallel_for(tbb::blocked_range<i64>(0, g.batch * g.out_rows * runs_per_row), [&](const auto& range) {
    std::vector<AmxOperands> operands(static_cast<std::size_t>(items));
    std::vector<u16> gathered(static_cast<std::size_t>(items * kRun * kChannelBlock));
    for (i64 run = range.begin(); run < range.end(); ++run) {
      const i64 row = run / runs_per_row, n = row / g.out_rows, oh = row % g.out_rows;
      const i64 ow0 = run % runs_per_row * kRun, m = std::min(kRun, g.out_cols - ow0);
      for (i64 item = 0; item < items; ++item) {
        const i64 t = item / blocks, c0 = item % blocks * kChannelBlock, cn = std::min(kChannelBlock, C - c0);
        const i64 ih = oh * g.stride_rows - g.pad_top + t / g.filter_cols * g.dilation_rows;
        const i64 iw0 = ow0 * g.stride_cols - g.pad_left + t % g.filter_cols * g.dilation_cols;
        const i64 iw_last = (ow0 + m - 1) * g.stride_cols - g.pad_left + t % g.filter_cols * g.dilation_cols;
        const bool row_inside = ih >= 0 && ih < H;
        const u16* image_row = row_inside ? xs + (n * H + ih) * W * C : nullptr;
        if (row_inside && iw0 >= 0 && iw_last < W && cn == kChannelBlock) {
          operands[static_cast<std::size_t>(item)].a = image_row + iw0 * C + c0;
          operands[static_cast<std::size_t>(item)].lda = g.stride_cols * C;
          continue;
        }
        u16* out = gathered.data() + item * kRun * kChannelBlock;
        for (i64 r = 0; r < m; ++r, out += kChannelBlock) {
          const i64 iw = (ow0 + r) * g.stride_cols - g.pad_left + t % g.filter_cols * g.dilation_cols;
          amx_fill_row(row_inside && iw >= 0 && iw < W ? image_row + iw * C + c0 : nullptr, cn, out);
        }
        operands[static_cast<std::size_t>(item)].a = gathered.data() + item * kRun * kChannelBlock;
        operands[static_cast<std::size_t>(item)].lda = kChannelBlock;
      }
      amx_rows_to_bfloat16(tiles, m, K, operands.data(), nullptr, items, panels.data(), kpad,
                           ys + ((n * g.out_rows + oh) * g.out_cols + ow0) * K, K);
    }
  });
}

}  // namespace dagrad::cpu
