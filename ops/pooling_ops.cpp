// Schemas and builders: MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad, and the
// pooling window geometry (conv_geometry's windowed_output_size with dilation 1, TF's
// CheckValidPadding and CheckPaddingSize for EXPLICIT padding).
#include "dagrad/ops/pooling_ops.hpp"

#include "dagrad/ops/conv_geometry.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kFloats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));

std::string list_to_string(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// One spatial dimension: output size and the padding before/after, through the conv geometry's
// windowed_output_size (TF's GetWindowedOutputSize with dilation 1, exact in 128 bits). For
// EXPLICIT, the paddings come in through pad_before/pad_after. Unknown sizes stay unknown.
void window_1d(std::string_view op, const char* dim_name, std::int64_t in, std::int64_t k, std::int64_t s,
               Padding padding, std::int64_t* out, std::int64_t* pad_before, std::int64_t* pad_after) {
  if (padding != Padding::Explicit) *pad_before = *pad_after = 0;
  if (in < 0) {
    *out = Shape::kUnknown;
    return;
  }
  try {
    *out = windowed_output_size(in, k, /*dilation=*/1, s, padding, pad_before, pad_after);
  } catch (const Error& e) {
    fail(e.code(), op, ": ", dim_name, ": ", e.what());
  }
}

// TF's CheckValidPadding for a 4-D input, in its order and with conv2d's wording.
void check_valid_padding(std::string_view op, const std::string& padding, const std::vector<std::int64_t>& paddings,
                         bool nchw) {
  if (padding != "EXPLICIT") {
    DAGRAD_REQUIRE(paddings.empty(), op,
                   ": explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT, got "
                   "explicit_paddings = ",
                   list_to_string(paddings), " with padding = ", padding);
    return;
  }
  DAGRAD_REQUIRE(paddings.size() == 8, op,
                 ": explicit_paddings attribute must contain 8 values, but got: ", paddings.size());
  for (auto p : paddings) {
    DAGRAD_REQUIRE(p >= 0, op, ": All elements of explicit_paddings must be nonnegative, got explicit_paddings = ",
                   list_to_string(paddings));
  }
  const std::size_t c = nchw ? 1 : 3;
  DAGRAD_REQUIRE(paddings[0] == 0 && paddings[1] == 0 && paddings[2 * c] == 0 && paddings[2 * c + 1] == 0, op,
                 ": Nonzero explicit padding in the batch or depth dimensions is not supported, got "
                 "explicit_paddings = ",
                 list_to_string(paddings), ", data_format = ", nchw ? "NCHW" : "NHWC");
}

// TF's CheckPaddingSize: each explicit padding is smaller than the window along its dim.
void check_padding_size(std::string_view op, const Pool2DGeometry& g) {
  const auto require = [&](std::int64_t pad, std::int64_t window, const char* side) {
    DAGRAD_REQUIRE(pad < window, op, ": ", side, " padding ", pad, " needs to be smaller than the window size ",
                   window);
  };
  require(g.pad_top, g.window_rows, "Top");
  require(g.pad_bottom, g.window_rows, "Bottom");
  require(g.pad_left, g.window_cols, "Left");
  require(g.pad_right, g.window_cols, "Right");
}

void require_same_shape(std::string_view op, std::string_view what, const Shape& expected, const Shape& got) {
  bool ok = expected.rank() == got.rank();
  for (int i = 0; ok && i < got.rank(); ++i) ok = expected[i] < 0 || got[i] < 0 || expected[i] == got[i];
  if (!ok)
    invalid_argument(op, ": Expected ", what, " shape to be ", expected.to_string(), ", but got ", got.to_string());
}

void pool_shape(ShapeContext& c) {
  c.require_rank(0, 4);
  c.set_output(0, pool2d_geometry(c.op_name(), c.attrs(), c.input_shape(0)).output_shape());
}

// MaxPoolGrad (-> orig_input's shape) and MaxPoolGradGrad (-> orig_output's shape).
void max_pool_grad_shape(ShapeContext& c) {
  for (int i = 0; i < 3; ++i) c.require_rank(i, 4);
  const Shape pooled = pool2d_geometry(c.op_name(), c.attrs(), c.input_shape(0)).output_shape();
  require_same_shape(c.op_name(), "orig_output", pooled, c.input_shape(1));
  const bool grad_grad = c.op_name() == "MaxPoolGradGrad";
  require_same_shape(c.op_name(), "grad", grad_grad ? c.input_shape(0) : pooled, c.input_shape(2));
  c.set_output(0, grad_grad ? c.input_shape(1) : c.input_shape(0));
}

// _MaxPoolGradReluGrad: MaxPoolGrad's shape, with features shaped as orig_input (ReluGrad's rule).
void max_pool_grad_relu_grad_shape(ShapeContext& c) {
  max_pool_grad_shape(c);
  c.require_rank(3, 4);
  require_same_shape(c.op_name(), "features", c.input_shape(0), c.input_shape(3));
}

void avg_pool_grad_shape(ShapeContext& c) {
  const Shape& dims_shape = c.input_shape(0);
  if (dims_shape.rank() != 1 || (dims_shape[0] >= 0 && dims_shape[0] != 4)) {
    invalid_argument("AvgPoolGrad: orig_input_shape must be 1-dimensional and 4 elements, got shape ",
                     dims_shape.to_string());
  }
  c.require_rank(1, 4);
  Shape input{-1, -1, -1, -1};
  if (const Tensor* value = c.input_value(0)) {
    const auto dims = value->to_int64_vector();
    for (int i = 0; i < 4; ++i) {
      if (dims[static_cast<std::size_t>(i)] < 0) {
        invalid_argument("AvgPoolGrad: orig_input_shape has a negative dimension: ", list_to_string(dims));
      }
    }
    input = Shape(dims);
  }
  require_same_shape("AvgPoolGrad", "grad", pool2d_geometry("AvgPoolGrad", c.attrs(), input).output_shape(),
                     c.input_shape(1));
  c.set_output(0, input);
}

// TF's attributes in TF's order; the max-pool ops also take EXPLICIT padding (AvgPool does not).
OpDefBuilder& pool_attrs(OpDefBuilder& b, bool explicit_padding = false) {
  b.attr_type("T", kFloats, DType::Float32).attr_list_int("ksize").attr_list_int("strides");
  if (explicit_padding) {
    b.attr_string("padding", {"SAME", "VALID", "EXPLICIT"})
        .attr_list_int("explicit_paddings", std::vector<std::int64_t>{});
  } else {
    b.attr_string("padding", {"SAME", "VALID"});
  }
  return b.attr_string("data_format", {"NHWC", "NCHW"}, "NHWC");
}

// explicit_paddings only when given, so that AvgPool's builders keep working with the defaults.
AttrMap pool_attr_map(const PoolOptions& o) {
  AttrMap attrs = {{"ksize", o.ksize}, {"strides", o.strides}, {"padding", o.padding}, {"data_format", o.data_format}};
  if (!o.explicit_paddings.empty()) attrs.emplace("explicit_paddings", o.explicit_paddings);
  return attrs;
}

}  // namespace

