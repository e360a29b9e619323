// The CUDA kernels of the matrix, compare, shape and training ops against the reference: MatMul,
// Transpose, BroadcastTo, Equal, ArgMax, Shape/Reshape/BroadcastGradientArgs in a CUDA session
// (host-memory outputs), and the Apply* optimiser steps on device variables. The registration
// test ("[cuda-host]") runs without a device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/cuda_testing.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

const std::vector<DType> kFloats = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};
const std::vector<DType> kNumeric = {DType::Half,    DType::BFloat16, DType::Float32,
                                     DType::Float64, DType::Int32,    DType::Int64};

// Small integers (exact in every dtype), so that equal values and ties are common.
Tensor grid_tensor(DType dtype, const Shape& shape, std::mt19937& rng, int range) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::uniform_int_distribution<int> v(-range, range);
  for (i64 i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = v(rng);
  return t.cast(dtype);
}

Tensor index_vector(DType dtype, const std::vector<i64>& values) {
  return Tensor::from_values<std::int64_t>(Shape{static_cast<i64>(values.size())}, values).cast(dtype);
}

}  // namespace

#ifdef DAGRAD_WITH_CUDA
TEST_CASE("every op with a reference kernel has a cuda kernel for the same dtypes", "[cuda-host]") {
  int checked = 0;
  for (const OpDef* def : op_registry().list()) {
    for (const KernelDef* k : kernel_registry().list(def->name)) {
      if (k->backend != "reference") continue;
      INFO(def->name << " " << dtype_name(k->dtype));
      CHECK(kernel_registry().find(def->name, Device::Kind::CUDA, k->dtype) != nullptr);
      ++checked;
    }
  }
  CHECK(checked > 100);
}
#endif

