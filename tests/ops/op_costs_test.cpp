// The ops' cost models (OpDef::cost): what bench-op and profiles divide by time.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

std::optional<double> flops(const std::string& op, const AttrMap& attrs, std::vector<Shape> inputs,
                            std::vector<Shape> outputs) {
  return op_registry().get(op).flops({attrs, inputs, outputs});
}

}  // namespace

TEST_CASE("the three conv ops of one convolution cost the same: 2 per multiply-add", "[ops][conv]") {
  // 2 x 5x7 NHWC input with 3 channels, 3x2 filter to 4 channels, VALID, stride 1: a 3x6 output.
  const AttrMap attrs = ops::conv2d_attr_map({.strides = {1, 1, 1, 1}, .padding = "VALID"});
  const Shape input{2, 5, 7, 3}, filter{3, 2, 3, 4}, output{2, 3, 6, 4}, sizes{4};
  const double expected = 2.0 * 2 * 3 * 6 * 4 * (3 * 2 * 3);
  CHECK(flops("Conv2D", attrs, {input, filter}, {output}) == expected);
  CHECK(flops("Conv2DBackpropInputV2", attrs, {input, filter, output}, {input}) == expected);
  CHECK(flops("Conv2DBackpropInput", attrs, {sizes, filter, output}, {input}) == expected);
  CHECK(flops("Conv2DBackpropFilterV2", attrs, {input, filter, output}, {filter}) == expected);
  CHECK(flops("Conv2DBackpropFilter", attrs, {input, sizes, output}, {filter}) == expected);
}

TEST_CASE("MatMul costs 2mnk whatever is transposed; element-wise ops one per element", "[ops]") {
  for (const bool ta : {false, true}) {
    const Shape a = ta ? Shape{7, 5} : Shape{5, 7};
    CHECK(flops("MatMul", {{"transpose_a", ta}, {"transpose_b", false}}, {a, {7, 3}}, {{5, 3}}) == 2.0 * 5 * 7 * 3);
  }
  CHECK(flops("AddV2", {}, {{4, 1}, {3}}, {{4, 3}}) == 12);
  CHECK(flops("AddN", {}, {{2, 3}, {2, 3}, {2, 3}}, {{2, 3}}) == 12);
  CHECK(flops("Sum", {}, {{6, 5}, {1}}, {{5}}) == 30);
  CHECK(flops("BiasAddGrad", {}, {{6, 5}}, {{5}}) == 30);
  CHECK_FALSE(flops("Transpose", {}, {{2, 3}, {2}}, {{3, 2}}).has_value());  // moves data only
}