Shape Pool2DGeometry::output_shape() const {
  return nchw ? Shape{batch, depth, out_rows, out_cols} : Shape{batch, out_rows, out_cols, depth};
}

// The kernels rely on windowed_output_size's guarantee: rows + pad_top + pad_bottom <= INT64_MAX
// (and the same for cols), so o * stride - pad + window for 0 <= o < out, and i + pad for
// 0 <= i < rows, never overflow.
Pool2DGeometry pool2d_geometry(std::string_view op, const AttrMap& attrs, const Shape& input) {
  const auto& ksize = get_attr<std::vector<std::int64_t>>(attrs, "ksize");
  const auto& strides = get_attr<std::vector<std::int64_t>>(attrs, "strides");
  if (ksize.size() != 4) invalid_argument(op, ": Sliding window ksize field must specify 4 dimensions");
  if (strides.size() != 4) invalid_argument(op, ": Sliding window stride field must specify 4 dimensions");
  Pool2DGeometry geo;
  geo.nchw = get_attr<std::string>(attrs, "data_format") == "NCHW";
  const int h = geo.nchw ? 2 : 1, w = geo.nchw ? 3 : 2, c = geo.nchw ? 1 : 3;
  for (int i = 0; i < 4; ++i) {
    if (ksize[static_cast<std::size_t>(i)] <= 0) {
      invalid_argument(op, ": Sliding window ksize for dimension ", i, " was ", ksize[static_cast<std::size_t>(i)],
                       "; it must be positive.");
    }
    if (strides[static_cast<std::size_t>(i)] <= 0) {
      invalid_argument(op, ": Sliding window stride for dimension ", i, " was ", strides[static_cast<std::size_t>(i)],
                       "; it must be positive.");
    }
  }
  if (ksize[0] != 1 || strides[0] != 1) invalid_argument(op, ": Pooling is not yet supported on the batch dimension.");
  if (ksize[static_cast<std::size_t>(c)] != 1 || strides[static_cast<std::size_t>(c)] != 1) {
    invalid_argument(op, ": pooling across the depth dimension is not supported (ksize and strides must be 1 there)");
  }
  const auto& padding = get_attr<std::string>(attrs, "padding");
  const auto paddings_it = attrs.find("explicit_paddings");
  static const std::vector<std::int64_t> kNone;
  const auto& paddings = paddings_it == attrs.end() ? kNone : std::get<std::vector<std::int64_t>>(paddings_it->second);
  check_valid_padding(op, padding, paddings, geo.nchw);
  if (input.rank() != 4) invalid_argument(op, ": input must be 4-dimensional, got shape ", input.to_string());
  geo.batch = input[0];
  geo.rows = input[h];
  geo.cols = input[w];
  geo.depth = input[c];
  geo.window_rows = ksize[static_cast<std::size_t>(h)];
  geo.window_cols = ksize[static_cast<std::size_t>(w)];
  geo.stride_rows = strides[static_cast<std::size_t>(h)];
  geo.stride_cols = strides[static_cast<std::size_t>(w)];
  const Padding mode = padding == "SAME" ? Padding::Same : padding == "VALID" ? Padding::Valid : Padding::Explicit;
  if (mode == Padding::Explicit) {
    geo.pad_top = paddings[static_cast<std::size_t>(2 * h)];
    geo.pad_bottom = paddings[static_cast<std::size_t>(2 * h + 1)];
    geo.pad_left = paddings[static_cast<std::size_t>(2 * w)];
    geo.pad_right = paddings[static_cast<std::size_t>(2 * w + 1)];
    check_padding_size(op, geo);
  }
  window_1d(op, "rows", geo.rows, geo.window_rows, geo.stride_rows, mode, &geo.out_rows, &geo.pad_top, &geo.pad_bottom);
  window_1d(op, "cols", geo.cols, geo.window_cols, geo.stride_cols, mode, &geo.out_cols, &geo.pad_left, &geo.pad_right);
  return geo;
}