TEST_CASE("cuda MatMul (cuBLAS) matches the reference within its error bound, repeatably", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(41);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 16; ++trial) {
    const i64 m = pick(1, 70), n = pick(1, 70), k = trial == 0 ? 0 : pick(1, trial < 12 ? 70 : 600);
    const bool ta = pick(0, 1) == 1, tb = pick(0, 1) == 1;
    const AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
    for (DType t : kFloats) {
      const Tensor a = random_tensor(t, ta ? Shape{k, m} : Shape{m, k}, rng);
      const Tensor b = random_tensor(t, tb ? Shape{n, k} : Shape{k, n}, rng);
      Tensor abs_a = a.cast(DType::Float64), abs_b = b.cast(DType::Float64);
      for (i64 i = 0; i < abs_a.num_elements(); ++i) abs_a.data<double>()[i] = std::fabs(abs_a.data<double>()[i]);
      for (i64 i = 0; i < abs_b.num_elements(); ++i) abs_b.data<double>()[i] = std::fabs(abs_b.data<double>()[i]);
      const Tensor ref = run_reference("MatMul", {a, b}, attrs)[0];
      const Tensor bound = run_reference("MatMul", {abs_a, abs_b}, attrs)[0];
      const Tensor got = run_on_cuda("MatMul", {a, b}, attrs)[0];
      INFO(dtype_name(t) << " m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb);
      REQUIRE(bitwise_equal(got, run_on_cuda("MatMul", {a, b}, attrs)[0]));
      // Exact products summed in the accumulator type: |error| <= k u sum |a||b|, plus one rounding.
      // Tensor cores (half, bfloat16) may truncate their float32 sums: an ulp (2u) per addition.
      const bool tensor_cores = t == DType::Half || t == DType::BFloat16;
      const double u = accumulator_roundoff(t) * static_cast<double>(k) * (tensor_cores ? 2 : 1);
      i64 bad = 0;
      for (i64 i = 0; i < ref.num_elements(); ++i) {
        const double tol = rounding_bound(t, ref.value_as_double(i)) + u * bound.value_as_double(i);
        bad += !(std::fabs(got.value_as_double(i) - ref.value_as_double(i)) <= tol);
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("cuda Transpose, BroadcastTo and Equal equal the reference bit for bit", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(42);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 15; ++trial) {
    std::vector<i64> dims(static_cast<std::size_t>(pick(0, 6)));
    for (auto& d : dims) d = pick(1, 5);
    std::vector<i64> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<i64> small = dims;  // broadcastable to dims
    for (auto& d : small) d = pick(0, 1) ? 1 : d;
    small.erase(small.begin(), small.begin() + pick(0, static_cast<int>(small.size())));
    for (DType t : kAllDTypes) {
      const Tensor x = grid_tensor(t, Shape(dims), rng, 2), y = grid_tensor(t, Shape(small), rng, 2);
      const DType index_type = pick(0, 1) ? DType::Int32 : DType::Int64;
      const AttrMap no_attrs;
      INFO(dtype_name(t) << " " << x.shape().to_string() << " " << y.shape().to_string());
      const Tensor p = index_vector(index_type, perm), target = index_vector(index_type, dims);
      CHECK(bitwise_equal(run_on_cuda("Transpose", {x, p}, no_attrs)[0],
                          run_reference("Transpose", {x, p}, no_attrs)[0]));
      CHECK(bitwise_equal(run_on_cuda("BroadcastTo", {y, target}, no_attrs)[0],
                          run_reference("BroadcastTo", {y, target}, no_attrs)[0]));
      CHECK(bitwise_equal(run_on_cuda("Equal", {x, y}, no_attrs)[0], run_reference("Equal", {x, y}, no_attrs)[0]));
      CHECK(bitwise_equal(run_on_cuda("Equal", {y, x}, no_attrs)[0], run_reference("Equal", {y, x}, no_attrs)[0]));
    }
  }
}

TEST_CASE("cuda ArgMax picks the reference's first maximum, NaN rule included", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(43);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 16; ++trial) {
    std::vector<i64> dims(static_cast<std::size_t>(pick(1, 4)));
    for (auto& d : dims) d = pick(1, 6);
    const int axis = pick(0, static_cast<int>(dims.size()) - 1);
    if (trial >= 10) dims[static_cast<std::size_t>(axis)] = pick(512, 3000);  // the block-per-output kernel
    for (DType t : kNumeric) {
      Tensor x = grid_tensor(t, Shape(dims), rng, 3);
      if (is_floating(t) && trial % 2 == 1) {  // NaNs, sometimes first on the axis
        Tensor d = x.cast(DType::Float64);
        for (i64 i = 0; i < d.num_elements(); ++i) {
          if (pick(0, 4) == 0) d.data<double>()[i] = std::numeric_limits<double>::quiet_NaN();
        }
        x = d.cast(t);
      }
      for (DType out : {DType::Int32, DType::Int64}) {
        const AttrMap attrs{{"output_type", out}};
        const Tensor dim = Tensor::scalar<std::int32_t>(pick(0, 1) ? axis : axis - static_cast<int>(dims.size()));
        INFO(dtype_name(t) << " " << x.shape().to_string() << " axis " << axis << " -> " << dtype_name(out));
        CHECK(bitwise_equal(run_on_cuda("ArgMax", {x, dim}, attrs)[0], run_reference("ArgMax", {x, dim}, attrs)[0]));
      }
    }
  }
}

TEST_CASE("cuda session: Shape and BroadcastGradientArgs on the host feed device and host inputs", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(44);
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{-1, 3}, "x");
  const Output y = ops::placeholder(g, DType::Float32, Shape{-1, 1}, "y");
  const Output sx = ops::shape(g, x, DType::Int64), sy = ops::shape(g, y, DType::Int32);
  const auto [r0, r1] = ops::broadcast_gradient_args(g, sx, ops::cast(g, sy, DType::Int64));
  const Output reshaped = ops::reshape(g, ops::reshape(g, x, {-1}), sx);  // a host shape input
  const Output broadcast = ops::broadcast_to(g, y, sx);                   // a host shape input
  const Output shape_as_float = ops::cast(g, sx, DType::Float32);         // a device input fed from the host
  const std::vector<Output> fetches{sx, sy, r0, r1, reshaped, broadcast, shape_as_float};
  const FeedMap feeds{{x, random_tensor(DType::Float32, Shape{4, 3}, rng)},
                      {y, random_tensor(DType::Float32, Shape{4, 1}, rng)}};
  Session reference(g, {.backend = "reference"});
  Session gpu(g, {.device = Device::cuda()});
  const auto want = reference.run(feeds, fetches);
  for (int run = 0; run < 2; ++run) {
    const auto got = gpu.run(feeds, fetches);
    for (std::size_t i = 0; i < fetches.size(); ++i) {
      INFO("fetch " << i << " run " << run);
      REQUIRE(got[i].device().is_cpu());
      CHECK(bitwise_equal(got[i], want[i]));
    }
  }
}

TEST_CASE("cuda Apply* steps update device variables exactly as the reference", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(45);
  for (DType t : kFloats) {
    for (bool nesterov : {false, true}) {
      Graph g;
      const Shape shape{5, 7};
      auto var = [&](const char* name, bool positive) {
        Tensor init = random_tensor(t, shape, rng);
        if (positive) init = run_reference("Mul", {init, init}, {})[0];  // Adam's v >= 0
        const Output v = ops::variable(g, shape, t, name);
        return std::pair{v, &ops::assign(g, v, ops::constant(g, init)).op()};
      };
      auto scalar = [&](double value) { return ops::constant(g, Tensor::scalar<double>(value).cast(t)); };
      auto [w1, i1] = var("w1", false);
      auto [w2, i2] = var("w2", false);
      auto [acc, i3] = var("accum", false);
      auto [w3, i4] = var("w3", false);
      auto [m, i5] = var("m", false);
      auto [v, i6] = var("v", true);
      const Output grad = ops::constant(g, random_tensor(t, shape, rng));
      const Output sgd = ops::apply_gradient_descent(g, w1, scalar(0.1), grad);
      const Output momentum = ops::apply_momentum(g, w2, acc, scalar(0.05), grad, scalar(0.9), nesterov);
      const Output adam = ops::apply_adam(
          g, {w3, m, v, scalar(0.81), scalar(0.998), scalar(0.01), scalar(0.9), scalar(0.999), scalar(1e-3), grad},
          nesterov);
      const std::vector<Output> fetches{w1, w2, acc, w3, m, v};
      Session reference(g, {.backend = "reference"});
      Session gpu(g, {.device = Device::cuda()});
      for (Session* s : {&reference, &gpu}) {
        s->run({}, {}, {i1, i2, i3, i4, i5, i6});
        for (int step = 0; step < 3; ++step) s->run({}, {}, {&sgd.op(), &momentum.op(), &adam.op()});
      }
      const auto want = reference.run({}, fetches), got = gpu.run({}, fetches);
      for (std::size_t i = 0; i < fetches.size(); ++i) {
        INFO(dtype_name(t) << " nesterov " << nesterov << " fetch " << i);
        CHECK(bitwise_equal(got[i], want[i]));
      }
    }
  }
}
