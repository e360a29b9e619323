// The CUDA kernels of the nn and pooling ops against the reference kernels on random inputs,
// every dtype each op allows ("[cuda]", skipped with a message without a device): Relu, ReluGrad,
// Reciprocal, BiasAdd, BiasAddGrad, Softmax, LogSoftmax, the softmax cross-entropy losses, and
// the five pooling ops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/cuda_testing.hpp"
#include "support/error_of.hpp"
#include "support/pool_cases.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

const std::vector<DType> kFloats = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};

}  // namespace

TEST_CASE("cuda Relu, ReluGrad, Reciprocal and BiasAdd equal the reference bit for bit", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(31);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<i64> dims(static_cast<std::size_t>(pick(2, 5)));
    for (auto& d : dims) d = pick(1, 9);
    const Shape shape(dims);
    for (DType t : kFloats) {
      const Tensor x = random_tensor(t, shape, rng), f = random_tensor(t, shape, rng);
      INFO(dtype_name(t) << " " << shape.to_string());
      CHECK(bitwise_equal(run_on_cuda("Relu", {x}, {})[0], run_reference("Relu", {x}, {})[0]));
      CHECK(bitwise_equal(run_on_cuda("ReluGrad", {x, f}, {})[0], run_reference("ReluGrad", {x, f}, {})[0]));
      CHECK(bitwise_equal(run_on_cuda("Reciprocal", {x}, {})[0], run_reference("Reciprocal", {x}, {})[0]));
      for (const char* format : {"NHWC", "NCHW"}) {
        const AttrMap attrs{{"data_format", std::string(format)}};
        const i64 channels = std::string(format) == "NCHW" ? dims[1] : dims.back();
        const Tensor bias = random_tensor(t, Shape{channels}, rng);
        INFO(format);
        CHECK(
            bitwise_equal(run_on_cuda("BiasAdd", {x, bias}, attrs)[0], run_reference("BiasAdd", {x, bias}, attrs)[0]));
      }
    }
    for (DType t : {DType::Int32, DType::Int64}) {
      Tensor x = random_tensor(t, shape, rng).cast(DType::Float64);
      for (i64 i = 0; i < x.num_elements(); ++i) {
        if (x.data<double>()[i] == 0) x.data<double>()[i] = 1;
      }
      x = x.cast(t);
      CHECK(bitwise_equal(run_on_cuda("Reciprocal", {x}, {})[0], run_reference("Reciprocal", {x}, {})[0]));
    }
  }
  // Integer 1/0 is TF's error, raised from the device flag, not a crash or a silent value.
  const Tensor zero = Tensor::from_values<std::int32_t>(Shape{3}, {1, 0, 2});
  CHECK_THAT(error_of([&] { run_on_cuda("Reciprocal", {zero}, {}); }), Catch::Contains("Integer division by zero"));
}

TEST_CASE("cuda BiasAddGrad matches the reference and repeats bitwise", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(32);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<i64> dims(static_cast<std::size_t>(pick(2, trial < 8 ? 4 : 3)));  // long sums: rank <= 3
    for (auto& d : dims) d = pick(1, trial < 8 ? 9 : 70);
    for (DType t : kFloats) {
      for (const char* format : {"NHWC", "NCHW"}) {
        const AttrMap attrs{{"data_format", std::string(format)}};
        const Tensor g = random_tensor(t, Shape(dims), rng);
        const Tensor ref = run_reference("BiasAddGrad", {g}, attrs)[0];
        const Tensor got = run_on_cuda("BiasAddGrad", {g}, attrs)[0];
        REQUIRE(bitwise_equal(got, run_on_cuda("BiasAddGrad", {g}, attrs)[0]));
        // n terms |g| <= 2 per channel: n/256 sequential per thread, then an 8-level tree.
        const double n =
            static_cast<double>(g.num_elements()) / static_cast<double>(std::max<i64>(ref.num_elements(), 1));
        const double u = accumulator_roundoff(t);
        INFO(dtype_name(t) << " " << format << " " << g.shape().to_string());
        check_close(got, ref, [&](i64, double r) { return rounding_bound(t, r) + (n / 256 + 9) * u * 2 * n; });
      }
    }
  }
}

