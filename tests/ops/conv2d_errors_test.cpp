// Conv2D and its backprop ops reject bad attributes and shapes with TF's words, and inputs of
// the kind that crashed TensorFlow in its security advisories (zero-sized dims, huge strides,
// dilations and paddings, mismatched ranks, sizes whose product overflows) give an error or a
// correct empty result.
#include <catch2/catch.hpp>

#include "conv_test_util.hpp"

using namespace dagrad;
using namespace conv_test;
using Catch::Matchers::Contains;

namespace {

constexpr std::int64_t kHuge = std::int64_t{1} << 62;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

Tensor zeros(const Shape& s) { return Tensor::zeros(DType::Float32, s); }
Tensor sizes(std::vector<std::int32_t> v) {
  return Tensor::from_values<std::int32_t>(Shape{static_cast<std::int64_t>(v.size())}, v);
}

const ops::Conv2DOptions kValid{.strides = {1, 1, 1, 1}, .padding = "VALID"};

// Runs all five ops on x [1,5,5,2], w [3,3,2,4] with options o and dy of the right VALID shape.
void all_ops_throw(const ops::Conv2DOptions& o, const std::string& message) {
  const Tensor x = zeros(Shape{1, 5, 5, 2}), w = zeros(Shape{3, 3, 2, 4}), dy = zeros(Shape{1, 3, 3, 4});
  CHECK_THROWS_WITH(raw_ops::Conv2D(x, w, o), Contains(message) && Contains("Conv2D"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropInputV2(x, w, dy, o),
                    Contains(message) && Contains("Conv2DBackpropInputV2"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropInput(sizes({1, 5, 5, 2}), w, dy, o), Contains(message));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilterV2(x, w, dy, o),
                    Contains(message) && Contains("Conv2DBackpropFilterV2"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, sizes({3, 3, 2, 4}), dy, o), Contains(message));
}

}  // namespace

TEST_CASE("conv attribute errors use TF's messages", "[conv]") {
  all_ops_throw({.strides = {1, 1, 1}, .padding = "VALID"}, "Sliding window strides field must specify 4 dimensions");
  all_ops_throw({.padding = "VALID"}, "Sliding window strides field must specify 4 dimensions");
  all_ops_throw({.strides = {2, 1, 1, 1}, .padding = "VALID"},
                "Current implementation does not yet support strides in the batch and depth dimensions.");
  all_ops_throw({.strides = {1, 1, 1, 2}, .padding = "VALID"},
                "Current implementation does not yet support strides in the batch and depth dimensions.");
  // In NCHW the depth stride is the second entry.
  all_ops_throw({.strides = {1, 2, 1, 1}, .padding = "VALID", .data_format = "NCHW"},
                "Current implementation does not yet support strides in the batch and depth dimensions.");
  all_ops_throw({.strides = {1, 0, 1, 1}, .padding = "VALID"}, "Row and column strides should be larger than 0.");
  all_ops_throw({.strides = {1, 1, -3, 1}, .padding = "VALID"}, "Row and column strides should be larger than 0.");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, 1, 1}},
                "Sliding window dilations field must specify 4 dimensions");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, 1, 1, 2}},
                "Current implementation does not yet support dilations in the batch and depth dimensions.");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, 0, 1, 1}},
                "Dilated rates should be larger than 0.");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, 1, 1, 1, 1}},
                "explicit_paddings attribute must contain 8 values, but got: 6");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, 1, -1, 1, 1, 0, 0}},
                "All elements of explicit_paddings must be nonnegative");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {1, 0, 0, 0, 0, 0, 0, 0}},
                "Nonzero explicit padding in the batch or depth dimensions is not supported");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, 0, 0, 0, 0, 0, 1}},
                "Nonzero explicit padding in the batch or depth dimensions is not supported");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "VALID", .explicit_paddings = {0, 0, 0, 0, 0, 0, 0, 0}},
                "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT");
  // Values outside the schema's allowed sets are rejected naming the attribute.
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "FULL"}, "padding");
  all_ops_throw({.strides = {1, 1, 1, 1}, .padding = "VALID", .data_format = "NCWH"}, "data_format");
}

