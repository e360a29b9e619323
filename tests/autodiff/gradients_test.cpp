// dagrad::gradients: values against hand derivatives, fan-out sums, unconnected xs, the region
// between xs and ys, deep chains, variables, unknown dims, and errors.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

Tensor vec(std::vector<double> v) { return Tensor::from_values<double>(Shape{static_cast<std::int64_t>(v.size())}, v); }

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.value_as_double(i));
  return out;
}

int count_ops(const Graph& g, int from, std::string_view op) {
  int n = 0;
  for (int id = from; id < g.num_nodes(); ++id) n += g.node(id).op() == op;
  return n;
}

}  // namespace

TEST_CASE("fan-out: gradients along several edges are summed by one AddN", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float64, Shape{3}, "x");
  // y = sum(x*x + x): dy/dx = 2x + 1; x feeds three edges.
  Output y = ops::reduce_sum_all(g, ops::add(g, ops::mul(g, x, x), x));
  const int before = g.num_nodes();
  Output dx = gradients(g, {y}, {x}).at(0);
  CHECK(count_ops(g, before, "AddN") == 1);
  Session s(g);
  CHECK(values(s.run({{x, vec({1, -2, 0.5})}}, dx)) == std::vector<double>{3, -3, 2});
}

TEST_CASE("an x no y depends on: error, zeros, or an empty Output", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2}, "x");
  Output unused = ops::placeholder(g, DType::Float32, Shape{2}, "unused");
  Output y = ops::reduce_sum_all(g, ops::neg(g, x));
  CHECK_THROWS_WITH(gradients(g, {y}, {x, unused}),
                    Catch::Contains("xs[1] 'unused:0'") && Catch::Contains("not connected"));
  auto zero = gradients(g, {y}, {x, unused}, {}, {.unconnected = UnconnectedGradients::Zero});
  auto none = gradients(g, {y}, {x, unused}, {}, {.unconnected = UnconnectedGradients::None});
  CHECK_FALSE(none[1].valid());
  Session s(g);
  const Tensor two = Tensor::from_values<float>(Shape{2}, {1, 2});
  auto out = s.run({{x, two}, {unused, two}}, {zero[0], zero[1]});
  CHECK(values(out[0]) == std::vector<double>{-1, -1});
  CHECK(values(out[1]) == std::vector<double>{0, 0});
}

TEST_CASE("only nodes between the xs and the ys get gradient nodes", "[autodiff]") {
  Graph g;
  Output a = ops::placeholder(g, DType::Float64, Shape{2}, "a");
  Output b = ops::neg(g, a, "b");                                     // upstream of the x: never differentiated
  Output side = ops::mul(g, b, ops::scalar(g, 3.0, DType::Float64));  // feeds no y
  (void)side;
  Output c = ops::mul(g, b, b, "c");
  Output y = ops::reduce_sum_all(g, c);
  const int before = g.num_nodes();
  Output db = gradients(g, {y}, {b}).at(0);
  CHECK(count_ops(g, before, "Neg") == 0);  // neither Neg's gradient nor Sub/Mul for `side`
  CHECK(count_ops(g, before, "Mul") == 2);  // Mul's gradient: one product per operand
  Session s(g);
  CHECK(values(s.run({{a, vec({1, 2})}}, db)) == std::vector<double>{-2, -4});
}

TEST_CASE("gradients through a 100,000-node chain: no recursion", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{}, "x");
  Output t = x;
  for (int i = 0; i < 100000; ++i) t = ops::neg(g, t, str_cat("n", i));  // an even count: t = x
  Output dx = gradients(g, {t}, {x}).at(0);
  Session s(g);
  auto out = s.run({{x, Tensor::scalar<float>(2.5f)}}, {t, dx});
  CHECK(out[0].data<float>()[0] == 2.5f);
  CHECK(out[1].data<float>()[0] == 1.f);
}

TEST_CASE("grad_ys weigh the ys: a vector-Jacobian product", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float64, Shape{2}, "x");
  Output y1 = ops::mul(g, x, x);  // dy1/dx = diag(2x)
  Output y2 = ops::neg(g, x);
  Output w1 = ops::constant(g, vec({10, 100}));
  Output w2 = ops::constant(g, vec({1, 1}));
  Output dx = gradients(g, {y1, y2}, {x}, {w1, w2}).at(0);
  Session s(g);
  CHECK(values(s.run({{x, vec({3, -1})}}, dx)) == std::vector<double>{10 * 6 - 1, 100 * -2 - 1});
  CHECK_THROWS_WITH(gradients(g, {y1}, {x}, {w1, w2}), Catch::Contains("2 grad_ys given for 1 ys"));
  Output wrong = ops::constant(g, Tensor::from_values<float>(Shape{2}, {1, 1}));
  CHECK_THROWS_WITH(gradients(g, {y1}, {x}, {wrong}), Catch::Contains("does not match ys[0]"));
}

