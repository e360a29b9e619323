// The CPU depthwise conv path (NHWC, groups = in_depth, channel multiplier m) against the float64
// oracle for all three ops and the float dtypes, that the dispatch takes it, bitwise determinism
// across thread counts, and the generic path's Inf/NaN pattern.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/core/shape.hpp"
#include "support/conv_oracle.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::testing;

struct DepthwiseCase {
  i64 n, h, w, c, m, kh, kw, stride_rows, stride_cols, dilation_rows, dilation_cols;
  ops::Padding padding;
  i64 pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

Conv2DGeometry geometry_of(const DepthwiseCase& d) {
  ops::Conv2DAttrs a;
  a.padding = d.padding;
  a.stride_rows = d.stride_rows, a.stride_cols = d.stride_cols;
  a.dilation_rows = d.dilation_rows, a.dilation_cols = d.dilation_cols;
  a.pad_top = d.pad_top, a.pad_bottom = d.pad_bottom, a.pad_left = d.pad_left, a.pad_right = d.pad_right;
  return ops::conv2d_geometry("Conv2D", a, Shape{d.n, d.h, d.w, d.c}, Shape{d.kh, d.kw, 1, d.c * d.m});
}

std::string describe(const Conv2DGeometry& g) {
  std::ostringstream s;
  s << "N" << g.batch << " H" << g.in_rows << " W" << g.in_cols << " C" << g.in_depth << " K" << g.out_depth << " k"
    << g.filter_rows << "x" << g.filter_cols << " s" << g.stride_rows << "," << g.stride_cols << " d" << g.dilation_rows
    << "," << g.dilation_cols << " pads " << g.pad_top << "," << g.pad_bottom << "," << g.pad_left << ","
    << g.pad_right;
  return s.str();
}

// The depthwise kernel of op, called directly (no dispatch).
std::vector<float> run_depthwise(ConvOp op, const Conv2DGeometry& g, const std::vector<float>& a,
                                 const std::vector<float>& b) {
  const i64 size = op == ConvOp::Forward ? out_size(g) : op == ConvOp::BackpropInput ? in_size(g) : filt_size(g);
  std::vector<float> out(static_cast<std::size_t>(size), -7.0f);  // garbage that must be overwritten
  const auto fn = op == ConvOp::Forward         ? cpu::conv2d_forward_depthwise
                  : op == ConvOp::BackpropInput ? cpu::conv2d_backprop_input_depthwise
                                                : cpu::conv2d_backprop_filter_depthwise;
  fn(g, a.data(), b.data(), out.data());
  return out;
}

double worst_relative(const std::vector<double>& got, const std::vector<double>& want) {
  double scale = 0, worst = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return worst / std::max(scale, 1e-30);
}

template <class T>
void check_dispatch(ConvOp op, const Conv2DGeometry& g, std::mt19937& rng) {
  const auto [na, nb] = operand_sizes(op, g);
  const auto a = random_values<T>(rng, na), b = random_values<T>(rng, nb);
  const auto got = run_cpu<T>(op, g, a, b, false);
  INFO("op " << static_cast<int>(op) << " dtype " << sizeof(T) << " " << describe(g));
  REQUIRE(worst_relative(as_double(got), oracle(op, g, as_double(a), as_double(b))) <= tolerance<T>());
}

// Every op on g: the direct kernel in float32, and the dispatch in float32, half and bfloat16.
void check_case(const Conv2DGeometry& g, std::mt19937& rng) {
  for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter}) {
    const auto [na, nb] = operand_sizes(op, g);
    const auto a = random_values<float>(rng, na), b = random_values<float>(rng, nb);
    INFO("op " << static_cast<int>(op) << " " << describe(g));
    const auto want = oracle(op, g, as_double(a), as_double(b));
    REQUIRE(worst_relative(as_double(run_depthwise(op, g, a, b)), want) <= 1e-5);
    check_dispatch<float>(op, g, rng);
    check_dispatch<half>(op, g, rng);
    check_dispatch<bfloat16>(op, g, rng);
  }
}

}  // namespace

TEST_CASE("cpu depthwise conv matches the float64 oracle", "[cpu][conv][depthwise]") {
  std::mt19937 rng(4242);
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  const ops::Padding paddings[] = {ops::Padding::Same, ops::Padding::Valid, ops::Padding::Explicit};
  int trial = 0, ran = 0;
  for (i64 c : {1, 5, 16, 37, 64})
    for (i64 m : {1, 2, 3})
      for (int rep = 0; rep < 2; ++rep, ++trial) {
        DepthwiseCase d{pick(1, 3), pick(3, 11), pick(3, 11), c,          m,          pick(1, 3),
                        pick(1, 3), pick(1, 2),  pick(1, 2),  pick(1, 2), pick(1, 2), paddings[trial % 3]};
        if (d.padding == ops::Padding::Explicit) d.pad_top = 2, d.pad_bottom = 0, d.pad_left = 1, d.pad_right = 3;
        try {
          const auto g = geometry_of(d);
          check_case(g, rng);
          ++ran;
        } catch (const Error&) {
          continue;  // a VALID window larger than the input
        }
      }
  CHECK(ran >= 24);
}

TEST_CASE("cpu depthwise conv on wide rows, long filter rows and many chunks", "[cpu][conv][depthwise]") {
  std::mt19937 rng(7);
  // Rows beyond one pixel block of the filter gradient (64), a filter row of more taps than one
  // call takes (8), and enough pixel rows for several reduction chunks.
  check_case(geometry_of({2, 9, 75, 20, 1, 3, 3, 1, 1, 1, 1, ops::Padding::Same}), rng);
  check_case(geometry_of({1, 6, 30, 17, 2, 2, 10, 1, 2, 1, 1, ops::Padding::Same}), rng);
  check_case(geometry_of({3, 24, 8, 40, 1, 5, 5, 2, 1, 1, 2, ops::Padding::Explicit, 1, 3, 4, 0}), rng);
}

