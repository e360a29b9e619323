// The float32 NHWC input gradient of layers with fewer input channels than a vector holds
// (first layers: C = 1 or 3), groups = 1, as a GEMM and a col2im:
//   columns[p][t * C + c] = sum_k dy[p][k] * f[t][c][k]     (every tap t of output pixel p)
//   dx[pixel under tap t of p][c] += columns[p][t * C + c]
// The GEMM is vectorised along the taps and channels of a pixel together (KH * KW * C values, 147
// for a 7x7 filter on RGB), where nhwc_fast could only vectorise along C (a few lanes) or reduce
// along K per pixel and tap (bookkeeping per tap dominates there). The col2im adds C values per
// tap: 1 / (2K) of the GEMM's flops.
//
// Threads take bands of input rows of one image and compute the GEMM rows of every output row
// that reaches their band (the rows shared by two bands are computed twice: a few filter rows per
// band). Each dx element sums its terms over output rows, then output columns, in ascending
// order, whatever the bands: the bits do not depend on the thread count. Only real terms are
// added (taps in the padding are computed and dropped), so Inf and NaN in f or dy give the
// reference's pattern.
// Workspace: the filter transposed to [k][tap * C + c] (rows padded to whole vectors with zeros),
// and per task one block of GEMM rows (sized from the L2 cache).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/int_division.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

// The filter as the GEMM's right-hand side: ft[k * row + t * C + c] = f[(t * C + c) * K + k].
struct TapColumns {
  i64 width;  // KH * KW * C: the GEMM columns that are used
  i64 row;    // width rounded up to whole vectors
  std::vector<float> ft;
};
TapColumns tap_columns(const Conv2DGeometry& g, const float* f) {
  const i64 K = g.out_depth, vl = micro_kernels().vector_width;
  TapColumns tc;
  tc.width = g.filter_rows * g.filter_cols * g.in_depth;
  tc.row = (tc.width + vl - 1) / vl * vl;
  tc.ft.assign(static_cast<std::size_t>(K * tc.row), 0.0f);
  tbb::parallel_for(i64{0}, K, [&](i64 k) {
    for (i64 j = 0; j < tc.width; ++j) tc.ft[static_cast<std::size_t>(k * tc.row + j)] = f[j * K + k];
  });
  return tc;
}

// Pixels per GEMM block: a quarter of L2 for the block's columns, at least one register tile.
i64 block_pixels(const TapColumns& tc, i64 out_cols) {
  const i64 tile = micro_kernels().tile_rows;
  const i64 budget = std::max<i64>(cpu_info().l2_bytes, i64{256} << 10) / 4;
  const i64 fit = std::max(tile, budget / (tc.row * static_cast<i64>(sizeof(float))) / tile * tile);
  return std::min(fit, out_cols);
}

// Bands of input rows per image: enough tasks for every thread (four each), none empty.
i64 bands_per_image(const Conv2DGeometry& g) {
  const i64 threads = tbb::this_task_arena::max_concurrency();
  const i64 wanted = (4 * threads + g.batch - 1) / g.batch;
  return std::max<i64>(1, std::min(wanted, g.in_rows));
}

}  // namespace

bool conv2d_input_col2im_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NHWC && g.groups == 1 && g.in_depth < micro_kernels().vector_width;
}

void conv2d_backprop_input_col2im(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const MicroKernels& mk = micro_kernels();
  const i64 H = g.in_rows, W = g.in_cols, C = g.in_depth, K = g.out_depth, KW = g.filter_cols;
  const TapColumns tc = tap_columns(g, f);
  const i64 block = block_pixels(tc, g.out_cols), bands = bands_per_image(g);
  const i64 band_rows = (H + bands - 1) / bands;
  const i64 reach = (g.filter_rows - 1) * g.dilation_rows;  // input rows a window spans, less one
  tbb::parallel_for(i64{0}, g.batch * bands, [&](i64 task) {
    const i64 n = task / bands, r0 = task % bands * band_rows, r1 = std::min(H, r0 + band_rows);
    if (r0 >= r1) return;
    std::fill(dx + (n * H + r0) * W * C, dx + (n * H + r1) * W * C, 0.0f);
    // The output rows whose windows reach rows [r0, r1): oh * stride - pad_top + [0, reach].
    const i64 oh0 = std::max<i64>(0, ceil_div(r0 + g.pad_top - reach, g.stride_rows));
    const i64 oh1 = std::min(g.out_rows, floor_div(r1 - 1 + g.pad_top, g.stride_rows) + 1);
    std::vector<float> columns(static_cast<std::size_t>(block * tc.row));
    const float* a[kMaxRows];
    float* c[kMaxRows];
    const float* b = tc.ft.data();
    for (i64 oh = oh0; oh < oh1; ++oh) {
      const i64 top = oh * g.stride_rows - g.pad_top;
      for (i64 ow0 = 0; ow0 < g.out_cols; ow0 += block) {
        const i64 pixels = std::min(block, g.out_cols - ow0);
        const float* dy_row = dy + ((n * g.out_rows + oh) * g.out_cols + ow0) * K;
        for (i64 p0 = 0; p0 < pixels; p0 += mk.tile_rows) {
          const int rows = static_cast<int>(std::min<i64>(mk.tile_rows, pixels - p0));
          for (int r = 0; r < rows; ++r) {
            a[r] = dy_row + (p0 + r) * K;
            c[r] = columns.data() + (p0 + r) * tc.row;
          }
          mk.rows(rows, tc.row, a, 0, &b, 1, K, tc.row, c, 0, false);
        }
        // col2im for the filter rows that land in the band.
        const i64 kh0 = std::max<i64>(0, ceil_div(r0 - top, g.dilation_rows));
        const i64 kh1 = std::min(g.filter_rows, floor_div(r1 - 1 - top, g.dilation_rows) + 1);
        for (i64 p = 0; p < pixels; ++p) {
          const i64 left = (ow0 + p) * g.stride_cols - g.pad_left;
          const i64 kw0 = std::max<i64>(0, ceil_div(-left, g.dilation_cols));
          const i64 kw1 = std::min(KW, floor_div(W - 1 - left, g.dilation_cols) + 1);
          const float* col = columns.data() + p * tc.row;
          for (i64 kh = kh0; kh < kh1; ++kh) {
            float* dx_row = dx + (n * H + top + kh * g.dilation_rows) * W * C;
            const float* src = col + kh * KW * C;
            for (i64 kw = kw0; kw < kw1; ++kw) {
              float* dst = dx_row + (left + kw * g.dilation_cols) * C;
              for (i64 ch = 0; ch < C; ++ch) dst[ch] += src[kw * C + ch];
            }
          }
        }
      }
    }
  });
}

}  // namespace dagrad::cpu
