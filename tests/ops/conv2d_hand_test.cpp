// Conv2D and its backprop ops on small cases computed by hand (the working is in the comments),
// one per padding mode, stride, dilation, layout and grouping, plus V1/V2 and API agreement.
#include <catch2/catch.hpp>

#include "conv_test_util.hpp"

using namespace dagrad;
using namespace conv_test;
using Catch::Matchers::Contains;

namespace {

Tensor ref(std::string_view op, std::vector<Tensor> inputs, const ops::Conv2DOptions& o) {
  return run_op(op, std::move(inputs), ops::conv2d_attr_map(o), {.backend = "reference"}).at(0);
}

Tensor f64(const Shape& shape, std::vector<double> v) { return Tensor::from_values<double>(shape, v); }

// The default kernel may be a fast backend summing in another order: equal to the reference
// up to float64 rounding.
void require_close(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  for (std::int64_t i = 0; i < a.num_elements(); ++i)
    REQUIRE(a.value_as_double(i) == Approx(b.value_as_double(i)).margin(1e-12));
}

}  // namespace

TEST_CASE("Conv2D VALID stride 1 by hand", "[conv]") {
  // x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]]: y[i][j] = x[i][j] + 2x[i][j+1] + 3x[i+1][j] + 4x[i+1][j+1].
  const Tensor x = iota_tensor(Shape{1, 3, 3, 1});
  const Tensor w = f64(Shape{2, 2, 1, 1}, {1, 2, 3, 4});
  const Tensor y = ref("Conv2D", {x, w}, {.strides = {1, 1, 1, 1}, .padding = "VALID"});
  CHECK(y.shape() == Shape{1, 2, 2, 1});
  CHECK(values(y) == std::vector<double>{37, 47, 67, 77});

  // dw[a][b] = sum over the 2x2 outputs of x[i+a][j+b] with dy = 1.
  const Tensor dy = Tensor::full(DType::Float64, Shape{1, 2, 2, 1}, 1.0);
  const Tensor dw = ref("Conv2DBackpropFilterV2", {x, w, dy}, {.strides = {1, 1, 1, 1}, .padding = "VALID"});
  CHECK(values(dw) == std::vector<double>{12, 16, 24, 28});
  // dx[i][j] = sum of the filter taps that touch (i, j): the corners see one tap, the centre all four.
  const Tensor dx = ref("Conv2DBackpropInputV2", {x, w, dy}, {.strides = {1, 1, 1, 1}, .padding = "VALID"});
  CHECK(values(dx) == std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4});
}

TEST_CASE("Conv2D SAME stride 2 pads the odd unit after", "[conv]") {
  // in 4, k 3, s 2: out 2, need (2-1)*2+3-4 = 1, so pad_top 0 and pad_bottom 1 (same for cols).
  // x[r][c] = 4r+c+1, w = ones: y = sums of the 3x3 windows at rows/cols {0,2} clipped to the input.
  const Tensor x = iota_tensor(Shape{1, 4, 4, 1});
  const Tensor w = Tensor::full(DType::Float64, Shape{3, 3, 1, 1}, 1.0);
  const Tensor y = ref("Conv2D", {x, w}, {.strides = {1, 2, 2, 1}, .padding = "SAME"});
  CHECK(y.shape() == Shape{1, 2, 2, 1});
  CHECK(values(y) == std::vector<double>{54, 45, 72, 54});
}

TEST_CASE("Conv2D asymmetric EXPLICIT padding", "[conv]") {
  // x = [[1,2],[3,4]] padded top 1, bottom 0, left 0, right 2 gives the 3x4 array
  // [[0,0,0,0],[1,2,0,0],[3,4,0,0]]; w = [[1,10],[100,1000]]; out (3-2+1) x (4-2+1) = 2 x 3.
  const Tensor x = f64(Shape{1, 2, 2, 1}, {1, 2, 3, 4});
  const Tensor w = f64(Shape{2, 2, 1, 1}, {1, 10, 100, 1000});
  const ops::Conv2DOptions o{
      .strides = {1, 1, 1, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, 1, 0, 0, 2, 0, 0}};
  const Tensor y = ref("Conv2D", {x, w}, o);
  CHECK(y.shape() == Shape{1, 2, 3, 1});
  CHECK(values(y) == std::vector<double>{2100, 200, 0, 4321, 402, 0});
}

