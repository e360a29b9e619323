// The CUDA backend: registration and the no-device behaviour (run everywhere), and every CUDA
// kernel against the reference kernel on random shapes and every dtype ("[cuda]", skipped with a
// message when no CUDA device is present).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dagrad/core/eager.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/op_registry.hpp"
#include "dagrad/core/session.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "support/conv_cases.hpp"
#include "support/cuda_testing.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;
using testing::bitwise_equal;
using testing::random_tensor;
using testing::unit_roundoff;

const std::vector<std::string> kFoundationOps = {"Placeholder", "Const", "Identity", "ZerosLike",  "OnesLike", "Cast",
                                                 "NoOp",        "Add",   "AddV2",    "Sub",        "Mul",      "Neg",
                                                 "AddN",        "Sum",   "Mean",     "VariableV2", "Assign"};
const std::vector<std::string> kConvOps = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropInputV2",
                                           "Conv2DBackpropFilter", "Conv2DBackpropFilterV2"};

// Runs `op` on cuda:0 with `backend` and returns its first output on the host.
Tensor on_cuda(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
               std::string_view backend = {}) {
  return testing::run_on_cuda(op, inputs, attrs, backend)[0];
}

}  // namespace

#ifdef DAGRAD_WITH_CUDA
TEST_CASE("cuda kernels are registered for every op and dtype, device or not", "[cuda-host]") {
  for (const auto* list : {&kFoundationOps, &kConvOps}) {
    for (const auto& op : *list) {
      const OpDef& def = op_registry().get(op);
      std::vector<DType> dtypes = def.kernel_dtypes();
      if (dtypes.empty()) dtypes = {DType::Invalid};  // an op without a type attribute (NoOp)
      for (DType t : dtypes) {
        INFO(op << " " << dtype_name(t));
        CHECK(kernel_registry().find(op, Device::Kind::CUDA, t, "cuda") != nullptr);
      }
    }
  }
}

TEST_CASE("without a CUDA device, using cuda:0 is a clear error", "[cuda-host]") {
  if (device_available(Device::cuda())) return;  // the [cuda] tests cover the device
  Graph g;
  CHECK_THROWS_WITH(Session(g, {.device = Device::cuda()}), Catch::Contains("no CUDA device available"));
  CHECK_THROWS_WITH(Tensor::zeros(DType::Float32, Shape{2}, Device::cuda()),
                    Catch::Contains("no CUDA device available"));
}
#endif

TEST_CASE("cuda element-wise kernels equal the reference bit for bit", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(5);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<DType> numeric = {DType::Half,    DType::BFloat16, DType::Float32,
                                      DType::Float64, DType::Int32,    DType::Int64};
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<i64> dims(static_cast<std::size_t>(pick(0, 4)));
    for (auto& d : dims) d = pick(1, 7);
    std::vector<i64> ydims = dims;
    for (auto& d : ydims) d = pick(0, 2) == 0 ? 1 : d;
    for (DType t : numeric) {
      const Tensor x = random_tensor(t, Shape(dims), rng), y = random_tensor(t, Shape(ydims), rng);
      for (const char* op : {"Add", "AddV2", "Sub", "Mul"}) {
        INFO(op << " " << dtype_name(t) << " " << x.shape().to_string() << " " << y.shape().to_string());
        CHECK(bitwise_equal(on_cuda(op, {x, y}, {}), run_op(op, {x, y}, {}, {.backend = "reference"})[0]));
      }
      CHECK(bitwise_equal(on_cuda("Neg", {x}, {}), run_op("Neg", {x}, {}, {.backend = "reference"})[0]));
      for (DType to : kAllDTypes) {
        const AttrMap attrs{{"DstT", to}};
        INFO("Cast " << dtype_name(t) << " -> " << dtype_name(to));
        CHECK(bitwise_equal(on_cuda("Cast", {x}, attrs), run_op("Cast", {x}, attrs, {.backend = "reference"})[0]));
      }
      std::vector<Tensor> terms;
      for (int k = pick(1, 40); k > 0; --k) terms.push_back(random_tensor(t, Shape(dims), rng));
      const Tensor sum_ref = run_op("AddN", terms, {}, {.backend = "reference"})[0];
      const Tensor sum_cuda = on_cuda("AddN", terms, {});
      INFO("AddN of " << terms.size() << " " << dtype_name(t));
      if (!is_floating(t)) {
        CHECK(bitwise_equal(sum_cuda, sum_ref));  // integers wrap identically
        continue;
      }
      // Sequential accumulation of k terms (|term| <= 2) in float, then one rounding to T.
      const double k = static_cast<double>(terms.size());
      const double margin = k * 2.0 * k * (t == DType::Float64 ? unit_roundoff(t) : std::ldexp(1.0, -24));
      for (i64 i = 0; i < sum_ref.num_elements(); ++i) {
        CHECK(sum_cuda.value_as_double(i) ==
              Approx(sum_ref.value_as_double(i)).margin(margin).epsilon(2 * unit_roundoff(t)));
      }
    }
  }
}

