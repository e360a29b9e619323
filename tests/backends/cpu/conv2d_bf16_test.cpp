// The native bfloat16 conv kernels (AVX-512 BF16: filter gradient, Conv2D, input gradient) against
// the float64 reference kernel on a random sweep of NHWC shapes and attributes with pair, channel and
// column tails, within a bound derived from float32 accumulation and one bfloat16 rounding; their
// bitwise determinism across thread counts; and that the dispatcher uses them.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <dagrad/dagrad.hpp>

#include "support/conv_bf16_cases.hpp"

using namespace dagrad;
using namespace dagrad::bf16_conv_test;

TEST_CASE("cpu bf16 native conv kernels match the float64 reference on a random sweep", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  std::mt19937 rng(5);
  for (Op op : {Op::BackpropFilter, Op::Forward, Op::BackpropInput}) {
    for (int trial = 0; trial < 40; ++trial) check_case(op, random_case(rng, false), rng);
    for (int trial = 0; trial < 6; ++trial) check_case(op, random_case(rng, true), rng);
  }
}

TEST_CASE("cpu bf16 strips filter gradient (pixel pairs) matches the float64 reference", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  std::mt19937 rng(29);
  // Small random cases (odd and even output widths, so lone last pixels of a row) ...
  int checked = 0;
  while (checked < 40) {
    const Case cs = random_case(rng, false);
    if (!cpu::conv2d_filter_strips_apply(cs.g)) continue;
    check_case(Op::FilterStrips, cs, rng);
    ++checked;
  }
  // ... and first layers: C = 1 and 3, K across one and two 64-column groups, 7x7 stride 2; one-tile
  // filters (<= 12 rows, dy paired in registers) with a column tail and an odd output width.
  for (const auto& [hw, c, k, kernel, stride] : std::vector<std::array<i64, 5>>{
           {28, 1, 32, 3, 1}, {15, 3, 70, 7, 2}, {9, 2, 17, 5, 1}, {9, 1, 70, 3, 2}, {7, 1, 5, 3, 1}}) {
    const AttrMap attrs = {{"strides", std::vector<i64>{1, stride, stride, 1}},
                           {"padding", std::string("SAME")},
                           {"dilations", std::vector<i64>{1, 1, 1, 1}},
                           {"data_format", std::string("NHWC")},
                           {"explicit_paddings", std::vector<i64>{}}};
    const auto g =
        ops::conv2d_geometry("Conv2DBackpropFilterV2", ops::parse_conv2d_attrs("Conv2DBackpropFilterV2", attrs),
                             Shape{3, hw, hw, c}, Shape{kernel, kernel, c, k});
    REQUIRE(cpu::conv2d_filter_strips_apply(g));
    check_case(Op::FilterStrips, {g, attrs}, rng);
    const auto x = random_bf16(rng, input_shape(g).num_elements()),
               dy = random_bf16(rng, output_shape(g).num_elements());
    std::vector<bfloat16> one, three;
    tbb::task_arena(1).execute([&] { one = native(Op::FilterStrips, g, x, dy); });
    tbb::task_arena(3).execute([&] { three = native(Op::FilterStrips, g, x, dy); });
    REQUIRE(std::memcmp(one.data(), three.data(), one.size() * sizeof(bfloat16)) == 0);
  }
}

TEST_CASE("cpu bf16 strips Conv2D (window row pairs) matches the float64 reference", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  std::mt19937 rng(41);
  // First layers with windows of 48 values or more (row pairs; fewer: the widened form): odd and
  // even filter heights (a zero partner row), strides, a lone output column, column tails and
  // several 128-column groups, tiles of 8 pixels with tails; then thread invariance.
  for (const auto& [h, w, c, k, kernel, stride] : std::vector<std::array<i64, 6>>{{15, 15, 3, 70, 7, 2},
                                                                                  {9, 11, 2, 17, 5, 1},
                                                                                  {12, 1, 3, 130, 6, 1},
                                                                                  {8, 13, 3, 64, 4, 3},
                                                                                  {6, 7, 1, 40, 7, 1},
                                                                                  {10, 9, 3, 5, 3, 1}}) {
    const AttrMap attrs = {{"strides", std::vector<i64>{1, stride, stride, 1}},
                           {"padding", std::string("SAME")},
                           {"dilations", std::vector<i64>{1, 1, 1, 1}},
                           {"data_format", std::string("NHWC")},
                           {"explicit_paddings", std::vector<i64>{}}};
    const auto g = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), Shape{2, h, w, c},
                                        Shape{kernel, kernel, c, k});
    REQUIRE(cpu::conv2d_forward_strips_apply(g));
    check_case(Op::ForwardStrips, {g, attrs}, rng);
    check_thread_invariance(Op::ForwardStrips, {g, attrs}, rng);
  }
}

