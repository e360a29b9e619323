// Hostile conv geometry through run_op: strides, dilations and paddings near INT64_MAX, empty
// outputs with a huge dimension, huge filters. The CPU kernels must match the reference kernels
// (no wrapped index, no write outside a buffer: ASan and UBSan halt on either), and the cases
// whose old cost was minutes (or whose workspace was hundreds of MB) must finish at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dagrad/core/eager.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;
constexpr i64 kMax = std::numeric_limits<i64>::max();

Tensor random_tensor(std::mt19937& rng, const Shape& shape, DType dtype) {
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& e : v) e = u(rng);
  return Tensor::from_values<float>(shape, std::span<const float>(v)).cast(dtype);
}

double tolerance(DType d) {
  return d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-5 : d == DType::Half ? 2e-3 : 1.6e-2;
}

// Attributes in NHWC order (h, w); converted to the data format's order.
struct Case {
  std::string name;
  Shape input, filter;  // input NHWC; filter HWIO
  i64 sh = 1, sw = 1, dh = 1, dw = 1;
  std::string padding = "VALID";
  i64 top = 0, bottom = 0, left = 0, right = 0;  // EXPLICIT
};

AttrMap attrs_of(const Case& c, bool nchw) {
  std::vector<i64> pads;
  if (c.padding == "EXPLICIT") {
    pads.assign(8, 0);
    const int h = nchw ? 2 : 1, w = nchw ? 3 : 2;
    pads[2 * h] = c.top, pads[2 * h + 1] = c.bottom, pads[2 * w] = c.left, pads[2 * w + 1] = c.right;
  }
  return {{"strides", nchw ? std::vector<i64>{1, 1, c.sh, c.sw} : std::vector<i64>{1, c.sh, c.sw, 1}},
          {"dilations", nchw ? std::vector<i64>{1, 1, c.dh, c.dw} : std::vector<i64>{1, c.dh, c.dw, 1}},
          {"padding", c.padding},
          {"explicit_paddings", pads},
          {"data_format", std::string(nchw ? "NCHW" : "NHWC")}};
}

Shape in_format(const Shape& nhwc, bool nchw) { return nchw ? Shape{nhwc[0], nhwc[3], nhwc[1], nhwc[2]} : nhwc; }

void require_close(const Tensor& got, const Tensor& want, DType dtype) {
  REQUIRE(got.shape() == want.shape());
  double worst = 0, scale = 0;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    worst = std::max(worst, std::abs(got.value_as_double(i) - want.value_as_double(i)));
    scale = std::max(scale, std::abs(want.value_as_double(i)));
  }
  INFO("worst " << worst << " scale " << scale);
  REQUIRE(worst <= tolerance(dtype) * std::max(scale, 1e-30));
}

// Conv2D and both V2 gradients on the CPU kernels against the reference kernels.
void check_all_ops(const Case& c, bool nchw, DType dtype) {
  INFO(c.name << (nchw ? " NCHW " : " NHWC ") << dtype_name(dtype));
  std::mt19937 rng(7);
  const AttrMap attrs = attrs_of(c, nchw);
  const Tensor x = random_tensor(rng, in_format(c.input, nchw), dtype);
  const Tensor f = random_tensor(rng, c.filter, dtype);
  const Tensor y_ref = run_op("Conv2D", {x, f}, attrs, {.name = {}, .backend = "reference"})[0];
  require_close(run_op("Conv2D", {x, f}, attrs)[0], y_ref, dtype);
  const Tensor dy = random_tensor(rng, y_ref.shape(), dtype);
  for (const char* op : {"Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"}) {
    INFO(op);
    const Tensor want = run_op(op, {x, f, dy}, attrs, {.name = {}, .backend = "reference"})[0];
    require_close(run_op(op, {x, f, dy}, attrs)[0], want, dtype);
  }
}

}  // namespace

