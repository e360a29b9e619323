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
// strides or paddings make strips wide and mostly zeros: the other paths skip those).
inline bool strips_are_compact(const ops::Conv2DGeometry& g, std::int64_t max_floats) {
  if (g.out_cols <= 0 || g.out_rows <= 0) return false;
  using i128 = __int128;
  const i128 width = i128{g.out_cols - 1} * g.stride_cols + i128{g.filter_cols - 1} * g.dilation_cols + 1;
  return width * g.in_depth * g.filter_rows <= max_floats && width <= 2 * (g.in_cols + g.filter_cols * g.dilation_cols);
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

// Copies the window rows of output row (n, oh) into `out`, zeros where they fall in the padding.
template <class T, class Out>
void fill_strip(const ops::Conv2DGeometry& g, const Strips& st, const T* x, std::int64_t n, std::int64_t oh, Out* out) {
  const std::int64_t C = g.in_depth;
  const std::int64_t first = std::min(g.pad_left, st.width);  // padded columns on the left
  const std::int64_t copied = std::max<std::int64_t>(0, std::min(g.in_cols, st.width - first));  // real input columns
  for (std::int64_t kh = 0; kh < g.filter_rows; ++kh, out += st.row_floats) {
    const std::int64_t ih = oh * g.stride_rows - g.pad_top + kh * g.dilation_rows;
    if (ih < 0 || ih >= g.in_rows) {
      std::fill_n(out, st.row_floats, Out{});
      continue;
    }
    std::fill_n(out, first * C, Out{});
    copy_values(x + ((n * g.in_rows + ih) * g.in_cols) * C, copied * C, out + first * C);
    std::fill(out + (first + copied) * C, out + st.row_floats, Out{});
  }
}

}  // namespace dagrad::cpu