TEST_CASE("cuda Sum and Mean match the reference and repeat bitwise", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(9);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 30; ++trial) {
    // Small shapes of any rank, then long rows and columns (many elements per block and per thread).
    std::vector<i64> dims(static_cast<std::size_t>(trial < 25 ? pick(1, 4) : 2));
    for (auto& d : dims) d = pick(1, trial < 25 ? 9 : 600);
    std::vector<i64> axes;
    for (i64 a = 0; a < static_cast<i64>(dims.size()); ++a) {
      if (pick(0, 1)) axes.push_back(a);
    }
    const Tensor axis = Tensor::from_values<std::int64_t>(Shape{static_cast<i64>(axes.size())}, axes);
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
      const Tensor x = random_tensor(t, Shape(dims), rng);
      for (const char* op : {"Sum", "Mean"}) {
        const AttrMap attrs{{"keep_dims", pick(0, 1) == 1}};
        const Tensor ref = run_op(op, {x, axis}, attrs, {.backend = "reference"})[0];
        const Tensor got = on_cuda(op, {x, axis}, attrs);
        REQUIRE(bitwise_equal(got, on_cuda(op, {x, axis}, attrs)));
        INFO(op << " " << dtype_name(t) << " " << x.shape().to_string());
        if (!is_floating(t)) {
          CHECK(bitwise_equal(got, ref));
          continue;
        }
        // n terms (|x| <= 2): each thread sums n/256 of them, then an 8-level tree; then rounding to T.
        const double n = static_cast<double>(x.num_elements()) / std::max<i64>(ref.num_elements(), 1);
        const double u = t == DType::Float64 ? unit_roundoff(t) : std::ldexp(1.0, -24);
        const double margin = (n / 256 + 9) * u * 2.0 * n / (std::string(op) == "Mean" ? n : 1.0);
        for (i64 i = 0; i < ref.num_elements(); ++i) {
          CHECK(got.value_as_double(i) == Approx(ref.value_as_double(i)).margin(margin).epsilon(2 * unit_roundoff(t)));
        }
      }
    }
  }
}

