// Finite-difference gradient checks of the nn, pooling and matrix ops: every input separately,
// first order, and second order where the gradient is itself built from differentiable ops.
#include <catch2/catch.hpp>

#include <algorithm>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

Tensor rnd(Shape shape, std::uint64_t seed) { return random_tensor(DType::Float64, shape, seed); }

// Every input must pass, except the `zero` ones: there the Jacobian really is zero (piecewise
// linear ops, or inputs only used to locate a maximum), which the checker reports as vacuous;
// those must then show exactly zero numeric and symbolic entries.
void check(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {}, int order = 1,
           std::vector<std::string> zero = {}) {
  GradCheckOptions options;
  options.order = order;
  const GradCheckResult result = check_gradients(op, inputs, attrs, options);
  INFO(result.report());
  bool some_passed = false;
  for (const InputCheck& in : result.inputs) {
    INFO(in.name);
    if (std::find(zero.begin(), zero.end(), in.name) != zero.end()) {
      CHECK(in.max_abs_numeric == 0);
      CHECK(in.abs_error == 0);
      CHECK(in.changed_output == 0);
    } else {
      CHECK(in.ok());
      some_passed |= in.status == InputCheck::Status::Passed;
    }
  }
  CHECK(some_passed);
}

// A [rows, classes] matrix of label distributions: positive rows that sum to 1.
Tensor label_distributions(Shape shape, std::uint64_t seed) {
  Tensor t = random_tensor(DType::Float64, shape, seed, 0.1, 1.0);
  double* p = t.data<double>();
  for (std::int64_t r = 0; r < shape[0]; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < shape[1]; ++j) sum += p[r * shape[1] + j];
    for (std::int64_t j = 0; j < shape[1]; ++j) p[r * shape[1] + j] /= sum;
  }
  return t;
}

AttrMap pool(std::vector<std::int64_t> k, std::vector<std::int64_t> s, const char* padding,
             const char* format = "NHWC") {
  return {{"ksize", k}, {"strides", s}, {"padding", std::string(padding)}, {"data_format", std::string(format)}};
}

}  // namespace

TEST_CASE("gradient checks: BiasAdd, Relu, Softmax and the losses", "[nn][autodiff]") {
  for (int order : {1, 2}) {
    INFO("order " << order);
    check("Softmax", {rnd({3, 5}, 7)}, {}, order);
    check("LogSoftmax", {rnd({3, 5}, 8)}, {}, order);
    check("SparseSoftmaxCrossEntropyWithLogits",
          {rnd({3, 4}, 9), Tensor::from_values<std::int32_t>(Shape{3}, {0, 3, 1})}, {}, order);
    check("SoftmaxCrossEntropyWithLogits", {rnd({3, 4}, 11), label_distributions(Shape{3, 4}, 10)}, {}, order);
  }
  // Linear ops have zero second derivatives (order 2 would be vacuous): order 1, for BiasAdd and
  // for its gradient op BiasAddGrad.
  check("BiasAdd", {rnd({2, 3, 2, 3}, 1), rnd({3}, 2)});
  check("BiasAdd", {rnd({2, 3, 2, 2}, 3), rnd({3}, 4)}, {{"data_format", "NCHW"}});
  check("BiasAddGrad", {rnd({4, 3}, 5)});
  check("BiasAddGrad", {rnd({2, 3, 2, 2}, 5)}, {{"data_format", "NCHW"}});
  // Relu is piecewise linear: its second derivative is zero, so order 2 would be vacuous; its
  // gradient ReluGrad is checked instead (linear in gradients, zero Jacobian for features).
  check("Relu", {rnd({3, 4}, 6)});
  check("ReluGrad", {rnd({3, 4}, 12), rnd({3, 4}, 13)}, {}, 1, {"features"});
}

