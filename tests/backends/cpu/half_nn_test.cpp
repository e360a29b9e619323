// The CPU kernels that serve half and bfloat16 through float32 (BiasAdd, BiasAddGrad, Relu, ReluGrad,
// Softmax, LogSoftmax, SparseSoftmaxCrossEntropyWithLogits, MatMul): served by the CPU backend,
// bitwise-identical on 1 and 2 threads, equal to the reference bit for bit where one float32
// operation rounds as the reference does, else exactly the float32 kernel on the widened inputs
// rounded once, and within a stated bound of the float64 result.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

using i64 = std::int64_t;
const DType kReduced[] = {DType::Half, DType::BFloat16};
const double kFloatUlp = std::ldexp(1.0, -24);  // float32 unit roundoff

double unit_roundoff(DType d) { return std::ldexp(1.0, d == DType::Half ? -11 : -8); }
// Absolute error of one rounding below the normal range: half the smallest subnormal.
double subnormal_floor(DType d) { return std::ldexp(1.0, d == DType::Half ? -25 : -134); }

Tensor random_values(DType dtype, const Shape& shape, std::mt19937& rng, double sigma = 3) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::normal_distribution<double> dist(0, sigma);
  for (i64 i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = dist(rng);
  return t.cast(dtype);
}

// Random values with NaN, infinities, signed zeros, the largest finite and the smallest subnormal
// values at random places.
Tensor with_specials(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = random_values(DType::Float64, shape, rng);
  const double big = dtype == DType::Half ? 65504.0 : 3.3895313892515355e38;
  const double tiny = std::ldexp(1.0, dtype == DType::Half ? -24 : -133);
  const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, big, -big, tiny, -tiny};
  for (i64 i = 0; i < t.num_elements(); ++i) {
    if (rng() % 4 == 0) t.data<double>()[i] = specials[rng() % std::size(specials)];
  }
  return t.cast(dtype);
}

Tensor cast_floats(const Tensor& t, DType dtype) { return is_floating(t.dtype()) ? t.cast(dtype) : t; }

std::vector<Tensor> cast_all(const std::vector<Tensor>& inputs, DType dtype) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) out.push_back(cast_floats(t, dtype));
  return out;
}

std::vector<Tensor> abs_all(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (!is_floating(t.dtype())) {
      out.push_back(t);
      continue;
    }
    Tensor a = t.cast(DType::Float64);
    for (i64 i = 0; i < a.num_elements(); ++i) a.data<double>()[i] = std::abs(a.data<double>()[i]);
    out.push_back(a);
  }
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

// Bit for bit, except that any NaN matches any NaN: NaN payloads are not part of the contract.
i64 count_mismatches(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  const auto* pa = static_cast<const std::uint16_t*>(a.raw_data());
  const auto* pb = static_cast<const std::uint16_t*>(b.raw_data());
  i64 count = 0;
  for (i64 i = 0; i < a.num_elements(); ++i) {
    if (pa[i] != pb[i] && !(std::isnan(a.value_as_double(i)) && std::isnan(b.value_as_double(i)))) ++count;
  }
  return count;
}

// The fast kernel must be what a session picks for this dtype on the CPU.
void check_served_by_cpu(const std::string& op, DType dtype) {
  const KernelDef* k = kernel_registry().find(op, Device::Kind::CPU, dtype);
  REQUIRE(k != nullptr);
  CHECK(k->backend == "cpu");
}

// The CPU kernel's outputs, checked to agree bitwise between 1 and 2 threads.
std::vector<Tensor> run_cpu(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  set_num_threads(1);
  const auto one = run_op(op, inputs, attrs, {.backend = "cpu"});
  set_num_threads(2);
  const auto two = run_op(op, inputs, attrs, {.backend = "cpu"});
  set_num_threads(0);
  for (std::size_t k = 0; k < one.size(); ++k) CHECK(same_bits(one[k], two[k]));
  return one;
}

// Ops whose one float32 operation per element rounds as the reference's float64 one: bitwise.
void check_exact(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {}) {
  const DType dtype = inputs[0].dtype();
  INFO(op << " " << dtype_name(dtype) << " on " << inputs[0].shape().to_string());
  check_served_by_cpu(op, dtype);
  const auto ref = run_op(op, inputs, attrs, {.backend = "reference"});
  const auto cpu = run_cpu(op, inputs, attrs);
  for (std::size_t k = 0; k < ref.size(); ++k) CHECK(count_mismatches(cpu[k], ref[k]) == 0);
}

// Allowed |result - float64 result| of output k at element i, given the float64 result r64 and
// the float64 result on the absolute values of the inputs.
using Bound = std::function<double(std::size_t k, i64 i, double r64, double abs64)>;

