// Depthwise float32 NHWC Conv2D and its input gradient (groups = in_depth, filter_in_depth = 1,
// channel multiplier m = K / C, output channel k = c * m + j): channel-vector products on the
// depthwise micro-kernel, with register tiles of pixels that read through the same taps.
// Taps in the padding (and, for the input gradient, taps that reach no output) are skipped, as
// in the reference, so Inf and NaN give its pattern. Tasks are (pixel row, channel block); each
// output element is summed over its taps in tap order whatever the tiling or thread count.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/depthwise_microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

// Channels (Conv2D: per j; input gradient: output channels c * m + j together) per task.
constexpr i64 kChannelBlock = 128;

// A tap that a whole tile reads through: filter tap index, and the source row it reads.
struct RowTap {
  i64 tap, row;
};

// Splits the `cols` pixels of a row into tiles of at most mr pixels, `step` apart, that read
// through the same filter columns (kw with src(pixel, kw) >= 0), and calls tile(first, count, kws).
template <class Src, class Tile>
void for_each_tile(i64 cols, i64 step, i64 mr, i64 filter_cols, Src&& src, Tile&& tile) {
  std::vector<i64> kws;
  kws.reserve(static_cast<std::size_t>(filter_cols));
  const auto same_taps = [&](i64 p, i64 q) {
    for (i64 kw = 0; kw < filter_cols; ++kw)
      if ((src(p, kw) >= 0) != (src(q, kw) >= 0)) return false;
    return true;
  };
  for (i64 cls = 0; cls < std::min(step, cols); ++cls) {
    for (i64 first = cls;;) {
      kws.clear();
      for (i64 kw = 0; kw < filter_cols; ++kw)
        if (src(first, kw) >= 0) kws.push_back(kw);
      i64 count = 1;  // (cols - 1 - first) / step >= count: pixel first + count * step exists
      while (count < mr && (cols - 1 - first) / step >= count && same_taps(first, first + count * step)) ++count;
      tile(first, count, kws);
      // The next tile starts count * step further on if that pixel exists; testing it by
      // division, since first + count * step wraps for a stride near INT64_MAX.
      if ((cols - 1 - first) / step < count) break;
      first += count * step;
    }
  }
}

}  // namespace

bool conv2d_depthwise_applies(const Conv2DGeometry& g) {
  // One channel (groups = 1) is an ordinary conv: the implicit GEMM vectorises over K there.
  return g.data_format == ops::DataFormat::NHWC && g.filter_in_depth == 1 && g.groups == g.in_depth && g.in_depth > 1 &&
         g.out_depth % g.in_depth == 0;
}

void conv2d_forward_depthwise(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  const DepthwiseKernels& dk = depthwise_kernels();
  const i64 C = g.in_depth, K = g.out_depth, m = K / C, H = g.in_rows, W = g.in_cols;
  const i64 OH = g.out_rows, OW = g.out_cols, KW = g.filter_cols, taps = g.filter_rows * KW;
  const i64 mr = std::min<i64>(dk.tile_rows, kMaxDepthwiseRows);
  // For m > 1 the filter as [tap][j][c], so that each j is a product over contiguous channels.
  std::vector<float> fr;
  if (m > 1) {
    fr.resize(static_cast<std::size_t>(taps * K));
    for (i64 t = 0; t < taps; ++t)
      for (i64 c = 0; c < C; ++c)
        for (i64 j = 0; j < m; ++j) fr[static_cast<std::size_t>((t * m + j) * C + c)] = f[t * K + c * m + j];
  }
  const i64 blocks = (C + kChannelBlock - 1) / kChannelBlock;
  tbb::parallel_for(i64{0}, g.batch * OH * blocks, [&](i64 task) {
    const i64 row = task / blocks, n = row / OH, oh = row % OH;
    const i64 c0 = task % blocks * kChannelBlock, cn = std::min(kChannelBlock, C - c0);
    std::vector<RowTap> rows;
    for (i64 kh = 0; kh < g.filter_rows; ++kh) {
      const i64 ih = ops::conv_input_pos(oh, kh, g.stride_rows, g.dilation_rows, g.pad_top, H);
      if (ih >= 0) rows.push_back({kh * KW, (n * H + ih) * W});
    }
    std::vector<const float*> a(static_cast<std::size_t>(taps * mr)), b(static_cast<std::size_t>(taps));
    std::vector<float> tmp(static_cast<std::size_t>(m > 1 ? mr * m * cn : 0));
    float* out[kMaxDepthwiseRows];
    const auto src = [&](i64 ow, i64 kw) {
      return ops::conv_input_pos(ow, kw, g.stride_cols, g.dilation_cols, g.pad_left, W);
    };
    for_each_tile(OW, 1, mr, KW, src, [&](i64 ow0, i64 count, const std::vector<i64>& kws) {
      i64 len = 0;
      for (const RowTap& rt : rows)
        for (const i64 kw : kws) {
          for (i64 r = 0; r < count; ++r) a[len * count + r] = x + (rt.row + src(ow0 + r, kw)) * C + c0;
          b[len++] = (m > 1 ? fr.data() : f) + (rt.tap + kw) * m * C + c0;  // m = 1: f is [tap][c]
        }
      float* y0 = y + (row * OW + ow0) * K;
      if (m == 1) {
        for (i64 r = 0; r < count; ++r) out[r] = y0 + r * K + c0;
        return dk.taps(static_cast<int>(count), cn, a.data(), b.data(), len, out, false);
      }
      for (i64 j = 0; j < m; ++j) {
        for (i64 r = 0; r < count; ++r) out[r] = tmp.data() + (r * m + j) * cn;
        dk.taps(static_cast<int>(count), cn, a.data(), b.data(), len, out, false);
        for (i64 t = 0; t < len; ++t) b[t] += C;  // the next j of each tap
      }
      for (i64 r = 0; r < count; ++r)  // [j][c] -> channel c * m + j
        for (i64 c = 0; c < cn; ++c)
          for (i64 j = 0; j < m; ++j) y0[r * K + (c0 + c) * m + j] = tmp[(r * m + j) * cn + c];
    });
  });
}

