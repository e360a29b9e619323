// The float32 NCHW Conv2D of first layers (fewer input channels than a vector holds, groups = 1,
// unit column stride) as an im2col and a GEMM, on the layout as it is:
//   columns[t * C + c][p] = x[c][row under tap t of p][column under tap t of p]   (0 in the padding)
//   y[k][p] = sum over t, c of f[t][c][k] * columns[t * C + c][p]
// The GEMM is the filter transposed (K rows of KH * KW * C) times the columns, vectorised along
// output pixels and written straight to y's planes; nchw_slabs transposed y (the largest tensor of
// a first layer) from NHWC, and took twice the time where y was not in cache (Zen 4). The im2col
// copies runs of input rows: unit column stride only (strided, its gathers cost as much as the GEMM).
//
// Tasks own blocks of output pixels at fixed places of each image's plane (multiples of the block
// size, itself a multiple of the vector width), so every pixel takes the same lane of the same
// kernel whatever the thread count. Workspace: the transposed filter, and per task one block of
// columns (sized from the L2 cache).
#include <algorithm>
#include <cstring>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/scratch_array.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

// Row t * C + c of a block of columns for output pixels [s, e) of image n: the input row under
// tap (kh, kw) of each output row in turn, zeros where the window hangs over the padding.
void fill_columns(const Conv2DGeometry& g, const float* x, i64 n, i64 kh, i64 kw, i64 ch, i64 s, i64 e, float* out) {
  const i64 OW = g.out_cols, W = g.in_cols;
  const i64 shift = kw * g.dilation_cols - g.pad_left;  // input column of output column ow: ow + shift
  for (i64 oh = s / OW; oh * OW < e; ++oh) {
    const i64 ow0 = std::max<i64>(0, s - oh * OW), ow1 = std::min(OW, e - oh * OW);
    float* dst = out + (oh * OW + ow0 - s);
    const i64 ih = oh * g.stride_rows - g.pad_top + kh * g.dilation_rows;
    if (ih < 0 || ih >= g.in_rows) {
      std::fill(dst, dst + (ow1 - ow0), 0.0f);
      continue;
    }
    const i64 lo = std::clamp(-shift, ow0, ow1), hi = std::clamp(W - shift, lo, ow1);  // inside: [lo, hi)
    std::fill(dst, dst + (lo - ow0), 0.0f);
    if (hi > lo)
      std::memcpy(dst + (lo - ow0), x + ((n * g.in_depth + ch) * g.in_rows + ih) * W + lo + shift,
                  static_cast<std::size_t>(hi - lo) * sizeof(float));
    std::fill(dst + (hi - ow0), dst + (ow1 - ow0), 0.0f);
  }
}

}  // namespace

bool conv2d_forward_im2col_nchw_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NCHW && g.groups == 1 && g.stride_cols == 1 &&
         g.in_depth < micro_kernels().vector_width;
}

void conv2d_forward_im2col_nchw(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  const MicroKernels& mk = micro_kernels();
  const i64 C = g.in_depth, K = g.out_depth, KW = g.filter_cols, plane = g.out_rows * g.out_cols;
  const i64 width = g.filter_rows * KW * C;                    // GEMM reduction: taps x channels
  std::vector<float> ft(static_cast<std::size_t>(K * width));  // ft[k][t * C + c] = f[t][c][k]
  tbb::parallel_for(i64{0}, K, [&](i64 k) {
    for (i64 j = 0; j < width; ++j) ft[static_cast<std::size_t>(k * width + j)] = f[j * K + k];
  });
  const i64 vl = mk.vector_width;
  const i64 block = std::min(l2_block_pixels(width, vl), (plane + vl - 1) / vl * vl);
  const i64 blocks = (plane + block - 1) / block;
  tbb::parallel_for(i64{0}, g.batch * blocks, [&](i64 task) {
    const i64 n = task / blocks, s = task % blocks * block, e = std::min(plane, s + block);
    const ScratchArray<float> columns(width * block);  // filled for the block before the GEMM reads it
    for (i64 kh = 0; kh < g.filter_rows; ++kh)
      for (i64 kw = 0; kw < KW; ++kw)
        for (i64 ch = 0; ch < C; ++ch)
          fill_columns(g, x, n, kh, kw, ch, s, e, columns.data() + ((kh * KW + kw) * C + ch) * block);
    const float* a[kMaxRows];
    float* c[kMaxRows];
    const float* b = columns.data();
    equal_tiles(K, mk.tile_rows, [&](i64 k0, i64 tile) {  // 32 as 5, 5, 6, 5, 5, 6: no thin tile
      for (i64 r = 0; r < tile; ++r) {
        a[r] = ft.data() + (k0 + r) * width;
        c[r] = y + (n * K + k0 + r) * plane + s;
      }
      mk.rows(static_cast<int>(tile), e - s, a, 0, &b, 1, width, block, c, 0, false);
    });
  });
}

}  // namespace dagrad::cpu
