// Shape, Reshape, BroadcastTo and BroadcastGradientArgs: values, -1 inference, TF's errors.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

std::vector<std::int64_t> run_vector(Graph& g, Output out) {
  Session s(g);
  return s.run({}, out).to_int64_vector();
}

}  // namespace

TEST_CASE("Shape gives the dims in int32 or int64", "[ops][shape]") {
  Graph g;
  Output x = ops::constant(g, Tensor::zeros(DType::Half, Shape{2, 0, 5}));
  Output s32 = ops::shape(g, x);
  Output s64 = ops::shape(g, x, DType::Int64);
  CHECK(s32.dtype() == DType::Int32);
  CHECK(s32.shape() == Shape{3});
  CHECK(run_vector(g, s32) == std::vector<std::int64_t>{2, 0, 5});
  CHECK(run_vector(g, s64) == std::vector<std::int64_t>{2, 0, 5});
}

TEST_CASE("Reshape infers one -1 and keeps the values", "[ops][shape]") {
  Graph g;
  Output x = ops::constant(g, Tensor::from_values<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  Output r = ops::reshape(g, x, {3, -1});
  CHECK(r.shape() == Shape{3, 2});
  Session s(g);
  Tensor v = s.run({}, r);
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.data<float>()[5] == 6.f);
  // An unknown input dim leaves the -1 unknown at graph time and resolves it at run time.
  Output p = ops::placeholder(g, DType::Float32, Shape{-1, 4});
  Output flat = ops::reshape(g, p, {-1, 2});
  CHECK(flat.shape() == Shape{-1, 2});
  CHECK(s.run({{p, Tensor::zeros(DType::Float32, Shape{3, 4})}}, flat).shape() == Shape{6, 2});
}

TEST_CASE("Reshape rejects bad shapes with TF's messages", "[ops][shape]") {
  Graph g;
  Output x = ops::constant(g, Tensor::zeros(DType::Float32, Shape{2, 3}));
  CHECK_THROWS_WITH(ops::reshape(g, x, {-1, -1}), Catch::Contains("Only one input size may be -1, not both 0 and 1"));
  CHECK_THROWS_WITH(ops::reshape(g, x, {4, 2}),
                    Catch::Contains("Input to reshape is a tensor with 6 values, but the requested shape has 8"));
  CHECK_THROWS_WITH(ops::reshape(g, x, {4, -1}), Catch::Contains("requested shape requires a multiple of 4"));
  CHECK_THROWS_WITH(ops::reshape(g, x, {-2, 3}), Catch::Contains("Size 0 must be non-negative, not -2"));
  Output empty = ops::constant(g, Tensor::zeros(DType::Float32, Shape{0, 3}));
  CHECK_THROWS_WITH(ops::reshape(g, empty, {0, -1}), Catch::Contains("Reshape cannot infer the missing input size"));
  // At run time too, where the input's size is known only then.
  Output p = ops::placeholder(g, DType::Float32, Shape{-1, 3});
  Output r = ops::reshape(g, p, {4, -1});
  Session s(g);
  CHECK_THROWS_WITH(s.run({{p, Tensor::zeros(DType::Float32, Shape{2, 3})}}, r),
                    Catch::Contains("requires a multiple of 4"));
}

TEST_CASE("BroadcastTo broadcasts with numpy's rules", "[ops][shape]") {
  Graph g;
  Output x = ops::constant(g, Tensor::from_values<double>(Shape{3, 1}, {1, 2, 3}));
  Output b = ops::broadcast_to(g, x, {2, 3, 2});
  CHECK(b.shape() == Shape{2, 3, 2});
  Session s(g);
  Tensor v = s.run({}, b);
  const std::vector<double> expected = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3};
  CHECK(std::vector<double>(v.data<double>(), v.data<double>() + 12) == expected);
  CHECK_THROWS_WITH(ops::broadcast_to(g, x, {3}),
                    Catch::Contains("Rank of input (2) must be no greater than rank of output shape (1)."));
  CHECK_THROWS_WITH(ops::broadcast_to(g, x, {2, 2}), Catch::Contains("Unable to broadcast tensor of shape [3,1]"));
}

TEST_CASE("BroadcastGradientArgs lists the axes each operand was broadcast along", "[ops][shape]") {
  Graph g;
  auto vec = [&](std::vector<std::int64_t> v) {
    return ops::constant(g, Tensor::from_values<std::int64_t>(Shape{static_cast<std::int64_t>(v.size())}, v));
  };
  auto [r0, r1] = ops::broadcast_gradient_args(g, vec({2, 1, 3}), vec({4, 1}));
  CHECK(run_vector(g, r0) == std::vector<std::int64_t>{1});
  CHECK(run_vector(g, r1) == std::vector<std::int64_t>{0, 2});
  // Axes where both are 1 are listed for both (TF's BCast without the fewer-dims optimisation).
  auto [q0, q1] = ops::broadcast_gradient_args(g, vec({1, 5}), vec({1, 1}));
  CHECK(run_vector(g, q0) == std::vector<std::int64_t>{0});
  CHECK(run_vector(g, q1) == std::vector<std::int64_t>{0, 1});
  CHECK_THROWS_WITH(ops::broadcast_gradient_args(g, vec({2, 3}), vec({4})),
                    Catch::Contains("Incompatible shapes: [2,3] vs. [4]"));
}
