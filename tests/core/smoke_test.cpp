// A first end-to-end check: a graph of Add/Mul/Sum runs and gives the hand-computed value.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

TEST_CASE("a small graph runs end to end", "[core]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2, 2}, "x");
  Output c = ops::constant(g, Tensor::from_values<float>(Shape{2}, {10.f, 20.f}));
  Output y = ops::mul(g, ops::add(g, x, c), x);
  Output s = ops::sum(g, y, {0, 1});
  Session session(g);
  Tensor xv = Tensor::from_values<float>(Shape{2, 2}, {1, 2, 3, 4});
  auto out = session.run({{x, xv}}, {y, s});
  CHECK(out[0].data<float>()[0] == 11.f);
  CHECK(out[0].data<float>()[3] == 96.f);
  CHECK(out[1].data<float>()[0] == 11.f + 44.f + 39.f + 96.f);
}
