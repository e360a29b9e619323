// Random conv cases for the CUDA kernel tests: every padding mode, layout, stride, dilation and
// group count, with small sizes, and integer-valued tensors whose conv sums are exact in float.
#pragma once

#include <array>
#include <random>
#include <vector>

#include "dagrad/core/error.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::testing {

struct ConvCase {
  ops::Conv2DOptions options;
  Shape input, filter;
  ops::Conv2DGeometry geometry;
};

struct ConvCaseLimits {
  std::int64_t channel_multiple = 1;  // channels per group are multiples of this
  std::int64_t max_in_channels = 20, max_out_channels = 70, max_groups = 3;
};

inline ConvCase random_conv_case(std::mt19937& rng, const ConvCaseLimits& limits = {}) {
  using i64 = std::int64_t;
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  for (;;) {
    ConvCase c;
    const bool nchw = pick(0, 1) == 1;
    c.options.data_format = nchw ? "NCHW" : "NHWC";
    c.options.padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[pick(0, 2)];
    const i64 sr = pick(1, 3), sc = pick(1, 3), dr = pick(1, 2), dc = pick(1, 2);
    c.options.strides = nchw ? std::vector<i64>{1, 1, sr, sc} : std::vector<i64>{1, sr, sc, 1};
    c.options.dilations = nchw ? std::vector<i64>{1, 1, dr, dc} : std::vector<i64>{1, dr, dc, 1};
    if (c.options.padding == "EXPLICIT") {
      const i64 t = pick(0, 2), b = pick(0, 2), l = pick(0, 2), r = pick(0, 2);
      c.options.explicit_paddings =
          nchw ? std::vector<i64>{0, 0, 0, 0, t, b, l, r} : std::vector<i64>{0, 0, t, b, l, r, 0, 0};
    }
    const i64 step = limits.channel_multiple;
    const i64 groups = pick(1, limits.max_groups);
    const i64 cg = step * pick(1, limits.max_in_channels / step), kg = step * pick(1, limits.max_out_channels / step);
    const i64 n = pick(1, 3), h = pick(1, 10), w = pick(1, 10), kh = pick(1, 3), kw = pick(1, 3);
    c.input = nchw ? Shape{n, groups * cg, h, w} : Shape{n, h, w, groups * cg};
    c.filter = Shape{kh, kw, cg, groups * kg};
    try {
      const auto attrs = ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(c.options));
      c.geometry = ops::conv2d_geometry("Conv2D", attrs, c.input, c.filter);
      return c;
    } catch (const Error&) {
      continue;  // e.g. VALID with a window larger than the input
    }
  }
}

// Integers in [-4, 4], as float64.
inline Tensor random_small_integers(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::uniform_int_distribution<int> dist(-4, 4);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

}  // namespace dagrad::testing