void conv2d_backprop_input_depthwise(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const DepthwiseKernels& dk = depthwise_kernels();
  const i64 C = g.in_depth, K = g.out_depth, m = K / C, H = g.in_rows, W = g.in_cols;
  const i64 OH = g.out_rows, OW = g.out_cols, KW = g.filter_cols, taps = g.filter_rows * KW;
  const i64 mr = std::min<i64>(dk.tile_rows, kMaxDepthwiseRows);
  // dx[c] = sum_j sum_taps dy[c * m + j] * f[tap][c * m + j]: the taps' sums run over contiguous
  // output channels, then each channel adds its m lanes in order j = 0, 1, ...
  const i64 block = std::max<i64>(1, kChannelBlock / m);
  const i64 blocks = (C + block - 1) / block;
  tbb::parallel_for(i64{0}, g.batch * H * blocks, [&](i64 task) {
    const i64 row = task / blocks, n = row / H, ih = row % H;
    const i64 c0 = task % blocks * block, cn = std::min(block, C - c0);
    std::vector<RowTap> rows;
    for (i64 kh = 0; kh < g.filter_rows; ++kh) {
      const i64 oh = ops::conv_output_pos(ih, kh, g.stride_rows, g.dilation_rows, g.pad_top, OH);
      if (oh >= 0) rows.push_back({kh * KW, (n * OH + oh) * OW});
    }
    std::vector<const float*> a(static_cast<std::size_t>(taps * mr)), b(static_cast<std::size_t>(taps));
    std::vector<float> tmp(static_cast<std::size_t>(m > 1 ? mr * m * cn : 0));
    float* out[kMaxDepthwiseRows];
    const auto src = [&](i64 iw, i64 kw) {
      return ops::conv_output_pos(iw, kw, g.stride_cols, g.dilation_cols, g.pad_left, OW);
    };
    // Pixels a stride apart reach outputs through the same taps; those between them through others.
    for_each_tile(W, g.stride_cols, mr, KW, src, [&](i64 iw0, i64 count, const std::vector<i64>& kws) {
      const i64 step = g.stride_cols;
      i64 len = 0;
      for (const RowTap& rt : rows)
        for (const i64 kw : kws) {
          for (i64 r = 0; r < count; ++r) a[len * count + r] = dy + (rt.row + src(iw0 + r * step, kw)) * K + c0 * m;
          b[len++] = f + (rt.tap + kw) * K + c0 * m;
        }
      for (i64 r = 0; r < count; ++r)
        out[r] = m == 1 ? dx + (row * W + iw0 + r * step) * C + c0 : tmp.data() + r * cn * m;
      dk.taps(static_cast<int>(count), cn * m, a.data(), b.data(), len, out, false);
      if (m == 1) return;
      for (i64 r = 0; r < count; ++r) {
        float* d = dx + (row * W + iw0 + r * step) * C + c0;
        const float* s = tmp.data() + r * cn * m;
        for (i64 c = 0; c < cn; ++c) {
          float sum = s[c * m];
          for (i64 j = 1; j < m; ++j) sum += s[c * m + j];
          d[c] = sum;
        }
      }
    });
  });
}

}  // namespace dagrad::cpu
