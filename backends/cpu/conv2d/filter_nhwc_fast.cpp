// The fast float32 NHWC filter gradient (any stride, dilation, padding and groups) on the
// register-tiled "pixels" micro-kernel: df[t][c][k] = sum over pixels p of x_t[p][c] * dy[p][k].
//
// Rows of df are (tap, channel) pairs. A segment is a run of rows that sits contiguously in one
// input row: with dilation_cols = 1 and groups = 1 a whole filter row (KW taps x C channels), else
// one tap. The micro-kernel reads interior pixels straight from x; only pixels whose segment
// crosses the left or right padding are copied, zero-filled, into a per-task scratch panel. So
// small-channel layers (C = 1 or 3) still get tall register tiles, and nothing is packed twice.
// Workspace: the scratch panel (kPixelBlock x kRowGroup floats per task) and, for large
// reductions, at most 16 partial filters (none beyond 64 MiB) summed in a fixed order.
#include <algorithm>
#include <cstring>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/scratch_array.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

// Pixels per pass: fewer passes over the df slab (64 measured slower; 256 against 128, 3x3 stride
// 2 layers of 64 and 128 channels 1.04-1.05x on Zen 4, the same bits: each sum adds its pixels in
// order whatever the blocks).
constexpr i64 kPixelBlock = 256;
constexpr i64 kRowGroup = 64;       // df rows per task at most
constexpr i64 kFilterColumns = 64;  // df columns per micro-kernel call (4 AVX-512 registers)

// How the (tap, channel) rows of one group's filter gradient split into segments.
struct Segments {
  i64 taps_each;  // filter taps per segment (1, or KW when a filter row is contiguous in x)
  i64 rows;       // rows per segment: taps_each * channels per group
  i64 count;      // segments: KH * KW / taps_each
};

Segments segments_of(const Conv2DGeometry& g) {
  const bool whole_rows = g.dilation_cols == 1 && g.groups == 1;
  const i64 taps_each = whole_rows ? g.filter_cols : 1;
  return {taps_each, taps_each * g.filter_in_depth, g.filter_rows * g.filter_cols / taps_each};
}

// The output pixels of one block, decoded once (no divisions in the per-segment loops).
struct PixelBlock {
  i64 size = 0;
  i64 top[kPixelBlock];     // oh * stride - pad_top: the window's first input row
  i64 left[kPixelBlock];    // ow * stride - pad_left: its first input column
  i64 image[kPixelBlock];   // n * in_rows: input rows before the pixel's image
  i64 dy_row[kPixelBlock];  // offset of dy[p][0]
};

void decode_block(const Conv2DGeometry& g, i64 p0, i64 p1, PixelBlock& b) {
  const i64 per_image = g.out_rows * g.out_cols;
  i64 n = p0 / per_image, oh = p0 % per_image / g.out_cols, ow = p0 % g.out_cols;
  b.size = p1 - p0;
  for (i64 i = 0; i < b.size; ++i) {
    b.top[i] = oh * g.stride_rows - g.pad_top;
    b.left[i] = ow * g.stride_cols - g.pad_left;
    b.image[i] = n * g.in_rows;  // offsets are formed only for positions inside x: no overflow
    b.dy_row[i] = (p0 + i) * g.out_depth;
    if (++ow == g.out_cols) {
      ow = 0;
      if (++oh == g.out_rows) oh = 0, ++n;
    }
  }
}

// Copies rows [r0, r1) of a segment that starts at input column iw (taps dilation_cols apart)
// from the input row `row`, writing zeros where a tap falls in the padding.
void pack_edge(const Conv2DGeometry& g, i64 c_per_tap, const float* row, i64 iw, i64 r0, i64 r1, float* out) {
  for (i64 r = r0; r < r1;) {
    const i64 tap = r / c_per_tap, c = r % c_per_tap, run = std::min(r1 - r, c_per_tap - c);
    const i64 col = iw + tap * g.dilation_cols;
    if (col < 0 || col >= g.in_cols)
      std::fill_n(out + (r - r0), run, 0.0f);
    else
      std::memcpy(out + (r - r0), row + col * g.in_depth + c, static_cast<std::size_t>(run) * sizeof(float));
    r += run;
  }
}

}  // namespace

