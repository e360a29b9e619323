// Zero-padded input strips, shared by the small-channel conv paths (filter gradient and Conv2D):
// a strip holds the filter_rows input rows one output row's windows read, each padded to a width
// that every window of the row fits, so every tap of every pixel is at a fixed offset from the
// pixel's origin (ow * stride * C) and no tap needs a bounds check.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dagrad/backends/cpu/convert.hpp"
#include "dagrad/backends/cpu/transpose.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::cpu {

// The padded strip layout shared by the copy and the tile offsets.
struct Strips {
  std::int64_t width;       // padded columns: every window of the output row fits
  std::int64_t row_floats;  // one padded input row: width * C
  std::int64_t floats;      // one output row's strip: filter_rows padded input rows
};

inline Strips strips_of(const ops::Conv2DGeometry& g) {
  const std::int64_t width = (g.out_cols - 1) * g.stride_cols + (g.filter_cols - 1) * g.dilation_cols + 1;
  return {width, width * g.in_depth, g.filter_rows * width * g.in_depth};
}

// Whether one output row's strip holds at most max_floats values and is not mostly padding (huge
// strides or paddings make strips wide and mostly zeros: the other paths skip those). In 128 bits
// and in steps that each stay below 2^82, so no attribute near INT64_MAX can wrap it.
inline bool strips_are_compact(const ops::Conv2DGeometry& g, std::int64_t max_floats) {
  if (g.out_cols <= 0 || g.out_rows <= 0 || g.filter_rows <= 0 || g.in_depth <= 0) return false;
  using i128 = __int128;
  const i128 width = i128{g.out_cols - 1} * g.stride_cols + i128{g.filter_cols - 1} * g.dilation_cols + 1;
  if (width > max_floats || width > 2 * (i128{g.in_cols} + i128{g.filter_cols} * g.dilation_cols)) return false;
  const i128 row = width * g.in_depth;  // < 2^18 * 2^63
  return row <= max_floats && row * g.filter_rows <= max_floats;
}

// Values from one pixel's window origin to the next one's on a strip: stride * C, bounded by the
// strip's row (compact strips hold it) where a row has two pixels or more; 0 for a lone pixel,
// whose stride may be anything up to INT64_MAX and is never stepped over.
inline std::int64_t strip_pixel_step(const ops::Conv2DGeometry& g) {
  return g.out_cols > 1 ? g.stride_cols * g.in_depth : 0;
}

// `count` values of `in` as Out: float32 (widened where T is half or bfloat16) or raw bfloat16 bits.
template <class T, class Out>
void copy_values(const T* in, std::int64_t count, Out* out) {
  if constexpr (std::is_same_v<T, Out> || std::is_same_v<Out, std::uint16_t>) {
    static_assert(sizeof(T) == sizeof(Out));
    std::memcpy(out, in, static_cast<std::size_t>(count) * sizeof(Out));
  } else if constexpr (std::is_same_v<T, bfloat16>) {  // a shift: inline beats a call for short rows
    for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(in[i]);
  } else {
    convert_to_float(in, out, count);
  }
}

// One value of T as Out (float32, or the raw bits where Out is std::uint16_t).
template <class Out, class T>
Out value_as(T v) {
  if constexpr (std::is_same_v<Out, std::uint16_t>) {
    static_assert(sizeof(T) == sizeof(Out));
    Out bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  } else {
    return static_cast<Out>(v);
  }
}