TEST_CASE("cpu conv kernels match the reference on strides, dilations and paddings near INT64_MAX",
          "[cpu][conv][hostile]") {
  const std::vector<Case> cases = {
      // The case: the input gradient's stride-phase order stepped ih += INT64_MAX.
      {"stride rows max", Shape{1, 5, 5, 1}, Shape{3, 3, 1, 1}, kMax, 1},
      {"stride cols max", Shape{1, 5, 5, 1}, Shape{3, 3, 1, 1}, 1, kMax},
      {"both strides max, wide", Shape{2, 5, 7, 6}, Shape{2, 3, 6, 5}, kMax, kMax},
      {"stride max, SAME", Shape{1, 6, 6, 4}, Shape{3, 3, 4, 8}, kMax - 1, kMax, 1, 1, "SAME"},
      // Strips (C below half a vector): stride * C wrapped for a row of one pixel.
      {"strips, stride cols max, C = 3", Shape{1, 4, 5, 3}, Shape{2, 2, 3, 4}, 1, kMax},
      {"strips, both strides max, C = 2", Shape{2, 4, 5, 2}, Shape{3, 2, 2, 3}, kMax, kMax},
      // Depthwise: the tile walk stepped first += count * stride.
      {"depthwise, stride cols max", Shape{1, 3, 6, 2}, Shape{2, 2, 1, 2}, 1, kMax},
      {"depthwise x2, stride rows max", Shape{1, 6, 3, 3}, Shape{2, 2, 1, 6}, kMax, 2},
      // Grouped (two groups wide enough for the implicit GEMM) with both strides huge.
      {"groups, strides max", Shape{1, 4, 5, 8}, Shape{2, 2, 4, 16}, kMax, kMax - 2},
      {"groups, dilated, SAME", Shape{2, 5, 4, 8}, Shape{3, 2, 4, 16}, 2, kMax, kMax / 4, 3, "SAME"},
      // Dilations so large that SAME pads by about INT64_MAX / 4, or INT64_MAX - 4 in all.
      {"dilation max / 2, SAME", Shape{1, 4, 4, 2}, Shape{2, 2, 2, 3}, 1, 1, kMax / 2, kMax / 2, "SAME"},
      {"dilation max - 1, stride max", Shape{1, 4, 4, 3}, Shape{2, 2, 3, 4}, kMax, 3, kMax - 1, 1, "SAME"},
      // Explicit paddings that fill int64 with the input: every output row but one is padding.
      {"paddings near max", Shape{1, 3, 4, 2}, Shape{2, 2, 2, 3}, kMax, kMax, 1, 1, "EXPLICIT", kMax / 2 - 4,
       kMax / 2 - 4, kMax / 2 - 5, kMax / 2 - 5},
      {"paddings near max, stride 1 cols", Shape{1, 3, 4, 2}, Shape{2, 2, 2, 3}, kMax, 1, 1, 1, "EXPLICIT", kMax / 2,
       kMax / 2 - 3, 1, 2},
  };
  for (const Case& c : cases)
    for (const bool nchw : {false, true}) check_all_ops(c, nchw, DType::Float32);
  // Every dtype on the case and on the strips and depthwise ones.
  for (const DType dtype : {DType::Half, DType::BFloat16, DType::Float64})
    for (const std::size_t i : {0, 4, 6, 10}) check_all_ops(cases[i], false, dtype);
}

TEST_CASE("cpu conv kernels return at once on empty outputs with a huge dimension", "[cpu][conv][hostile]") {
  // Filter out-depth 0 and 10^18 rows of padding: the output has 2 * 10^18 + 3 rows of nothing.
  // The kernels looped over those rows; this would run for centuries.
  const i64 huge = 1000000000000000000;
  for (const bool nchw : {false, true}) {
    for (const DType dtype : {DType::Float32, DType::BFloat16, DType::Float64}) {
      INFO((nchw ? "NCHW " : "NHWC ") << dtype_name(dtype));
      Case c{"empty", Shape{1, 5, 5, 2}, Shape{3, 3, 2, 0}, 1, 1, 1, 1, "EXPLICIT", huge, huge, 0, 0};
      const AttrMap attrs = attrs_of(c, nchw);
      std::mt19937 rng(3);
      const Tensor x = random_tensor(rng, in_format(c.input, nchw), dtype);
      const Tensor f = Tensor::zeros(dtype, c.filter);
      const Tensor y = run_op("Conv2D", {x, f}, attrs)[0];
      const i64 rows = 2 * huge + 3;
      REQUIRE(y.shape() == (nchw ? Shape{1, 0, rows, 3} : Shape{1, rows, 3, 0}));
      // The input gradient of an empty out_backprop is zero; the filter gradient is empty.
      const Tensor dx = run_op("Conv2DBackpropInputV2", {x, f, y}, attrs)[0];
      REQUIRE(dx.shape() == x.shape());
      for (i64 i = 0; i < dx.num_elements(); ++i) REQUIRE(dx.value_as_double(i) == 0.0);
      REQUIRE(run_op("Conv2DBackpropFilterV2", {x, f, y}, attrs)[0].shape() == c.filter);
      // A filter with out-depth 1 instead: the same empty out_backprop gives a zero filter gradient.
      const Tensor f1 = random_tensor(rng, Shape{3, 3, 2, 1}, dtype);
      const Tensor dy1 = Tensor::zeros(dtype, nchw ? Shape{0, 1, rows, 3} : Shape{0, rows, 3, 1});
      const Tensor x0 = Tensor::zeros(dtype, nchw ? Shape{0, 2, 5, 5} : Shape{0, 5, 5, 2});
      const Tensor df = run_op("Conv2DBackpropFilterV2", {x0, f1, dy1}, attrs)[0];
      REQUIRE(df.shape() == f1.shape());
      for (i64 i = 0; i < df.num_elements(); ++i) REQUIRE(df.value_as_double(i) == 0.0);
    }
  }
}

