// NCHW 1x1 convolutions without strides or padding are one GEMM per image, on the layout as it is:
// Conv2D y[n] (K x HW) = f^T (K x C) . x[n] (C x HW), the input gradient dx[n] (C x HW) = f (C x K)
// . dy[n] (K x HW), f being HWIO's C x K matrix. No transposes of the activations (nchw_slabs would
// move both through memory once more) and no panels (nchw_fast copies its rows).
#include <algorithm>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/int_division.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/transpose.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

// A task: one image's output rows of one group of row tiles (kGroupTiles tiles), swept along the
// columns, kColumns at a time: each output row is written front to back (a few streams the
// hardware prefetches, where tasks of column blocks stalled on write misses scattered over all
// rows) and each block of b, 64 floats of up to kReduce rows (32 KiB), is read from L1 by every
// tile of the group.
constexpr i64 kColumns = 64;
constexpr i64 kReduce = 128;
constexpr i64 kGroupTiles = 8;

// c[n] (m x cols) = a (m x len) . b[n] (len x cols) for every image n; each output element summed
// over reduction blocks in order: deterministic.
void gemm_per_image(const float* a, i64 m, i64 len, const float* b, i64 images, i64 cols, float* c) {
  const MicroKernels& mk = micro_kernels();
  const i64 group_rows = kGroupTiles * mk.tile_rows, groups = ceil_div(m, group_rows);
  tbb::parallel_for(i64{0}, images * groups, [&](i64 task) {
    const i64 n = task / groups, g0 = task % groups * group_rows, g1 = std::min(m, g0 + group_rows);
    const float* a_rows[kMaxRows];
    float* c_rows[kMaxRows];
    for (i64 p0 = 0; p0 < cols; p0 += kColumns) {
      const i64 np = std::min(kColumns, cols - p0);
      for (i64 l0 = 0; l0 < len; l0 += kReduce) {
        const float* b_block = b + (n * len + l0) * cols + p0;
        for (i64 m0 = g0; m0 < g1; m0 += mk.tile_rows) {
          const i64 rows = std::min<i64>(mk.tile_rows, g1 - m0);
          for (i64 r = 0; r < rows; ++r) {
            a_rows[r] = a + (m0 + r) * len;
            c_rows[r] = c + (n * m + m0 + r) * cols;
          }
          mk.rows(static_cast<int>(rows), np, a_rows, l0, &b_block, 1, std::min(kReduce, len - l0), cols, c_rows, p0,
                  l0 > 0);
        }
      }
    }
  });
}

}  // namespace

bool conv2d_nchw_pointwise_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NCHW && g.groups == 1 && g.filter_rows == 1 && g.filter_cols == 1 &&
         g.stride_rows == 1 && g.stride_cols == 1 && g.pad_top == 0 && g.pad_bottom == 0 && g.pad_left == 0 &&
         g.pad_right == 0;
}

void conv2d_forward_nchw_pointwise(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  FloatBuffer ft(g.in_depth * g.out_depth);
  transpose_images(f, 1, g.in_depth, g.out_depth, ft.data());
  gemm_per_image(ft.data(), g.out_depth, g.in_depth, x, g.batch, g.in_rows * g.in_cols, y);
}

void conv2d_backprop_input_nchw_pointwise(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  gemm_per_image(f, g.in_depth, g.out_depth, dy, g.batch, g.in_rows * g.in_cols, dx);
}

}  // namespace dagrad::cpu