TEST_CASE("conv dtype errors name the argument", "[conv]") {
  const Tensor x = zeros(Shape{1, 5, 5, 2}), w = zeros(Shape{3, 3, 2, 4});
  // Mixed dtypes.
  CHECK_THROWS_WITH(raw_ops::Conv2D(x, w.cast(DType::Float64), kValid), Contains("filter"));
  // A dtype outside T's allowed set.
  const Tensor xi = Tensor::zeros(DType::Int32, Shape{1, 5, 5, 2}), wi = Tensor::zeros(DType::Int32, Shape{3, 3, 2, 4});
  CHECK_THROWS_WITH(raw_ops::Conv2D(xi, wi, kValid), Contains("T"));
  // input_sizes / filter_sizes must be int32.
  const Tensor dy = zeros(Shape{1, 3, 3, 4});
  CHECK_THROWS_WITH(
      raw_ops::Conv2DBackpropInput(Tensor::from_values<std::int64_t>(Shape{4}, {1, 5, 5, 2}), w, dy, kValid),
      Contains("input_sizes"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, Tensor::from_values<float>(Shape{4}, {3, 3, 2, 4}), dy, kValid),
                    Contains("filter_sizes"));
}

TEST_CASE("conv shape errors use TF's messages", "[conv]") {
  const Tensor w = zeros(Shape{3, 3, 2, 4}), dy = zeros(Shape{1, 3, 3, 4});
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{5, 5, 2}), w, kValid), Contains("input must be 4-dimensional"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 5, 5, 2}), zeros(Shape{3, 3, 2}), kValid),
                    Contains("filter must be 4-dimensional"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 5, 5, 3}), w, kValid),
                    Contains("input depth must be evenly divisible by filter depth: 3 vs 2"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 5, 5, 6}), w, kValid),
                    Contains("Depth of output (4) is not a multiple of the number of groups (3)"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 5, 5, 0}), zeros(Shape{3, 3, 0, 4}), kValid),
                    Contains("filter depth must be stricly positive"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 5, 5, 0}), w, kValid),
                    Contains("input depth must be evenly divisible by filter depth"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 1, 5, 2}), w, kValid),
                    Contains("Computed output size would be negative"));

  const Tensor x = zeros(Shape{1, 5, 5, 2});
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilterV2(x, w, zeros(Shape{3, 3, 4}), kValid),
                    Contains("out_backprop must be 4-dimensional"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilterV2(x, w, zeros(Shape{2, 3, 3, 4}), kValid),
                    Contains("input and out_backprop must have the same batch size"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropInputV2(x, w, zeros(Shape{1, 3, 3, 5}), kValid),
                    Contains("filter and out_backprop must have the same out_depth"));
  CHECK_THROWS_WITH(
      raw_ops::Conv2DBackpropFilterV2(x, w, zeros(Shape{1, 4, 3, 4}), {.strides = {1, 1, 2, 1}, .padding = "VALID"}),
      Contains("Conv2DBackpropFilterV2: Size of out_backprop doesn't match computed: actual = 4, computed = 3 "
               "spatial_dim: 1 input: 5 filter: 3 output: 4 stride: 1 dilation: 1"));
  CHECK_THROWS_WITH(
      raw_ops::Conv2DBackpropFilter(x, sizes({3, 3, 2, 4}), zeros(Shape{1, 3, 2, 4}),
                                    {.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, 1, 2, 1}}),
      Contains("Conv2DBackpropFilter: Size of out_backprop doesn't match computed: actual = 2, computed = 1 "
               "spatial_dim: 2 input: 5 filter: 3 output: 2 stride: 1 dilation: 2"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropInput(sizes({1, 6, 5, 2}), w, dy, kValid),
                    Contains("Size of out_backprop doesn't match computed: actual = 3, computed = 4"));

  // input_sizes and filter_sizes.
  CHECK_THROWS_WITH(
      raw_ops::Conv2DBackpropInput(Tensor::from_values<std::int32_t>(Shape{2, 2}, {1, 5, 5, 2}), w, dy, kValid),
      Contains("Conv2DBackpropInput: input_sizes input must be 1-dim, not 2"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropInput(sizes({1, 5, 5}), w, dy, kValid),
                    Contains("Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: 3"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropInput(sizes({1, -5, 5, 2}), w, dy, kValid),
                    Contains("Dimension -5 must be >= 0"));
  CHECK_THROWS_WITH(
      raw_ops::Conv2DBackpropFilter(x, Tensor::from_values<std::int32_t>(Shape{1, 4}, {3, 3, 2, 4}), dy, kValid),
      Contains("Conv2DBackpropFilter: filter_sizes input must be 1-dim, not 2"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, sizes({3, 3, 2}), dy, kValid),
                    Contains("filter must be 4-dimensional"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, sizes({3, -3, 2, 4}), dy, kValid),
                    Contains("Dimension -3 must be >= 0"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, sizes({}), dy, kValid), Contains("filter must be 4-dimensional"));
  // filter_sizes at int32's limit: a filter larger than the input, or one too large to exist.
  constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, sizes({kInt32Max, kInt32Max, 2, 4}), dy, kValid),
                    Contains("Computed output size would be negative"));
  CHECK_THROWS_WITH(raw_ops::Conv2DBackpropFilter(x, sizes({kInt32Max, kInt32Max, 2, 4}), zeros(Shape{1, 5, 5, 4}),
                                                  {.strides = {1, 1, 1, 1}, .padding = "SAME"}),
                    Contains("has more than 2^63 - 1 elements"));
}