// Copies input row ih of image n, zero-padded to the strip's width, into `out` (zeros where the
// row falls in the padding); from NHWC or NCHW x (the row is channel-innermost either way).
template <class T, class Out>
void fill_padded_row(const ops::Conv2DGeometry& g, const Strips& st, const T* x, std::int64_t n, std::int64_t ih,
                     Out* out) {
  const std::int64_t C = g.in_depth, H = g.in_rows, W = g.in_cols;
  const std::int64_t first = std::min(g.pad_left, st.width);                             // padded columns on the left
  const std::int64_t copied = std::max<std::int64_t>(0, std::min(W, st.width - first));  // real input columns
  if (ih < 0 || ih >= H) {
    std::fill_n(out, st.row_floats, Out{});
    return;
  }
  std::fill_n(out, first * C, Out{});
  if (g.data_format == ops::DataFormat::NHWC) {
    copy_values(x + ((n * H + ih) * W) * C, copied * C, out + first * C);
  } else {
    for (std::int64_t c = 0; c < C; ++c) {
      const T* plane_row = x + ((n * C + c) * H + ih) * W;
      for (std::int64_t iw = 0; iw < copied; ++iw) out[(first + iw) * C + c] = value_as<Out>(plane_row[iw]);
    }
  }
  std::fill(out + (first + copied) * C, out + st.row_floats, Out{});
}

// Copies the window rows of output row (n, oh) into `out`.
template <class T, class Out>
void fill_strip(const ops::Conv2DGeometry& g, const Strips& st, const T* x, std::int64_t n, std::int64_t oh, Out* out) {
  for (std::int64_t kh = 0; kh < g.filter_rows; ++kh, out += st.row_floats)
    fill_padded_row(g, st, x, n, oh * g.stride_rows - g.pad_top + kh * g.dilation_rows, out);
}

// Whether the windows of consecutive output rows overlap (undilated rows, stride at most the
// window): their strips can then share one slice of input rows, output row i's strip starting
// stride_rows rows after row i - 1's, so that each input row is copied once, not once per window.
inline bool strips_share_rows(const ops::Conv2DGeometry& g) {
  return g.dilation_rows == 1 && g.stride_rows <= g.filter_rows;
}

// Copies the input rows that output rows [oh, oh + count) of image n read into `out` as one
// slice (strips_share_rows: the stride is at most filter_rows, so no product overflows); returns
// the values written.
template <class T, class Out>
std::int64_t fill_slice(const ops::Conv2DGeometry& g, const Strips& st, const T* x, std::int64_t n, std::int64_t oh,
                        std::int64_t count, Out* out) {
  const std::int64_t rows = (count - 1) * g.stride_rows + g.filter_rows, ih = oh * g.stride_rows - g.pad_top;
  for (std::int64_t r = 0; r < rows; ++r) fill_padded_row(g, st, x, n, ih + r, out + r * st.row_floats);
  return rows * st.row_floats;
}

// dy of output rows [q, q + nq) (all images in turn) as NHWC rows, pixel-major with K values
// each: dy itself for NHWC (the rows are contiguous), else transposed from NCHW into `buffer`.
// The NCHW rows of one image are contiguous in each of the K planes: one run per plane, and a
// prefetch of the run that follows (K streams at once are more than the hardware prefetcher follows).
template <class T>
const T* nhwc_dy_rows(const ops::Conv2DGeometry& g, const T* dy, std::int64_t q, std::int64_t nq, T* buffer) {
  const std::int64_t K = g.out_depth, OH = g.out_rows, OW = g.out_cols;
  if (g.data_format == ops::DataFormat::NHWC) return dy + q * OW * K;
  for (std::int64_t i = 0; i < nq;) {
    const std::int64_t n = (q + i) / OH, oh = (q + i) % OH, run = std::min(nq - i, OH - oh), pixels = run * OW;
    const T* planes = dy + (n * K * OH + oh) * OW;  // the run in plane 0; plane k is k * OH * OW on
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t b = 0; b < pixels * static_cast<std::int64_t>(sizeof(T)); b += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(planes + k * OH * OW + pixels) + b);
    // In 8 x 8 register tiles (the element-wise gather took half of a 1 -> 32 3x3 NCHW filter
    // gradient on Zen 4).
    transpose_block(planes, OH * OW, buffer + i * OW * K, K, K, pixels);
    i += run;
  }
  return buffer;
}

}  // namespace dagrad::cpu
