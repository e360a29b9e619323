// Eager raw ops: argument for argument like tf.raw_ops, same validation and kernels as graphs.
#include <catch2/catch.hpp>

#include <cmath>

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

namespace {

using V = std::vector<double>;
V values(const Tensor& t) {
  V v;
  for (std::int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.value_as_double(i));
  return v;
}

}  // namespace

TEST_CASE("the nn, pooling, matrix, compare and shape raw ops take TF's arguments and defaults", "[ops][raw_ops]") {
  Tensor x = Tensor::from_values<float>(Shape{2, 3}, {1.f, -2.f, 3.f, -4.f, 5.f, 0.5f});
  // Defaults: ArgMax gives int64 and Shape int32, as in TF.
  Tensor arg = raw_ops::ArgMax(x, Tensor::from_values<std::int32_t>(Shape{}, {1}));
  CHECK(arg.dtype() == DType::Int64);
  CHECK(values(arg) == V{2, 1});
  CHECK(raw_ops::ArgMax(x, Tensor::from_values<std::int32_t>(Shape{}, {0}), {.output_type = DType::Int32}).dtype() ==
        DType::Int32);
  Tensor shape = raw_ops::Shape(x);
  CHECK(shape.dtype() == DType::Int32);
  CHECK(values(shape) == V{2, 3});
  CHECK(raw_ops::Shape(x, {.out_type = DType::Int64}).dtype() == DType::Int64);

  Tensor relu = raw_ops::Relu(x);
  CHECK(relu.data<float>()[1] == 0.f);
  CHECK(relu.data<float>()[4] == 5.f);
  Tensor bias = Tensor::from_values<float>(Shape{3}, {10.f, 20.f, 30.f});
  CHECK(raw_ops::BiasAdd(x, bias).data<float>()[5] == 30.5f);
  CHECK(values(raw_ops::BiasAddGrad(x)) == V{-3, 3, 3.5});
  // NCHW on a [2, 3] value: the channel axis is 1 either way, as in TF for rank 2.
  CHECK(raw_ops::BiasAdd(x, bias, {.data_format = "NCHW"}).data<float>()[0] == 11.f);

  Tensor a = Tensor::from_values<float>(Shape{2, 2}, {1.f, 2.f, 3.f, 4.f});
  CHECK(values(raw_ops::MatMul(a, a)) == V{7, 10, 15, 22});
  CHECK(values(raw_ops::MatMul(a, a, {.transpose_a = true})) == V{10, 14, 14, 20});
  CHECK(values(raw_ops::MatMul(a, a, {.transpose_b = true})) == V{5, 11, 11, 25});
  CHECK(values(raw_ops::Transpose(a, Tensor::from_values<std::int32_t>(Shape{2}, {1, 0}))) == V{1, 3, 2, 4});

  Tensor eq = raw_ops::Equal(a, Tensor::from_values<float>(Shape{2}, {1.f, 4.f}));
  CHECK(eq.dtype() == DType::Bool);
  CHECK(values(eq) == V{1, 0, 0, 1});

  const auto xent = raw_ops::SparseSoftmaxCrossEntropyWithLogits(Tensor::from_values<float>(Shape{1, 2}, {0.f, 0.f}),
                                                                 Tensor::from_values<std::int32_t>(Shape{1}, {1}));
  CHECK(xent.loss.data<float>()[0] == Approx(std::log(2.0)));
  CHECK(xent.backprop.data<float>()[0] == 0.5f);
  CHECK(xent.backprop.data<float>()[1] == -0.5f);

  const auto args = raw_ops::BroadcastGradientArgs(Tensor::from_values<std::int32_t>(Shape{2}, {2, 3}),
                                                   Tensor::from_values<std::int32_t>(Shape{1}, {3}));
  CHECK(values(args.r0).empty());
  CHECK(values(args.r1) == V{0});
  CHECK(raw_ops::Reshape(a, Tensor::from_values<std::int32_t>(Shape{1}, {-1})).shape() == Shape{4});
  CHECK(raw_ops::BroadcastTo(bias, Tensor::from_values<std::int32_t>(Shape{2}, {2, 3})).data<float>()[3] == 10.f);
  CHECK(raw_ops::Reciprocal(a).data<float>()[3] == 0.25f);

  Tensor image = Tensor::from_values<float>(Shape{1, 2, 2, 1}, {1.f, 4.f, 2.f, 3.f});
  CHECK(
      raw_ops::MaxPool(image, {.ksize = {1, 2, 2, 1}, .strides = {1, 1, 1, 1}, .padding = "VALID"}).data<float>()[0] ==
      4.f);
  CHECK(
      raw_ops::AvgPool(image, {.ksize = {1, 2, 2, 1}, .strides = {1, 1, 1, 1}, .padding = "VALID"}).data<float>()[0] ==
      2.5f);
  // ksize, strides and padding are required, as in TF.
  CHECK_THROWS_WITH(raw_ops::MaxPool(image, {.name = "pool"}), Contains("(node 'pool')"));
}
