// The float32 NHWC filter gradient for small-channel layers (the whole filter gradient is a few
// register tiles tall: first layers with C = 1 or 3): df[r][k] = sum_p x_r[p] * dy[p][k].
//
// Each output row's window rows are copied, zero-padded, into a strip of filter_rows input rows
// of padded width; on a strip every tap of every pixel is at a fixed offset from the pixel's
// origin, so the grid micro-kernel walks a whole block of output rows with no per-pixel
// bookkeeping, and its tiles hold up to kMaxGridRows (tap, channel) rows. Copying costs
// KH * C floats per pixel against 2 * KH * KW * C * K flops. Workspace per task: one block of
// strips (about kPixelBlock pixels), plus at most 16 partial filters summed in a fixed order.
// half and bfloat16 are widened while strips and dy blocks are copied (no whole-tensor copies):
// bitwise the float32 path on the widened tensors, rounded once.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d_kernels.hpp"
#include "dagrad/backends/cpu/convert.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/reduction_partials.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kMaxStripRows = 160;             // filter gradient rows (KH * KW * C) this path takes at most
constexpr i64 kPixelBlock = 128;               // pixels per block of strips: dy's block stays in L1
constexpr i64 kFilterColumns = 64;             // df columns per micro-kernel call
constexpr i64 kMaxBlockFloats = i64{1} << 18;  // strips per task: 1 MiB at most

// The padded strip layout shared by the copy and the tile offsets.
struct Strips {
  i64 width;       // padded columns: every window of the output row fits
  i64 row_floats;  // one padded input row: width * C
  i64 floats;      // one output row's strip: filter_rows padded input rows
};

Strips strips_of(const Conv2DGeometry& g) {
  const i64 width = (g.out_cols - 1) * g.stride_cols + (g.filter_cols - 1) * g.dilation_cols + 1;
  return {width, width * g.in_depth, g.filter_rows * width * g.in_depth};
}

// float32 copies of `count` values (widened where T is half or bfloat16).
template <class T>
void copy_as_float(const T* in, i64 count, float* out) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(out, in, static_cast<std::size_t>(count) * sizeof(float));
  } else if constexpr (std::is_same_v<T, bfloat16>) {  // a shift: inline beats a call for short rows
    for (i64 i = 0; i < count; ++i) out[i] = static_cast<float>(in[i]);
  } else {
    convert_to_float(in, out, count);
  }
}

// Copies the window rows of output row (n, oh) into `out`, zeros where they fall in the padding.
template <class T>
void fill_strip(const Conv2DGeometry& g, const Strips& st, const T* x, i64 n, i64 oh, float* out) {
  const i64 C = g.in_depth;
  const i64 first = std::min(g.pad_left, st.width);                            // padded columns on the left
  const i64 copied = std::max<i64>(0, std::min(g.in_cols, st.width - first));  // real input columns
  for (i64 kh = 0; kh < g.filter_rows; ++kh, out += st.row_floats) {
    const i64 ih = oh * g.stride_rows - g.pad_top + kh * g.dilation_rows;
    if (ih < 0 || ih >= g.in_rows) {
      std::fill_n(out, st.row_floats, 0.0f);
      continue;
    }
    std::fill_n(out, first * C, 0.0f);
    copy_as_float(x + ((n * g.in_rows + ih) * g.in_cols) * C, copied * C, out + first * C);
    std::fill(out + (first + copied) * C, out + st.row_floats, 0.0f);
  }
}

}  // namespace

bool conv2d_filter_strips_apply(const Conv2DGeometry& g) {
  if (g.data_format != ops::DataFormat::NHWC || g.groups != 1 || g.out_cols <= 0 || g.out_rows <= 0) return false;
  if (g.filter_rows * g.filter_cols * g.in_depth > kMaxStripRows) return false;
  // Huge strides or paddings make strips wide and mostly zeros: the segment path skips those.
  using i128 = __int128;
  const i128 width = i128{g.out_cols - 1} * g.stride_cols + i128{g.filter_cols - 1} * g.dilation_cols + 1;
  return width * g.in_depth * g.filter_rows <= kMaxBlockFloats &&
         width <= 2 * (g.in_cols + g.filter_cols * g.dilation_cols);
}