TEST_CASE("Conv2D with dilation 2", "[conv]") {
  // x[r][c] = 5r+c on 5x5, w = [[1,2],[3,4]] dilated by 2 (extent 3): out 3x3 with
  // y[i][j] = v + 2(v+2) + 3(v+10) + 4(v+12) = 10v + 82 where v = 5i+j.
  const Tensor x = iota_tensor(Shape{1, 5, 5, 1}, 0.0);
  const Tensor w = f64(Shape{2, 2, 1, 1}, {1, 2, 3, 4});
  const Tensor y = ref("Conv2D", {x, w}, {.strides = {1, 1, 1, 1}, .padding = "VALID", .dilations = {1, 2, 2, 1}});
  REQUIRE(y.shape() == Shape{1, 3, 3, 1});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK(y.value_as_double(i * 3 + j) == 10.0 * (5 * i + j) + 82.0);
}

TEST_CASE("Conv2D stride larger than the filter skips input", "[conv]") {
  // 1x1 filter of 2, stride 3 on rows and 2 on cols of a 5x5 input: rows {0,3}, cols {0,2,4}.
  const Tensor x = iota_tensor(Shape{1, 5, 5, 1}, 0.0);
  const Tensor w = f64(Shape{1, 1, 1, 1}, {2});
  const Tensor y = ref("Conv2D", {x, w}, {.strides = {1, 3, 2, 1}, .padding = "VALID"});
  CHECK(y.shape() == Shape{1, 2, 3, 1});
  CHECK(values(y) == std::vector<double>{0, 4, 8, 30, 34, 38});
}