void register_pooling_ops(OpRegistry& r) {
  {
    OpDefBuilder b("MaxPool");
    b.input("input", "T").output("output", "T");
    r.add(pool_attrs(b, true)
              .shape_fn(pool_shape)
              .doc("The maximum over each window (EXPLICIT padding: explicit_paddings, 8 ints, each smaller than "
                   "the window).")
              .build());
  }
  {
    OpDefBuilder b("AvgPool");
    b.input("value", "T").output("output", "T");
    r.add(pool_attrs(b)
              .shape_fn(pool_shape)
              .doc("The mean over each window; SAME windows average only the elements inside the input.")
              .build());
  }
  {
    OpDefBuilder b("MaxPoolGrad");
    b.input("orig_input", "T").input("orig_output", "T").input("grad", "T").output("output", "T");
    r.add(pool_attrs(b, true)
              .shape_fn(max_pool_grad_shape)
              .doc("Routes each window's gradient to the first maximal input of the window.")
              .build());
  }
  {
    OpDefBuilder b("MaxPoolGradGrad");
    b.input("orig_input", "T").input("orig_output", "T").input("grad", "T").output("output", "T");
    // TF's MaxPoolGradGrad has no EXPLICIT padding; dagrad's takes it (an added attribute with an
    // empty default) so that MaxPoolGrad with EXPLICIT padding stays differentiable.
    r.add(pool_attrs(b, true)
              .shape_fn(max_pool_grad_shape)
              .doc("The gradient of MaxPoolGrad: each window picks grad at its first maximal input. Unlike TF's, "
                   "it also takes EXPLICIT padding (as MaxPoolGrad does).")
              .build());
  }
  {
    OpDefBuilder b("_MaxPoolGradReluGrad");
    b.input("orig_input", "T")
        .input("orig_output", "T")
        .input("grad", "T")
        .input("features", "T")
        .output("output", "T");
    r.add(pool_attrs(b, true)
              .shape_fn(max_pool_grad_relu_grad_shape)
              .doc("ReluGrad(MaxPoolGrad(orig_input, orig_output, grad), features), with the bits of the two ops run "
                   "one after the other. Sessions put it in the place of such pairs (the backward pass of Relu then "
                   "MaxPool); attributes as MaxPoolGrad's.")
              .build());
  }
  {
    OpDefBuilder b("AvgPoolGrad");
    b.input_fixed("orig_input_shape", DType::Int32).input("grad", "T").output("output", "T");
    OpDef def = pool_attrs(b)
                    .shape_fn(avg_pool_grad_shape)
                    .doc("Spreads each window's gradient evenly over the inputs it averaged.")
                    .build();
    def.inputs[0].host_memory = true;  // read on the host (TF's HostMemory): it decides the output shape
    r.add(std::move(def));
  }
}

Output max_pool(Graph& g, Output input, const PoolOptions& options, std::string_view name) {
  return g.output(g.add_node("MaxPool", {input}, pool_attr_map(options), name).id);
}
Output max_pool_grad(Graph& g, Output orig_input, Output orig_output, Output grad, const PoolOptions& options,
                     std::string_view name) {
  return g.output(g.add_node("MaxPoolGrad", {orig_input, orig_output, grad}, pool_attr_map(options), name).id);
}
Output max_pool_grad_grad(Graph& g, Output orig_input, Output orig_output, Output grad, const PoolOptions& options,
                          std::string_view name) {
  return g.output(g.add_node("MaxPoolGradGrad", {orig_input, orig_output, grad}, pool_attr_map(options), name).id);
}
Output avg_pool(Graph& g, Output value, const PoolOptions& options, std::string_view name) {
  return g.output(g.add_node("AvgPool", {value}, pool_attr_map(options), name).id);
}
Output avg_pool_grad(Graph& g, Output orig_input_shape, Output grad, const PoolOptions& options,
                     std::string_view name) {
  return g.output(g.add_node("AvgPoolGrad", {orig_input_shape, grad}, pool_attr_map(options), name).id);
}

}  // namespace dagrad::ops
