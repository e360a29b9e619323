// The native bfloat16 conv kernels (AVX-512 BF16: filter gradient, Conv2D, input gradient; AMX-BF16
// tiles: filter gradient) against the float64 reference kernel on a random sweep of NHWC shapes and
// attributes with pair, channel and column tails, within a bound derived from float32 accumulation
// and one bfloat16 rounding; their bitwise determinism across thread counts; and that the dispatcher
// uses them. The AMX path also runs on emulated tiles, so its packing and blocking are checked on any CPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <tbb/task_arena.h>

#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

struct Case {
  ops::Conv2DGeometry g;
  AttrMap attrs;
};

// A random NHWC, groups = 1 case. Sizes straddle the kernel's blocking: channel tiles of 6 and
// tasks of 48 channels, columns in vectors of 16 and tasks of 64, pixels in pairs and blocks of 128.
Case random_case(std::mt19937& rng, bool big) {
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
std::vector<bfloat16> random_bf16(std::mt19937& rng, i64 count) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<bfloat16> v(static_cast<std::size_t>(count));
  for (auto& e : v) e = static_cast<bfloat16>(u(rng));
  return v;
}

// The same values as a float64 tensor (exact), optionally their magnitudes.
Tensor as_f64(const std::vector<bfloat16>& v, const Shape& shape, bool magnitude) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double e = static_cast<float>(v[i]);
    d[i] = magnitude ? std::abs(e) : e;
  }
  return Tensor::from_values<double>(shape, std::span<const double>(d));
}