TEST_CASE("Grouped and depthwise Conv2D", "[conv]") {
  // 4 input channels, filter in_channels 2: two groups; out channels 0,1 read inputs 0,1 and
  // out channels 2,3 read inputs 2,3. w[ci][co] = [[1,2,3,4],[5,6,7,8]].
  const Tensor x = f64(Shape{1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor w = f64(Shape{1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const ops::Conv2DOptions o{.strides = {1, 1, 1, 1}, .padding = "VALID"};
  // y0 = 1*1+2*5, y1 = 1*2+2*6, y2 = 3*3+4*7, y3 = 3*4+4*8.
  CHECK(values(ref("Conv2D", {x, w}, o)) == std::vector<double>{11, 14, 37, 44});
  // dw[ci][co] = x[group(co)*2 + ci] with dy = 1.
  const Tensor dy = Tensor::full(DType::Float64, Shape{1, 1, 1, 4}, 1.0);
  CHECK(values(ref("Conv2DBackpropFilterV2", {x, w, dy}, o)) == std::vector<double>{1, 1, 3, 3, 2, 2, 4, 4});
  // dx[c] = sum over the group's out channels of w[c % 2][co]: 1+2, 5+6, 3+4, 7+8.
  CHECK(values(ref("Conv2DBackpropInputV2", {x, w, dy}, o)) == std::vector<double>{3, 11, 7, 15});

  // Depthwise: 3 channels, filter in_channels 1, multiplier 2: y[2c+m] = x[c] * w[2c+m].
  const Tensor xd = f64(Shape{1, 1, 1, 3}, {1, 2, 3});
  const Tensor wd = f64(Shape{1, 1, 1, 6}, {1, 10, 100, 1000, 10000, 100000});
  CHECK(values(ref("Conv2D", {xd, wd}, o)) == std::vector<double>{1, 10, 200, 2000, 30000, 300000});
}

TEST_CASE("Conv2D NCHW matches the hand-computed NHWC case", "[conv]") {
  // Two channels: channel 0 is the VALID case above, channel 1 is 10x it; w sums them with
  // weights 1 and 0.5, so y = 37*6 etc. (1 + 0.5*10 = 6).
  std::vector<double> xv;
  for (double scale : {1.0, 10.0})
    for (int i = 1; i <= 9; ++i) xv.push_back(scale * i);
  const Tensor x = f64(Shape{1, 2, 3, 3}, xv);
  const Tensor w = f64(Shape{2, 2, 2, 1}, {1, 0.5, 2, 1, 3, 1.5, 4, 2});
  const Tensor y = ref("Conv2D", {x, w}, {.strides = {1, 1, 1, 1}, .padding = "VALID", .data_format = "NCHW"});
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK(values(y) == std::vector<double>{37 * 6, 47 * 6, 67 * 6, 77 * 6});
  // Strides in NCHW order: {1, 1, 2, 2}.
  const Tensor y2 = ref("Conv2D", {x, w}, {.strides = {1, 1, 2, 2}, .padding = "VALID", .data_format = "NCHW"});
  CHECK(y2.shape() == Shape{1, 1, 1, 1});
  CHECK(y2.value_as_double(0) == 37 * 6);
}

TEST_CASE("V1 ops agree with V2 and take 2-element input_sizes", "[conv]") {
  std::mt19937_64 rng(7);
  const Tensor x = random_tensor(DType::Float64, Shape{2, 5, 6, 4}, rng);
  const Tensor w = random_tensor(DType::Float64, Shape{3, 2, 2, 6}, rng);
  const ops::Conv2DOptions o{.strides = {1, 2, 1, 1}, .padding = "SAME", .dilations = {1, 1, 2, 1}};
  const Tensor y = ref("Conv2D", {x, w}, o);
  const Tensor dy = random_tensor(DType::Float64, y.shape(), rng);
  const Tensor dx2 = ref("Conv2DBackpropInputV2", {x, w, dy}, o);
  const Tensor dx1 = ref("Conv2DBackpropInput", {Tensor::from_values<std::int32_t>(Shape{4}, {2, 5, 6, 4}), w, dy}, o);
  CHECK(values(dx1) == values(dx2));
  const Tensor dw2 = ref("Conv2DBackpropFilterV2", {x, w, dy}, o);
  const Tensor dw1 = ref("Conv2DBackpropFilter", {x, Tensor::from_values<std::int32_t>(Shape{4}, {3, 2, 2, 6}), dy}, o);
  CHECK(values(dw1) == values(dw2));

  // Two values are the spatial sizes; batch comes from out_backprop and depth from the filter's
  // in_channels (TF's rule), so use an ungrouped filter here.
  const Tensor w1 = random_tensor(DType::Float64, Shape{3, 2, 4, 6}, rng);
  const Tensor dx_full =
      ref("Conv2DBackpropInput", {Tensor::from_values<std::int32_t>(Shape{4}, {2, 5, 6, 4}), w1, dy}, o);
  const Tensor dx_hw = ref("Conv2DBackpropInput", {Tensor::from_values<std::int32_t>(Shape{2}, {5, 6}), w1, dy}, o);
  CHECK(dx_hw.shape() == Shape{2, 5, 6, 4});
  CHECK(values(dx_hw) == values(dx_full));
}

TEST_CASE("graph builders, raw ops and run_op agree", "[conv]") {
  std::mt19937_64 rng(11);
  const Tensor x = random_tensor(DType::Float64, Shape{2, 6, 5, 3}, rng);
  const Tensor w = random_tensor(DType::Float64, Shape{2, 3, 3, 4}, rng);
  const ops::Conv2DOptions o{
      .strides = {1, 2, 2, 1}, .padding = "EXPLICIT", .explicit_paddings = {0, 0, 1, 2, 0, 1, 0, 0}};
  const Tensor y = raw_ops::Conv2D(x, w, o);
  const Tensor dy = random_tensor(DType::Float64, y.shape(), rng);

  Graph g;
  Output xp = ops::placeholder(g, DType::Float64, Shape{-1, 6, 5, 3}, "x");
  Output wp = ops::placeholder(g, DType::Float64, Shape{2, 3, 3, 4}, "w");
  Output dyp = ops::placeholder(g, DType::Float64, Shape{-1, -1, -1, 4}, "dy");
  Output yg = ops::conv2d(g, xp, wp, o);
  CHECK(yg.shape() == Shape{-1, 4, 2, 4});  // rows (6+1+2-2+2)/2, cols (5+0+1-3+2)/2
  Output dxg = ops::conv2d_backprop_input_v2(g, xp, wp, dyp, o);
  Output dwg = ops::conv2d_backprop_filter_v2(g, xp, wp, dyp, o);
  Output dx1 = ops::conv2d_backprop_input(g, Shape{2, 6, 5, 3}, wp, dyp, o);
  Output dw1 = ops::conv2d_backprop_filter(g, xp, Shape{2, 3, 3, 4}, dyp, o);
  CHECK(dx1.shape() == Shape{2, 6, 5, 3});
  CHECK(dw1.shape() == Shape{2, 3, 3, 4});
  Session session(g);
  const auto out = session.run({{xp, x}, {wp, w}, {dyp, dy}}, {yg, dxg, dwg, dx1, dw1});

  CHECK(values(out[0]) == values(y));
  require_close(out[0], ref("Conv2D", {x, w}, o));
  const Tensor dx = raw_ops::Conv2DBackpropInputV2(x, w, dy, o);
  const Tensor dw = raw_ops::Conv2DBackpropFilterV2(x, w, dy, o);
  CHECK(values(out[1]) == values(dx));
  CHECK(values(out[2]) == values(dw));
  CHECK(values(out[3]) == values(dx));
  CHECK(values(out[4]) == values(dw));
  require_close(dx, ref("Conv2DBackpropInputV2", {x, w, dy}, o));
  require_close(dw, ref("Conv2DBackpropFilterV2", {x, w, dy}, o));
  CHECK(values(raw_ops::Conv2DBackpropInput(Tensor::from_values<std::int32_t>(Shape{4}, {2, 6, 5, 3}), w, dy, o)) ==
        values(dx));
  CHECK(values(raw_ops::Conv2DBackpropFilter(x, Tensor::from_values<std::int32_t>(Shape{4}, {2, 3, 3, 4}), dy, o)) ==
        values(dw));
}

TEST_CASE("V1 sizes fed at run time give unknown dims at graph time", "[conv]") {
  Graph g;
  Output sizes = ops::placeholder(g, DType::Int32, Shape{4}, "sizes");
  Output w = ops::placeholder(g, DType::Float32, Shape{3, 3, 2, 5}, "w");
  Output dy = ops::placeholder(g, DType::Float32, Shape{1, 4, 4, 5}, "dy");
  Output x = ops::placeholder(g, DType::Float32, Shape{1, 4, 4, 2}, "x");
  const ops::Conv2DOptions o{.strides = {1, 1, 1, 1}, .padding = "SAME"};
  Output dx = ops::conv2d_backprop_input(g, sizes, w, dy, o);
  Output dw = ops::conv2d_backprop_filter(g, x, sizes, dy, o);
  CHECK(dx.shape() == Shape{-1, -1, -1, -1});
  CHECK(dw.shape() == Shape{-1, -1, -1, -1});
  Session session(g);
  const Tensor ones_w = Tensor::full(DType::Float32, Shape{3, 3, 2, 5}, 1.0);
  const Tensor ones_dy = Tensor::full(DType::Float32, Shape{1, 4, 4, 5}, 1.0);
  const Tensor dxv =
      session.run({{sizes, Tensor::from_values<std::int32_t>(Shape{4}, {1, 4, 4, 2})}, {w, ones_w}, {dy, ones_dy}}, dx);
  REQUIRE(dxv.shape() == Shape{1, 4, 4, 2});
  // SAME 3x3 stride 1: a corner input is read by 4 output positions, each through 5 channels.
  CHECK(dxv.value_as_double(0) == 20.0);
  // A wrong size fed at run time is caught by the same checks.
  CHECK_THROWS_WITH(
      session.run({{sizes, Tensor::from_values<std::int32_t>(Shape{4}, {1, 9, 4, 2})}, {w, ones_w}, {dy, ones_dy}}, dx),
      Contains("Size of out_backprop doesn't match computed"));
}
