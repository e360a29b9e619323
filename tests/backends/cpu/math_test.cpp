// The CPU kernels of the foundation ops against the reference kernels (run_op with each backend)
// on random shapes, broadcasts, axes and dtypes, and reductions' bits across thread counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "dagrad/core/eager.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/core/threading.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

Tensor random_tensor(std::mt19937& rng, const std::vector<i64>& dims, DType dtype) {
  i64 n = 1;
  for (i64 d : dims) n *= d;
  std::vector<float> values(static_cast<std::size_t>(n));
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (auto& v : values) v = dtype == DType::Int32 || dtype == DType::Int64 ? std::round(u(rng) * 1000) : u(rng);
  return Tensor::from_values<float>(Shape(dims), std::span<const float>(values)).cast(dtype);
}

std::vector<i64> random_dims(std::mt19937& rng, int rank, i64 max_dim) {
  std::vector<i64> dims(static_cast<std::size_t>(rank));
  for (auto& d : dims) d = std::uniform_int_distribution<i64>(1, max_dim)(rng);
  return dims;
}

// Both backends must have the kernel: otherwise the comparison would silently compare reference to itself.
std::vector<Tensor> run_both(const std::string& op, std::vector<Tensor> inputs, AttrMap attrs, DType dtype,
                             std::vector<Tensor>* reference) {
  REQUIRE(kernel_registry().find(op, Device::Kind::CPU, dtype, "cpu") != nullptr);
  *reference = run_op(op, inputs, attrs, {.name = {}, .backend = "reference"});
  return run_op(op, inputs, attrs, {.name = {}, .backend = "cpu"});
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// Largest |a - b| over max |b| (0 for equal tensors, including both empty).
double relative_error(const Tensor& a, const Tensor& b) {
  double worst = 0, scale = 0;
  for (i64 i = 0; i < b.num_elements(); ++i) {
    worst = std::max(worst, std::abs(a.value_as_double(i) - b.value_as_double(i)));
    scale = std::max(scale, std::abs(b.value_as_double(i)));
  }
  return worst == 0 ? 0 : worst / scale;
}

const DType kNumeric[] = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64};

}  // namespace

TEST_CASE("cpu binary ops match the reference bit for bit with broadcasting", "[cpu]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = std::uniform_int_distribution<int>(0, 4)(rng);
    auto out_dims = random_dims(rng, rank, trial < 30 ? 5 : 70);
    // Each operand drops leading dims and sets some dims to 1.
    auto operand = [&] {
      std::vector<i64> d(out_dims.begin() + std::uniform_int_distribution<int>(0, rank)(rng), out_dims.end());
      for (auto& e : d)
        if (rng() % 3 == 0) e = 1;
      return d;
    };
    const auto xd = operand(), yd = operand();
    for (DType dtype : kNumeric) {
      const Tensor x = random_tensor(rng, xd, dtype), y = random_tensor(rng, yd, dtype);
      for (const char* op : {"Add", "AddV2", "Sub", "Mul"}) {
        std::vector<Tensor> want;
        const auto got = run_both(op, {x, y}, {}, dtype, &want);
        INFO(op << " " << dtype_name(dtype) << " " << x.shape().to_string() << " " << y.shape().to_string());
        REQUIRE(same_bits(got[0], want[0]));
      }
    }
  }
}

TEST_CASE("cpu Neg, AddN, Cast, ZerosLike and OnesLike match the reference", "[cpu]") {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 10; ++trial) {
    const auto dims = random_dims(rng, trial % 4, trial < 5 ? 6 : 90);
    for (DType dtype : kNumeric) {
      const Tensor a = random_tensor(rng, dims, dtype), b = random_tensor(rng, dims, dtype),
                   c = random_tensor(rng, dims, dtype);
      std::vector<Tensor> want;
      auto got = run_both("Neg", {a}, {}, dtype, &want);
      REQUIRE(relative_error(got[0], want[0]) == 0);  // by value: TF's Neg(0) is -0
      got = run_both("AddN", {a, b, c}, {}, dtype, &want);
      REQUIRE(same_bits(got[0], want[0]));
      for (const char* op : {"ZerosLike", "OnesLike"}) {
        got = run_both(op, {a}, {}, dtype, &want);
        REQUIRE(same_bits(got[0], want[0]));
      }
      for (DType to : kNumeric) {
        got = run_both("Cast", {a}, {{"DstT", to}}, dtype, &want);
        INFO("Cast " << dtype_name(dtype) << " -> " << dtype_name(to));
        REQUIRE(same_bits(got[0], want[0]));
      }
    }
  }
}

TEST_CASE("cpu Sum and Mean match the reference on random axes", "[cpu]") {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 30; ++trial) {
    const int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    const auto dims = random_dims(rng, rank, trial < 20 ? 6 : 40);
    std::vector<std::int32_t> axes;
    for (int a = 0; a < rank; ++a)
      if (rng() % 2) axes.push_back(rng() % 2 ? a : a - rank);
    const Tensor axes_t =
        Tensor::from_values<std::int32_t>(Shape{static_cast<i64>(axes.size())}, std::span<const std::int32_t>(axes));
    for (DType dtype : kNumeric) {
      const Tensor x = random_tensor(rng, dims, dtype);
      for (const char* op : {"Sum", "Mean"}) {
        for (bool keep : {false, true}) {
          std::vector<Tensor> want;
          const auto got = run_both(op, {x, axes_t}, {{"keep_dims", keep}}, dtype, &want);
          INFO(op << " " << dtype_name(dtype) << " " << x.shape().to_string() << " axes " << axes.size());
          REQUIRE(got[0].shape() == want[0].shape());
          // Both sum in double; only the summation order differs, so at most one final rounding apart.
          const double tol = dtype == DType::Half       ? 1e-3
                             : dtype == DType::BFloat16 ? 8e-3
                             : dtype == DType::Float32  ? 1e-6
                                                        : 1e-12;
          REQUIRE(relative_error(got[0], want[0]) <= tol);
        }
      }
    }
  }
}

TEST_CASE("cpu Sum gives the same bits for 1, 2 and 3 threads", "[cpu]") {
  std::mt19937 rng(9);
  const Tensor x = random_tensor(rng, {300, 500}, DType::Float32);
  for (std::vector<std::int32_t> axes : {std::vector<std::int32_t>{0}, {1}, {0, 1}}) {
    const Tensor axes_t =
        Tensor::from_values<std::int32_t>(Shape{static_cast<i64>(axes.size())}, std::span<const std::int32_t>(axes));
    Tensor first;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      const Tensor got = run_op("Sum", {x, axes_t}, {{"keep_dims", false}})[0];
      if (threads == 1)
        first = got;
      else
        REQUIRE(same_bits(got, first));
    }
  }
  set_num_threads(0);
}
