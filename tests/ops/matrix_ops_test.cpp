// MatMul (all transpose combinations), Transpose, ArgMax and Equal against hand-computed values.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.value_as_double(i));
  return v;
}

Tensor transposed(const Tensor& m) {
  return run_op("Transpose", {m, Tensor::from_values<std::int32_t>(Shape{2}, {1, 0})})[0];
}

}  // namespace

TEST_CASE("MatMul with every transpose combination", "[nn]") {
  const Tensor a = Tensor::from_values<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_values<float>(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  const std::vector<double> expected = {58, 64, 139, 154};
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        INFO("transpose_a " << ta << " transpose_b " << tb);
        Tensor y = run_op("MatMul", {ta ? transposed(a) : a, tb ? transposed(b) : b},
                          {{"transpose_a", ta}, {"transpose_b", tb}}, {.backend = backend})[0];
        CHECK(y.shape() == Shape{2, 2});
        CHECK(values(y) == expected);
      }
    }
  }
  CHECK_THROWS_WITH(run_op("MatMul", {a, a}), Catch::Contains("Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]"));
  CHECK_THROWS_WITH(run_op("MatMul", {Tensor::from_values<float>(Shape{3}, {1, 2, 3}), b}),
                    Catch::Contains("In[0] is not a matrix"));
}

TEST_CASE("Transpose permutes axes", "[nn]") {
  std::vector<std::int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = i;
  const Tensor x = Tensor::from_values<std::int32_t>(Shape{2, 3, 4}, v);
  Tensor y = run_op("Transpose", {x, Tensor::from_values<std::int64_t>(Shape{3}, {2, 0, 1})})[0];
  REQUIRE(y.shape() == Shape{4, 2, 3});
  const std::int32_t* p = y.data<std::int32_t>();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) CHECK(p[(k * 2 + i) * 3 + j] == (i * 3 + j) * 4 + k);
  CHECK_THROWS_WITH(run_op("Transpose", {x, Tensor::from_values<std::int32_t>(Shape{2}, {1, 0})}),
                    Catch::Contains("transpose expects a vector of size 3"));
  CHECK_THROWS_WITH(run_op("Transpose", {x, Tensor::from_values<std::int32_t>(Shape{3}, {0, 0, 1})}),
                    Catch::Contains("more than once"));
}

TEST_CASE("ArgMax takes the first maximum; Equal broadcasts", "[nn]") {
  const Tensor x = Tensor::from_values<float>(Shape{2, 3}, {1, 5, 5, 7, 2, 3});
  Tensor rows = run_op("ArgMax", {x, Tensor::scalar<std::int32_t>(1)})[0];
  CHECK(rows.dtype() == DType::Int64);
  CHECK(values(rows) == std::vector<double>{1, 0});
  Tensor cols = run_op("ArgMax", {x, Tensor::scalar<std::int32_t>(-2)}, {{"output_type", DType::Int32}})[0];
  CHECK(cols.dtype() == DType::Int32);
  CHECK(values(cols) == std::vector<double>{1, 0, 0});
  CHECK_THROWS_WITH(run_op("ArgMax", {x, Tensor::scalar<std::int32_t>(2)}),
                    Catch::Contains("Expected dimension in the range [-2, 2), but got 2"));
  Tensor eq =
      run_op("Equal", {Tensor::from_values<std::int64_t>(Shape{3}, {1, 2, 3}), Tensor::scalar<std::int64_t>(2)})[0];
  CHECK(eq.dtype() == DType::Bool);
  CHECK(values(eq) == std::vector<double>{0, 1, 0});
}
