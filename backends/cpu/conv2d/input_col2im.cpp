// The float32 input gradient of layers with fewer input channels than a vector holds (first
// layers: C = 1 or 3), groups = 1, as a GEMM and a col2im, in either layout:
//   columns[p][t * C + c] = sum_k dy[p][k] * f[t][c][k]     (every tap t of output pixel p)
//   dx[pixel under tap t of p][c] += columns[p][t * C + c]
// NHWC: the GEMM is vectorised along the taps and channels of a pixel together (KH * KW * C
// values, 147 for a 7x7 filter on RGB), where nhwc_fast could only vectorise along C (a few lanes)
// or reduce along K per pixel and tap (bookkeeping per tap dominates there). NCHW: the GEMM is
// f's rows (t * C + c, K long, as HWIO stores them) times dy's planes, vectorised along output
// pixels, and the col2im adds whole runs of output columns to runs of input columns; nchw_fast
// and nchw_slabs ran 2x and more slower on first layers. The col2im adds 1 / (2K) of the GEMM's
// flops.
//
// Threads take bands of input rows of one image and compute the GEMM rows of every output row
// that reaches their band (the rows shared by two bands are computed twice: a few filter rows per
// band). Each dx element sums its terms over output rows in ascending order, then over a row's
// taps, whatever the bands; NCHW computes its GEMM in blocks at fixed places of the plane, so a
// pixel also takes the same kernel lane: the bits do not depend on the thread count. Only real
// terms are added (taps in the padding are computed and dropped), so Inf and NaN in f or dy give
// the reference's pattern.
// Workspace: NHWC, the filter transposed to [k][tap * C + c] (rows padded to whole vectors with
// zeros); per task, one block of GEMM results (sized from the L2 cache).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/int_division.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/scratch_array.hpp"

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

// A task: a band of input rows [r0, r1) of image n, and the output rows [oh0, oh1) whose windows
// reach it. Bands per image: enough tasks for every thread (four each), none empty; the task
// zeroes its band of dx (through `zero`) before `body` adds to it.
struct Band {
  i64 n, r0, r1, oh0, oh1;
};
template <class Zero, class Body>
void for_each_band(const Conv2DGeometry& g, Zero zero, Body body) {
  const i64 threads = tbb::this_task_arena::max_concurrency();
  const i64 bands = std::max<i64>(1, std::min((4 * threads + g.batch - 1) / g.batch, g.in_rows));
  const i64 band_rows = (g.in_rows + bands - 1) / bands;
  const i64 reach = (g.filter_rows - 1) * g.dilation_rows;  // input rows a window spans, less one
  tbb::parallel_for(i64{0}, g.batch * bands, [&](i64 task) {
    const i64 n = task / bands, r0 = task % bands * band_rows, r1 = std::min(g.in_rows, r0 + band_rows);
    if (r0 >= r1) return;
    zero(n, r0, r1);
    // oh * stride - pad_top + [0, reach] meets [r0, r1).
    const i64 oh0 = std::max<i64>(0, ceil_div(r0 + g.pad_top - reach, g.stride_rows));
    const i64 oh1 = std::min(g.out_rows, floor_div(r1 - 1 + g.pad_top, g.stride_rows) + 1);
    body(Band{n, r0, r1, oh0, oh1});
  });
}

// The filter rows [kh0, kh1) that take the window whose top row is `top` into rows [r0, r1).
struct Span {
  i64 first, end;
};
Span rows_in_band(const Conv2DGeometry& g, i64 top, const Band& band) {
  return {std::max<i64>(0, ceil_div(band.r0 - top, g.dilation_rows)),
          std::min(g.filter_rows, floor_div(band.r1 - 1 - top, g.dilation_rows) + 1)};
}
// The filter columns [kw0, kw1) that take the window whose left column is `left` inside the image.
Span cols_in_image(const Conv2DGeometry& g, i64 left) {
  return {std::max<i64>(0, ceil_div(-left, g.dilation_cols)),
          std::min(g.filter_cols, floor_div(g.in_cols - 1 - left, g.dilation_cols) + 1)};
}

