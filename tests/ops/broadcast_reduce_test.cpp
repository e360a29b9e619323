// Broadcasting (shape inference and values against hand loops) and Sum/Mean over axes.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>
#include <dagrad/ops/shape_util.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using dagrad::testing::error_of;

namespace {

Tensor iota(const Shape& shape, double scale = 1.0) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = scale * static_cast<double>(i);
  return t;
}

}  // namespace

TEST_CASE("broadcast shapes follow numpy/TF rules", "[ops]") {
  CHECK(ops::broadcast_shapes(Shape{2, 1, 3}, Shape{4, 1}) == Shape{2, 4, 3});
  CHECK(ops::broadcast_shapes(Shape{}, Shape{3}) == Shape{3});
  CHECK(ops::broadcast_shapes(Shape{5, 1}, Shape{1}) == Shape{5, 1});
  CHECK(ops::broadcast_shapes(Shape{0, 3}, Shape{1, 3}) == Shape{0, 3});
  CHECK(ops::broadcast_shapes(Shape{-1, 3}, Shape{1, 3}) == Shape{-1, 3});
  CHECK(ops::broadcast_shapes(Shape{-1, 3}, Shape{4, 3}) == Shape{4, 3});
  CHECK_THAT(error_of([] {
               ops::broadcast_shapes(Shape{2, 3}, Shape{4});
             }),
             Equals("Incompatible shapes: [2,3] vs. [4]"));
}

TEST_CASE("broadcasting binary ops match a hand computation", "[ops]") {
  Graph g;
  // x: [2,1,3], y: [4,1] -> [2,4,3]; out[i,j,k] = x[i,0,k] op y[j,0]
  Tensor xv = iota(Shape{2, 1, 3}, 0.5);
  Tensor yv = iota(Shape{4, 1}, -1.25);
  Output x = ops::constant(g, xv);
  Output y = ops::constant(g, yv);
  Output add = ops::add(g, x, y);
  Output sub = ops::sub(g, x, y);
  Output mul = ops::mul(g, x, y);
  Output add_v1 = g.output(g.add_node("Add", {x, y}).id);
  CHECK(add.shape() == Shape{2, 4, 3});
  Session s(g);
  auto out = s.run({}, {add, sub, mul, add_v1});
  int mismatches = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) {
        const double a = xv.data<double>()[i * 3 + k], b = yv.data<double>()[j];
        const int o = (i * 4 + j) * 3 + k;
        mismatches += out[0].data<double>()[o] != a + b;
        mismatches += out[1].data<double>()[o] != a - b;
        mismatches += out[2].data<double>()[o] != a * b;
        mismatches += out[3].data<double>()[o] != a + b;
      }
  CHECK(mismatches == 0);
}

TEST_CASE("broadcasting errors name the op and the shapes", "[ops]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2, 3}, "x");
  Output y = ops::placeholder(g, DType::Float32, Shape{4}, "y");
  CHECK_THAT(error_of([&] { ops::mul(g, x, y, "m"); }), Equals("Mul: Incompatible shapes: [2,3] vs. [4] (node 'm')"));
  // Unknown dims pass at build time and are checked at run time.
  Output p = ops::placeholder(g, DType::Float32, Shape{-1}, "p");
  Output q = ops::placeholder(g, DType::Float32, Shape{-1}, "q");
  Output sum = ops::add(g, p, q, "pq");
  Session s(g);
  const FeedMap feeds{{p, Tensor::zeros(DType::Float32, Shape{2})}, {q, Tensor::zeros(DType::Float32, Shape{3})}};
  CHECK_THAT(error_of([&] { s.run(feeds, sum); }), Equals("AddV2: Incompatible shapes: [2] vs. [3] (node 'pq')"));
}

TEST_CASE("integer and half arithmetic: wrap-around and one rounding", "[ops]") {
  const auto big = std::numeric_limits<std::int32_t>::max();
  Tensor r = run_op("AddV2", {Tensor::scalar<std::int32_t>(big), Tensor::scalar<std::int32_t>(1)}).front();
  CHECK(r.data<std::int32_t>()[0] == std::numeric_limits<std::int32_t>::min());
  // 1 + (2^-11 + 2^-21): the exact sum lies just above a half tie and rounds up to 0x3C01;
  // 1 + 2^-11 is the tie itself and rounds to even.
  const half addend = narrow<half>(std::ldexp(1.0, -11) + std::ldexp(1.0, -21));
  REQUIRE(widen(addend) == std::ldexp(1.0, -11) + std::ldexp(1.0, -21));
  Tensor up = run_op("AddV2", {Tensor::scalar(half(1.f)), Tensor::scalar(addend)}).front();
  CHECK(up.data<half>()[0] == narrow<half>(1.0 + std::ldexp(1.0, -10)));
  Tensor tie = run_op("AddV2", {Tensor::scalar(half(1.f)), Tensor::scalar(narrow<half>(std::ldexp(1.0, -11)))}).front();
  CHECK(tie.data<half>()[0] == half(1.f));
}

