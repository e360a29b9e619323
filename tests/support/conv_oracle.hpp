// The float64 conv oracle (the definition as one loop nest) and the helpers the CPU conv tests
// share: operand sizes, running a kernel through the dispatch or the generic path, random values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"

namespace dagrad::testing {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

using ConvOp = cpu::ConvOp;  // Forward, BackpropInput, BackpropFilter

inline i64 in_size(const Conv2DGeometry& g) { return g.batch * g.in_rows * g.in_cols * g.in_depth; }
inline i64 out_size(const Conv2DGeometry& g) { return g.batch * g.out_rows * g.out_cols * g.out_depth; }
inline i64 filt_size(const Conv2DGeometry& g) {
  return g.filter_rows * g.filter_cols * g.filter_in_depth * g.out_depth;
}

// The oracle: the definition of the convolution, one loop nest in float64, shared by all three ops.
// Calls visit(x_index, f_index, y_index) for every product x * f that contributes to y.
template <class Visit>
void for_each_product(const Conv2DGeometry& g, Visit visit) {
  const auto xs = cpu::act_strides(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const auto ys = cpu::act_strides(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const i64 kg = g.out_depth_per_group();
  for (i64 n = 0; n < g.batch; ++n)
    for (i64 oh = 0; oh < g.out_rows; ++oh)
      for (i64 ow = 0; ow < g.out_cols; ++ow)
        for (i64 k = 0; k < g.out_depth; ++k)
          for (i64 kh = 0; kh < g.filter_rows; ++kh)
            for (i64 kw = 0; kw < g.filter_cols; ++kw) {
              const i64 ih = oh * g.stride_rows - g.pad_top + kh * g.dilation_rows;
              const i64 iw = ow * g.stride_cols - g.pad_left + kw * g.dilation_cols;
              if (ih < 0 || ih >= g.in_rows || iw < 0 || iw >= g.in_cols) continue;
              for (i64 ci = 0; ci < g.filter_in_depth; ++ci) {
                const i64 c = k / kg * g.filter_in_depth + ci;
                visit(n * xs.n + ih * xs.h + iw * xs.w + c * xs.c,
                      ((kh * g.filter_cols + kw) * g.filter_in_depth + ci) * g.out_depth + k,
                      n * ys.n + oh * ys.h + ow * ys.w + k * ys.c);
              }
            }
}

// Inputs a, b of the op (x/f, f/dy or x/dy) and its exact-ish output in float64.
inline std::vector<double> oracle(ConvOp op, const Conv2DGeometry& g, const std::vector<double>& a,
                                  const std::vector<double>& b) {
  std::vector<double> out(static_cast<std::size_t>(op == ConvOp::Forward         ? out_size(g)
                                                   : op == ConvOp::BackpropInput ? in_size(g)
                                                                                 : filt_size(g)));
  for_each_product(g, [&](i64 xi, i64 fi, i64 yi) {
    auto at = [](const std::vector<double>& v, i64 i) { return v[static_cast<std::size_t>(i)]; };
    if (op == ConvOp::Forward)
      out[static_cast<std::size_t>(yi)] += at(a, xi) * at(b, fi);
    else if (op == ConvOp::BackpropInput)
      out[static_cast<std::size_t>(xi)] += at(a, fi) * at(b, yi);
    else
      out[static_cast<std::size_t>(fi)] += at(a, xi) * at(b, yi);
  });
  return out;
}

inline std::pair<i64, i64> operand_sizes(ConvOp op, const Conv2DGeometry& g) {
  if (op == ConvOp::Forward) return {in_size(g), filt_size(g)};
  if (op == ConvOp::BackpropInput) return {filt_size(g), out_size(g)};
  return {in_size(g), out_size(g)};
}

template <class T>
std::vector<T> run_cpu(ConvOp op, const Conv2DGeometry& g, const std::vector<T>& a, const std::vector<T>& b,
                       bool generic) {
  std::vector<T> out;
  const i64 size = op == ConvOp::Forward ? out_size(g) : op == ConvOp::BackpropInput ? in_size(g) : filt_size(g);
  out.assign(static_cast<std::size_t>(size), T(-7.0f));  // garbage that must be overwritten
  // generic: the table's last row, the generic path, forced by name.
  const std::string_view path = generic ? "generic" : "";
  if (op == ConvOp::Forward) {
    cpu::conv2d_forward<T>(g, a.data(), b.data(), out.data(), path);
  } else if (op == ConvOp::BackpropInput) {
    cpu::conv2d_backprop_input<T>(g, a.data(), b.data(), out.data(), path);
  } else {
    cpu::conv2d_backprop_filter<T>(g, a.data(), b.data(), out.data(), path);
  }
  return out;
}

template <class T>
std::vector<T> random_values(std::mt19937& rng, i64 n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = static_cast<T>(u(rng));
  return v;
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = static_cast<double>(static_cast<accumulator_t<T>>(v[i]));
  return d;
}

// Relative tolerance to the largest magnitude: float32 as the issue asks; half and bfloat16 are
// bounded by their output rounding (2^-11, 2^-8) plus float32 accumulation.
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, double>)
    return 1e-12;
  else if constexpr (std::is_same_v<T, float>)
    return 1e-5;
  else if constexpr (std::is_same_v<T, half>)
    return 1e-3;
  else
    return 8e-3;
}

}  // namespace dagrad::testing
