// Gradients of Conv2D and its two backprop ops (both versions), so that second and higher order
// gradients through convolutions work. Each gradient node gets every attribute of the forward
// node verbatim (strides, padding, explicit_paddings, data_format, dilations, use_cudnn_on_gpu):
// the three ops share one geometry, so the adjoint of one is another with the same attributes.
#include "dagrad/autodiff/grads/common.hpp"
#include "dagrad/autodiff/grads/register.hpp"

namespace dagrad::autodiff {
namespace {

// A conv-family node with the forward node's attributes; T is bound again from the inputs.
Output conv_like(Graph& g, std::string_view op, std::vector<Output> inputs, const Node& forward) {
  AttrMap attrs = forward.attrs;
  attrs.erase("T");
  return g.output(g.add_node(op, std::move(inputs), std::move(attrs), {}).id);
}

// y = Conv2D(x, w): dx = BackpropInput(x's shape, w, dy), dw = BackpropFilter(x, w's shape, dy).
Grads conv2d_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output x = n.inputs[0], w = n.inputs[1];
  return {conv_like(g, "Conv2DBackpropInputV2", {x, w, d[0]}, n),
          conv_like(g, "Conv2DBackpropFilterV2", {x, w, d[0]}, n)};
}

// dx = BackpropInput(w, dy) is bilinear in (w, dy): with G the gradient on dx,
// <G, BI(w, dy)> = <Conv2D(G, w), dy> = <w, BF(G, dy)>. `sizes` is the input (V2) or
// input_sizes (V1): shape only, no gradient.
Grads backprop_input_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output w = n.inputs[1], dy = n.inputs[2];
  return {std::nullopt, conv_like(g, "Conv2DBackpropFilterV2", {d[0], w, dy}, n), conv_like(g, "Conv2D", {d[0], w}, n)};
}

// dw = BackpropFilter(x, dy) is bilinear in (x, dy): <G, BF(x, dy)> = <Conv2D(x, G), dy>
// = <x, BI(G, dy)>. The filter (V2) or filter_sizes (V1) input is shape only.
Grads backprop_filter_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output x = n.inputs[0], dy = n.inputs[2];
  return {conv_like(g, "Conv2DBackpropInputV2", {x, d[0], dy}, n), std::nullopt, conv_like(g, "Conv2D", {x, d[0]}, n)};
}

}  // namespace

void register_conv2d_gradients(GradientRegistry& r) {
  // Sessions make _FusedConv2D from chains whose gradients are built already; TF registers none.
  r.add_no_gradient("_FusedConv2D");
  r.add("Conv2D", conv2d_grad);
  r.add("Conv2DBackpropInput", backprop_input_grad);
  r.add("Conv2DBackpropInputV2", backprop_input_grad);
  r.add("Conv2DBackpropFilter", backprop_filter_grad);
  r.add("Conv2DBackpropFilterV2", backprop_filter_grad);
}

}  // namespace dagrad::autodiff