// Ops that sum in float32 where the reference sums in float64: the result is exactly the float32
// kernel's on the widened inputs, rounded once (so no other rounding point exists), it is within
// `bound` of the float64 result, and it rarely differs from the reference at all.
void check_float_path(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                      const Bound& bound) {
  const DType dtype = inputs[0].dtype();
  INFO(op << " " << dtype_name(dtype) << " on " << inputs[0].shape().to_string());
  check_served_by_cpu(op, dtype);
  const auto cpu = run_cpu(op, inputs, attrs);
  const auto wide = run_op(op, cast_all(inputs, DType::Float32), attrs, {.backend = "cpu"});
  const auto ref = run_op(op, inputs, attrs, {.backend = "reference"});
  const auto r64 = run_op(op, cast_all(inputs, DType::Float64), attrs, {.backend = "reference"});
  const auto abs64 = run_op(op, abs_all(inputs), attrs, {.backend = "reference"});
  for (std::size_t k = 0; k < cpu.size(); ++k) {
    CHECK(count_mismatches(cpu[k], wide[k].cast(dtype)) == 0);
    double worst = 0;
    for (i64 i = 0; i < cpu[k].num_elements(); ++i) {
      const double r = cpu[k].value_as_double(i), e = r64[k].value_as_double(i);
      const double err = std::abs(r - e), tol = bound(k, i, e, abs64[k].value_as_double(i));
      worst = std::max(worst, tol > 0 ? err / tol : err);
      if (!(err <= tol)) {
        INFO("output " << k << " element " << i << ": " << r << " vs float64 " << e << ", bound " << tol);
        CHECK(err <= tol);
        break;
      }
    }
    // Float32 errors far below one rounding to half/bfloat16 change few results from the reference's.
    const i64 n = cpu[k].num_elements();
    INFO("worst error / bound " << worst << ", " << count_mismatches(cpu[k], ref[k]) << " of " << n
                                << " differ from the reference");
    CHECK(count_mismatches(cpu[k], ref[k]) <= std::max<i64>(1, n / 20));
  }
}

// A sum of `terms` products or values in float32, rounded once to dtype: the float32 sum is off by
// at most terms * 2^-24 * (sum of absolute values), one rounding adds u * |r|.
Bound sum_bound(DType dtype, i64 terms) {
  const double u = unit_roundoff(dtype), floor = subnormal_floor(dtype);
  return [=](std::size_t, i64, double r64, double abs64) {
    return u * std::abs(r64) + 1.01 * (1 + u) * static_cast<double>(terms) * kFloatUlp * abs64 + floor;
  };
}

// Absolute error of the float32 shifted logit s = (x - max) - log(sum(exp(x - max))) of a row of n
// classes with |x| <= x_max: 2^-24 * (n + 1 + 6 x_max + 3 log n) (the sum's n - 1 roundings, exp and
// log within one ulp, the subtractions), doubled for slack.
double shifted_error(i64 n, double x_max) {
  return 2 * kFloatUlp * (static_cast<double>(n) + 4 + 6 * x_max + 3 * std::log(static_cast<double>(n) + 1));
}

// Per row of the last axis: the largest |x|.
std::vector<double> row_max_abs(const Tensor& x) {
  const i64 classes = x.shape()[x.rank() - 1];
  std::vector<double> out(static_cast<std::size_t>(classes == 0 ? 0 : x.num_elements() / classes), 0.0);
  for (i64 i = 0; i < x.num_elements(); ++i) {
    double& m = out[static_cast<std::size_t>(i / classes)];
    m = std::max(m, std::abs(x.value_as_double(i)));
  }
  return out;
}

// Softmax is off by a relative E (+ exp's ulp), LogSoftmax and the loss by an absolute E; the
// loss's backprop p - onehot by E p plus the subtraction's rounding.
Bound softmax_bound(const std::string& op, const Tensor& x, const std::vector<i64>& labels = {}) {
  const DType dtype = x.dtype();
  const double u = unit_roundoff(dtype), floor = subnormal_floor(dtype);
  const i64 classes = x.shape()[x.rank() - 1];
  const auto x_max = row_max_abs(x);
  return [=](std::size_t k, i64 i, double r64, double) {
    const i64 row = i / classes;
    const double e = shifted_error(classes, x_max[static_cast<std::size_t>(row)]);
    double err = 0;
    if (op == "Softmax")
      err = (e + 2 * kFloatUlp) * std::abs(r64);
    else if (op == "LogSoftmax" || k == 0)
      err = e;
    else {
      const double onehot = labels[static_cast<std::size_t>(row)] == i % classes ? 1.0 : 0.0;
      err = (e + 2 * kFloatUlp) * (std::abs(r64) + onehot) + kFloatUlp;
    }
    return u * std::abs(r64) + 1.01 * (1 + u) * err + floor;
  };
}

}  // namespace

