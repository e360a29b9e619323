// The shared conv geometry: TF's output-size and padding rules, layout handling, groups and
// unknown dims, checked against values worked out by hand.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>
#include <dagrad/ops/conv_geometry.hpp>

using namespace dagrad;
using namespace dagrad::ops;
using Catch::Matchers::Contains;

namespace {

struct Sized {
  std::int64_t out, before, after;
};

Sized sized(std::int64_t in, std::int64_t k, std::int64_t d, std::int64_t s, Padding p, std::int64_t b = 0,
            std::int64_t a = 0) {
  const std::int64_t out = windowed_output_size(in, k, d, s, p, &b, &a);
  return {out, b, a};
}

AttrMap attrs(std::vector<std::int64_t> strides, std::string padding, std::string format = "NHWC",
              std::vector<std::int64_t> dilations = {1, 1, 1, 1}, std::vector<std::int64_t> explicit_paddings = {}) {
  return {{"strides", strides},
          {"padding", padding},
          {"data_format", format},
          {"dilations", dilations},
          {"explicit_paddings", explicit_paddings},
          {"use_cudnn_on_gpu", true}};
}

}  // namespace

TEST_CASE("windowed_output_size follows TF's rules", "[conv]") {
  // VALID: (in - eff + s) / s with truncation.
  CHECK(sized(5, 3, 1, 1, Padding::Valid).out == 3);
  CHECK(sized(5, 3, 1, 2, Padding::Valid).out == 2);  // (5-3+2)/2
  CHECK(sized(5, 3, 2, 1, Padding::Valid).out == 1);  // eff 5
  CHECK(sized(2, 3, 1, 4, Padding::Valid).out == 0);  // (2-3+4)/4 truncates to 0
  // SAME: ceil(in / s), need split with the odd unit after.
  const Sized a = sized(4, 3, 1, 2, Padding::Same);  // out 2, need 1
  CHECK((a.out == 2 && a.before == 0 && a.after == 1));
  const Sized b = sized(7, 4, 1, 1, Padding::Same);  // out 7, need 3
  CHECK((b.out == 7 && b.before == 1 && b.after == 2));
  const Sized c = sized(5, 3, 3, 2, Padding::Same);  // eff 7, out 3, need 4+7-5 = 6
  CHECK((c.out == 3 && c.before == 3 && c.after == 3));
  const Sized d = sized(10, 1, 1, 3, Padding::Same);  // need max(0, 9+1-10) = 0
  CHECK((d.out == 4 && d.before == 0 && d.after == 0));
  const Sized e = sized(0, 3, 1, 1, Padding::Same);  // empty input: out 0, need max(0, -1+3-0) = 2
  CHECK((e.out == 0 && e.before == 1 && e.after == 1));
  // EXPLICIT keeps the given pads.
  const Sized f = sized(2, 2, 1, 1, Padding::Explicit, 1, 0);
  CHECK((f.out == 2 && f.before == 1 && f.after == 0));
  CHECK(sized(2, 2, 1, 1, Padding::Explicit, 0, 2).out == 3);
  // Errors in TF's words.
  CHECK_THROWS_WITH(sized(5, 3, 1, 0, Padding::Valid), Contains("Stride must be > 0, but got 0"));
  CHECK_THROWS_WITH(sized(5, 3, 0, 1, Padding::Valid), Contains("Dilation rate must be >= 1, but got 0"));
  CHECK_THROWS_WITH(
      sized(1, 3, 1, 1, Padding::Valid),
      Contains("Computed output size would be negative: -1 [input_size: 1, effective_filter_size: 3, stride: 1]"));
}

TEST_CASE("conv2d_geometry reads both layouts and groups", "[conv]") {
  const Conv2DAttrs nchw =
      parse_conv2d_attrs("Conv2D", attrs({1, 1, 2, 3}, "EXPLICIT", "NCHW", {1, 1, 2, 1}, {0, 0, 0, 0, 1, 2, 3, 4}));
  CHECK((nchw.stride_rows == 2 && nchw.stride_cols == 3 && nchw.dilation_rows == 2 && nchw.dilation_cols == 1));
  CHECK((nchw.pad_top == 1 && nchw.pad_bottom == 2 && nchw.pad_left == 3 && nchw.pad_right == 4));
  const Conv2DGeometry g = conv2d_geometry("Conv2D", nchw, Shape{2, 6, 9, 10}, Shape{3, 2, 3, 4});
  CHECK((g.batch == 2 && g.in_depth == 6 && g.in_rows == 9 && g.in_cols == 10));
  CHECK((g.groups == 2 && g.filter_in_depth == 3 && g.out_depth == 4 && g.out_depth_per_group() == 2));
  CHECK(g.out_rows == (9 + 3 - 5 + 2) / 2);   // eff 5
  CHECK(g.out_cols == (10 + 7 - 2 + 3) / 3);  // eff 2
  CHECK(g.input_dims() == std::vector<std::int64_t>{2, 6, 9, 10});
  CHECK(g.output_dims() == std::vector<std::int64_t>{2, 4, g.out_rows, g.out_cols});
  CHECK(g.filter_dims() == std::vector<std::int64_t>{3, 2, 3, 4});
  CHECK(g.flops() == 2.0 * 2 * g.out_rows * g.out_cols * 3 * 2 * 3 * 4);

  // NHWC SAME: pads derived per dimension.
  const Conv2DAttrs same = parse_conv2d_attrs("Conv2D", attrs({1, 2, 1, 1}, "SAME"));
  const Conv2DGeometry h = conv2d_geometry("Conv2D", same, Shape{1, 4, 7, 2}, Shape{3, 4, 2, 5});
  CHECK((h.out_rows == 2 && h.pad_top == 0 && h.pad_bottom == 1));
  CHECK((h.out_cols == 7 && h.pad_left == 1 && h.pad_right == 2));
  CHECK(h.output_dims() == std::vector<std::int64_t>{1, 2, 7, 5});
}

