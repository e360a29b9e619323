// BiasAdd, Relu, Softmax and the cross-entropy losses against hand-computed values, on every
// kernel registered for them (reference and the fast CPU ones).
#include <catch2/catch.hpp>

#include <cmath>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

Tensor f32(Shape shape, std::initializer_list<float> values) { return Tensor::from_values<float>(shape, values); }

void check_values(const Tensor& t, std::initializer_list<double> expected, double tol = 1e-6) {
  REQUIRE(t.num_elements() == static_cast<std::int64_t>(expected.size()));
  std::int64_t i = 0;
  for (double e : expected) {
    INFO("element " << i);
    if (std::isnan(e))
      CHECK(std::isnan(t.value_as_double(i)));
    else
      CHECK(t.value_as_double(i) == Approx(e).margin(tol));
    ++i;
  }
}

std::vector<Tensor> run(std::string_view op, std::vector<Tensor> in, AttrMap attrs, std::string_view backend) {
  return run_op(op, std::move(in), std::move(attrs), {.backend = backend});
}

}  // namespace

TEST_CASE("BiasAdd and BiasAddGrad in both data formats", "[nn]") {
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    check_values(run("BiasAdd", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}, {}, backend)[0],
                 {11, 22, 33, 14, 25, 36});
    check_values(
        run("BiasAdd", {f32({1, 2, 2}, {1, 2, 3, 4}), f32({2}, {10, 20})}, {{"data_format", "NCHW"}}, backend)[0],
        {11, 12, 23, 24});
    check_values(run("BiasAddGrad", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {}, backend)[0], {5, 7, 9});
    check_values(run("BiasAddGrad", {f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {{"data_format", "NCHW"}}, backend)[0],
                 {14, 22});
  }
  CHECK_THROWS_WITH(run_op("BiasAdd", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}),
                    Catch::Contains("Must provide as many biases as the channel dimension"));
  CHECK_THROWS_WITH(run_op("BiasAdd", {f32({3}, {1, 2, 3}), f32({3}, {1, 2, 3})}),
                    Catch::Contains("Input tensor must be at least 2D: [3]"));
}

TEST_CASE("Relu and ReluGrad", "[nn]") {
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    check_values(run("Relu", {f32({4}, {-1, 0, 2, NAN})}, {}, backend)[0], {0, 0, 2, NAN});
    check_values(run("ReluGrad", {f32({4}, {1, 2, 3, 4}), f32({4}, {-1, 0, 2, 5})}, {}, backend)[0], {0, 0, 3, 4});
  }
  CHECK_THROWS_WITH(run_op("ReluGrad", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}),
                    Catch::Contains("gradients and features must have the same shape"));
}

TEST_CASE("Softmax and LogSoftmax along the last axis", "[nn]") {
  const Tensor logits = f32({2, 3}, {0, std::log(2.f), std::log(3.f), 1000, 1000, 1000});
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    check_values(run("Softmax", {logits}, {}, backend)[0], {1 / 6., 2 / 6., 3 / 6., 1 / 3., 1 / 3., 1 / 3.});
    check_values(run("LogSoftmax", {logits}, {}, backend)[0],
                 {std::log(1 / 6.), std::log(2 / 6.), std::log(3 / 6.), -std::log(3.), -std::log(3.), -std::log(3.)},
                 1e-5);
  }
  CHECK_THROWS_WITH(run_op("Softmax", {Tensor::scalar<float>(1.f)}),
                    Catch::Contains("logits must have >= 1 dimension"));
}

TEST_CASE("SparseSoftmaxCrossEntropyWithLogits gives loss and backprop", "[nn]") {
  const Tensor logits = f32({2, 3}, {0, std::log(2.f), std::log(3.f), 1000, 1000, -1000});
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    for (DType label_type : {DType::Int32, DType::Int64}) {
      Tensor labels = Tensor::from_values<std::int64_t>(Shape{2}, {2, 0}).cast(label_type);
      auto out = run("SparseSoftmaxCrossEntropyWithLogits", {logits, labels}, {}, backend);
      check_values(out[0], {std::log(2.), std::log(2.)}, 1e-5);
      check_values(out[1], {1 / 6., 2 / 6., -3 / 6., -0.5, 0.5, 0});
    }
  }
  CHECK_THROWS_WITH(
      run_op("SparseSoftmaxCrossEntropyWithLogits", {logits, Tensor::from_values<std::int32_t>(Shape{2}, {1, 3})}),
      Catch::Contains("Received a label value of 3 which is outside the valid range of [0, 3)"));
  CHECK_THROWS_WITH(
      run_op("SparseSoftmaxCrossEntropyWithLogits", {logits, Tensor::from_values<std::int32_t>(Shape{3}, {1, 2, 0})}),
      Catch::Contains("logits and labels must have the same first dimension"));
}

TEST_CASE("SoftmaxCrossEntropyWithLogits with label distributions", "[nn]") {
  const Tensor logits = f32({1, 3}, {0, std::log(2.f), std::log(3.f)});
  const Tensor labels = f32({1, 3}, {0.5f, 0, 0.5f});
  for (const char* backend : {"reference", ""}) {
    auto out = run("SoftmaxCrossEntropyWithLogits", {logits, labels}, {}, backend);
    check_values(out[0], {0.5 * std::log(6.) + 0.5 * std::log(2.)}, 1e-5);
    check_values(out[1], {1 / 6. - 0.5, 2 / 6., 0.5 - 0.5});
  }
  CHECK_THROWS_WITH(run_op("SoftmaxCrossEntropyWithLogits", {logits, f32({1, 2}, {1, 0})}),
                    Catch::Contains("logits and labels must be same size"));
}

TEST_CASE("half and double kernels of the nn ops agree with float32", "[nn]") {
  const Tensor x = f32({2, 3}, {-1.5f, 0.25f, 2, 3, -4, 0.5f});
  for (DType dtype : {DType::Half, DType::BFloat16, DType::Float64}) {
    INFO(dtype_name(dtype));
    const Tensor y32 = run_op("Softmax", {x})[0];
    const Tensor y = run_op("Softmax", {x.cast(dtype)})[0];
    REQUIRE(y.dtype() == dtype);
    for (std::int64_t i = 0; i < 6; ++i) CHECK(y.value_as_double(i) == Approx(y32.value_as_double(i)).margin(1e-2));
  }
}