TEST_CASE("cpu conv kernels on an empty input with a non-empty output give zeros", "[cpu][conv][hostile]") {
  // Zero input rows and explicit padding: every tap is in the padding.
  Case c{"all padding", Shape{1, 0, 3, 2}, Shape{2, 2, 2, 3}, 1, 1, 1, 1, "EXPLICIT", 2, 2, 0, 0};
  for (const bool nchw : {false, true}) check_all_ops(c, nchw, DType::Float32);
}

TEST_CASE("cpu conv kernels on a huge filter cost the taps that touch the input", "[cpu][conv][hostile]") {
  // A 1000 x 1000 filter (4 MB) on a 30 x 30 image with SAME padding: 810,000 multiply-adds.
  // The fast paths scanned all 10^6 taps for every tile of pixels (over a minute under ASan)
  // and held 8 pointers per tap per tile (512 MB per task); they must now leave such
  // geometry to a path whose work and workspace do not grow with the padded taps.
  Case c{"huge filter", Shape{1, 30, 30, 1}, Shape{1000, 1000, 1, 1}, 1, 1, 1, 1, "SAME"};
  check_all_ops(c, false, DType::Float32);
  // And one of a few taps only per pixel: 1 x 1 input, 999 rows of padding either side.
  Case d{"mostly padding", Shape{1, 1, 1, 2}, Shape{500, 3, 2, 4}, 1, 1, 1, 1, "EXPLICIT", 499, 499, 1, 1};
  check_all_ops(d, false, DType::Float32);
  check_all_ops(d, true, DType::Float32);
}

TEST_CASE("conv tap progressions equal a scan of the taps", "[conv][hostile]") {
  // conv_input_taps and ConvOutputTaps in closed form against conv_input_pos / conv_output_pos.
  for (const i64 stride : {1, 2, 3, 4, 6})
    for (const i64 dilation : {1, 2, 3, 4, 9})
      for (const i64 pad : {0, 1, 5})
        for (const i64 size : {1, 4, 9}) {
          const i64 filter = 4, window = (filter - 1) * dilation + 1;
          if (size + 2 * pad < window) continue;
          const i64 out = (size + 2 * pad - window) / stride + 1;
          const ops::ConvOutputTaps backward(stride, dilation, pad, out, filter);
          for (i64 o = 0; o < out; ++o) {
            const ops::TapProgression p = ops::conv_input_taps(o, stride, dilation, pad, size, filter);
            for (i64 k = 0; k < filter; ++k) {
              const bool in = !p.empty() && k >= p.first && k <= p.last;
              REQUIRE(in == (ops::conv_input_pos(o, k, stride, dilation, pad, size) >= 0));
            }
          }
          for (i64 i = 0; i < size; ++i) {
            const ops::TapProgression p = backward.at(i);
            INFO("stride " << stride << " dilation " << dilation << " pad " << pad << " size " << size << " i " << i);
            for (i64 k = 0; k < filter; ++k) {
              const bool in = !p.empty() && k >= p.first && k <= p.last && (k - p.first) % p.step == 0;
              REQUIRE(in == (ops::conv_output_pos(i, k, stride, dilation, pad, out) >= 0));
            }
          }
        }
}
