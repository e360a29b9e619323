// Schemas, shape functions, graph builders and raw ops of Conv2D, Conv2DBackpropInput(V2) and
// Conv2DBackpropFilter(V2). All validation lives in the shape functions (via conv_geometry), so
// the graph, run_op, raw_ops and the CLI reject the same inputs with the same words.
#include "dagrad/ops/conv2d.hpp"

#include <limits>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kConvTypes = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};

constexpr const char* kConvAttrsDoc =
    " Attributes: strides (4 ints, data_format order, batch and depth 1), padding (SAME, VALID or"
    " EXPLICIT), explicit_paddings (8 ints iff EXPLICIT), data_format (NHWC or NCHW), dilations (4"
    " ints), use_cudnn_on_gpu. The filter is [filter_height, filter_width, in_channels / groups,"
    " out_channels]; in_channels = groups * filter in_channels is grouped (depthwise) convolution.";

// The attributes shared by all five ops, in TF's order.
OpDefBuilder& conv_attrs(OpDefBuilder& b) {
  return b.attr_type("T", kConvTypes)
      .attr_list_int("strides")
      .attr_bool("use_cudnn_on_gpu", true)
      .attr_string("padding", {"SAME", "VALID", "EXPLICIT"})
      .attr_list_int("explicit_paddings", std::vector<std::int64_t>{})
      .attr_string("data_format", {"NHWC", "NCHW"}, std::string("NHWC"))
      .attr_list_int("dilations", std::vector<std::int64_t>{1, 1, 1, 1});
}

// A shape-like int32 input (input_sizes / filter_sizes) must be a vector.
void require_vector(const ShapeContext& c, int i, std::string_view label, std::string_view arg) {
  const Shape& s = c.input_shape(i);
  DAGRAD_REQUIRE(s.rank() == 1, label, ": ", arg, " input must be 1-dim, not ", s.rank());
}

// TF's TensorShapeUtils::MakeShape: sizes become dims; negative sizes are rejected.
Shape shape_from_sizes(std::string_view op, std::string_view arg, const std::vector<std::int64_t>& sizes) {
  for (auto d : sizes) DAGRAD_REQUIRE(d >= 0, op, ": ", arg, ": Dimension ", d, " must be >= 0");
  return Shape(sizes);
}

// Conv2DBackpropInput's input shape from input_sizes: 4 sizes, or 2 spatial sizes with batch
// from out_backprop and depth from the filter's in_channels (TF's Conv2DBackpropComputeInputShape).
// Unknown at graph time unless input_sizes is a Const.
Shape input_shape_from_sizes(const ShapeContext& c, DataFormat format) {
  require_vector(c, 0, "Conv2DBackpropInput", "input_sizes");
  const Shape& filter = c.input_shape(1);
  const Shape& dy = c.input_shape(2);
  const Tensor* sizes = c.input_value(0);
  const std::int64_t count = sizes != nullptr ? sizes->num_elements() : c.input_shape(0)[0];
  const int n = 0, h = format == DataFormat::NHWC ? 1 : 2, w = h + 1, ch = format == DataFormat::NHWC ? 3 : 1;
  if (count != 2) {
    if (sizes == nullptr) return Shape{-1, -1, -1, -1};
    DAGRAD_REQUIRE(count == 4,
                   "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: ", count);
    return shape_from_sizes(c.op_name(), "input_sizes", sizes->to_int64_vector());
  }
  std::vector<std::int64_t> dims(4, Shape::kUnknown);
  if (dy.rank() == 4) dims[n] = dy[n];
  if (filter.rank() == 4) dims[ch] = filter[2];
  if (sizes != nullptr) {
    const auto hw = shape_from_sizes(c.op_name(), "input_sizes", sizes->to_int64_vector());
    dims[h] = hw[0];
    dims[w] = hw[1];
  }
  return Shape(dims);
}

Shape filter_shape_from_sizes(const ShapeContext& c) {
  require_vector(c, 1, "Conv2DBackpropFilter", "filter_sizes");
  const Tensor* sizes = c.input_value(1);
  if (sizes == nullptr) return Shape{-1, -1, -1, -1};
  return shape_from_sizes(c.op_name(), "filter_sizes", sizes->to_int64_vector());
}

// A fully defined output whose element count overflows int64 can never be allocated; say so
// here, naming the op, rather than when the kernel allocates. The running product in dim order,
// as Shape::num_elements and TF's TensorShape compute it: a zero dim before a huge one gives 0.
void set_checked_output(ShapeContext& c, Shape shape) {
  if (shape.is_fully_defined()) {
    try {
      std::int64_t n = 1;
      for (auto d : shape.dims()) n = checked_mul(n, d, "output elements");
    } catch (const Error&) {
      invalid_argument(c.op_name(), ": output shape ", shape.to_string(), " has more than 2^63 - 1 elements");
    }
  }
  c.set_output(0, std::move(shape));
}