// NCHW col2im: the output columns [lo, hi) of a block whose tap kw lands inside the image, at
// input column ow * stride + shift (shift = kw * dilation - pad_left).
struct TapRun {
  i64 shift, lo, hi;
};
TapRun tap_run(const Conv2DGeometry& g, i64 kw, i64 ow0, i64 cols) {
  const i64 shift = kw * g.dilation_cols - g.pad_left;
  return {shift, std::max(ow0, ceil_div(-shift, g.stride_cols)),
          std::min(ow0 + cols, floor_div(g.in_cols - 1 - shift, g.stride_cols) + 1)};
}
// dst[ow * stride + shift] += src[ow - ow0] over the run (src holds the block's row from ow0 on).
void add_run(float* dst, const float* src, const TapRun& run, i64 ow0, i64 stride) {
  for (i64 ow = run.lo; ow < run.hi; ++ow) dst[ow * stride + run.shift] += src[ow - ow0];
}
// Interleaved: d[2i] += even[i], d[2i + 1] += odd[i] (vectorised: 7x7 stride 2 col2im 2x faster).
void add_pairs(float* __restrict d, const float* __restrict even, const float* __restrict odd, i64 count) {
  for (i64 i = 0; i < count; ++i) {
    d[2 * i] += even[i];
    d[2 * i + 1] += odd[i];
  }
}

// One filter row's taps, kw in order, onto input row `dst`: tap kw's results (from output column
// ow0 on) at src + kw * tap_stride, over runs[kw]. With `pairs` (stride 2, no dilation), taps kw
// and kw + 1 fill the even and odd columns of one run, added in pairs where both land (each input
// column takes one of them, so each sum still adds its taps in order).
void add_taps(float* dst, const float* src, i64 tap_stride, const std::vector<TapRun>& runs, i64 ow0, i64 stride,
              bool pairs) {
  const i64 taps = static_cast<i64>(runs.size());
  for (i64 kw = 0; kw < taps;) {
    const TapRun& run = runs[static_cast<std::size_t>(kw)];
    const float* here = src + kw * tap_stride;
    if (!pairs || kw + 1 == taps) {
      add_run(dst, here, run, ow0, stride);
      ++kw;
      continue;
    }
    const TapRun& next = runs[static_cast<std::size_t>(kw + 1)];
    const float* there = here + tap_stride;
    const i64 lo = std::max(run.lo, next.lo), hi = std::min(run.hi, next.hi);
    if (lo < hi) {
      add_run(dst, here, {run.shift, run.lo, lo}, ow0, 2);
      add_run(dst, there, {next.shift, next.lo, lo}, ow0, 2);
      add_pairs(dst + 2 * lo + run.shift, here + (lo - ow0), there + (lo - ow0), hi - lo);
      add_run(dst, here, {run.shift, hi, run.hi}, ow0, 2);
      add_run(dst, there, {next.shift, hi, next.hi}, ow0, 2);
    } else {
      add_run(dst, here, run, ow0, 2);
      add_run(dst, there, next, ow0, 2);
    }
    kw += 2;
  }
}

}  // namespace

bool conv2d_input_col2im_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NHWC && g.groups == 1 && g.in_depth < micro_kernels().vector_width;
}

bool conv2d_input_col2im_nchw_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NCHW && g.groups == 1 && g.in_depth < micro_kernels().vector_width;
}

void conv2d_backprop_input_col2im(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const MicroKernels& mk = micro_kernels();
  const i64 W = g.in_cols, C = g.in_depth, K = g.out_depth, KW = g.filter_cols;
  const TapColumns tc = tap_columns(g, f);
  const i64 block = std::min(l2_block_pixels(tc.row, mk.tile_rows), g.out_cols);
  const auto zero = [&](i64 n, i64 r0, i64 r1) {
    std::fill(dx + (n * g.in_rows + r0) * W * C, dx + (n * g.in_rows + r1) * W * C, 0.0f);
  };
  for_each_band(g, zero, [&](const Band& band) {
    const ScratchArray<float> columns(block * tc.row);  // written by the GEMM before the col2im reads it
    const float* a[kMaxRows];
    float* c[kMaxRows];
    const float* b = tc.ft.data();
    for (i64 oh = band.oh0; oh < band.oh1; ++oh) {
      const i64 top = oh * g.stride_rows - g.pad_top;
      const Span kh_span = rows_in_band(g, top, band);
      for (i64 ow0 = 0; ow0 < g.out_cols; ow0 += block) {
        const i64 pixels = std::min(block, g.out_cols - ow0);
        const float* dy_row = dy + ((band.n * g.out_rows + oh) * g.out_cols + ow0) * K;
        for (i64 p0 = 0; p0 < pixels; p0 += mk.tile_rows) {
          const int rows = static_cast<int>(std::min<i64>(mk.tile_rows, pixels - p0));
          for (int r = 0; r < rows; ++r) {
            a[r] = dy_row + (p0 + r) * K;
            c[r] = columns.data() + (p0 + r) * tc.row;
          }
          mk.rows(rows, tc.row, a, 0, &b, 1, K, tc.row, c, 0, false);
        }
        // col2im for the filter rows that land in the band.
        for (i64 p = 0; p < pixels; ++p) {
          const i64 left = (ow0 + p) * g.stride_cols - g.pad_left;
          const Span kw_span = cols_in_image(g, left);
          const float* col = columns.data() + p * tc.row;
          for (i64 kh = kh_span.first; kh < kh_span.end; ++kh) {
            float* dx_row = dx + (band.n * g.in_rows + top + kh * g.dilation_rows) * W * C;
            const float* src = col + kh * KW * C;
            for (i64 kw = kw_span.first; kw < kw_span.end; ++kw) {
              float* dst = dx_row + (left + kw * g.dilation_cols) * C;
              for (i64 ch = 0; ch < C; ++ch) dst[ch] += src[kw * C + ch];
            }
          }
        }
      }
    }
  });
}