TEST_CASE("integer Reciprocal of zero is refused by name on the reference and CPU kernels", "[ops]") {
  for (const char* backend : {"reference", "cpu"}) {
    INFO(backend);
    CHECK_THAT(error_of([&] {
                 run_op("Reciprocal", {Tensor::from_values<std::int32_t>(Shape{3}, {2, 0, 1})}, {},
                        {.name = {}, .backend = backend});
               }),
               Contains("Reciprocal: Integer division by zero"));
  }
}

TEST_CASE("Sum and Mean reduce over axes, negative ones included, with keep_dims", "[ops]") {
  Graph g;
  Tensor xv = iota(Shape{2, 3, 4});  // x[i,j,k] = 12 i + 4 j + k
  Output x = ops::constant(g, xv);
  Output s1 = ops::sum(g, x, {1});
  Output s_neg = ops::sum(g, x, {-1}, true);
  Output s02 = ops::sum(g, x, {0, 2}, true);
  Output m_all = ops::mean(g, x, {0, 1, 2});
  Output none = ops::sum(g, x, {});
  Output m_neg = ops::mean(g, x, {-3, -1});
  CHECK(s1.shape() == Shape{2, 4});
  CHECK(s_neg.shape() == Shape{2, 3, 1});
  CHECK(s02.shape() == Shape{1, 3, 1});
  CHECK(m_all.shape() == Shape{});
  CHECK(none.shape() == Shape{2, 3, 4});
  CHECK(m_neg.shape() == Shape{3});
  Session s(g);
  auto out = s.run({}, {s1, s_neg, s02, m_all, none, m_neg});
  auto x_at = [](int i, int j, int k) { return 12.0 * i + 4.0 * j + k; };
  int mismatches = 0;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      mismatches += out[0].data<double>()[i * 4 + k] != x_at(i, 0, k) + x_at(i, 1, k) + x_at(i, 2, k);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double e = 0;
      for (int k = 0; k < 4; ++k) e += x_at(i, j, k);
      mismatches += out[1].data<double>()[i * 3 + j] != e;
    }
  for (int j = 0; j < 3; ++j) {
    double e = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) e += x_at(i, j, k);
    mismatches += out[2].data<double>()[j] != e;
    mismatches += out[5].data<double>()[j] != e / 8.0;
  }
  CHECK(mismatches == 0);
  CHECK(out[3].data<double>()[0] == 11.5);  // mean of 0..23
  CHECK(out[4].data<double>()[23] == 23.0);

  // int32 Sum, and a Mean of ints, which TF computes in the integer type (truncating).
  Tensor ints = Tensor::from_values<std::int32_t>(Shape{2, 2}, {1, 2, 3, 5});
  Tensor axis = Tensor::from_values<std::int32_t>(Shape{1}, {1});
  CHECK(raw_ops::Sum(ints, axis).to_int64_vector() == std::vector<std::int64_t>{3, 8});
  CHECK(raw_ops::Mean(ints, axis).to_int64_vector() == std::vector<std::int64_t>{1, 4});
  // A scalar axis works like a one-element list.
  CHECK(raw_ops::Sum(ints, Tensor::scalar<std::int64_t>(0), {.keep_dims = true}).shape() == Shape{1, 2});
}

TEST_CASE("reduction errors use TF's messages", "[ops]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2, 3, 4}, "x");
  CHECK_THAT(error_of([&] { ops::sum(g, x, {3}, false, "s"); }),
             Equals("Sum: Invalid reduction dimension (3 for input with 3 dimension(s) (node 's')"));
  CHECK_THAT(error_of([&] { ops::sum(g, x, {-4}, false, "s"); }), Contains("Invalid reduction dimension (-4"));
  CHECK_THAT(error_of([&] {
               ops::mean(g, x, {0, -3}, false, "m");
             }),
             Equals("Mean: Invalid reduction arguments: Axes contains duplicate dimension: 0 (node 'm')"));
  Output axes = ops::placeholder(g, DType::Int32, Shape{1}, "axes");
  CHECK_THAT(error_of([&] { g.add_node("Sum", {x, axes}); }), Contains("'axis' must be known when the graph is built"));
  Output faxis = ops::constant(g, Tensor::from_values<float>(Shape{1}, {0.f}));
  CHECK_THAT(error_of([&] {
               g.add_node("Sum", {x, faxis});
             }),
             Contains("Value for attr 'Tidx' of float is not in the list"));
}