void conv2d_shape(ShapeContext& c) {
  const Conv2DAttrs attrs = parse_conv2d_attrs(c.op_name(), c.attrs());
  set_checked_output(c, Shape(conv2d_geometry(c.op_name(), attrs, c.input_shape(0), c.input_shape(1)).output_dims()));
}

// The four backprop ops: find the input and filter shapes (from a tensor's shape or from sizes),
// validate all three shapes together, and output the shape being differentiated against.
void backprop_shape(ShapeContext& c, bool wrt_input, bool from_sizes) {
  const Conv2DAttrs attrs = parse_conv2d_attrs(c.op_name(), c.attrs());
  Shape input = c.input_shape(0), filter = c.input_shape(1);
  if (from_sizes && wrt_input) input = input_shape_from_sizes(c, attrs.data_format);
  if (from_sizes && !wrt_input) filter = filter_shape_from_sizes(c);
  conv2d_backprop_geometry(c.op_name(), attrs, input, filter, c.input_shape(2));
  set_checked_output(c, wrt_input ? input : filter);
}

// Two operations per multiply-add of the convolution the op computes. The activation shape is
// the input's (the input gradient's output), the filter shape the filter's (the filter gradient's output).
OpCostFn conv_cost(std::string op, bool wrt_input, bool wrt_filter) {
  return [op, wrt_input, wrt_filter](const OpCall& call) {
    const Shape& input = wrt_input ? call.outputs.at(0) : call.inputs.at(0);
    const Shape& filter = wrt_filter ? call.outputs.at(0) : call.inputs.at(1);
    return conv2d_geometry(op, parse_conv2d_attrs(op, call.attrs), input, filter).flops();
  };
}

Output add_conv_node(Graph& g, std::string_view op, std::vector<Output> inputs, const Conv2DOptions& options) {
  return g.output(g.add_node(op, std::move(inputs), conv2d_attr_map(options), options.name).id);
}

}  // namespace

void register_conv2d_ops(OpRegistry& r) {
  OpDefBuilder conv("Conv2D");
  conv.input("input", "T").input("filter", "T").output("output", "T");
  r.add(conv_attrs(conv)
            .shape_fn(conv2d_shape)
            .cost(conv_cost("Conv2D", false, false))
            .doc(std::string("2-D convolution (cross-correlation) of input with filter.") + kConvAttrsDoc)
            .build());

  OpDefBuilder input_v1("Conv2DBackpropInput");
  input_v1.input_fixed("input_sizes", DType::Int32)
      .input("filter", "T")
      .input("out_backprop", "T")
      .output("output", "T");
  OpDef input_v1_def = conv_attrs(input_v1)
                           .shape_fn([](ShapeContext& c) { backprop_shape(c, true, true); })
                           .cost(conv_cost("Conv2DBackpropInput", true, false))
                           .doc(std::string("Gradient of Conv2D with respect to its input, whose shape is given by "
                                            "input_sizes (4 sizes, or 2 spatial sizes).") +
                                kConvAttrsDoc)
                           .build();
  input_v1_def.inputs[0].host_memory = true;  // read on the host: it decides the output shape
  r.add(std::move(input_v1_def));

  OpDefBuilder input_v2("Conv2DBackpropInputV2");
  input_v2.input("input", "T").input("filter", "T").input("out_backprop", "T").output("output", "T");
  r.add(conv_attrs(input_v2)
            .shape_fn([](ShapeContext& c) { backprop_shape(c, true, false); })
            .cost(conv_cost("Conv2DBackpropInputV2", true, false))
            .doc(std::string("Gradient of Conv2D with respect to its input; only the shape of input is used.") +
                 kConvAttrsDoc)
            .build());

  OpDefBuilder filter_v1("Conv2DBackpropFilter");
  filter_v1.input("input", "T")
      .input_fixed("filter_sizes", DType::Int32)
      .input("out_backprop", "T")
      .output("output", "T");
  OpDef filter_v1_def = conv_attrs(filter_v1)
                            .shape_fn([](ShapeContext& c) { backprop_shape(c, false, true); })
                            .cost(conv_cost("Conv2DBackpropFilter", false, true))
                            .doc(std::string("Gradient of Conv2D with respect to its filter, whose shape is given by "
                                             "filter_sizes.") +
                                 kConvAttrsDoc)
                            .build();
  filter_v1_def.inputs[1].host_memory = true;
  r.add(std::move(filter_v1_def));

  OpDefBuilder filter_v2("Conv2DBackpropFilterV2");
  filter_v2.input("input", "T").input("filter", "T").input("out_backprop", "T").output("output", "T");
  r.add(conv_attrs(filter_v2)
            .shape_fn([](ShapeContext& c) { backprop_shape(c, false, false); })
            .cost(conv_cost("Conv2DBackpropFilterV2", false, true))
            .doc(std::string("Gradient of Conv2D with respect to its filter; only the shape of filter is used.") +
                 kConvAttrsDoc)
            .build());
}