TEST_CASE("gradient checks: pooling", "[nn][autodiff]") {
  // AvgPool is linear and MaxPool piecewise linear (zero second derivatives): order 1, and their
  // gradient ops (AvgPoolGrad; MaxPoolGrad, whose own gradient is MaxPoolGradGrad) separately.
  check("AvgPool", {rnd({2, 4, 4, 2}, 23)}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"));
  check("AvgPool", {rnd({1, 5, 5, 2}, 24)}, pool({1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"));
  check("MaxPool", {rnd({2, 4, 4, 2}, 20)}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"));
  check("MaxPool", {rnd({1, 5, 5, 2}, 21)}, pool({1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"));
  check("MaxPool", {rnd({1, 2, 5, 4}, 22)}, pool({1, 1, 2, 2}, {1, 1, 1, 1}, "VALID", "NCHW"));
  const AttrMap attrs = pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  const Tensor x = rnd({1, 4, 4, 2}, 25);
  const Tensor y = run_op("MaxPool", {x}, attrs)[0];
  // orig_input only locates each window's maximum and orig_output is not read: zero Jacobians.
  check("MaxPoolGrad", {x, y, rnd({1, 2, 2, 2}, 26)}, attrs, 1, {"orig_input", "orig_output"});
  check("MaxPoolGradGrad", {x, y, rnd({1, 4, 4, 2}, 27)}, attrs, 1, {"orig_input", "orig_output"});
  check("AvgPoolGrad", {Tensor::from_values<std::int32_t>(Shape{4}, {1, 4, 4, 2}), rnd({1, 2, 2, 2}, 28)}, attrs);
  check("AvgPoolGrad", {Tensor::from_values<std::int32_t>(Shape{4}, {1, 5, 5, 2}), rnd({1, 3, 3, 2}, 29)},
        pool({1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"));
}

TEST_CASE("gradient checks: max pooling with EXPLICIT padding", "[nn][autodiff]") {
  // The gradient graph must forward explicit_paddings: MaxPool -> MaxPoolGrad -> MaxPoolGradGrad.
  AttrMap attrs = pool({1, 3, 3, 1}, {1, 2, 2, 1}, "EXPLICIT");
  attrs["explicit_paddings"] = std::vector<std::int64_t>{0, 0, 2, 1, 0, 2, 0, 0};
  check("MaxPool", {rnd({2, 5, 4, 2}, 30)}, attrs);
  AttrMap nchw = pool({1, 1, 2, 3}, {1, 1, 1, 2}, "EXPLICIT", "NCHW");
  nchw["explicit_paddings"] = std::vector<std::int64_t>{0, 0, 0, 0, 1, 0, 2, 1};
  check("MaxPool", {rnd({1, 2, 4, 5}, 31)}, nchw);
  const Tensor x = rnd({1, 5, 4, 2}, 32);
  const Tensor y = run_op("MaxPool", {x}, attrs)[0];
  check("MaxPoolGrad", {x, y, rnd(y.shape(), 33)}, attrs, 1, {"orig_input", "orig_output"});
  check("MaxPoolGradGrad", {x, y, rnd(x.shape(), 34)}, attrs, 1, {"orig_input", "orig_output"});
}

TEST_CASE("gradient checks: MatMul and Transpose", "[nn][autodiff]") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      INFO("transpose_a " << ta << " transpose_b " << tb);
      check("MatMul", {rnd(ta ? Shape{4, 3} : Shape{3, 4}, 30), rnd(tb ? Shape{2, 4} : Shape{4, 2}, 31)},
            {{"transpose_a", ta}, {"transpose_b", tb}}, 1);
      check("MatMul", {rnd(ta ? Shape{4, 3} : Shape{3, 4}, 32), rnd(tb ? Shape{2, 4} : Shape{4, 2}, 33)},
            {{"transpose_a", ta}, {"transpose_b", tb}}, 2);
    }
  }
  check("Transpose", {rnd({2, 3, 4}, 34), Tensor::from_values<std::int32_t>(Shape{3}, {2, 0, 1})});
}

TEST_CASE("every op of this family has kernels and a gradient entry", "[nn]") {
  for (const char* op : {"BiasAdd",
                         "BiasAddGrad",
                         "Relu",
                         "ReluGrad",
                         "Softmax",
                         "LogSoftmax",
                         "SoftmaxCrossEntropyWithLogits",
                         "SparseSoftmaxCrossEntropyWithLogits",
                         "MaxPool",
                         "MaxPoolGrad",
                         "MaxPoolGradGrad",
                         "AvgPool",
                         "AvgPoolGrad",
                         "MatMul",
                         "Transpose",
                         "ArgMax",
                         "Equal",
                         "ApplyGradientDescent",
                         "ApplyMomentum",
                         "ApplyAdam"}) {
    INFO(op);
    CHECK(gradient_registry().has_entry(op));
    CHECK(kernel_registry().find(op, Device::Kind::CPU, DType::Float32, "reference") != nullptr);
    CHECK(kernel_registry().find(op, Device::Kind::CPU, DType::Float64, "reference") != nullptr);
  }
  for (const char* op : {"ArgMax", "Equal", "ApplyAdam"}) CHECK(gradient_registry().find(op) == nullptr);
}