TEST_CASE("CPU Relu, ReluGrad and BiasAdd in half and bfloat16 equal the reference bit for bit", "[cpu][nn][half]") {
  std::mt19937 rng(401);
  for (DType dtype : kReduced) {
    // Odd sizes (vector tails), several chunks and tasks, and empty tensors.
    for (const Shape& shape : {Shape{37}, Shape{3, 5, 7, 9}, Shape{5, 17001}, Shape{0}, Shape{4, 0, 3}}) {
      check_exact("Relu", {with_specials(dtype, shape, rng)});
      check_exact("ReluGrad", {with_specials(dtype, shape, rng), with_specials(dtype, shape, rng)});
    }
    // (shape, format): short and long bias periods (> 32768 elements: the unexpanded path), NCHW
    // inner runs shorter and longer than a chunk, rank 2, and empty tensors.
    const std::pair<Shape, const char*> cases[] = {
        {Shape{3, 5, 7, 9}, "NHWC"},    {Shape{3, 5, 7, 9}, "NCHW"},   {Shape{2, 40000}, "NHWC"},
        {Shape{2, 40, 30, 31}, "NCHW"}, {Shape{2, 3, 33, 35}, "NCHW"}, {Shape{6, 7, 2, 1}, "NCHW"},
        {Shape{13, 1}, "NHWC"},         {Shape{0, 5}, "NHWC"},         {Shape{2, 3, 0, 4}, "NCHW"},
        {Shape{4, 0}, "NHWC"},          {Shape{300, 3, 5, 7}, "NHWC"}};
    for (const auto& [shape, format] : cases) {
      const i64 channels = std::string(format) == "NCHW" ? shape[1] : shape[shape.rank() - 1];
      check_exact("BiasAdd", {with_specials(dtype, shape, rng), with_specials(dtype, Shape{channels}, rng)},
                  {{"data_format", std::string(format)}});
    }
  }
}

TEST_CASE("CPU BiasAddGrad in half and bfloat16 sums in float32 within its bound", "[cpu][nn][half]") {
  std::mt19937 rng(402);
  for (DType dtype : kReduced) {
    const std::pair<Shape, const char*> cases[] = {
        {Shape{600, 40}, "NHWC"},      {Shape{3, 5, 7, 9}, "NHWC"},   {Shape{3, 5, 7, 9}, "NCHW"},
        {Shape{2, 3, 33, 35}, "NCHW"}, {Shape{300, 3, 5, 7}, "NCHW"}, {Shape{2, 1500}, "NHWC"},
        {Shape{0, 5}, "NHWC"},         {Shape{2, 3, 0, 4}, "NCHW"},   {Shape{4, 0}, "NHWC"}};
    for (const auto& [shape, format] : cases) {
      const AttrMap attrs = {{"data_format", std::string(format)}};
      const bool nchw = std::string(format) == "NCHW";
      const i64 channels = nchw ? shape[1] : shape[shape.rank() - 1];
      const i64 terms = channels == 0 ? 0 : shape.num_elements() / channels;
      check_float_path("BiasAddGrad", {random_values(dtype, shape, rng)}, attrs, sum_bound(dtype, terms));
    }
  }
}

TEST_CASE("CPU MatMul in half and bfloat16 sums in float32 within its bound", "[cpu][nn][half]") {
  std::mt19937 rng(403);
  std::uniform_int_distribution<i64> dim(1, 70);
  for (DType dtype : kReduced) {
    for (int trial = 0; trial < 6; ++trial) {
      // Odd sizes, depth beyond one 256 block, and empty m, k or n.
      i64 m = dim(rng), k = trial == 1 ? 300 : dim(rng), n = dim(rng);
      if (trial == 3) m = 0;
      if (trial == 4) k = 0;
      if (trial == 5) n = 0;
      if (trial == 2) m = 130, n = 60;  // several tasks
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const Tensor a = random_values(dtype, ta ? Shape{k, m} : Shape{m, k}, rng);
          const Tensor b = random_values(dtype, tb ? Shape{n, k} : Shape{k, n}, rng);
          check_float_path("MatMul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}}, sum_bound(dtype, k));
        }
      }
    }
  }
}

TEST_CASE("CPU Softmax, LogSoftmax and sparse cross-entropy in half and bfloat16 run in float32 within their bound",
          "[cpu][nn][half]") {
  std::mt19937 rng(404);
  for (DType dtype : kReduced) {
    for (const Shape& shape :
         {Shape{7, 10}, Shape{200, 100}, Shape{3, 2000}, Shape{2, 3, 17}, Shape{1, 1}, Shape{0, 5}, Shape{4, 0}}) {
      const Tensor x = random_values(dtype, shape, rng);
      check_float_path("Softmax", {x}, {}, softmax_bound("Softmax", x));
      check_float_path("LogSoftmax", {x}, {}, softmax_bound("LogSoftmax", x));
      if (shape.rank() != 2 || shape[1] == 0) continue;
      std::vector<i64> labels(static_cast<std::size_t>(shape[0]));
      for (auto& l : labels) l = static_cast<i64>(rng() % static_cast<std::uint32_t>(shape[1]));
      const std::vector<std::int32_t> labels32(labels.begin(), labels.end());
      const auto bound = softmax_bound("SparseSoftmaxCrossEntropyWithLogits", x, labels);
      check_float_path("SparseSoftmaxCrossEntropyWithLogits",
                       {x, Tensor::from_values<std::int64_t>(Shape{shape[0]}, labels)}, {}, bound);
      check_float_path("SparseSoftmaxCrossEntropyWithLogits",
                       {x, Tensor::from_values<std::int32_t>(Shape{shape[0]}, labels32)}, {}, bound);
    }
  }
}