Shape input_shape(const ops::Conv2DGeometry& g) { return Shape{g.batch, g.in_rows, g.in_cols, g.in_depth}; }
Shape output_shape(const ops::Conv2DGeometry& g) { return Shape{g.batch, g.out_rows, g.out_cols, g.out_depth}; }
Shape filter_shape(const ops::Conv2DGeometry& g) {
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
bool is_forward(Op op) {
  return op == Op::Forward || op == Op::ForwardStrips || op == Op::ForwardAmx || op == Op::ForwardAmxEmulated;
}
bool is_input(Op op) { return op == Op::BackpropInput || op == Op::InputAmx || op == Op::InputAmxEmulated; }

// The op's two bfloat16 operands: (x, f), (f, dy) or (x, dy).
std::pair<Shape, Shape> operand_shapes(Op op, const ops::Conv2DGeometry& g) {
  if (is_forward(op)) return {input_shape(g), filter_shape(g)};
  if (is_input(op)) return {filter_shape(g), output_shape(g)};
  return {input_shape(g), output_shape(g)};
}

std::vector<bfloat16> native(Op op, const ops::Conv2DGeometry& g, const std::vector<bfloat16>& a,
                             const std::vector<bfloat16>& b) {
  const Shape out = is_forward(op) ? output_shape(g) : is_input(op) ? input_shape(g) : filter_shape(g);
  std::vector<bfloat16> result(static_cast<std::size_t>(out.num_elements()), bfloat16(-7.0f));  // must be overwritten
  if (op == Op::Forward)
    cpu::conv2d_forward_bf16(g, a.data(), b.data(), result.data());
  else if (op == Op::BackpropInput)
    cpu::conv2d_backprop_input_bf16(g, a.data(), b.data(), result.data());
  else if (op == Op::BackpropFilter)
    cpu::conv2d_backprop_filter_bf16(g, a.data(), b.data(), result.data());
  else if (op == Op::FilterAmx)
    cpu::conv2d_backprop_filter_amx(g, a.data(), b.data(), result.data());
  else if (op == Op::FilterAmxEmulated)
    cpu::conv2d_backprop_filter_amx_with(g, a.data(), b.data(), result.data(), cpu::amx_emulated_kernels());
  else if (op == Op::ForwardStrips)
    cpu::conv2d_forward_strips<bfloat16>(g, a.data(), b.data(), result.data());
  else if (op == Op::ForwardAmx)
    cpu::conv2d_forward_amx(g, a.data(), b.data(), result.data());
  else if (op == Op::ForwardAmxEmulated)
    cpu::conv2d_forward_amx_with(g, a.data(), b.data(), result.data(), cpu::amx_emulated_kernels());
  else if (op == Op::InputAmx)
    cpu::conv2d_backprop_input_amx(g, a.data(), b.data(), result.data());
  else if (op == Op::InputAmxEmulated)
    cpu::conv2d_backprop_input_amx_with(g, a.data(), b.data(), result.data(), cpu::amx_emulated_kernels());
  else
    cpu::conv2d_backprop_filter_strips<bfloat16>(g, a.data(), b.data(), result.data());
  return result;
}

// The float64 reference kernel on the operands (or their magnitudes).
Tensor reference(Op op, const Case& cs, const std::vector<bfloat16>& a, const std::vector<bfloat16>& b,
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

void check_case(Op op, const Case& cs, std::mt19937& rng) {
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

bool skip_without_bf16() {
  if (cpu::conv2d_bf16_native_available()) return false;
  WARN("SKIPPED: this CPU has no AVX-512 BF16; the native bfloat16 conv path is not used here");
  return true;
}

bool skip_without_amx() {
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
std::vector<Case> edge_cases() {
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
void check_thread_invariance(Op op, const Case& cs, std::mt19937& rng) {
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

}  // namespace

TEST_CASE("cpu AMX conv paths on emulated tiles match the float64 reference", "[cpu][conv][amx]") {
  std::mt19937 rng(41);
  for (Op op : {Op::FilterAmxEmulated, Op::ForwardAmxEmulated, Op::InputAmxEmulated}) {
    for (int trial = 0; trial < 16; ++trial) check_case(op, random_case(rng, false), rng);
    for (int trial = 0; trial < 2; ++trial) check_case(op, random_case(rng, true), rng);
    for (const Case& cs : edge_cases()) check_case(op, cs, rng);
    check_thread_invariance(op, random_case(rng, true), rng);
  }
}

TEST_CASE("cpu AMX tile batch emulation: pair order, operand order, denormals", "[cpu][amx]") {
  const auto bits = [](float v) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16); };
  const auto word = [&](float even, float odd) { return std::uint32_t{bits(even)} | std::uint32_t{bits(odd)} << 16; };
  const auto run = [](const std::vector<std::uint16_t>& a, const std::vector<std::uint32_t>& b, float c) {
    const cpu::AmxOperands operands[2] = {{a.data(), 32, b.data()}, {a.data() + 32, 32, b.data() + 16}};
    cpu::amx_emulated_kernels().batch(1, 1, operands, 2, 1, &c, 1);
    return c;
  };
  std::vector<std::uint16_t> a(64, 0);
  std::vector<std::uint32_t> b(32, 0);
  // 1 + 2^24 (the even product) rounds the 1 away (ties to even) before the odd product cancels
  // the 2^24: the order of the two products is part of the arithmetic.
  a[0] = a[1] = bits(0x1p24f);
  b[0] = word(1.0f, -1.0f);
  CHECK(run(a, b, 1.0f) == 0.0f);
  // Operand pairs in order: pair 0 of the second operand (2^24 * -1) comes after the first's.
  b[0] = word(1.0f, 0.0f);
  a[32] = bits(0x1p24f);
  b[16] = word(-1.0f, 0.0f);
  CHECK(run(a, b, 1.0f) == 0.0f);
  // A denormal bfloat16 reads as zero; a denormal sum is flushed.
  std::fill(a.begin(), a.end(), 0);
  std::fill(b.begin(), b.end(), 0);
  a[0] = bits(0x1p-130f);
  b[0] = word(1.0f, 0.0f);
  CHECK(run(a, b, 0.0f) == 0.0f);
  a[0] = bits(0x1p-100f);
  b[0] = word(0x1p-30f, 0.0f);
  CHECK(run(a, b, 0.0f) == 0.0f);
  a[0] = bits(0.5f);
  CHECK(run(a, b, 0.0f) == 0x1p-31f);  // and a normal one is not
}

TEST_CASE("cpu AMX conv paths on the tiles match the float64 reference", "[cpu][conv][amx]") {
  if (skip_without_amx()) return;
  std::mt19937 rng(43);
  for (Op op : {Op::FilterAmx, Op::ForwardAmx, Op::InputAmx}) {
    for (int trial = 0; trial < 30; ++trial) check_case(op, random_case(rng, trial % 5 == 0), rng);
    for (const Case& cs : edge_cases()) check_case(op, cs, rng);
    check_thread_invariance(op, random_case(rng, true), rng);
  }
}

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