void conv2d_backprop_input_col2im_nchw(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const MicroKernels& mk = micro_kernels();
  const i64 H = g.in_rows, W = g.in_cols, C = g.in_depth, K = g.out_depth, KW = g.filter_cols;
  const i64 OW = g.out_cols, plane = g.out_rows * OW, vl = mk.vector_width;  // plane: dy's pixels a filter
  const i64 width = g.filter_rows * KW * C;                                  // GEMM rows: f's rows, t * C + c
  // Blocks of `fit` pixels of the output plane, at fixed places (multiples of fit), each computed
  // from a whole vector on (a multiple of vl) to a whole vector or the plane's end: a pixel takes
  // the same lane of the same kernel, and a split row the same parts, whatever the bands (the
  // column tails run other instructions, whose bits differ).
  const i64 fit = std::min(l2_block_pixels(width, vl), ceil_div(plane, vl) * vl);
  const auto zero = [&](i64 n, i64 r0, i64 r1) {
    for (i64 ch = 0; ch < C; ++ch) std::fill(dx + ((n * C + ch) * H + r0) * W, dx + ((n * C + ch) * H + r1) * W, 0.0f);
  };
  const bool pairs = g.stride_cols == 2 && g.dilation_cols == 1;
  for_each_band(g, zero, [&](const Band& band) {
    const i64 q0 = band.oh0 * OW, q1 = band.oh1 * OW;        // the pixels of the output rows that reach the band
    const ScratchArray<float> columns(width * fit);          // written by the GEMM before the col2im reads it
    std::vector<TapRun> runs(static_cast<std::size_t>(KW));  // each tap column's run in a row's part
    const float* a[kMaxRows];
    float* c[kMaxRows];
    for (i64 b0 = q0 / fit * fit; b0 < q1; b0 += fit) {
      const i64 s = std::max(b0, q0 / vl * vl), e = std::min({b0 + fit, ceil_div(q1, vl) * vl, plane});
      const float* b = dy + band.n * K * plane + s;
      for (i64 m0 = 0; m0 < width; m0 += mk.tile_rows) {
        const int tile = static_cast<int>(std::min<i64>(mk.tile_rows, width - m0));
        for (int r = 0; r < tile; ++r) {
          a[r] = f + (m0 + r) * K;
          c[r] = columns.data() + (m0 + r) * fit;
        }
        mk.rows(tile, e - s, a, 0, &b, 1, K, plane, c, 0, false);
      }
      // col2im, output row by output row (the part of it in [s, e)): tap (kh, kw) of output
      // columns [ow0, ow1) adds to input columns stride_cols apart on input row top + kh * dilation.
      for (i64 oh = std::max(band.oh0, s / OW); oh < std::min(band.oh1, ceil_div(e, OW)); ++oh) {
        const i64 ow0 = std::max<i64>(0, s - oh * OW), ow1 = std::min(OW, e - oh * OW);
        for (i64 kw = 0; kw < KW; ++kw) runs[static_cast<std::size_t>(kw)] = tap_run(g, kw, ow0, ow1 - ow0);
        const i64 top = oh * g.stride_rows - g.pad_top;
        const Span kh_span = rows_in_band(g, top, band);
        for (i64 kh = kh_span.first; kh < kh_span.end; ++kh)
          for (i64 ch = 0; ch < C; ++ch) {
            float* dst = dx + ((band.n * C + ch) * H + top + kh * g.dilation_rows) * W;
            add_taps(dst, columns.data() + (kh * KW * C + ch) * fit + (oh * OW + ow0 - s), C * fit, runs, ow0,
                     g.stride_cols, pairs);
          }
      }
    }
  });
}

}  // namespace dagrad::cpu