TEST_CASE("conv errors surface when the graph node is built", "[conv]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{-1, 5, 5, 2}, "x");
  Output w = ops::placeholder(g, DType::Float32, Shape{3, 3, 2, 4}, "w");
  CHECK_THROWS_WITH(ops::conv2d(g, x, w, {.strides = {1, 1, 1, 1}, .padding = "SAME", .dilations = {2, 1, 1, 1}}),
                    Contains("dilations in the batch and depth dimensions"));
  Output dy = ops::placeholder(g, DType::Float32, Shape{-1, 4, -1, 4}, "dy");
  CHECK_THROWS_WITH(ops::conv2d_backprop_filter_v2(g, x, w, dy, kValid), Contains("actual = 4, computed = 3"));
  // Unknown dims pass at graph time and propagate.
  Output y = ops::conv2d(g, x, w, {.strides = {1, 2, 2, 1}, .padding = "SAME"});
  CHECK(y.shape() == Shape{-1, 3, 3, 4});
  Output xu = ops::placeholder(g, DType::Float32, Shape{2, -1, 7, -1}, "xu");
  Output yu = ops::conv2d(g, xu, w, {.strides = {1, 2, 2, 1}, .padding = "SAME"});
  CHECK(yu.shape() == Shape{2, -1, 4, 4});
}

