// Shared by the native bfloat16 and AMX conv kernel tests: random NHWC cases that straddle the
// kernels' blocking, the kernels under test by name, the float64 reference and the error bound of
// float32 accumulation plus one bfloat16 rounding, and the thread-count invariance check.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <tbb/task_arena.h>

#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::bf16_conv_test {

using i64 = std::int64_t;

struct Case {
  ops::Conv2DGeometry g;
  AttrMap attrs;
};

// A random NHWC, groups = 1 case. Sizes straddle the kernel's blocking: channel tiles of 6 and
// tasks of 48 channels, columns in vectors of 16 and tasks of 64, pixels in pairs and blocks of 128.
inline Case random_case(std::mt19937& rng, bool big) {
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  for (;;) {
    const i64 stride_r = pick(1, 3), stride_c = pick(1, 3), dil_r = pick(1, 2), dil_c = pick(1, 2);
    const std::string padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[pick(0, 2)];
    AttrMap attrs = {{"strides", std::vector<i64>{1, stride_r, stride_c, 1}},
                     {"padding", padding},
                     {"dilations", std::vector<i64>{1, dil_r, dil_c, 1}},
                     {"data_format", std::string("NHWC")},
                     {"explicit_paddings", std::vector<i64>{}}};
    if (padding == "EXPLICIT")
      attrs["explicit_paddings"] = std::vector<i64>{0, 0, pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2), 0, 0};
    const i64 c = big ? pick(40, 110) : pick(1, 20), k = big ? pick(50, 140) : pick(1, 40);
    const i64 n = pick(1, 3), h = big ? pick(6, 14) : pick(1, 9), w = big ? pick(6, 14) : pick(1, 9);
    try {
      const auto g =
          ops::conv2d_geometry("Conv2DBackpropFilterV2", ops::parse_conv2d_attrs("Conv2DBackpropFilterV2", attrs),
                               Shape{n, h, w, c}, Shape{pick(1, 3), pick(1, 3), c, k});
      return {g, attrs};
    } catch (const Error&) {
      continue;  // e.g. VALID with a window larger than the input
    }
  }
}

// Random bfloat16 values in [-1, 1].
inline std::vector<bfloat16> random_bf16(std::mt19937& rng, i64 count) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<bfloat16> v(static_cast<std::size_t>(count));
  for (auto& e : v) e = static_cast<bfloat16>(u(rng));
  return v;
}

// The same values as a float64 tensor (exact), optionally their magnitudes.
inline Tensor as_f64(const std::vector<bfloat16>& v, const Shape& shape, bool magnitude) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double e = static_cast<float>(v[i]);
    d[i] = magnitude ? std::abs(e) : e;
  }
  return Tensor::from_values<double>(shape, std::span<const double>(d));
}

inline Shape input_shape(const ops::Conv2DGeometry& g) { return Shape{g.batch, g.in_rows, g.in_cols, g.in_depth}; }
inline Shape output_shape(const ops::Conv2DGeometry& g) { return Shape{g.batch, g.out_rows, g.out_cols, g.out_depth}; }
inline Shape filter_shape(const ops::Conv2DGeometry& g) {
  return Shape{g.filter_rows, g.filter_cols, g.in_depth, g.out_depth};
}

// FilterStrips, ForwardStrips: the small-channel paths (conv2d_backprop_filter_strips,
// conv2d_forward_strips); FilterAmx, ForwardAmx: the AMX paths; *Emulated: the same on emulated tiles.
enum class Op {
  Forward,
  BackpropInput,
  BackpropFilter,
  FilterStrips,
  ForwardStrips,
  FilterAmx,
  FilterAmxEmulated,
  ForwardAmx,
  ForwardAmxEmulated,
  InputAmx,
  InputAmxEmulated
};
inline bool is_forward(Op op) {
  return op == Op::Forward || op == Op::ForwardStrips || op == Op::ForwardAmx || op == Op::ForwardAmxEmulated;
}
inline bool is_input(Op op) { return op == Op::BackpropInput || op == Op::InputAmx || op == Op::InputAmxEmulated; }