TEST_CASE("gradients of gradients: second derivatives", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float64, Shape{2}, "x");
  Output y = ops::reduce_sum_all(g, ops::mul(g, ops::mul(g, x, x), x));  // sum x^3
  Output d1 = gradients(g, {y}, {x}).at(0);                              // 3x^2
  Output d2 = gradients(g, {ops::reduce_sum_all(g, d1)}, {x}).at(0);     // 6x
  Session s(g);
  auto out = s.run({{x, vec({2, -1})}}, {d1, d2});
  CHECK(values(out[0]) == std::vector<double>{12, 3});
  CHECK(values(out[1]) == std::vector<double>{12, -6});
}

TEST_CASE("gradients with respect to a variable", "[autodiff]") {
  Graph g;
  Output v = ops::variable(g, Shape{3}, DType::Float32, "w");
  Output init = ops::assign(g, v, ops::constant(g, Tensor::from_values<float>(Shape{3}, {1, -2, 4})));
  Output loss = ops::reduce_sum_all(g, ops::mul(g, v, v));
  Output dv = gradients(g, {loss}, {v}).at(0);
  CHECK(dv.shape() == Shape{3});
  Session s(g);
  s.run({}, init);
  CHECK(values(s.run({}, dv)) == std::vector<double>{2, -4, 8});
}

TEST_CASE("broadcast gradients with dims unknown until run time", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float64, Shape{-1, 3}, "x");
  Output y = ops::placeholder(g, DType::Float64, Shape{-1, 1}, "y");
  Output z = ops::reduce_sum_all(g, ops::mul(g, x, y));
  auto d = gradients(g, {z}, {x, y});
  CHECK(d[0].shape().rank() == 2);
  Session s(g);
  // x [1,3] broadcast along rows of y [2,1]: dx = sum_rows(y), dy = sum_cols(x) per row.
  auto out = s.run({{x, Tensor::from_values<double>(Shape{1, 3}, {1, 2, 3})},
                    {y, Tensor::from_values<double>(Shape{2, 1}, {10, 20})}},
                   d);
  CHECK(out[0].shape() == Shape{1, 3});
  CHECK(values(out[0]) == std::vector<double>{30, 30, 30});
  CHECK(out[1].shape() == Shape{2, 1});
  CHECK(values(out[1]) == std::vector<double>{6, 6});
  // The same graph with the batch the other way round.
  auto out2 = s.run({{x, Tensor::from_values<double>(Shape{2, 3}, {1, 2, 3, 4, 5, 6})},
                     {y, Tensor::from_values<double>(Shape{1, 1}, {10})}},
                    d);
  CHECK(values(out2[0]) == std::vector<double>{10, 10, 10, 10, 10, 10});
  CHECK(values(out2[1]) == std::vector<double>{21});
}

TEST_CASE("Mean's gradient over a dim unknown until run time", "[autodiff]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{-1, 2}, "x");
  Output m = ops::reduce_sum_all(g, ops::mean(g, x, {0}));
  Output dx = gradients(g, {m}, {x}).at(0);
  CHECK(dx.shape() == Shape{-1, 2});
  Session s(g);
  CHECK(values(s.run({{x, Tensor::zeros(DType::Float32, Shape{4, 2})}}, dx)) == std::vector<double>(8, 0.25));
}

TEST_CASE("gradients rejects integer endpoints and ops without a gradient", "[autodiff]") {
  Graph g;
  Output i = ops::placeholder(g, DType::Int32, Shape{2}, "i");
  Output f = ops::placeholder(g, DType::Float32, Shape{2}, "f");
  CHECK_THROWS_WITH(gradients(g, {ops::neg(g, i)}, {f}), Catch::Contains("only those have gradients"));
  // Through an integer cast nothing flows: the x is unconnected.
  Output y = ops::cast(g, ops::cast(g, f, DType::Int32), DType::Float32);
  CHECK_THROWS_WITH(gradients(g, {y}, {f}), Catch::Contains("not connected"));
}