AttrMap conv2d_attr_map(const Conv2DOptions& o) {
  return {{"strides", o.strides},         {"use_cudnn_on_gpu", o.use_cudnn_on_gpu},
          {"padding", o.padding},         {"explicit_paddings", o.explicit_paddings},
          {"data_format", o.data_format}, {"dilations", o.dilations}};
}

Tensor shape_to_int32_tensor(std::string_view op, const Shape& shape) {
  std::vector<std::int32_t> values;
  for (auto d : shape.dims()) {
    DAGRAD_REQUIRE(d >= 0 && d <= std::numeric_limits<std::int32_t>::max(), op,
                   ": sizes must be known and fit int32, got shape ", shape.to_string());
    values.push_back(static_cast<std::int32_t>(d));
  }
  return Tensor::from_values<std::int32_t>(Shape{shape.rank()}, values);
}

Output conv2d(Graph& g, Output input, Output filter, const Conv2DOptions& options) {
  return add_conv_node(g, "Conv2D", {input, filter}, options);
}

Output conv2d_backprop_input(Graph& g, Output input_sizes, Output filter, Output out_backprop,
                             const Conv2DOptions& options) {
  return add_conv_node(g, "Conv2DBackpropInput", {input_sizes, filter, out_backprop}, options);
}

Output conv2d_backprop_input(Graph& g, const Shape& input_sizes, Output filter, Output out_backprop,
                             const Conv2DOptions& options) {
  const std::string base = options.name.empty() ? "Conv2DBackpropInput" : options.name;
  Output sizes = constant(g, shape_to_int32_tensor("Conv2DBackpropInput", input_sizes), base + "/input_sizes");
  return conv2d_backprop_input(g, sizes, filter, out_backprop, options);
}

Output conv2d_backprop_input_v2(Graph& g, Output input, Output filter, Output out_backprop,
                                const Conv2DOptions& options) {
  return add_conv_node(g, "Conv2DBackpropInputV2", {input, filter, out_backprop}, options);
}

Output conv2d_backprop_filter(Graph& g, Output input, Output filter_sizes, Output out_backprop,
                              const Conv2DOptions& options) {
  return add_conv_node(g, "Conv2DBackpropFilter", {input, filter_sizes, out_backprop}, options);
}

Output conv2d_backprop_filter(Graph& g, Output input, const Shape& filter_sizes, Output out_backprop,
                              const Conv2DOptions& options) {
  const std::string base = options.name.empty() ? "Conv2DBackpropFilter" : options.name;
  Output sizes = constant(g, shape_to_int32_tensor("Conv2DBackpropFilter", filter_sizes), base + "/filter_sizes");
  return conv2d_backprop_filter(g, input, sizes, out_backprop, options);
}

Output conv2d_backprop_filter_v2(Graph& g, Output input, Output filter, Output out_backprop,
                                 const Conv2DOptions& options) {
  return add_conv_node(g, "Conv2DBackpropFilterV2", {input, filter, out_backprop}, options);
}

}  // namespace dagrad::ops

namespace dagrad::raw_ops {
namespace {

Tensor run(std::string_view op, std::vector<Tensor> inputs, const Conv2DOptions& options) {
  return run_op(op, std::move(inputs), ops::conv2d_attr_map(options), {.name = options.name}).at(0);
}

}  // namespace

Tensor Conv2D(const Tensor& input, const Tensor& filter, const Conv2DOptions& options) {
  return run("Conv2D", {input, filter}, options);
}
Tensor Conv2DBackpropInput(const Tensor& input_sizes, const Tensor& filter, const Tensor& out_backprop,
                           const Conv2DOptions& options) {
  return run("Conv2DBackpropInput", {input_sizes, filter, out_backprop}, options);
}
Tensor Conv2DBackpropInputV2(const Tensor& input, const Tensor& filter, const Tensor& out_backprop,
                             const Conv2DOptions& options) {
  return run("Conv2DBackpropInputV2", {input, filter, out_backprop}, options);
}
Tensor Conv2DBackpropFilter(const Tensor& input, const Tensor& filter_sizes, const Tensor& out_backprop,
                            const Conv2DOptions& options) {
  return run("Conv2DBackpropFilter", {input, filter_sizes, out_backprop}, options);
}
Tensor Conv2DBackpropFilterV2(const Tensor& input, const Tensor& filter, const Tensor& out_backprop,
                              const Conv2DOptions& options) {
  return run("Conv2DBackpropFilterV2", {input, filter, out_backprop}, options);
}

}  // namespace dagrad::raw_ops