// The op's two bfloat16 operands: (x, f), (f, dy) or (x, dy).
inline std::pair<Shape, Shape> operand_shapes(Op op, const ops::Conv2DGeometry& g) {
  if (is_forward(op)) return {input_shape(g), filter_shape(g)};
  if (is_input(op)) return {filter_shape(g), output_shape(g)};
  return {input_shape(g), output_shape(g)};
}

inline std::vector<bfloat16> native(Op op, const ops::Conv2DGeometry& g, const std::vector<bfloat16>& a,
                                    const std::vector<bfloat16>& b) {
  const Shape out = is_forward(op) ? output_shape(g) : is_input(op) ? input_shape(g) : filter_shape(g);
  std::vector<bfloat16> result(static_cast<std::size_t>(out.num_elements()), bfloat16(-7.0f));  // must be overwritten
  const bfloat16 *x = a.data(), *y = b.data();
  bfloat16* r = result.data();
  switch (op) {
    case Op::Forward:
      cpu::conv2d_forward_bf16(g, x, y, r);
      break;
    case Op::BackpropInput:
      cpu::conv2d_backprop_input_bf16(g, x, y, r);
      break;
    case Op::BackpropFilter:
      cpu::conv2d_backprop_filter_bf16(g, x, y, r);
      break;
    case Op::FilterStrips:
      cpu::conv2d_backprop_filter_strips<bfloat16>(g, x, y, r);
      break;
    case Op::ForwardStrips:
      cpu::conv2d_forward_strips<bfloat16>(g, x, y, r);
      break;
    case Op::FilterAmx:
      cpu::conv2d_backprop_filter_amx(g, x, y, r);
      break;
    case Op::FilterAmxEmulated:
      cpu::conv2d_backprop_filter_amx_with(g, x, y, r, cpu::amx_emulated_kernels());
      break;
    case Op::ForwardAmx:
      cpu::conv2d_forward_amx(g, x, y, r);
      break;
    case Op::ForwardAmxEmulated:
      cpu::conv2d_forward_amx_with(g, x, y, r, cpu::amx_emulated_kernels());
      break;
    case Op::InputAmx:
      cpu::conv2d_backprop_input_amx(g, x, y, r);
      break;
    case Op::InputAmxEmulated:
      cpu::conv2d_backprop_input_amx_with(g, x, y, r, cpu::amx_emulated_kernels());
      break;
  }
  return result;
}

// The float64 reference kernel on the operands (or their magnitudes).
inline Tensor reference(Op op, const Case& cs, const std::vector<bfloat16>& a, const std::vector<bfloat16>& b,
                        bool magnitude) {
  const auto [sa, sb] = operand_shapes(op, cs.g);
  const Tensor ta = as_f64(a, sa, magnitude), tb = as_f64(b, sb, magnitude);
  const EagerOptions ref{.backend = "reference"};
  if (is_forward(op)) return run_op("Conv2D", {ta, tb}, cs.attrs, ref)[0];
  if (is_input(op))
    return run_op("Conv2DBackpropInputV2", {Tensor::zeros(DType::Float64, input_shape(cs.g)), ta, tb}, cs.attrs,
                  ref)[0];
  return run_op("Conv2DBackpropFilterV2", {ta, Tensor::zeros(DType::Float64, filter_shape(cs.g)), tb}, cs.attrs,
                ref)[0];
}