TEST_CASE("conv2d_geometry propagates unknown dims", "[conv]") {
  const Conv2DAttrs same = parse_conv2d_attrs("Conv2D", attrs({1, 2, 2, 1}, "SAME"));
  const Conv2DGeometry g = conv2d_geometry("Conv2D", same, Shape{-1, -1, 9, -1}, Shape{3, 3, 2, -1});
  CHECK((g.batch == -1 && g.out_rows == -1 && g.out_cols == 5 && g.out_depth == -1 && g.groups == -1));
  CHECK((g.pad_top == -1 && g.pad_bottom == -1 && g.pad_left == 1 && g.pad_right == 1));
  // out_backprop fills in what the forward shapes leave unknown.
  const Conv2DGeometry b = conv2d_backprop_geometry("Conv2DBackpropFilterV2", same, Shape{-1, -1, 9, 2},
                                                    Shape{3, 3, 2, 4}, Shape{8, 3, 5, 4});
  CHECK((b.batch == 8 && b.out_rows == 3 && b.out_cols == 5 && b.groups == 1));
  CHECK_THROWS_WITH(conv2d_backprop_geometry("Conv2DBackpropFilterV2", same, Shape{-1, -1, 9, 2}, Shape{3, 3, 2, 4},
                                             Shape{8, 3, 4, 4}),
                    Contains("actual = 4, computed = 5 spatial_dim: 2"));
}

// Each conv op's kernel context gives its activation and filter shapes in different places; the
// inputs that must not be read have wrong shapes here, so reading one would change the geometry.
TEST_CASE("conv2d_geometry of a kernel context reads each conv op's activation and filter", "[ops][conv]") {
  const AttrMap attrs = conv2d_attr_map({.strides = {1, 2, 2, 1}, .padding = "SAME"});
  const Shape x{2, 7, 9, 3}, f{3, 2, 3, 5}, y{2, 4, 5, 5};
  const auto zeros = [](const Shape& s) { return Tensor::zeros(DType::Float32, s); };
  const Tensor sizes = Tensor::from_values<std::int32_t>(Shape{4}, {9, 9, 9, 9});
  const Tensor decoy = zeros(Shape{1, 1, 1, 1});
  struct Call {
    const char* op;
    std::vector<Tensor> inputs;
    Shape output;
  };
  const Call calls[] = {{"Conv2D", {zeros(x), zeros(f)}, y},
                        {"Conv2DBackpropInput", {sizes, zeros(f), zeros(y)}, x},
                        {"Conv2DBackpropInputV2", {decoy, zeros(f), zeros(y)}, x},
                        {"Conv2DBackpropFilter", {zeros(x), sizes, zeros(y)}, f},
                        {"Conv2DBackpropFilterV2", {zeros(x), decoy, zeros(y)}, f}};
  for (const Call& call : calls) {
    INFO(call.op);
    const KernelContext context(call.op, "node", attrs, Device::cpu(), call.inputs, {DType::Float32}, {call.output});
    const Conv2DGeometry g = conv2d_geometry(context);
    CHECK(g.batch == 2);
    CHECK(g.in_rows == 7);
    CHECK(g.in_cols == 9);
    CHECK(g.in_depth == 3);
    CHECK(g.filter_rows == 3);
    CHECK(g.filter_cols == 2);
    CHECK(g.out_depth == 5);
    CHECK(g.out_rows == 4);
    CHECK(g.out_cols == 5);
  }
  const KernelContext relu("Relu", "node", attrs, Device::cpu(), {zeros(x)}, {DType::Float32}, {x});
  try {
    conv2d_geometry(relu);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::Internal);
    CHECK_THAT(e.what(), Contains("Relu: not a conv op"));
  }
}
