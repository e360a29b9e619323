// The pooling kernels (CPU and reference) on hostile geometry: strides and windows near INT64_MAX,
// and empty outputs whose other dims are huge. Where an op succeeds, the CPU kernels must match
// the reference; where it cannot, a dagrad::Error must name the op and the values.
#include <catch2/catch.hpp>

#include <limits>

#include <dagrad/dagrad.hpp>

#include "dagrad/core/kernel_registry.hpp"
#include "support/error_of.hpp"

using namespace dagrad;
using dagrad::testing::error_of;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
const char* const kPoolOps[] = {"MaxPool",         "AvgPool",     "MaxPoolGrad",
                                "MaxPoolGradGrad", "AvgPoolGrad", "_MaxPoolGradReluGrad"};

// ksize and strides are given as (rows, cols) and placed by data_format.
AttrMap pool_attrs(std::int64_t k_rows, std::int64_t k_cols, std::int64_t s_rows, std::int64_t s_cols,
                   const std::string& padding, bool nchw) {
  const auto spatial = [&](std::int64_t r, std::int64_t c) {
    return nchw ? std::vector<std::int64_t>{1, 1, r, c} : std::vector<std::int64_t>{1, r, c, 1};
  };
  return {{"ksize", spatial(k_rows, k_cols)},
          {"strides", spatial(s_rows, s_cols)},
          {"padding", padding},
          {"data_format", std::string(nchw ? "NCHW" : "NHWC")}};
}

// Distinct pseudo-random doubles (a fixed LCG), so that every window has one maximum.
Tensor ramp(const Shape& shape, std::uint64_t seed) {
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  for (auto& x : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>(seed >> 11) / 9007199254740992.0 - 0.5;
  }
  return Tensor::from_values<double>(shape, v);
}

Tensor shape_vector(const Shape& s) {
  std::vector<std::int32_t> dims(s.dims().begin(), s.dims().end());
  return Tensor::from_values<std::int32_t>(Shape{4}, dims);
}

// The inputs of `op` for a forward input x pooled to shape `pooled`.
std::vector<Tensor> pool_inputs(const std::string& op, const Tensor& x, const Shape& pooled) {
  if (op == "MaxPool" || op == "AvgPool") return {x};
  if (op == "AvgPoolGrad") return {shape_vector(x.shape()), ramp(pooled, 7)};
  if (op == "MaxPoolGrad") return {x, ramp(pooled, 5), ramp(pooled, 7)};
  if (op == "_MaxPoolGradReluGrad") return {x, ramp(pooled, 5), ramp(pooled, 7), ramp(x.shape(), 9)};
  return {x, ramp(pooled, 5), ramp(x.shape(), 7)};  // MaxPoolGradGrad: grad has x's shape
}

void check_cpu_matches_reference(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  const Tensor ref = run_op(op, inputs, attrs, {.backend = "reference"})[0];
  const Tensor cpu = run_op(op, inputs, attrs, {.backend = "cpu"})[0];
  REQUIRE(cpu.shape() == ref.shape());
  for (std::int64_t i = 0; i < ref.num_elements(); ++i) {
    INFO(op << " element " << i);
    CHECK(cpu.value_as_double(i) == Approx(ref.value_as_double(i)).epsilon(1e-12).margin(1e-15));
  }
}

}  // namespace

TEST_CASE("pooling with strides near INT64_MAX: CPU equals the reference", "[hostile][pooling]") {
  // AvgPoolGrad's CPU kernel once took ceil(lo / stride) as (lo + stride - 1) / stride, which wraps
  // negative for such strides and read the gradient before its buffer.
  for (bool nchw : {false, true}) {
    for (const char* padding : {"VALID", "SAME"}) {
      for (std::int64_t k : {1, 2, 3}) {
        const AttrMap attrs = pool_attrs(k, k, kMax, kMax - 1, padding, nchw);
        const Shape in = nchw ? Shape{2, 3, 5, 7} : Shape{2, 5, 7, 3};
        const Shape pooled = ops::pool2d_geometry("MaxPool", attrs, in).output_shape();
        CHECK(pooled == (nchw ? Shape{2, 3, 1, 1} : Shape{2, 1, 1, 3}));
        for (const std::string op : kPoolOps) {
          INFO(op << " " << padding << " k " << k << " nchw " << nchw);
          check_cpu_matches_reference(op, pool_inputs(op, ramp(in, 3), pooled), attrs);
        }
      }
    }
  }
}

