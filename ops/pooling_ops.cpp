// Schemas and builders: MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad, and the
// pooling window geometry (TF's GetWindowedOutputSize with dilation 1).
#include "dagrad/ops/pooling_ops.hpp"

#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kFloats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));

// One spatial dimension: output size and padding before, for SAME or VALID.
void window_1d(std::string_view op, std::int64_t in, std::int64_t k, std::int64_t s, bool same, std::int64_t* out,
               std::int64_t* pad_before) {
  *pad_before = 0;
  if (in < 0) {
    *out = -1;
    return;
  }
  if (same) {
    *out = (in + s - 1) / s;
    const std::int64_t needed = std::max<std::int64_t>(0, (*out - 1) * s + k - in);
    *pad_before = needed / 2;
  } else {
    *out = (in - k + s) / s;
    if (in < k) {
      invalid_argument(op, ": Computed output size would be negative: ", (in - k) / s + 1, " [input_size: ", in,
                       ", effective_filter_size: ", k, ", stride: ", s, "]");
    }
  }
}

void require_same_shape(std::string_view op, std::string_view what, const Shape& expected, const Shape& got) {
  bool ok = expected.rank() == got.rank();
  for (int i = 0; ok && i < got.rank(); ++i) ok = expected[i] < 0 || got[i] < 0 || expected[i] == got[i];
  if (!ok) invalid_argument(op, ": Expected ", what, " shape to be ", expected.to_string(), ", but got ", got.to_string());
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
        invalid_argument("AvgPoolGrad: orig_input_shape has a negative dimension: ", Shape(dims).to_string());
      }
    }
    input = Shape(dims);
  }
  require_same_shape("AvgPoolGrad", "grad", pool2d_geometry("AvgPoolGrad", c.attrs(), input).output_shape(),
                     c.input_shape(1));
  c.set_output(0, input);
}

OpDefBuilder& pool_attrs(OpDefBuilder& b) {
  return b.attr_type("T", kFloats, DType::Float32)
      .attr_list_int("ksize")
      .attr_list_int("strides")
      .attr_string("padding", {"SAME", "VALID"})
      .attr_string("data_format", {"NHWC", "NCHW"}, "NHWC");
}

AttrMap pool_attr_map(const PoolOptions& o) {
  return {{"ksize", o.ksize}, {"strides", o.strides}, {"padding", o.padding}, {"data_format", o.data_format}};
}

}  // namespace

Shape Pool2DGeometry::output_shape() const {
  return nchw ? Shape{batch, depth, out_rows, out_cols} : Shape{batch, out_rows, out_cols, depth};
}

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
  if (input.rank() != 4) invalid_argument(op, ": input must be 4-dimensional, got shape ", input.to_string());
  geo.batch = input[0];
  geo.rows = input[h];
  geo.cols = input[w];
  geo.depth = input[c];
  geo.window_rows = ksize[static_cast<std::size_t>(h)];
  geo.window_cols = ksize[static_cast<std::size_t>(w)];
  geo.stride_rows = strides[static_cast<std::size_t>(h)];
  geo.stride_cols = strides[static_cast<std::size_t>(w)];
  const bool same = get_attr<std::string>(attrs, "padding") == "SAME";
  window_1d(op, geo.rows, geo.window_rows, geo.stride_rows, same, &geo.out_rows, &geo.pad_top);
  window_1d(op, geo.cols, geo.window_cols, geo.stride_cols, same, &geo.out_cols, &geo.pad_left);
  return geo;
}

void register_pooling_ops(OpRegistry& r) {
  {
    OpDefBuilder b("MaxPool");
    b.input("input", "T").output("output", "T");
    r.add(pool_attrs(b).shape_fn(pool_shape).doc("The maximum over each window.").build());
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
    r.add(pool_attrs(b)
              .shape_fn(max_pool_grad_shape)
              .doc("Routes each window's gradient to the first maximal input of the window.")
              .build());
  }
  {
    OpDefBuilder b("MaxPoolGradGrad");
    b.input("orig_input", "T").input("orig_output", "T").input("grad", "T").output("output", "T");
    r.add(pool_attrs(b)
              .shape_fn(max_pool_grad_shape)
              .doc("The gradient of MaxPoolGrad: each window picks grad at its first maximal input.")
              .build());
  }
  {
    OpDefBuilder b("AvgPoolGrad");
    b.input_fixed("orig_input_shape", DType::Int32).input("grad", "T").output("output", "T");
    r.add(pool_attrs(b)
              .shape_fn(avg_pool_grad_shape)
              .doc("Spreads each window's gradient evenly over the inputs it averaged.")
              .build());
  }
}

Output max_pool(Graph& g, Output input, const PoolOptions& options, std::string_view name) {
  return g.output(g.add_node("MaxPool", {input}, pool_attr_map(options), name).id);
}
Output max_pool_grad(Graph& g, Output orig_input, Output orig_output, Output grad, const PoolOptions& options,
                     std::string_view name) {
  return g.output(g.add_node("MaxPoolGrad", {orig_input, orig_output, grad}, pool_attr_map(options), name).id);
}
Output avg_pool(Graph& g, Output value, const PoolOptions& options, std::string_view name) {
  return g.output(g.add_node("AvgPool", {value}, pool_attr_map(options), name).id);
}
Output avg_pool_grad(Graph& g, Output orig_input_shape, Output grad, const PoolOptions& options,
                     std::string_view name) {
  return g.output(g.add_node("AvgPoolGrad", {orig_input_shape, grad}, pool_attr_map(options), name).id);
}

}  // namespace dagrad::ops