TEST_CASE("cpu bf16 native conv kernels handle 1x1 filters and single pixels", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  std::mt19937 rng(11);
  // One output pixel (a lone pair partner), odd channel and filter counts, a 1x1 VALID case.
  for (const auto& [n, hw, c, k, kernel] :
       std::vector<std::array<i64, 5>>{{1, 1, 7, 17, 1}, {1, 3, 5, 3, 3}, {3, 5, 49, 65, 1}}) {
    const AttrMap attrs = {{"strides", std::vector<i64>{1, 1, 1, 1}},
                           {"padding", std::string("VALID")},
                           {"dilations", std::vector<i64>{1, 1, 1, 1}},
                           {"data_format", std::string("NHWC")},
                           {"explicit_paddings", std::vector<i64>{}}};
    const auto g = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), Shape{n, hw, hw, c},
                                        Shape{kernel, kernel, c, k});
    for (Op op : {Op::BackpropFilter, Op::Forward, Op::BackpropInput}) check_case(op, {g, attrs}, rng);
  }
}

// The rows kernel rounds its float32 sums with vcvtneps2bf16 and redoes the lanes that instruction
// treats unlike Eigen: a NaN keeps its payload there, while Eigen's cast gives sign | 0x7fc0.
TEST_CASE("cpu bf16 native Conv2D and input gradient give Eigen's NaN bits", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  const AttrMap attrs = {{"strides", std::vector<i64>{1, 1, 1, 1}},
                         {"padding", std::string("VALID")},
                         {"dilations", std::vector<i64>{1, 1, 1, 1}},
                         {"data_format", std::string("NHWC")},
                         {"explicit_paddings", std::vector<i64>{}}};
  const auto g =
      ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), Shape{1, 4, 5, 20}, Shape{1, 1, 20, 40});
  std::mt19937 rng(3);
  for (Op op : {Op::Forward, Op::BackpropInput}) {
    const auto [sa, sb] = operand_shapes(op, g);
    auto a = random_bf16(rng, sa.num_elements());
    const auto b = random_bf16(rng, sb.num_elements());
    for (std::size_t i = 0; i < a.size(); i += 7)  // NaNs with payloads, both signs, quiet and signalling
      a[i] = std::bit_cast<bfloat16>(static_cast<std::uint16_t>(i % 2 ? 0x7f81 : 0xffa5));
    const auto got = native(op, g, a, b);
    i64 nans = 0;
    for (bfloat16 v : got) {
      const auto bits = std::bit_cast<std::uint16_t>(v);
      if ((bits & 0x7fff) <= 0x7f80) continue;
      ++nans;
      REQUIRE((bits & 0x7fff) == 0x7fc0);
    }
    REQUIRE(nans > 0);
  }
}

TEST_CASE("cpu bf16 native conv kernels give the same bits for 1, 2 and 3 threads", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  std::mt19937 rng(17);
  for (int trial = 0; trial < 4; ++trial) {
    const Case cs = random_case(rng, true);
    for (Op op : {Op::BackpropFilter, Op::Forward, Op::BackpropInput}) check_thread_invariance(op, cs, rng);
  }
}

TEST_CASE("cpu conv dispatch sends NHWC bf16 convs to the native path", "[cpu][conv]") {
  if (skip_without_bf16()) return;
  std::mt19937 rng(23);
  // Large enough (hundreds of terms per element) that the widening path's different summation
  // order would change some of the bfloat16 results.
  const Case cs = random_case(rng, true);
  for (Op op : {Op::BackpropFilter, Op::Forward, Op::BackpropInput}) {
    const auto [sa, sb] = operand_shapes(op, cs.g);
    const auto a = random_bf16(rng, sa.num_elements()), b = random_bf16(rng, sb.num_elements());
    // All three take AMX tiles where the CPU has them.
    const bool amx = cpu::conv2d_amx_available();
    const Op path = !amx                       ? op
                    : op == Op::BackpropFilter ? Op::FilterAmx
                    : op == Op::Forward        ? Op::ForwardAmx
                                               : Op::InputAmx;
    const auto want = native(path, cs.g, a, b);
    std::vector<bfloat16> got(want.size());
    if (op == Op::Forward)
      cpu::conv2d_forward<bfloat16>(cs.g, a.data(), b.data(), got.data());
    else if (op == Op::BackpropInput)
      cpu::conv2d_backprop_input<bfloat16>(cs.g, a.data(), b.data(), got.data());
    else
      cpu::conv2d_backprop_filter<bfloat16>(cs.g, a.data(), b.data(), got.data());
    REQUIRE(std::memcmp(got.data(), want.data(), want.size() * sizeof(bfloat16)) == 0);
  }
}
