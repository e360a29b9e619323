// bfloat16 NHWC input gradient (groups = 1, any stride/dilation/padding) on AMX-BF16 tiles:
// dx[i][c] = sum over the taps t through which input pixel i reaches an output pixel o,
// sum_k dy[o][k] * f[t][c][k]; float32 in the tiles, one rounding to bfloat16.
// Input pixels go in runs of up to 32 of one column phase (iw % stride_cols) of one input row:
// through a tap, such a run either reaches no output at all (the tap is skipped) or reaches
// consecutive output columns, so its dy rows for a block of 32 filters are one tile operand, read
// in place (rows K apart) where every pixel of the run reaches an output, gathered with zeros for
// the others (and past K) otherwise. The filter is packed once per call into pair panels along K:
// [tap][filter block][16 pairs][C to 16]. Each input pixel sums its taps in an order fixed by the
// shapes: no thread dependence.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_blocks.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/stride_phase_order.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kRun = kAmxMaxRows;               // input pixels per batch
constexpr i64 kFilterBlock = 2 * kAmxPairStep;  // filters per operand: one tile row

}  // namespace

void conv2d_backprop_input_amx(const Conv2DGeometry& g, const bfloat16* f, const bfloat16* dy, bfloat16* dx) {
  conv2d_backprop_input_amx_with(g, f, dy, dx, *amx_kernels());
}

void conv2d_backprop_input_amx_with(const Conv2DGeometry& g, const bfloat16* f, const bfloat16* dy, bfloat16* dx,
                                    const AmxKernels& tiles) {
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols, OH = g.out_rows, OW = g.out_cols;
  const i64 taps = g.filter_rows * g.filter_cols, blocks = (K + kFilterBlock - 1) / kFilterBlock;
  const i64 cpad = (C + 15) / 16 * 16;
  // Panel (t, kb): row q, column c = {f[t][c][k], f[t][c][k + 1]}, k = 32 kb + 2q.
  const std::vector<u32> panels = amx_pair_panels(taps * blocks, C, cpad, [&](i64 item, i64 e, i64 c) {
    const i64 t = item / blocks, k = item % blocks * kFilterBlock + e;
    return k < K ? bfloat16_bits(f[(t * C + c) * K + k]) : u16{0};
  });
  // Runs: (image row, phase, chunk of 32 of the phase's columns), the phases' chunks counted in closed form.
  const PhaseAxis columns(W, g.stride_cols);  // phase p < min(stride, W): columns p + stride * i
  const i64 phases = std::min(g.stride_cols, W);
  std::vector<i64> first_run(static_cast<std::size_t>(phases + 1), 0);
  for (i64 p = 0; p < phases; ++p)
    first_run[static_cast<std::size_t>(p + 1)] =
        first_run[static_cast<std::size_t>(p)] + (columns.size(p) + kRun - 1) / kRun;
  const i64 runs_per_row = first_run.back();
  const u16* dys = reinterpret_cast<const u16*>(dy);
  u16* dxs = reinterpret_cast<u16*>(dx);
  tbb::parallel_for(tbb::blocked_range<i64>(0, g.batch * H * runs_per_row), [&](const auto& range) {
    std::vector<AmxOperands> operands(static_cast<std::size_t>(taps * blocks));
    std::vector<u16> gathered(static_cast<std::size_t>(taps * blocks * kRun * kFilterBlock), 0);
    std::vector<i64> panel_of(static_cast<std::size_t>(taps * blocks));  // each operand's filter panel
    for (i64 run = range.begin(); run < range.end(); ++run) {
      const i64 row = run / runs_per_row, n = row / H, ih = row % H, in_row = run % runs_per_row;
      const i64 p = std::upper_bound(first_run.begin(), first_run.end(), in_row) - first_run.begin() - 1;
      const i64 i0 = (in_row - first_run[static_cast<std::size_t>(p)]) * kRun;
      const i64 m = std::min(kRun, columns.size(p) - i0);
      const i64 iw0 = columns.position(p, i0);  // the run's first column; the others stride_cols apart
      i64 count = 0;
      for (i64 t = 0; t < taps; ++t) {
        // The output row and columns this tap reaches: oh * stride = ih + pad - kh * dilation.
        const i64 th = ih + g.pad_top - t / g.filter_cols * g.dilation_rows;
        if (th < 0 || th % g.stride_rows != 0 || th / g.stride_rows >= OH) continue;
        const i64 tw0 = iw0 + g.pad_left - t % g.filter_cols * g.dilation_cols;  // for the run's first pixel
        if (tw0 % g.stride_cols != 0) continue;  // the run's columns fall between the strides
        const i64 oh = th / g.stride_rows;
        // Pixel r reaches output column ow0 + r where 0 <= ow0 + r < OW (tw0 divides exactly).
        const i64 ow0 = tw0 / g.stride_cols;
        if (ow0 + m <= 0 || ow0 >= OW) continue;
        const u16* dy_row = dys + (n * OH + oh) * OW * K;
        for (i64 kb = 0; kb < blocks; ++kb) {
          const i64 k0 = kb * kFilterBlock, kn = std::min(kFilterBlock, K - k0);
          AmxOperands& op = operands[static_cast<std::size_t>(count)];
          panel_of[static_cast<std::size_t>(count)] = t * blocks + kb;
          if (ow0 >= 0 && ow0 + m <= OW && kn == kFilterBlock) {
            op.a = dy_row + ow0 * K + k0;
            op.lda = K;
          } else {
            u16* out = gathered.data() + count * kRun * kFilterBlock;
            for (i64 r = 0; r < m; ++r, out += kFilterBlock)
              amx_fill_row(ow0 + r >= 0 && ow0 + r < OW ? dy_row + (ow0 + r) * K + k0 : nullptr, kn, out);
            op.a = gathered.data() + count * kRun * kFilterBlock;
            op.lda = kFilterBlock;
          }
          ++count;
        }
      }
      amx_rows_to_bfloat16(tiles, m, C, operands.data(), panel_of.data(), count, panels.data(), cpad,
                           dxs + ((n * H + ih) * W + iw0) * C, g.stride_cols * C);
    }
  });
}

}  // namespace dagrad::cpu
