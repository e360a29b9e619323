// ApplyGradientDescent, ApplyMomentum (plain and Nesterov) and ApplyAdam against TF's update
// formulas worked by hand; the variables change in place inside the session.
#include <catch2/catch.hpp>

#include <cmath>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

Tensor f64(std::initializer_list<double> v) {
  return Tensor::from_values<double>(Shape{static_cast<std::int64_t>(v.size())}, v);
}
Output s64(Graph& g, double v) { return ops::scalar(g, v, DType::Float64); }

// A float64 variable of n elements and the Assign that initialises it.
std::pair<Output, const Node*> variable(Graph& g, const char* name, Tensor init) {
  Output v = ops::variable(g, init.shape(), DType::Float64, name);
  Output a = ops::assign(g, v, ops::constant(g, init));
  return {v, &a.op()};
}

double at(Session& s, const char* name, int i) { return s.variables().get(name).data<double>()[i]; }

}  // namespace

TEST_CASE("ApplyGradientDescent: var -= alpha * delta", "[train]") {
  Graph g;
  auto [var, init] = variable(g, "w", f64({1, 2, 3}));
  Output step = ops::apply_gradient_descent(g, var, s64(g, 0.1), ops::constant(g, f64({10, 20, 40})));
  Session s(g);
  s.run({}, {}, {init});
  Tensor result = s.run({}, step);
  CHECK(result.data<double>()[2] == Approx(-1));
  CHECK(at(s, "w", 0) == Approx(0).margin(1e-12));
  CHECK(at(s, "w", 1) == Approx(0).margin(1e-12));
  s.run({}, {}, {&step.op()});
  CHECK(at(s, "w", 0) == Approx(-1));
  CHECK_THROWS_WITH(ops::apply_gradient_descent(g, var, s64(g, 0.1), ops::constant(g, f64({1, 2}))),
                    Catch::Contains("var and delta do not have the same shape[3] [2]"));
  CHECK_THROWS_WITH(
      ops::apply_gradient_descent(g, var, ops::constant(g, f64({1, 2})), ops::constant(g, f64({1, 2, 3}))),
      Catch::Contains("alpha is not a scalar"));
}

TEST_CASE("ApplyGradientDescent on an uninitialised variable fails clearly", "[train]") {
  Graph g;
  Output var = ops::variable(g, Shape{2}, DType::Float64, "never_set");
  Output step = ops::apply_gradient_descent(g, var, s64(g, 0.1), ops::constant(g, f64({1, 2})));
  Session s(g);
  CHECK_THROWS_WITH(s.run({}, step), Catch::Contains("Attempting to use uninitialized value never_set"));
}

TEST_CASE("ApplyMomentum, plain and Nesterov", "[train]") {
  for (bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    Graph g;
    auto [var, init_var] = variable(g, "w", f64({1}));
    auto [accum, init_accum] = variable(g, "accum", f64({0}));
    Output step = ops::apply_momentum(g, var, accum, s64(g, 0.1), ops::constant(g, f64({1})), s64(g, 0.9), nesterov);
    Session s(g);
    s.run({}, {}, {init_var, init_accum});
    s.run({}, {}, {&step.op()});
    // accum = 0 * 0.9 + 1 = 1; var -= 0.1 * 1 (Nesterov: 0.1 * 1 + 0.1 * 0.9 * 1).
    CHECK(at(s, "accum", 0) == Approx(1));
    CHECK(at(s, "w", 0) == Approx(nesterov ? 1 - 0.19 : 0.9));
    s.run({}, {}, {&step.op()});
    // accum = 1 * 0.9 + 1 = 1.9; var -= 0.1 * 1.9 (Nesterov: 0.1 * 1 + 0.1 * 0.9 * 1.9).
    CHECK(at(s, "accum", 0) == Approx(1.9));
    CHECK(at(s, "w", 0) == Approx(nesterov ? 1 - 0.19 - 0.271 : 0.9 - 0.19));
  }
}

TEST_CASE("ApplyAdam follows TF's bias-corrected update", "[train]") {
  Graph g;
  auto [var, i1] = variable(g, "w", f64({1, -1}));
  auto [m, i2] = variable(g, "m", f64({0, 0}));
  auto [v, i3] = variable(g, "v", f64({0, 0}));
  const double lr = 0.001, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  Output b1p = ops::placeholder(g, DType::Float64, Shape{}, "beta1_power");
  Output b2p = ops::placeholder(g, DType::Float64, Shape{}, "beta2_power");
  Output grad = ops::constant(g, f64({2, -0.5}));
  Output step = ops::apply_adam(g, {var, m, v, b1p, b2p, s64(g, lr), s64(g, b1), s64(g, b2), s64(g, eps), grad});
  Session s(g);
  s.run({}, {}, {i1, i2, i3});
  s.run({{b1p, Tensor::scalar<double>(b1)}, {b2p, Tensor::scalar<double>(b2)}}, {}, {&step.op()});
  // Step 1: m = 0.1 g, v = 0.001 g^2, lr_t = lr sqrt(0.001) / 0.1, so var moves by lr * sign(g) (up to eps).
  CHECK(at(s, "m", 0) == Approx(0.2));
  CHECK(at(s, "v", 0) == Approx(0.004));
  CHECK(at(s, "w", 0) == Approx(1 - 0.001).epsilon(1e-9));
  CHECK(at(s, "w", 1) == Approx(-1 + 0.001).epsilon(1e-9));
  s.run({{b1p, Tensor::scalar<double>(b1 * b1)}, {b2p, Tensor::scalar<double>(b2 * b2)}}, {}, {&step.op()});
  // Step 2 with the same gradient: m = 0.19 g, v = 0.001999 g^2, lr_t = lr sqrt(1 - b2^2) / (1 - b1^2).
  const double m2 = 0.19 * 2, v2 = 0.001999 * 4, lr_t = lr * std::sqrt(1 - b2 * b2) / (1 - b1 * b1);
  CHECK(at(s, "m", 0) == Approx(m2));
  CHECK(at(s, "v", 0) == Approx(v2));
  CHECK(at(s, "w", 0) == Approx(1 - 0.001 - lr_t * m2 / (std::sqrt(v2) + eps)).epsilon(1e-9));
}
