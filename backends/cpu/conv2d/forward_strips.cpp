// The float32 NHWC Conv2D of small-channel layers (first layers: C below half a vector) on
// zero-padded input strips (strips.hpp). On a strip a window row's KW taps are KW * C
// contiguous values, so the rows micro-kernel runs KH taps of KW * C values instead of KH * KW
// taps of C values (3 of 3 for C = 1 in place of 9 of 1), with no per-tap padding checks:
//   y[p][0:K] = sum_kh sum_j strip[origin(p) + kh * row + j] * f[kh][j][0:K],  j < KW * C.
// Workspace per task: one strip (at most kMaxStripFloats floats).
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/strips.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kRowsPerTask = 4;                // output rows per task
constexpr i64 kColumnGroup = 128;              // output channels per micro-kernel call
constexpr i64 kMaxStripFloats = i64{1} << 16;  // 256 KiB

}  // namespace

bool conv2d_forward_strips_apply(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NHWC && g.groups == 1 && g.dilation_cols == 1 &&
         g.in_depth <= (micro_kernels().vector_width - 1) / 2 && g.filter_rows <= kMaxTaps &&
         strips_are_compact(g, kMaxStripFloats);
}

void conv2d_forward_strips(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  const MicroKernels& mk = micro_kernels();
  const i64 mr = mk.tile_rows, K = g.out_depth, OW = g.out_cols, KH = g.filter_rows;
  const i64 len = g.filter_cols * g.in_depth, step = strip_pixel_step(g);  // window row; pixel to pixel
  const Strips st = strips_of(g);
  const i64 rows = g.batch * g.out_rows;
  tbb::parallel_for(i64{0}, (rows + kRowsPerTask - 1) / kRowsPerTask, [&](i64 task) {
    std::vector<float> strip(static_cast<std::size_t>(st.floats));
    const float* a[kMaxTaps * kMaxRows];
    const float* b[kMaxTaps];
    float* c[kMaxRows];
    for (i64 q = task * kRowsPerTask; q < std::min(rows, (task + 1) * kRowsPerTask); ++q) {
      fill_strip(g, st, x, q / g.out_rows, q % g.out_rows, strip.data());
      for (i64 ow0 = 0; ow0 < OW; ow0 += mr) {
        const i64 tile = std::min(mr, OW - ow0);
        for (i64 r = 0; r < tile; ++r) c[r] = y + (q * OW + ow0 + r) * K;
        for (i64 kh = 0; kh < KH; ++kh)
          for (i64 r = 0; r < tile; ++r) a[kh * tile + r] = strip.data() + kh * st.row_floats + (ow0 + r) * step;
        for (i64 col0 = 0; col0 < K; col0 += kColumnGroup) {
          for (i64 kh = 0; kh < KH; ++kh) b[kh] = f + kh * len * K + col0;  // f row kh: [KW * C][K]
          mk.rows(static_cast<int>(tile), std::min(kColumnGroup, K - col0), a, 0, b, KH, len, K, c, col0, false);
        }
      }
    }
  });
}

}  // namespace dagrad::cpu
