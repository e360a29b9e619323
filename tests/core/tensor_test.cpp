// Tensor construction, typed access, reshapes, casts, and the zero-copy xtensor bridge.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;
using Catch::Matchers::Contains;

TEST_CASE("tensors are built with their dtype, shape and values", "[core]") {
  Tensor z = Tensor::zeros(DType::Int64, Shape{2, 3});
  CHECK(z.dtype() == DType::Int64);
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.num_elements() == 6);
  CHECK(z.nbytes() == 48);
  for (int i = 0; i < 6; ++i) CHECK(z.data<std::int64_t>()[i] == 0);

  Tensor f = Tensor::full(DType::Half, Shape{4}, 1.0 / 3.0);
  CHECK(f.data<half>()[3] == narrow<half>(1.0 / 3.0));

  Tensor s = Tensor::scalar(2.5);
  CHECK(s.rank() == 0);
  CHECK(s.num_elements() == 1);
  CHECK(s.value_as_double(0) == 2.5);

  Tensor v = Tensor::from_values<std::int32_t>(Shape{3}, {7, -8, 9});
  CHECK(v.to_int64_vector() == std::vector<std::int64_t>{7, -8, 9});
  CHECK(Tensor::zeros(DType::Float32, Shape{0, 5}).num_elements() == 0);
  CHECK_FALSE(Tensor().defined());
}

TEST_CASE("tensor misuse raises errors that say what went wrong", "[core]") {
  Tensor d = Tensor::zeros(DType::Float64, Shape{2});
  CHECK_THROWS_WITH(d.data<float>(), Contains("requested float data from a double tensor"));
  CHECK_THROWS_WITH((Tensor::from_values<float>(Shape{2, 2}, {1.f, 2.f, 3.f})),
                    Contains("3 values given for shape [2,2] of 4 elements"));
  CHECK_THROWS_WITH(Tensor::empty(DType::Float32, Shape{-1, 2}), Contains("must be fully defined"));
  CHECK_THROWS_WITH(d.reshaped(Shape{3}), Contains("cannot reshape [2] (2 elements) to [3]"));
  CHECK_THROWS_AS(d.value_as_double(2), Error);
  CHECK_THROWS_AS(Tensor::empty(DType::Float32, Shape{1LL << 40, 1LL << 40}), Error);  // overflow, not UB
}

TEST_CASE("reshaped shares the buffer; clone and cast copy", "[core]") {
  Tensor t = Tensor::from_values<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshaped(Shape{3, 2});
  CHECK(r.shares_buffer_with(t));
  r.data<float>()[0] = 10.f;
  CHECK(t.data<float>()[0] == 10.f);

  Tensor c = t.clone();
  CHECK_FALSE(c.shares_buffer_with(t));
  c.data<float>()[1] = -1.f;
  CHECK(t.data<float>()[1] == 2.f);

  Tensor halves = Tensor::from_values<double>(Shape{3}, {0.1, -2.75, 1e6}).cast(DType::Half);
  CHECK(halves.dtype() == DType::Half);
  CHECK(halves.data<half>()[0] == narrow<half>(0.1));
  CHECK(halves.data<half>()[1] == half(-2.75f));
  CHECK(halves.data<half>()[2] == half(std::numeric_limits<float>::infinity()));
  Tensor ints = Tensor::from_values<float>(Shape{2}, {-2.9f, 3.9f}).cast(DType::Int32);
  CHECK(ints.to_int64_vector() == std::vector<std::int64_t>{-2, 3});
}

TEST_CASE("shapes: unknown dims, compatibility, negative axes, overflow", "[core]") {
  Shape s{-1, 28, 28, 1};
  CHECK(s.to_string() == "[?,28,28,1]");
  CHECK_FALSE(s.is_fully_defined());
  CHECK(s.is_compatible_with(Shape{5, 28, 28, 1}));
  CHECK_FALSE(s.is_compatible_with(Shape{5, 28, 27, 1}));
  CHECK_FALSE(s.is_compatible_with(Shape{28, 28, 1}));
  CHECK(s.dim(-2) == 28);
  CHECK(Shape{}.to_string() == "[]");
  CHECK(Shape{}.num_elements() == 1);
  CHECK_THROWS_AS((Shape{1LL << 62, 4}.num_elements()), Error);
  CHECK(checked_mul(1LL << 31, 1LL << 31) == (1LL << 62));
}

TEST_CASE("host_view is a zero-copy xtensor view; xarray conversions copy", "[core]") {
  Tensor t = Tensor::zeros(DType::Float32, Shape{2, 3});
  auto view = host_view<float>(t);
  CHECK(view.shape()[0] == 2);
  CHECK(view.shape()[1] == 3);
  view(1, 2) = 7.f;  // row-major: element 5
  CHECK(t.data<float>()[5] == 7.f);

  xt::xarray<float> copy = to_xarray<float>(t);
  copy(0, 0) = 3.f;
  CHECK(t.data<float>()[0] == 0.f);
  CHECK(copy(1, 2) == 7.f);

  // A lazy expression is evaluated into a row-major tensor.
  xt::xarray<double> a = xt::arange<double>(6);
  a.reshape({2, 3});
  Tensor e = from_xarray(a * 2.0 + 1.0);
  CHECK(e.dtype() == DType::Float64);
  CHECK(e.shape() == Shape{2, 3});
  for (int i = 0; i < 6; ++i) CHECK(e.data<double>()[i] == 2.0 * i + 1.0);

  Tensor h = from_xarray(xt::xarray<half>{{half(1.5f), half(-2.f)}});
  CHECK(h.dtype() == DType::Half);
  CHECK(h.shape() == Shape{1, 2});
  CHECK(to_xarray<half>(h)(0, 1) == half(-2.f));
}

TEST_CASE("NaN prints as nan whatever its sign bit, in every floating dtype", "[core]") {
  // The float Mean of an empty tensor is 0/0, x86's default NaN, whose sign bit is set.
  const double negative_nan = std::copysign(std::numeric_limits<double>::quiet_NaN(), -1.0);
  for (DType dtype : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
    Tensor t = Tensor::full(dtype, Shape{2}, negative_nan);
    CHECK_THAT(t.to_string(), Contains("[nan, nan]"));
  }
}
