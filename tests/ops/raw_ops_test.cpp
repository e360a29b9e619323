// Eager raw ops: argument for argument like tf.raw_ops, same validation and kernels as graphs.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

TEST_CASE("raw ops compute what the graph computes", "[ops]") {
  Tensor x = Tensor::from_values<float>(Shape{2, 2}, {1.5f, -2.f, 3.f, 0.25f});
  Tensor y = Tensor::from_values<float>(Shape{2}, {10.f, 20.f});
  Graph g;
  Output gx = ops::constant(g, x), gy = ops::constant(g, y);
  Session s(g);
  auto expected = s.run({}, {ops::add(g, gx, gy), ops::sub(g, gx, gy), ops::mul(g, gx, gy), ops::neg(g, gx)});
  const Tensor got[] = {raw_ops::AddV2(x, y), raw_ops::Sub(x, y, {.name = "sub"}), raw_ops::Mul(x, y), raw_ops::Neg(x)};
  for (int k = 0; k < 4; ++k) {
    INFO("op " << k);
    REQUIRE(got[k].shape() == expected[static_cast<std::size_t>(k)].shape());
    for (int i = 0; i < 4; ++i)
      CHECK(got[k].data<float>()[i] == expected[static_cast<std::size_t>(k)].data<float>()[i]);
  }
  CHECK(raw_ops::Add(x, y).data<float>()[3] == 20.25f);
  CHECK(raw_ops::AddN({x, x, x}).data<float>()[1] == -6.f);
  CHECK(raw_ops::Identity(x).data<float>()[2] == 3.f);
  CHECK(raw_ops::ZerosLike(x).data<float>()[0] == 0.f);
  CHECK(raw_ops::OnesLike(y).data<float>()[1] == 1.f);
  CHECK(raw_ops::Const(y).data<float>()[1] == 20.f);
  Tensor axis = Tensor::from_values<std::int32_t>(Shape{1}, {-1});
  Tensor sum = raw_ops::Sum(x, axis, {.keep_dims = true, .name = "total"});
  CHECK(sum.shape() == Shape{2, 1});
  CHECK(sum.data<float>()[0] == -0.5f);
  CHECK(raw_ops::Mean(x, axis).data<float>()[1] == 1.625f);
  Tensor h = raw_ops::Cast(x, {.DstT = DType::Half, .Truncate = false});
  CHECK(h.dtype() == DType::Half);
  CHECK(h.data<half>()[3] == half(0.25f));
  CHECK(raw_ops::Cast(x, {.DstT = DType::Int32}).to_int64_vector() == std::vector<std::int64_t>{1, -2, 3, 0});
  raw_ops::NoOp();
}

TEST_CASE("raw ops report errors with the op and the given name", "[ops]") {
  Tensor f = Tensor::zeros(DType::Float32, Shape{2});
  Tensor d = Tensor::zeros(DType::Float64, Shape{2});
  CHECK_THROWS_WITH(raw_ops::AddV2(f, d, {.name = "my_add"}),
                    Equals("Input 'y' of 'AddV2' Op has type double that does not match type float of argument 'x'. "
                           "(node 'my_add')"));
  CHECK_THROWS_WITH(raw_ops::Cast(f, {}), Equals("Cast: missing required attribute 'DstT'"));
  CHECK_THROWS_WITH(raw_ops::Mul(f, Tensor::zeros(DType::Float32, Shape{3})),
                    Contains("Incompatible shapes: [2] vs. [3]"));
  CHECK_THROWS_WITH(raw_ops::AddN({}), Contains("Value for attr 'N' of 0 must be at least minimum 1"));
  CHECK_THROWS_WITH(raw_ops::Neg(Tensor::zeros(DType::Bool, Shape{1})), Contains("Value for attr 'T' of bool"));
}