TEST_CASE("advisory inputs: zero-sized dimensions give correctly shaped results", "[conv]") {
  const ops::Conv2DOptions same{.strides = {1, 1, 1, 1}, .padding = "SAME"};
  // Batch 0: empty outputs and a zero filter gradient.
  const Tensor x0 = zeros(Shape{0, 4, 4, 2}), w = Tensor::full(DType::Float32, Shape{3, 3, 2, 4}, 1.0);
  CHECK(raw_ops::Conv2D(x0, w, same).shape() == Shape{0, 4, 4, 4});
  const Tensor dy0 = zeros(Shape{0, 4, 4, 4});
  CHECK(raw_ops::Conv2DBackpropInputV2(x0, w, dy0, same).shape() == Shape{0, 4, 4, 2});
  const Tensor dw0 = raw_ops::Conv2DBackpropFilterV2(x0, w, dy0, same);
  REQUIRE(dw0.shape() == Shape{3, 3, 2, 4});
  CHECK(values(dw0) == std::vector<double>(72, 0.0));
  // Zero output channels.
  const Tensor x = Tensor::full(DType::Float32, Shape{1, 4, 4, 2}, 1.0), wk0 = zeros(Shape{3, 3, 2, 0});
  CHECK(raw_ops::Conv2D(x, wk0, same).shape() == Shape{1, 4, 4, 0});
  const Tensor dx = raw_ops::Conv2DBackpropInputV2(x, wk0, zeros(Shape{1, 4, 4, 0}), same);
  REQUIRE(dx.shape() == Shape{1, 4, 4, 2});
  CHECK(values(dx) == std::vector<double>(32, 0.0));
  // Empty spatial input with padding: all taps read padding, so the output is zeros.
  const ops::Conv2DOptions pad{
      .strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, 2, 2, 1, 1, 0, 0}};
  const Tensor y = raw_ops::Conv2D(zeros(Shape{1, 0, 1, 2}), w, pad);
  REQUIRE(y.shape() == Shape{1, 2, 1, 4});
  CHECK(values(y) == std::vector<double>(8, 0.0));
  // VALID with a filter larger than the input but a larger stride: (2 - 3 + 4) / 4 = 0, an
  // empty spatial output (TF's truncating division), not an error.
  const Tensor ye = raw_ops::Conv2D(zeros(Shape{1, 2, 2, 2}), w, {.strides = {1, 4, 4, 1}, .padding = "VALID"});
  CHECK(ye.shape() == Shape{1, 0, 0, 4});
  const Tensor yv = raw_ops::Conv2D(zeros(Shape{1, 0, 0, 2}), w, same);
  CHECK(yv.shape() == Shape{1, 0, 0, 4});
  const Tensor dwv = raw_ops::Conv2DBackpropFilterV2(zeros(Shape{1, 0, 0, 2}), w, zeros(Shape{1, 0, 0, 4}), same);
  CHECK(values(dwv) == std::vector<double>(72, 0.0));
  // A filter with zero rows reads nothing: zeros.
  const Tensor yk = raw_ops::Conv2D(x, zeros(Shape{0, 1, 2, 4}), kValid);
  REQUIRE(yk.shape() == Shape{1, 5, 4, 4});
  CHECK(values(yk) == std::vector<double>(80, 0.0));
}

