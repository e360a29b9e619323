// Depthwise float32 NHWC filter gradient (groups = in_depth, filter_in_depth = 1, multiplier m):
// df[tap][c * m + j] = sum over pixels of x[pixel + tap][c] * dy[pixel][c * m + j], on the
// depthwise micro-kernel with rows = the taps of a filter row and the sum over pixels. Pixels
// whose tap falls in the padding are skipped (the reference's Inf/NaN pattern). Pixel rows are
// split into fixed chunks (filter_reduction_chunks) whose partial filters add in chunk order, so
// the result does not depend on the thread count.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/depthwise_microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kChannelBlock = 64;  // channels per task
constexpr i64 kPixelBlock = 64;    // pixels per micro-kernel call (pointer lists on the stack)

}  // namespace

void conv2d_backprop_filter_depthwise(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const DepthwiseKernels& dk = depthwise_kernels();
  const i64 C = g.in_depth, K = g.out_depth, m = K / C, H = g.in_rows, W = g.in_cols;
  const i64 OH = g.out_rows, OW = g.out_cols, KH = g.filter_rows, KW = g.filter_cols;
  const i64 fsize = KH * KW * K, pixel_rows = g.batch * OH;
  const i64 blocks = (C + kChannelBlock - 1) / kChannelBlock, per_chunk = blocks * KH;
  const i64 chunks = filter_reduction_chunks(pixel_rows, per_chunk, fsize * 4);
  // Partial filters as [tap][j][c], so that each j is a product over contiguous channels; for
  // m = 1 that is df's own layout and chunk 0 is df.
  const ReductionPartials<float> partial(chunks, fsize, m == 1 ? df : nullptr);
  const i64 group = std::min<i64>(KW, kMaxDepthwiseRows);  // taps of a filter row per call
  // A task: one chunk's pixel rows, one filter row, one channel block.
  tbb::parallel_for(i64{0}, chunks * per_chunk, [&](i64 task) {
    const i64 chunk = task / per_chunk, kh = task % per_chunk / blocks;
    const i64 c0 = task % blocks * kChannelBlock, cn = std::min(kChannelBlock, C - c0);
    float* d = partial.chunk(chunk);
    for (i64 kw = 0; kw < KW; ++kw)
      for (i64 j = 0; j < m; ++j) std::fill_n(d + ((kh * KW + kw) * m + j) * C + c0, cn, 0.0f);
    std::vector<float> dyt(static_cast<std::size_t>(m > 1 ? OW * m * cn : 0));
    const float* a[kPixelBlock * kMaxDepthwiseRows];
    const float* b[kPixelBlock];
    float* out[kMaxDepthwiseRows];
    i64 pix[kPixelBlock];
    const i64 r1 = pixel_rows * (chunk + 1) / chunks;
    for (i64 row = pixel_rows * chunk / chunks; row < r1; ++row) {
      const i64 n = row / OH, oh = row % OH;
      const i64 ih = ops::conv_input_pos(oh, kh, g.stride_rows, g.dilation_rows, g.pad_top, H);
      if (ih < 0) continue;  // the filter row reads padding only: adds nothing
      const float* xrow = x + (n * H + ih) * W * C + c0;
      const float* dyrow = dy + row * OW * K + c0 * m;
      if (m > 1) {  // this row's dy as [ow][j][c]
        for (i64 ow = 0; ow < OW; ++ow)
          for (i64 c = 0; c < cn; ++c)
            for (i64 j = 0; j < m; ++j)
              dyt[static_cast<std::size_t>((ow * m + j) * cn + c)] = dyrow[ow * K + c * m + j];
      }
      const auto iw_of = [&](i64 ow, i64 kw) {
        return ops::conv_input_pos(ow, kw, g.stride_cols, g.dilation_cols, g.pad_left, W);
      };
      // Adds pixels pix[0:np] through taps kwa .. kwa + nt - 1 of this filter row, all inside.
      const auto run = [&](i64 np, i64 kwa, i64 nt) {
        for (i64 i = 0; i < np; ++i)
          for (i64 r = 0; r < nt; ++r) a[i * nt + r] = xrow + iw_of(pix[i], kwa + r) * C;
        for (i64 j = 0; j < m; ++j) {
          for (i64 i = 0; i < np; ++i) b[i] = m == 1 ? dyrow + pix[i] * K : dyt.data() + (pix[i] * m + j) * cn;
          for (i64 r = 0; r < nt; ++r) out[r] = d + ((kh * KW + kwa + r) * m + j) * C + c0;
          dk.taps(static_cast<int>(nt), cn, a, b, np, out, true);
        }
      };
      for (i64 kw0 = 0; kw0 < KW; kw0 += group) {
        const i64 nk = std::min(group, KW - kw0);
        // Input columns grow with kw: a pixel whose first and last taps are inside has all inside.
        const auto interior = [&](i64 ow) { return iw_of(ow, kw0) >= 0 && iw_of(ow, kw0 + nk - 1) >= 0; };
        i64 np = 0;
        for (i64 ow = 0; ow < OW; ++ow) {
          if (!interior(ow)) continue;
          pix[np++] = ow;
          if (np == kPixelBlock) run(np, kw0, nk), np = 0;
        }
        if (np > 0) run(np, kw0, nk), np = 0;
        // The other pixels tap by tap, skipping the taps in the padding.
        for (i64 kw = kw0; kw < kw0 + nk; ++kw) {
          for (i64 ow = 0; ow < OW; ++ow) {
            if (interior(ow) || iw_of(ow, kw) < 0) continue;
            pix[np++] = ow;
            if (np == kPixelBlock) run(np, kw, 1), np = 0;
          }
          if (np > 0) run(np, kw, 1), np = 0;
        }
      }
    }
  });
  if (m == 1) return partial.sum_to(df);
  std::vector<float> sum(static_cast<std::size_t>(fsize));
  partial.sum_to(sum.data());
  for (i64 t = 0; t < KH * KW; ++t)  // [tap][j][c] -> [tap][c * m + j]
    for (i64 c = 0; c < C; ++c)
      for (i64 j = 0; j < m; ++j) df[t * K + c * m + j] = sum[static_cast<std::size_t>((t * m + j) * C + c)];
}

}  // namespace dagrad::cpu
