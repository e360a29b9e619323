// The checker itself: it catches a wrong gradient (naming the worst entry), refuses to pass
// vacuously, flags a missing gradient, and reports fixed seeds.
#include <catch2/catch.hpp>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

// Plants a gradient function for one op and restores the real one when it goes out of scope.
class ScopedGradient {
 public:
  ScopedGradient(std::string op, GradientFn fn) : op_(std::move(op)) {
    const GradientFn* old = gradient_registry().find(op_);
    REQUIRE(old != nullptr);
    saved_ = *old;
    gradient_registry().replace(op_, std::move(fn));
  }
  ~ScopedGradient() { gradient_registry().replace(op_, saved_); }

 private:
  std::string op_;
  GradientFn saved_;
};

}  // namespace

TEST_CASE("a wrong gradient is caught and its worst entry reported", "[autodiff][gradcheck]") {
  const std::vector<Tensor> in = {random_tensor(DType::Float64, Shape{2, 3}, 1),
                                  random_tensor(DType::Float64, Shape{2, 3}, 2)};
  REQUIRE(check_gradients("Mul", in).passed);
  {
    // d(x*y)/dy planted as x*dz*1.01: off by 1% in every entry of y's Jacobian.
    ScopedGradient wrong(
        "Mul", [](Graph& g, const Node& n, const std::vector<Output>& d) -> std::vector<std::optional<Output>> {
          Output scale = ops::scalar(g, 1.01, n.inputs[0].dtype());
          return {ops::mul(g, d[0], n.inputs[1]), ops::mul(g, ops::mul(g, n.inputs[0], d[0]), scale)};
        });
    for (GradCheckMode mode : {GradCheckMode::Full, GradCheckMode::Fast}) {
      const GradCheckResult r = check_gradients("Mul", in, {}, {.mode = mode});
      INFO(r.report());
      CHECK_FALSE(r.passed);
      REQUIRE(r.inputs.size() == 2);
      CHECK(r.inputs[0].status == InputCheck::Status::Passed);
      const InputCheck& y = r.inputs[1];
      CHECK(y.status == InputCheck::Status::Failed);
      CHECK(y.rel_error == Approx(0.01).epsilon(1e-3));
      CHECK(y.symbolic == Approx(1.01 * y.numeric).epsilon(1e-6));
      if (mode == GradCheckMode::Full) {
        // The worst entry is the largest |x| (the diagonal of y's Jacobian).
        std::int64_t largest = 0;
        for (std::int64_t e = 0; e < 6; ++e) {
          if (std::abs(in[0].data<double>()[e]) > std::abs(in[0].data<double>()[largest])) largest = e;
        }
        CHECK(y.input_index == largest);
        CHECK(y.output_index == largest);
        CHECK_THAT(r.report(), Catch::Contains("y double[2,3]: FAIL worst y[") && Catch::Contains("seed 20261202"));
      }
    }
  }
  CHECK(check_gradients("Mul", in).passed);  // restored
}

TEST_CASE("a gradient declared missing where the output depends on the input fails", "[autodiff][gradcheck]") {
  ScopedGradient none("Neg", [](Graph&, const Node&, const std::vector<Output>&) -> std::vector<std::optional<Output>> {
    return {std::nullopt};
  });
  const GradCheckResult r = check_gradients("Neg", {random_tensor(DType::Float32, Shape{3}, 4)});
  INFO(r.report());
  CHECK_FALSE(r.passed);
  CHECK(r.inputs[0].message.find("no gradient, but 3 of 3 perturbations changed the output") != std::string::npos);
}

TEST_CASE("the checker cannot pass vacuously", "[autodiff][gradcheck]") {
  // f(x, y) = x * 0 + y: nothing about x is checked, so x fails even though both Jacobians agree.
  GraphFunction fn = [](Graph& g, const std::vector<Output>& in) {
    Output zero = ops::scalar(g, 0.0, in[0].dtype());
    return std::vector<Output>{ops::add(g, ops::mul(g, in[0], zero), in[1])};
  };
  const std::vector<Tensor> in = {random_tensor(DType::Float64, Shape{2}, 1),
                                  random_tensor(DType::Float64, Shape{2}, 2)};
  for (GradCheckMode mode : {GradCheckMode::Full, GradCheckMode::Fast}) {
    const GradCheckResult r = check_graph_gradients(fn, in, {.mode = mode}, {"x", "y"});
    INFO(r.report());
    CHECK_FALSE(r.passed);
    CHECK(r.inputs[0].status == InputCheck::Status::Failed);
    CHECK(r.inputs[0].changed_output == 0);
    CHECK(r.inputs[0].message.find("vacuously") != std::string::npos);
    CHECK(r.inputs[1].status == InputCheck::Status::Passed);
  }
  // A function of no floating input at all is refused.
  CHECK_THROWS_WITH(check_gradients("Shape", {Tensor::zeros(DType::Int32, Shape{2})}),
                    Catch::Contains("no floating-point input"));
}

TEST_CASE("inputs used only for their shape are reported consistent, integer inputs skipped", "[autodiff][gradcheck]") {
  const std::vector<Tensor> in = {random_tensor(DType::Float64, Shape{2, 3}, 1),
                                  Tensor::from_values<std::int64_t>(Shape{2}, {3, 2})};
  const GradCheckResult r = check_gradients("Reshape", in);
  INFO(r.report());
  CHECK(r.passed);
  CHECK(r.inputs[1].status == InputCheck::Status::Skipped);
  // Fixed seeds: the same check twice gives the same numbers.
  const Tensor axis = Tensor::from_values<std::int64_t>(Shape{1}, {0});
  const GradCheckResult a =
      check_gradients("Mean", {random_tensor(DType::Float32, Shape{3, 2}, 9), axis}, {}, {.mode = GradCheckMode::Fast});
  const GradCheckResult b =
      check_gradients("Mean", {random_tensor(DType::Float32, Shape{3, 2}, 9), axis}, {}, {.mode = GradCheckMode::Fast});
  CHECK(a.inputs[0].numeric == b.inputs[0].numeric);
  CHECK(a.inputs[0].symbolic == b.inputs[0].symbolic);
}

TEST_CASE("checker options are validated", "[autodiff][gradcheck]") {
  const std::vector<Tensor> in = {random_tensor(DType::Float64, Shape{2}, 1)};
  CHECK_THROWS_WITH(check_gradients("Neg", in, {}, {.order = 3}), Catch::Contains("order must be 1 or 2"));
  CHECK_THROWS_WITH(check_gradients("Neg", in, {}, {.step = -1}), Catch::Contains("must be > 0"));
  CHECK_THROWS_WITH(check_gradients("NoSuchOp", in), Catch::Contains("NoSuchOp"));
}