TEST_CASE("advisory inputs: huge strides, dilations and paddings", "[conv]") {
  const Tensor x = iota_tensor(Shape{1, 3, 3, 1}), w = Tensor::from_values<double>(Shape{1, 1, 1, 1}, {2.0});
  // A stride of 2^62 or INT64_MAX: one output element, computed without overflow.
  for (std::int64_t s : {kHuge, kMax}) {
    for (const char* padding : {"VALID", "SAME"}) {
      const Tensor y = raw_ops::Conv2D(x, w, {.strides = {1, s, s, 1}, .padding = padding});
      REQUIRE(y.shape() == Shape{1, 1, 1, 1});
      CHECK(y.value_as_double(0) == 2.0);
      const Tensor dx = raw_ops::Conv2DBackpropInputV2(x, w, Tensor::full(DType::Float64, Shape{1, 1, 1, 1}, 1.0),
                                                       {.strides = {1, s, s, 1}, .padding = padding});
      CHECK(values(dx) == std::vector<double>{2, 0, 0, 0, 0, 0, 0, 0, 0});
    }
  }
  // A dilation whose effective filter size overflows int64, and one that is merely too large.
  const Tensor w3 = Tensor::full(DType::Float64, Shape{3, 1, 1, 1}, 1.0);
  CHECK_THROWS_WITH(
      raw_ops::Conv2D(x, w3, {.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, kHuge, 1, 1}}),
      Contains("overflows int64"));
  CHECK_THROWS_WITH(raw_ops::Conv2D(x, w3, {.strides = {1, 1, 1, 1}, .padding = "SAME", .dilations = {1, kMax, 1, 1}}),
                    Contains("overflows int64"));
  CHECK_THROWS_WITH(
      raw_ops::Conv2D(x, w3, {.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, kHuge / 2, 1, 1}}),
      Contains("Computed output size would be negative"));
  // With a stride as large as the dilated filter, VALID gives an empty output instead.
  const Tensor ye =
      raw_ops::Conv2D(x, w3, {.strides = {1, kMax, 1, 1}, .padding = "VALID", .dilations = {1, kHuge / 2, 1, 1}});
  CHECK(ye.shape() == Shape{1, 0, 3, 1});
  // SAME with a huge dilation: one output row reading only the top input row.
  const Tensor ys =
      raw_ops::Conv2D(x, w3, {.strides = {1, 1, 1, 1}, .padding = "SAME", .dilations = {1, kHuge / 2, 1, 1}});
  REQUIRE(ys.shape() == Shape{1, 3, 3, 1});
  CHECK(values(ys) == values(x));  // pads 2^61 each side: only the middle tap lands in the input
  // Paddings whose sum with the input overflows int64.
  CHECK_THROWS_WITH(
      raw_ops::Conv2D(
          x, w,
          {.strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, kHuge, kHuge, 0, 0, 0, 0}}),
      Contains("overflows int64"));
  CHECK_THROWS_WITH(
      raw_ops::Conv2D(
          x, w, {.strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, kMax, 0, 0, 0, 0, 0}}),
      Contains("overflows int64"));
  // Huge but representable paddings with a huge stride: a tiny, exact result.
  const Tensor yp = raw_ops::Conv2D(x, w,
                                    {.strides = {1, kHuge, kHuge, 1},
                                     .padding = "EXPLICIT",
                                     .explicit_paddings = {0, 0, kHuge, kHuge - 8, 0, kHuge, 0, 0}});
  // rows: (3 + 2^63 - 8 - 1 + 2^62) / 2^62 = 2 (row 0 at input row -2^62: padding; row 1 at 0).
  REQUIRE(yp.shape() == Shape{1, 2, 2, 1});
  CHECK(values(yp) == std::vector<double>{0, 0, 2, 0});
  // Output dims whose product overflows: an error, not a wrapped allocation.
  CHECK_THROWS_WITH(raw_ops::Conv2D(zeros(Shape{1, 1, 1, 1}), zeros(Shape{1, 1, 1, 1}),
                                    {.strides = {1, 1, 1, 1},
                                     .padding = "EXPLICIT",
                                     .explicit_paddings = {0, 0, kHuge, kHuge - 2, kHuge, kHuge - 2, 0, 0}}),
                    Contains("Conv2D: output shape") && Contains("has more than 2^63 - 1 elements"));
  // Graph-time shapes with huge dims infer without overflow; a fully defined shape whose
  // element count overflows is rejected when the node is built.
  Graph g;
  Output xh = ops::placeholder(g, DType::Float32, Shape{-1, kHuge, kHuge, 1}, "xh");
  Output wh = ops::placeholder(g, DType::Float32, Shape{3, 3, 1, 8}, "wh");
  CHECK(ops::conv2d(g, xh, wh, {.strides = {1, 1, 1, 1}, .padding = "SAME"}).shape() == Shape{-1, kHuge, kHuge, 8});
  Output xf = ops::placeholder(g, DType::Float32, Shape{2, kHuge, kHuge, 1}, "xf");
  CHECK_THROWS_WITH(ops::conv2d(g, xf, wh, {.strides = {1, 1, 1, 1}, .padding = "SAME"}),
                    Contains("has more than 2^63 - 1 elements"));
  Output dyf = ops::placeholder(g, DType::Float32, Shape{2, kHuge, kHuge, 8}, "dyf");
  CHECK_THROWS_WITH(ops::conv2d_backprop_input_v2(g, xf, wh, dyf, {.strides = {1, 1, 1, 1}, .padding = "SAME"}),
                    Contains("Conv2DBackpropInputV2: output shape"));
}