TEST_CASE("cuda conv kernels (dagrad and cuDNN) match the reference, bitwise repeatable", "[cuda][conv]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(17);
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; trial < 30; ++trial) {
    ops::Conv2DOptions o;
    const bool nchw = pick(0, 1) == 1;
    o.data_format = nchw ? "NCHW" : "NHWC";
    o.padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[pick(0, 2)];
    const i64 sr = pick(1, 3), sc = pick(1, 3), dr = pick(1, 2), dc = pick(1, 2);
    o.strides = nchw ? std::vector<i64>{1, 1, sr, sc} : std::vector<i64>{1, sr, sc, 1};
    o.dilations = nchw ? std::vector<i64>{1, 1, dr, dc} : std::vector<i64>{1, dr, dc, 1};
    if (o.padding == "EXPLICIT") {
      const i64 t = pick(0, 2), b = pick(0, 2), l = pick(0, 2), r = pick(0, 2);
      o.explicit_paddings = nchw ? std::vector<i64>{0, 0, 0, 0, t, b, l, r} : std::vector<i64>{0, 0, t, b, l, r, 0, 0};
    }
    o.use_cudnn_on_gpu = pick(0, 3) != 0;
    const i64 groups = pick(1, 3), cg = pick(1, 40), kg = pick(1, 80), n = pick(1, 4), h = pick(1, 20), w = pick(1, 20);
    const Shape input = nchw ? Shape{n, groups * cg, h, w} : Shape{n, h, w, groups * cg};
    const Shape filter{pick(1, 3), pick(1, 3), cg, groups * kg};
    ops::Conv2DGeometry g;
    try {
      g = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(o)), input, filter);
    } catch (const Error&) {
      continue;
    }
    const AttrMap attrs = ops::conv2d_attr_map(o);
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
      const Tensor x = random_tensor(t, input, rng), f = random_tensor(t, filter, rng);
      const Tensor dy = random_tensor(t, Shape(g.output_dims()), rng);
      struct Call {
        const char* op;
        std::vector<Tensor> inputs;
      };
      for (const Call& call : {Call{"Conv2D", {x, f}}, Call{"Conv2DBackpropInputV2", {x, f, dy}},
                               Call{"Conv2DBackpropFilterV2", {x, f, dy}}}) {
        // The error bound: float accumulation over |terms|, plus one rounding to T.
        std::vector<Tensor> magnitudes;
        for (const auto& in : call.inputs) {
          Tensor m = in.cast(DType::Float64);
          for (i64 i = 0; i < m.num_elements(); ++i) m.data<double>()[i] = std::fabs(m.data<double>()[i]);
          magnitudes.push_back(m);
        }
        const Tensor ref = run_op(call.op, call.inputs, attrs, {.backend = "reference"})[0];
        const Tensor bound = run_op(call.op, magnitudes, attrs, {.backend = "reference"})[0];
        const double acc_eps = t == DType::Float64 ? std::ldexp(1.0, -50) : std::ldexp(1.0, -20);
        for (const char* backend : {"cuda", "cudnn"}) {
          INFO(call.op << " " << dtype_name(t) << " " << backend << " " << o.data_format << " " << o.padding
                       << " groups " << groups << " input " << input.to_string() << " filter " << filter.to_string());
          const Tensor got = on_cuda(call.op, call.inputs, attrs, backend);
          REQUIRE(bitwise_equal(got, on_cuda(call.op, call.inputs, attrs, backend)));
          i64 bad = 0;
          for (i64 i = 0; i < ref.num_elements(); ++i) {
            const double tol =
                2 * unit_roundoff(t) * std::fabs(ref.value_as_double(i)) + acc_eps * bound.value_as_double(i);
            bad += !(std::fabs(got.value_as_double(i) - ref.value_as_double(i)) <= tol);
          }
          CHECK(bad == 0);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("cuda NHWC conv kernels on the device: 16-byte chunks, large tiles, NCHW copies, bit for bit",
          "[cuda][conv]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  // Channel counts in multiples of 8 take the 16-byte loads; up to 136 output channels the large
  // tiles. Integer-valued data keeps every sum exact, so each dtype must equal the reference.
  std::mt19937 rng(18);
  const testing::ConvCaseLimits limits{
      .channel_multiple = 8, .max_in_channels = 32, .max_out_channels = 136, .max_groups = 2};
  int checked = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const testing::ConvCase c = testing::random_conv_case(rng, limits);
    const Tensor x64 = testing::random_small_integers(c.input, rng),
                 f64 = testing::random_small_integers(c.filter, rng);
    const Tensor dy64 = testing::random_small_integers(Shape(c.geometry.output_dims()), rng);
    const AttrMap attrs = ops::conv2d_attr_map(c.options);
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
      const Tensor x = x64.cast(t), f = f64.cast(t), dy = dy64.cast(t);
      for (const auto& [op, inputs] : {std::pair{"Conv2D", std::vector<Tensor>{x, f}},
                                       std::pair{"Conv2DBackpropInputV2", std::vector<Tensor>{x, f, dy}},
                                       std::pair{"Conv2DBackpropFilterV2", std::vector<Tensor>{x, f, dy}}}) {
        INFO(op << " " << dtype_name(t) << " " << c.options.data_format << " input " << c.input.to_string()
                << " filter " << c.filter.to_string());
        CHECK(
            bitwise_equal(on_cuda(op, inputs, attrs, "cuda"), run_op(op, inputs, attrs, {.backend = "reference"})[0]));
        ++checked;
      }
    }
  }
  CHECK(checked == 12 * 4 * 3);
}

TEST_CASE("a cuda session keeps intermediates on the device and fetches to the host", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(3);
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{2, 8, 8, 3}, "x");
  const Output f = ops::constant(g, random_tensor(DType::Float32, Shape{3, 3, 3, 4}, rng), "f");
  const Output y = ops::conv2d(g, x, f, {.strides = {1, 1, 1, 1}, .padding = "SAME"});
  const Output z = g.output(g.add_node("Neg", {y}, {}, "z").id);
  const Tensor feed = random_tensor(DType::Float32, Shape{2, 8, 8, 3}, rng);
  Session cpu(g, {.backend = "reference"});
  Session gpu(g, {.device = Device::cuda()});
  const Tensor expected = cpu.run({{x, feed}}, z);
  const Tensor got = gpu.run({{x, feed}}, z);
  REQUIRE(got.device().is_cpu());
  for (i64 i = 0; i < expected.num_elements(); ++i) {
    CHECK(got.value_as_double(i) == Approx(expected.value_as_double(i)).margin(1e-4).epsilon(1e-5));
  }
}
