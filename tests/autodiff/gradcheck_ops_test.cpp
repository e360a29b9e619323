// Every differentiable array/math/shape op passes the gradient checker, in float64 and in the
// lower precisions (checked against their float64 evaluation), in both modes and to order 2.
#include <catch2/catch.hpp>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

struct Case {
  std::string op;
  std::vector<Shape> shapes;  // floating inputs, random in [-1, 1)
  AttrMap attrs;
  std::vector<Tensor> extra = {};  // integer inputs appended after the floating ones (axes, shapes)
  double lo = -1, hi = 1;
};

Tensor i64(std::vector<std::int64_t> v) {
  return Tensor::from_values<std::int64_t>(Shape{static_cast<std::int64_t>(v.size())}, v);
}

std::vector<Case> cases() {
  return {
      {"Identity", {{2, 3}}, {}},
      {"Neg", {{4}}, {}},
      {"Reciprocal", {{5}}, {}, {}, 0.5, 2.0},
      {"Add", {{2, 3}, {3}}, {}},
      {"AddV2", {{2, 1, 3}, {4, 1}}, {}},
      {"Sub", {{3, 1}, {1, 4}}, {}},
      {"Mul", {{2, 3}, {2, 1}}, {}},
      {"Mul", {{}, {3, 2}}, {}},
      {"AddN", {{2, 2}, {2, 2}, {2, 2}}, {}},
      {"Sum", {{2, 3, 4}}, {{"keep_dims", false}}, {i64({0, 2})}},
      {"Sum", {{2, 3, 4}}, {{"keep_dims", true}}, {i64({-1})}},
      {"Mean", {{3, 4}}, {{"keep_dims", false}}, {i64({1})}},
      {"Mean", {{2, 3, 2}}, {{"keep_dims", true}}, {i64({0, 1})}},
      {"Reshape", {{2, 6}}, {}, {i64({3, -1, 2})}},
      {"BroadcastTo", {{3, 1}}, {}, {i64({2, 3, 4})}},
  };
}

std::vector<Tensor> inputs_for(const Case& c, DType dtype, std::uint64_t seed) {
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < c.shapes.size(); ++i)
    in.push_back(random_tensor(dtype, c.shapes[i], seed + i, c.lo, c.hi));
  for (const auto& t : c.extra) in.push_back(t);
  return in;
}

void check_case(const Case& c, DType dtype, GradCheckOptions options) {
  const GradCheckResult r = check_gradients(c.op, inputs_for(c, dtype, 11), c.attrs, options);
  INFO(r.report());
  CHECK(r.passed);
}

}  // namespace

TEST_CASE("array, math and shape ops pass the full check in float64 and float32", "[autodiff][gradcheck]") {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Float64, DType::Float32}) check_case(c, dtype, {});
  }
}

TEST_CASE("array, math and shape ops pass in half and bfloat16 against float64", "[autodiff][gradcheck]") {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Half, DType::BFloat16}) check_case(c, dtype, {});
  }
}

TEST_CASE("array, math and shape ops pass the fast and second-order checks", "[autodiff][gradcheck]") {
  for (const Case& c : cases()) {
    check_case(c, DType::Float64, {.mode = GradCheckMode::Fast});
    // Linear ops have zero second derivatives: only the non-linear ones are checked at order 2.
    if (c.op == "Mul" || c.op == "Reciprocal") check_case(c, DType::Float64, {.order = 2});
  }
}

TEST_CASE("Cast passes between floating dtypes and declares no gradient from integers", "[autodiff][gradcheck]") {
  for (DType src : {DType::Float64, DType::Float32, DType::Half}) {
    for (DType dst : {DType::Float64, DType::Float32, DType::BFloat16}) {
      const GradCheckResult r = check_gradients("Cast", {random_tensor(src, Shape{3}, 5)}, {{"DstT", dst}});
      INFO(r.report());
      CHECK(r.passed);
    }
  }
}