inline void check_case(Op op, const Case& cs, std::mt19937& rng) {
  const auto& g = cs.g;
  const auto [sa, sb] = operand_shapes(op, g);
  const auto a = random_bf16(rng, sa.num_elements()), b = random_bf16(rng, sb.num_elements());
  // want = the exact result (float64 reference on the same values); mag = sum of |products|.
  const Tensor want = reference(op, cs, a, b, false), mag = reference(op, cs, a, b, true);
  const auto got = native(op, g, a, b);
  REQUIRE(static_cast<i64>(got.size()) == want.num_elements());
  // Products of bfloat16 values are exact in float32; a float32 sum of n of them is within
  // n * 2^-24 * mag of the exact sum (n = the terms per output, plus up to 16 chunk partials for
  // the filter gradient), and the one rounding to bfloat16 (8 significand bits, nearest even)
  // adds at most 2^-8 of the float32 sum.
  const i64 terms = is_forward(op) ? g.filter_rows * g.filter_cols * g.in_depth
                    : is_input(op) ? g.filter_rows * g.filter_cols * g.out_depth
                                   : g.batch * g.out_rows * g.out_cols + 16;
  double worst_ratio = 0, largest = 0, largest_mag = 0;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    const double w = want.data<double>()[i], m = mag.data<double>()[i];
    const double acc_err = static_cast<double>(terms) * 0x1p-24 * m * 1.01;
    const double bound = 0x1p-8 * (std::abs(w) + acc_err) + acc_err;
    const double err = std::abs(static_cast<double>(static_cast<float>(got[static_cast<std::size_t>(i)])) - w);
    largest = std::max(largest, std::abs(w));
    largest_mag = std::max(largest_mag, m);
    if (bound > 0)
      worst_ratio = std::max(worst_ratio, err / bound);
    else
      REQUIRE(err == 0);  // no products at all (all padding): exactly zero
  }
  INFO("op " << static_cast<int>(op) << " N" << g.batch << " H" << g.in_rows << " W" << g.in_cols << " C" << g.in_depth
             << " K" << g.out_depth << " k" << g.filter_rows << "x" << g.filter_cols << " s" << g.stride_rows << ","
             << g.stride_cols << " d" << g.dilation_rows << "," << g.dilation_cols << " pads " << g.pad_top << ","
             << g.pad_bottom << "," << g.pad_left << "," << g.pad_right << " out " << g.out_rows << "x" << g.out_cols
             << " worst error / bound " << worst_ratio);
  REQUIRE(worst_ratio <= 1.0);
  if (largest_mag > 0) REQUIRE(largest > 0);  // the comparison is not vacuous
}

inline bool skip_without_bf16() {
  if (cpu::conv2d_bf16_native_available()) return false;
  WARN("SKIPPED: this CPU has no AVX-512 BF16; the native bfloat16 conv path is not used here");
  return true;
}

inline bool skip_without_amx() {
  if (cpu::conv2d_amx_available()) return false;
  WARN(
      "SKIPPED: this CPU has no AMX-BF16 (or the OS did not grant tile data); the amx conv path runs here only "
      "on emulated tiles");
  return true;
}

// 1 x 1 filters, a single output pixel (a lone pair partner), channels and filters across the
// 32-row and 32/128-column blocks, pixels across the 256-pixel block and 16-pair steps, channels
// split into two groups (131: the filter gradient's groups hold at most 128), more than 256
// filters or channels (Conv2D's and the input gradient's tasks take up to 256 columns).
inline std::vector<Case> edge_cases() {
  std::vector<Case> cases;
  for (const auto& [n, hw, c, k, kernel] : std::vector<std::array<i64, 5>>{{1, 1, 7, 17, 1},
                                                                           {1, 3, 5, 3, 3},
                                                                           {3, 5, 49, 65, 1},
                                                                           {1, 17, 33, 130, 1},
                                                                           {2, 9, 16, 16, 3},
                                                                           {2, 4, 131, 20, 3},
                                                                           {1, 4, 24, 300, 1},
                                                                           {1, 4, 300, 24, 3}}) {
    const AttrMap attrs = {{"strides", std::vector<i64>{1, 1, 1, 1}},
                           {"padding", std::string("VALID")},
                           {"dilations", std::vector<i64>{1, 1, 1, 1}},
                           {"data_format", std::string("NHWC")},
                           {"explicit_paddings", std::vector<i64>{}}};
    cases.push_back({ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), Shape{n, hw, hw, c},
                                          Shape{kernel, kernel, c, k}),
                     attrs});
  }
  return cases;
}

// The same bits for 1, 2 and 3 threads.
inline void check_thread_invariance(Op op, const Case& cs, std::mt19937& rng) {
  const auto [sa, sb] = operand_shapes(op, cs.g);
  const auto a = random_bf16(rng, sa.num_elements()), b = random_bf16(rng, sb.num_elements());
  std::vector<bfloat16> first;
  for (int threads : {1, 2, 3}) {
    tbb::task_arena arena(threads);
    std::vector<bfloat16> got;
    arena.execute([&] { got = native(op, cs.g, a, b); });
    if (threads == 1)
      first = got;
    else
      REQUIRE(std::memcmp(got.data(), first.data(), got.size() * sizeof(bfloat16)) == 0);
  }
}

}  // namespace dagrad::bf16_conv_test