TEST_CASE("cpu conv dispatch takes the depthwise path for NHWC depthwise convs", "[cpu][conv][depthwise]") {
  std::mt19937 rng(11);
  const auto g = geometry_of({2, 9, 10, 37, 2, 3, 3, 2, 1, 1, 2, ops::Padding::Same});
  REQUIRE(cpu::conv2d_depthwise_applies(g));
  auto nchw = g;
  nchw.data_format = ops::DataFormat::NCHW;
  CHECK_FALSE(cpu::conv2d_depthwise_applies(nchw));  // NCHW keeps its own fast path
  CHECK_FALSE(cpu::conv2d_depthwise_applies(geometry_of({1, 5, 5, 1, 4, 3, 3, 1, 1, 1, 1, ops::Padding::Same})));
  for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter}) {
    INFO("op " << static_cast<int>(op));
    const auto [na, nb] = operand_sizes(op, g);
    const auto a = random_values<float>(rng, na), b = random_values<float>(rng, nb);
    const auto direct = run_depthwise(op, g, a, b);
    const auto dispatched = run_cpu<float>(op, g, a, b, false);
    REQUIRE(std::memcmp(direct.data(), dispatched.data(), direct.size() * sizeof(float)) == 0);
    // half goes through the same kernel on its values widened to float32, rounded once at the end.
    const auto ah = random_values<half>(rng, na), bh = random_values<half>(rng, nb);
    const auto widen = [](const std::vector<half>& v) {
      std::vector<float> out;
      for (half e : v) out.push_back(static_cast<float>(e));
      return out;
    };
    const auto wide = run_depthwise(op, g, widen(ah), widen(bh));
    std::vector<half> want_h;
    for (float e : wide) want_h.push_back(static_cast<half>(e));
    const auto got_h = run_cpu<half>(op, g, ah, bh, false);
    REQUIRE(std::memcmp(got_h.data(), want_h.data(), want_h.size() * sizeof(half)) == 0);
  }
}

TEST_CASE("cpu depthwise conv is bitwise deterministic across thread counts", "[cpu][conv][depthwise]") {
  std::mt19937 rng(5);
  for (const auto& d : {DepthwiseCase{3, 20, 22, 37, 2, 3, 3, 1, 1, 1, 1, ops::Padding::Same},
                        DepthwiseCase{2, 17, 15, 64, 1, 3, 3, 2, 2, 2, 1, ops::Padding::Valid}}) {
    const auto g = geometry_of(d);
    for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter}) {
      const auto [na, nb] = operand_sizes(op, g);
      const auto a = random_values<float>(rng, na), b = random_values<float>(rng, nb);
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        tbb::task_arena arena(threads);
        std::vector<float> got;
        arena.execute([&] { got = run_depthwise(op, g, a, b); });
        if (threads == 1) {
          first = got;
          continue;
        }
        REQUIRE(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("cpu depthwise conv gives the generic path's Inf/NaN pattern", "[cpu][conv][depthwise]") {
  std::mt19937 rng(3);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& d : {DepthwiseCase{2, 7, 8, 19, 1, 3, 3, 1, 1, 1, 1, ops::Padding::Same},
                        DepthwiseCase{1, 9, 9, 5, 3, 3, 2, 2, 2, 1, 2, ops::Padding::Explicit, 2, 1, 0, 3}}) {
    const auto g = geometry_of(d);
    const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
    for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter}) {
      const auto [na, nb] = operand_sizes(op, g);
      auto a = random_values<float>(rng, na), b = random_values<float>(rng, nb);
      // Activations: Inf and NaN in the corner and edge pixels, which meet the padding.
      auto poison_act = [&](std::vector<float>& v, i64 rows, i64 cols, i64 depth) {
        for (i64 n = 0; n < g.batch; ++n) {
          v[static_cast<std::size_t>(((n * rows) * cols) * depth + 1 % depth)] = inf;
          v[static_cast<std::size_t>(((n * rows + rows - 1) * cols + cols - 1) * depth)] = -inf;
          v[static_cast<std::size_t>(((n * rows + rows / 2) * cols + cols - 1) * depth + depth - 1)] = nan;
        }
      };
      // Filters: Inf and NaN at the corner taps, which meet the padding at the edges.
      auto poison_filter = [&](std::vector<float>& v) {
        v[0] = inf;
        v[v.size() - 1] = nan;
        v[static_cast<std::size_t>((g.filter_rows * g.filter_cols - 1) * K)] = -inf;
      };
      if (op == ConvOp::Forward) poison_act(a, H, W, C), poison_filter(b);
      if (op == ConvOp::BackpropInput) poison_filter(a), poison_act(b, g.out_rows, g.out_cols, K);
      if (op == ConvOp::BackpropFilter) poison_act(a, H, W, C), poison_act(b, g.out_rows, g.out_cols, K);
      const auto got = run_depthwise(op, g, a, b);
      const auto want = run_cpu<float>(op, g, a, b, true);
      INFO("op " << static_cast<int>(op) << " " << describe(g));
      int specials = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << " got " << got[i] << " want " << want[i]);
        REQUIRE(std::isnan(got[i]) == std::isnan(want[i]));
        if (std::isinf(want[i])) ++specials;
        if (!std::isnan(want[i])) REQUIRE((std::isinf(got[i]) ? got[i] == want[i] : !std::isinf(want[i])));
        specials += std::isnan(want[i]);
      }
      CHECK(specials > 0);
    }
  }
}