TEST_CASE("SAME pooling with huge windows or strides has TF's exact shape or a clear error", "[hostile][pooling]") {
  const Tensor x = ramp(Shape{1, 5, 6, 2}, 11);
  // Windows of nearly INT64_MAX: one output per input position, padded to exactly INT64_MAX.
  const AttrMap wide = pool_attrs(kMax - 4, kMax - 5, 1, 1, "SAME", false);
  CHECK(ops::pool2d_geometry("MaxPool", wide, x.shape()).output_shape() == Shape{1, 5, 6, 2});
  for (const std::string op : kPoolOps) {
    INFO(op);
    check_cpu_matches_reference(op, pool_inputs(op, x, Shape{1, 5, 6, 2}), wide);
  }
  // (ceil(5 / 2) - 1) * 2 + INT64_MAX - 5 more rows of padding than int64 can count.
  const std::string message = error_of([&] { run_op("MaxPool", {x}, pool_attrs(kMax, 1, 2, 1, "SAME", false)); });
  CHECK_THAT(message, Catch::Contains("MaxPool: rows: padded input size 5 + ") && Catch::Contains("overflows int64"));
  try {
    run_op("AvgPool", {x}, pool_attrs(1, kMax, 1, 3, "SAME", false));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::InvalidArgument);
    CHECK_THAT(std::string(e.what()), Catch::Contains("AvgPool: cols: padded input size 6"));
  }
}

TEST_CASE("pooling kernels return at once on an empty output with huge dims", "[hostile][pooling]") {
  // Called directly, past the executor (which skips kernels with empty outputs): batch * rows is
  // 10^20 here, so a kernel that loops over rows of nothing overflows or spins.
  const Shape in{10'000'000'000, 0, 10'000'000'000, 1};  // NCHW with no channels: 0 elements
  const AttrMap attrs = pool_attrs(1, 1, 1, 1, "VALID", true);
  const Tensor x = Tensor::zeros(DType::Float32, in);
  for (const char* backend : {"cpu", "reference"}) {
    for (const std::string op : kPoolOps) {
      INFO(backend << " " << op);
      std::vector<Tensor> inputs{x};
      if (op == "AvgPoolGrad") inputs = {Tensor::zeros(DType::Int32, Shape{4}), x};
      if (op == "MaxPoolGrad" || op == "MaxPoolGradGrad") inputs = {x, x, x};
      if (op == "_MaxPoolGradReluGrad") inputs = {x, x, x, x};
      const KernelDef& kernel = kernel_registry().get(op, Device::Kind::CPU, DType::Float32, backend);
      KernelContext context(op, op, attrs, Device::cpu(), inputs, {DType::Float32}, {in});
      kernel.fn(context);
      CHECK(context.outputs()[0].shape() == in);
    }
  }
}

TEST_CASE("pooling ops on an empty output with a huge dim return at once through run_op", "[hostile][pooling]") {
  for (bool nchw : {false, true}) {
    const Shape in = nchw ? Shape{10'000'000'000, 0, 10'000'000'000, 1} : Shape{1'000'000'000, 1'000'000'000, 1, 0};
    const AttrMap attrs = pool_attrs(1, 1, 1, 1, "SAME", nchw);
    const Tensor x = Tensor::zeros(DType::Float32, in);
    for (const char* backend : {"cpu", "reference"}) {
      for (const std::string op : {"MaxPool", "AvgPool", "MaxPoolGrad", "MaxPoolGradGrad", "_MaxPoolGradReluGrad"}) {
        INFO(backend << " " << op << " nchw " << nchw);
        const std::vector<Tensor> inputs = op == "MaxPool" || op == "AvgPool" ? std::vector<Tensor>{x}
                                           : op == "_MaxPoolGradReluGrad"     ? std::vector<Tensor>{x, x, x, x}
                                                                              : std::vector<Tensor>{x, x, x};
        CHECK(run_op(op, inputs, attrs, {.backend = backend})[0].shape() == in);
      }
    }
  }
  // AvgPoolGrad's output size comes from an int32 vector.
  const Shape in{2'000'000'000, 2'000'000'000, 1, 0};
  const Tensor grad = Tensor::zeros(DType::Float32, in);
  for (const char* backend : {"cpu", "reference"}) {
    CHECK(
        run_op("AvgPoolGrad", {shape_vector(in), grad}, pool_attrs(1, 1, 1, 1, "VALID", false), {.backend = backend})[0]
            .shape() == in);
  }
}
