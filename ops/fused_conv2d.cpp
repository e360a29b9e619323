// The schema and shape function of _FusedConv2D (see fused_conv2d.hpp).
#include "dagrad/ops/fused_conv2d.hpp"

#include "dagrad/ops/conv_geometry.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

constexpr const char* kBiasAdd = "BiasAdd";
constexpr const char* kBiasAddRelu = "BiasAdd,Relu";

// Conv2D's output shape, checked against the one bias (args[0]) BiasAdd would add to it.
void fused_conv2d_shape(ShapeContext& c) {
  const std::string_view op = c.op_name();
  DAGRAD_REQUIRE(c.attr<std::int64_t>("num_args") == 1, op, ": fused_ops ", c.attr<std::string>("fused_ops"),
                 " take 1 argument (the bias), got num_args = ", c.attr<std::int64_t>("num_args"));
  const Conv2DAttrs attrs = parse_conv2d_attrs(op, c.attrs());
  const Shape out(conv2d_geometry(op, attrs, c.input_shape(0), c.input_shape(1)).output_dims());
  const Shape& bias = c.input_shape(2);
  DAGRAD_REQUIRE(bias.rank() == 1, op, ": Biases must be 1D: ", bias.to_string());
  const std::int64_t channels = out[attrs.data_format == DataFormat::NHWC ? 3 : 1];
  DAGRAD_REQUIRE(channels < 0 || bias[0] < 0 || channels == bias[0], op,
                 ": Must provide as many biases as the channel dimension of the input tensor: ", bias.to_string(),
                 " vs. ", out.to_string());
  c.set_output(0, out);
}

}  // namespace

bool fused_conv2d_relu(const AttrMap& attrs) { return get_attr<std::string>(attrs, "fused_ops") == kBiasAddRelu; }

void register_fused_conv2d_ops(OpRegistry& r) {
  OpDefBuilder b("_FusedConv2D");
  b.input("input", "T").input("filter", "T").input_list("args", "T", "num_args").output("output", "T");
  b.attr_type("T", {DType::Half, DType::BFloat16, DType::Float32, DType::Float64})
      .attr_int("num_args", std::nullopt, 0)
      .attr_list_int("strides")
      .attr_bool("use_cudnn_on_gpu", true)
      .attr_string("padding", {"SAME", "VALID", "EXPLICIT"})
      .attr_list_int("explicit_paddings", std::vector<std::int64_t>{})
      .attr_string("data_format", {"NHWC", "NCHW"}, std::string("NHWC"))
      .attr_list_int("dilations", std::vector<std::int64_t>{1, 1, 1, 1})
      .attr_string("fused_ops", {kBiasAdd, kBiasAddRelu})
      .shape_fn(fused_conv2d_shape)
      .cost([](const OpCall& call) {
        const auto attrs = parse_conv2d_attrs("_FusedConv2D", call.attrs);
        return conv2d_geometry("_FusedConv2D", attrs, call.inputs.at(0), call.inputs.at(1)).flops();
      })
      .doc(
          "Conv2D(input, filter), plus args[0] as BiasAdd adds it, then Relu if fused_ops is 'BiasAdd,Relu'; "
          "the bits of the three ops run one after another. Sessions put it in the place of such chains. "
          "Attributes as Conv2D's, and num_args (1) and fused_ops ('BiasAdd' or 'BiasAdd,Relu').");
  r.add(b.build());
}

}  // namespace dagrad::ops