void conv2d_backprop_filter_fast(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const MicroKernels& mk = micro_kernels();
  const i64 mr = mk.tile_rows;
  const i64 C = g.in_depth, K = g.out_depth, W = g.in_cols, H = g.in_rows;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group();
  const Segments seg = segments_of(g);
  const i64 fsize = seg.count * seg.rows * K;
  // Row groups of nearly equal size, so no task gets a thin remainder.
  const i64 row_groups = (seg.rows + kRowGroup - 1) / kRowGroup;
  const i64 row_group = (seg.rows + row_groups - 1) / std::max<i64>(row_groups, 1);
  const i64 col_groups = (kg + kFilterColumns - 1) / kFilterColumns;
  const i64 per_chunk = g.groups * row_groups;
  const i64 chunks = filter_reduction_chunks(g.batch * g.out_rows, per_chunk, fsize * 4);
  const ReductionPartials<float> partial(chunks, fsize, df);
  const i64 pixel_rows = g.batch * g.out_rows;
  // A task owns a slab of rows (all of its group's columns) of every segment of one chunk's
  // partial filter. Pixel blocks are its outer loop; each block's pointer lists serve all column
  // groups and register tiles, while a column group's block of dy stays in cache.
  tbb::parallel_for(i64{0}, chunks * per_chunk, [&](i64 task) {
    const i64 chunk = task / per_chunk, group = task % per_chunk / row_groups, rg = task % row_groups;
    const i64 r0 = rg * row_group, r1 = std::min(seg.rows, r0 + row_group), nrows = r1 - r0;
    const i64 k0 = group * kg;
    float* d = partial.chunk(chunk);
    for (i64 s = 0; s < seg.count; ++s)
      for (i64 r = r0; r < r1; ++r) std::fill_n(d + (s * seg.rows + r) * K + k0, kg, 0.0f);
    // Register tiles of nearly equal height (mr at most) cover the task's rows.
    const i64 tiles = (nrows + mr - 1) / mr;
    const ScratchArray<float> scratch(kPixelBlock * nrows);  // edge pixels' panels, each written before read
    PixelBlock block;
    const float* xs[kPixelBlock];
    const float* ys[kPixelBlock];
    // Chunk boundaries fall on whole output rows, as filter_reduction_chunks assumed.
    const i64 p_end = pixel_rows * (chunk + 1) / chunks * g.out_cols;
    for (i64 pb = pixel_rows * chunk / chunks * g.out_cols; pb < p_end; pb += kPixelBlock) {
      decode_block(g, pb, std::min(p_end, pb + kPixelBlock), block);
      for (i64 s = 0; s < seg.count; ++s) {
        const i64 t = s * seg.taps_each, dh = t / g.filter_cols * g.dilation_rows,
                  dw = t % g.filter_cols * g.dilation_cols;
        const i64 span = (seg.taps_each - 1) * g.dilation_cols;  // first to last tap column
        i64 m = 0;
        for (i64 i = 0; i < block.size; ++i) {
          const i64 ih = block.top[i] + dh, iw = block.left[i] + dw;
          if (ih < 0 || ih >= H) continue;  // the row is padding: adds nothing
          // The group's channels of input row ih (the edge copy needs the group offset too).
          const float* row = x + (block.image[i] + ih) * W * C + group * cg;
          if (iw >= 0 && iw + span < W) {
            xs[m] = row + iw * C + r0;
          } else {
            if (iw + span < 0 || iw >= W) continue;  // all in the padding
            float* panel = scratch.data() + m * nrows;
            pack_edge(g, cg, row, iw, r0, r1, panel);
            xs[m] = panel;
          }
          ys[m++] = dy + (block.dy_row[i] + k0);
        }
        if (m == 0) continue;
        float* ds = d + (s * seg.rows + r0) * K + k0;
        for (i64 cgi = 0; cgi < col_groups; ++cgi) {
          const i64 c0 = cgi * kFilterColumns, cn = std::min(kFilterColumns, kg - c0);
          for (i64 tile = 0; tile < tiles; ++tile) {
            const i64 a = nrows * tile / tiles, b = nrows * (tile + 1) / tiles;
            mk.pixels(static_cast<int>(b - a), cn, xs, a, ys, c0, m, ds + a * K + c0, K);
          }
        }
      }
    }
  });
  partial.sum_to(df);
}

}  // namespace dagrad::cpu