template <class T>
void conv2d_backprop_filter_strips(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  const MicroKernels& mk = micro_kernels();
  const i64 C = g.in_depth, K = g.out_depth, OW = g.out_cols;
  const i64 rows = g.filter_rows * g.filter_cols * C, fsize = rows * K;
  const Strips st = strips_of(g);
  // Offset of df row (kh, kw, c) from a pixel's window origin on its strip.
  std::vector<long long> offset(static_cast<std::size_t>(rows));
  for (i64 kh = 0; kh < g.filter_rows; ++kh)
    for (i64 kw = 0; kw < g.filter_cols; ++kw)
      for (i64 c = 0; c < C; ++c)
        offset[static_cast<std::size_t>((kh * g.filter_cols + kw) * C + c)] =
            kh * st.row_floats + kw * g.dilation_cols * C + c;
  const i64 pixel_rows = g.batch * g.out_rows;
  const i64 block_rows = std::max<i64>(1, std::min(kPixelBlock / OW, kMaxBlockFloats / st.floats));
  const i64 chunks = filter_reduction_chunks(pixel_rows, 1, fsize * 4);
  float* direct = nullptr;  // chunk 0 sums straight into df where df is float32
  if constexpr (std::is_same_v<T, float>) direct = df;
  const ReductionPartials<float> partial(chunks, fsize, direct);
  tbb::parallel_for(i64{0}, chunks, [&](i64 chunk) {
    float* d = partial.chunk(chunk);
    std::fill_n(d, fsize, 0.0f);
    std::vector<float> strips(static_cast<std::size_t>(block_rows * st.floats));
    std::vector<float> dy_block(std::is_same_v<T, float> ? 0 : static_cast<std::size_t>(block_rows * OW * K));
    const i64 q_end = pixel_rows * (chunk + 1) / chunks;
    for (i64 q = pixel_rows * chunk / chunks; q < q_end; q += block_rows) {
      const i64 nq = std::min(block_rows, q_end - q);
      for (i64 i = 0; i < nq; ++i)
        fill_strip(g, st, x, (q + i) / g.out_rows, (q + i) % g.out_rows, strips.data() + i * st.floats);
      const T* dy_rows = dy + q * OW * K;  // the block's dy rows are contiguous in NHWC
      const float* y = nullptr;
      if constexpr (std::is_same_v<T, float>)
        y = dy_rows;
      else
        convert_to_float(dy_rows, dy_block.data(), nq * OW * K), y = dy_block.data();
      for (i64 c0 = 0; c0 < K; c0 += kFilterColumns) {
        const i64 cn = std::min(kFilterColumns, K - c0);
        const i64 cap = mk.grid_max_rows(cn), tiles = (rows + cap - 1) / cap;
        for (i64 tile = 0; tile < tiles; ++tile) {  // tiles of nearly equal height
          const i64 a = rows * tile / tiles, b = rows * (tile + 1) / tiles;
          mk.grid(static_cast<int>(b - a), cn, strips.data(), offset.data() + a, g.stride_cols * C, st.floats, OW, nq,
                  y + c0, K, d + a * K + c0, K);
        }
      }
    }
  });
  partial.sum_to(df);
}

template void conv2d_backprop_filter_strips<float>(const Conv2DGeometry&, const float*, const float*, float*);
template void conv2d_backprop_filter_strips<half>(const Conv2DGeometry&, const half*, const half*, half*);
template void conv2d_backprop_filter_strips<bfloat16>(const Conv2DGeometry&, const bfloat16*, const bfloat16*,
                                                      bfloat16*);

}  // namespace dagrad::cpu