TEST_CASE("cuda Softmax, LogSoftmax and the cross-entropy losses match the reference", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(33);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 12; ++trial) {
    const i64 rows = pick(1, 9), classes = trial < 9 ? pick(1, 40) : pick(300, 1500);
    for (DType t : kFloats) {
      const double u = accumulator_roundoff(t);
      const double log_classes = std::log(static_cast<double>(classes));
      INFO(dtype_name(t) << " rows " << rows << " classes " << classes);
      // A softmax value's relative error (and a log-softmax value's absolute error) comes from
      // the shifted logit |x - max| <= 4 and log(sum), each a few roundings of the accumulator.
      const double arg_err = 16 * u * (5 + log_classes) + u * static_cast<double>(classes) / 64;
      const Tensor x = random_tensor(t, Shape{rows, classes}, rng);
      const Tensor sm = run_on_cuda("Softmax", {x}, {})[0];
      REQUIRE(bitwise_equal(sm, run_on_cuda("Softmax", {x}, {})[0]));
      check_close(sm, run_reference("Softmax", {x}, {})[0],
                  [&](i64, double r) { return rounding_bound(t, r) + arg_err * std::fabs(r); });
      check_close(run_on_cuda("LogSoftmax", {x}, {})[0], run_reference("LogSoftmax", {x}, {})[0],
                  [&](i64, double r) { return rounding_bound(t, r) + arg_err; });

      // Dense labels in [-2, 2]: the loss sums classes terms |label| (log_sum - s) <= 2 (5 + log C).
      const Tensor labels = random_tensor(t, Shape{rows, classes}, rng);
      const auto got = run_on_cuda("SoftmaxCrossEntropyWithLogits", {x, labels}, {});
      const auto ref = run_reference("SoftmaxCrossEntropyWithLogits", {x, labels}, {});
      const double loss_err = 2 * static_cast<double>(classes) * (5 + log_classes) *
                              (arg_err + u * (static_cast<double>(classes) / 256 + 9));
      check_close(got[0], ref[0], [&](i64, double r) { return rounding_bound(t, r) + loss_err; });
      check_close(got[1], ref[1], [&](i64, double r) { return rounding_bound(t, r) + 2 * arg_err + 2 * u; });

      for (DType label_type : {DType::Int32, DType::Int64}) {
        Tensor sparse = Tensor::empty(DType::Int64, Shape{rows});
        for (i64 r = 0; r < rows; ++r) sparse.data<std::int64_t>()[r] = pick(0, static_cast<int>(classes) - 1);
        sparse = sparse.cast(label_type);
        const auto sgot = run_on_cuda("SparseSoftmaxCrossEntropyWithLogits", {x, sparse}, {});
        const auto sref = run_reference("SparseSoftmaxCrossEntropyWithLogits", {x, sparse}, {});
        check_close(sgot[0], sref[0], [&](i64, double r) { return rounding_bound(t, r) + arg_err; });
        check_close(sgot[1], sref[1], [&](i64, double r) { return rounding_bound(t, r) + 2 * arg_err + 2 * u; });
      }
    }
  }
  // A label outside [0, classes) is TF's InvalidArgument on the GPU too (checked on the host).
  const Tensor x = Tensor::zeros(DType::Float32, Shape{2, 3});
  const Tensor bad = Tensor::from_values<std::int32_t>(Shape{2}, {0, 3});
  CHECK_THAT(error_of([&] {
               run_on_cuda("SparseSoftmaxCrossEntropyWithLogits", {x, bad}, {});
             }),
             Catch::Contains("Received a label value of 3 which is outside the valid range of [0, 3)"));
}

TEST_CASE("cuda pooling kernels equal the reference bit for bit", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(34);
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const auto drawn = testing::random_pool_case(rng, 3, 12, 5);
    if (!drawn) continue;
    const AttrMap& attrs = drawn->attrs;
    const Shape in_shape = drawn->input;
    const bool explicit_padding = drawn->explicit_padding;
    for (DType t : kFloats) {
      // Values on a coarse grid so that windows hold ties (the first maximum must win).
      Tensor x = Tensor::empty(DType::Float64, in_shape);
      for (i64 i = 0; i < x.num_elements(); ++i) x.data<double>()[i] = static_cast<double>(pick(-4, 4)) / 2;
      x = x.cast(t);
      const Tensor y = run_reference("MaxPool", {x}, attrs)[0];
      const Tensor dy = random_tensor(t, y.shape(), rng), ddx = random_tensor(t, in_shape, rng);
      std::vector<std::int32_t> dims(in_shape.dims().begin(), in_shape.dims().end());
      const Tensor orig_shape = Tensor::from_values<std::int32_t>(Shape{4}, dims);
      INFO(dtype_name(t) << " " << drawn->describe());
      CHECK(bitwise_equal(run_on_cuda("MaxPool", {x}, attrs)[0], y));
      CHECK(bitwise_equal(run_on_cuda("MaxPoolGrad", {x, y, dy}, attrs)[0],
                          run_reference("MaxPoolGrad", {x, y, dy}, attrs)[0]));
      CHECK(bitwise_equal(run_on_cuda("_MaxPoolGradReluGrad", {x, y, dy, ddx}, attrs)[0],
                          run_reference("_MaxPoolGradReluGrad", {x, y, dy, ddx}, attrs)[0]));
      CHECK(bitwise_equal(run_on_cuda("MaxPoolGradGrad", {x, y, ddx}, attrs)[0],
                          run_reference("MaxPoolGradGrad", {x, y, ddx}, attrs)[0]));
      if (!explicit_padding) {  // AvgPool has no EXPLICIT padding
        CHECK(bitwise_equal(run_on_cuda("AvgPool", {x}, attrs)[0], run_reference("AvgPool", {x}, attrs)[0]));
        CHECK(bitwise_equal(run_on_cuda("AvgPoolGrad", {orig_shape, dy}, attrs)[0],
                            run_reference("AvgPoolGrad", {orig_shape, dy}, attrs)[0]));
      }
      ++checked;
    }
  }
  CHECK(checked > 40);
}
