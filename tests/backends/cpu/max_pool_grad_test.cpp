// MaxPool's and MaxPoolGrad's CPU kernels against the reference, bit for bit, where the op cases' distinct inputs
// cannot reach: windows with tied maxima and NaNs (the first maximum in row-major order takes the
// gradient, a NaN is never replaced), gradients of -0 (0 + -0 lands as +0), and windows that do
// not overlap (the kernel writes each input element once) with the input rows and columns they
// leave out, SAME and EXPLICIT padding, in every float dtype (half runs widened), on
// 1 thread and on all. _MaxPoolGradReluGrad alike, against ReluGrad run on MaxPoolGrad's result:
// features of +-0, negatives and NaN, and infinite gradients (Inf * 0 is NaN, as TF's multiply).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <dagrad/dagrad.hpp>

namespace {

using namespace dagrad;

AttrMap nhwc_pool(std::int64_t k, std::int64_t s, const char* padding,
                  std::vector<std::int64_t> explicit_paddings = {}) {
  AttrMap attrs{{"ksize", std::vector<std::int64_t>{1, k, k, 1}},
                {"strides", std::vector<std::int64_t>{1, s, s, 1}},
                {"padding", std::string(padding)},
                {"data_format", std::string("NHWC")}};
  if (!explicit_paddings.empty()) attrs["explicit_paddings"] = explicit_paddings;
  return attrs;
}

// Values from a handful of levels (ties in most windows), with NaNs and signed zeros among them,
// and infinities where asked.
Tensor tied_values(const Shape& shape, DType dtype, std::mt19937& rng, bool infinities = false) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double levels[] = {0.0, -0.0, 1.0, 2.0, 2.0, -1.0, std::numeric_limits<double>::quiet_NaN(), kInf, -kInf};
  std::uniform_int_distribution<int> pick(0, infinities ? 8 : 6);
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  for (auto& x : v) x = levels[pick(rng)];
  return Tensor::from_values<double>(shape, v).cast(dtype);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

struct Geometry {
  const char* label;
  Shape input;
  AttrMap attrs;
};

}  // namespace

TEST_CASE(
    "MaxPool, MaxPoolGrad and _MaxPoolGradReluGrad on ties, NaNs and -0 gradients equal the reference bit for bit",
    "[cpu][pooling]") {
  const Geometry geometries[] = {
      {"2x2 stride 2 VALID, exact cover", {3, 8, 6, 5}, nhwc_pool(2, 2, "VALID")},
      {"2x2 stride 2 VALID, odd sizes leave the last row and column", {2, 7, 9, 3}, nhwc_pool(2, 2, "VALID")},
      {"2x2 stride 3 VALID, rows and columns between windows", {2, 11, 10, 4}, nhwc_pool(2, 3, "VALID")},
      {"3x3 stride 3 SAME, windows cut by the bottom and right", {2, 7, 8, 3}, nhwc_pool(3, 3, "SAME")},
      {"2x2 stride 2 EXPLICIT, padded top and left",
       {1, 5, 6, 2},
       nhwc_pool(2, 2, "EXPLICIT", {0, 0, 1, 0, 1, 1, 0, 0})},
      {"3x3 stride 2 SAME, overlapping", {2, 7, 7, 3}, nhwc_pool(3, 2, "SAME")},
      {"large 2x2 stride 2, many channels", {4, 28, 28, 40}, nhwc_pool(2, 2, "VALID")},
      {"3x3 stride 3 SAME, a block of 16 channels and 3 single ones", {2, 8, 7, 19}, nhwc_pool(3, 3, "SAME")},
      {"NCHW 2x2 stride 2 SAME",
       {2, 3, 5, 6},
       {{"ksize", std::vector<std::int64_t>{1, 1, 2, 2}},
        {"strides", std::vector<std::int64_t>{1, 1, 2, 2}},
        {"padding", std::string("SAME")},
        {"data_format", std::string("NCHW")}}},
  };
  std::mt19937 rng(5);
  for (const Geometry& geometry : geometries) {
    for (DType dtype : {DType::Float32, DType::Float64, DType::Half, DType::BFloat16}) {
      INFO(geometry.label << ", " << dtype_name(dtype));
      const Tensor x = tied_values(geometry.input, dtype, rng);
      const Tensor y = run_op("MaxPool", {x}, geometry.attrs, {.backend = "reference"})[0];
      const Tensor dy = tied_values(y.shape(), dtype, rng);
      const Tensor expected = run_op("MaxPoolGrad", {x, y, dy}, geometry.attrs, {.backend = "reference"})[0];
      const Tensor dy_inf = tied_values(y.shape(), dtype, rng, true), features = tied_values(x.shape(), dtype, rng);
      const Tensor pooled_inf = run_op("MaxPoolGrad", {x, y, dy_inf}, geometry.attrs, {.backend = "reference"})[0];
      const Tensor masked = run_op("ReluGrad", {pooled_inf, features}, {}, {.backend = "reference"})[0];
      CHECK(same_bits(
          run_op("_MaxPoolGradReluGrad", {x, y, dy_inf, features}, geometry.attrs, {.backend = "reference"})[0],
          masked));
      for (int threads : {1, 0}) {
        set_num_threads(threads);
        CHECK(same_bits(run_op("MaxPool", {x}, geometry.attrs)[0], y));
        CHECK(same_bits(run_op("MaxPoolGrad", {x, y, dy}, geometry.attrs)[0], expected));
        CHECK(same_bits(run_op("_MaxPoolGradReluGrad", {x, y, dy_inf, features}, geometry.attrs)[0], masked));
        // The pair it replaces, on the CPU kernels; features = orig_input as in a Relu -> MaxPool graph.
        const Tensor cpu_pooled = run_op("MaxPoolGrad", {x, y, dy_inf}, geometry.attrs)[0];
        CHECK(same_bits(run_op("_MaxPoolGradReluGrad", {x, y, dy_inf, x}, geometry.attrs)[0],
                        run_op("ReluGrad", {cpu_pooled, x})[0]));
      }
    }
  }
  set_num_threads(0);
}
