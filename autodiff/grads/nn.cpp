// Gradient functions of the nn/pooling/matrix ops, as graph nodes (TF's formulas, nn_grad.py
// and math_grad.py). Each forwards the forward node's attributes verbatim.
#include "dagrad/autodiff/grads/register.hpp"

#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/math_ops.hpp"
#include "dagrad/ops/matrix_ops.hpp"
#include "dagrad/ops/nn_ops.hpp"
#include "dagrad/ops/shape_ops.hpp"

namespace dagrad::autodiff {
namespace {

using Grads = std::vector<std::optional<Output>>;

Output out(Graph& g, const Node& n, int i = 0) { return g.output(n.id, i); }

// A node with the forward node's attributes (minus any the new op does not have).
Output add_like(Graph& g, std::string_view op, std::vector<Output> inputs, const Node& forward,
                std::initializer_list<const char*> keep) {
  AttrMap attrs;
  for (const char* name : keep) attrs.emplace(name, forward.attrs.at(name));
  return g.output(g.add_node(op, std::move(inputs), std::move(attrs)).id);
}

// True when `x` is known to be zero everywhere (no gradient arrived for that output).
bool is_zeros(const Output& x) {
  const Node& n = x.op();
  if (n.op() == "ZerosLike") return true;
  if (n.op() != "Const") return false;
  const Tensor& v = get_attr<Tensor>(n.attrs, "value");
  for (std::int64_t i = 0; i < v.num_elements(); ++i) {
    if (v.value_as_double(i) != 0.0) return false;
  }
  return true;
}

// vec[:, None] * mat for a [batch] vector and a [batch, classes] matrix.
Output broadcast_mul(Graph& g, Output vec, Output mat) { return ops::mul(g, ops::reshape(g, vec, {-1, 1}), mat); }

// The gradient through softmax(logits) of an upstream gradient `grad` on it:
// (grad - sum(grad * softmax, -1)) * softmax.
Output through_softmax(Graph& g, Output grad, Output softmax) {
  Output dot = ops::sum(g, ops::mul(g, grad, softmax), {-1}, true);
  return ops::mul(g, ops::sub(g, grad, dot), softmax);
}

// The loss gradient of both cross-entropy ops, with TF's second-order term when a gradient
// arrives on the backprop output too.
Output xent_logits_grad(Graph& g, const Node& n, const std::vector<Output>& grads) {
  Output result = broadcast_mul(g, grads[0], out(g, n, 1));
  if (!is_zeros(grads[1])) {
    result = ops::add(g, result, through_softmax(g, grads[1], ops::softmax(g, n.inputs[0])));
  }
  return result;
}

// The input shape as an int32 vector: a Const when known at graph time (so shape inference sees
// it), else a Shape node.
Output shape_int32(Graph& g, Output x) {
  const Shape& s = x.shape();
  if (!s.is_fully_defined()) return ops::shape(g, x, DType::Int32);
  std::vector<std::int32_t> dims(s.dims().begin(), s.dims().end());
  return ops::constant(g, Tensor::from_values<std::int32_t>(Shape{s.rank()}, dims));
}

constexpr std::initializer_list<const char*> kPoolAttrs = {"ksize", "strides", "padding", "data_format"};
constexpr std::initializer_list<const char*> kMaxPoolAttrs = {"ksize", "strides", "padding", "explicit_paddings",
                                                              "data_format"};

Grads mat_mul_grad(Graph& g, const Node& n, const std::vector<Output>& grads) {
  const bool ta = get_attr<bool>(n.attrs, "transpose_a"), tb = get_attr<bool>(n.attrs, "transpose_b");
  const Output a = n.inputs[0], b = n.inputs[1], d = grads[0];
  if (!ta && !tb) return {ops::mat_mul(g, d, b, false, true), ops::mat_mul(g, a, d, true, false)};
  if (!ta && tb) return {ops::mat_mul(g, d, b, false, false), ops::mat_mul(g, d, a, true, false)};
  if (ta && !tb) return {ops::mat_mul(g, b, d, false, true), ops::mat_mul(g, a, d, false, false)};
  return {ops::mat_mul(g, b, d, true, true), ops::mat_mul(g, d, a, true, true)};
}

Grads transpose_grad(Graph& g, const Node& n, const std::vector<Output>& grads) {
  const Node& perm_node = n.inputs[1].op();
  if (perm_node.op() != "Const") {
    invalid_argument("Transpose gradient: perm must be a constant, got the output of ", perm_node.op(), " node '",
                     perm_node.name, "'");
  }
  const auto perm = get_attr<Tensor>(perm_node.attrs, "value").to_int64_vector();
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {ops::transpose(g, grads[0], inverse), std::nullopt};
}

}  // namespace

void register_nn_gradients(GradientRegistry& r) {
  r.add("BiasAdd", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {d[0], add_like(g, "BiasAddGrad", {d[0]}, n, {"data_format"})};
  });
  // BiasAddGrad sums over all but the channel axis; its gradient broadcasts back along them.
  r.add("BiasAddGrad", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {add_like(g, "BiasAdd", {ops::zeros_like(g, n.inputs[0]), d[0]}, n, {"data_format"})};
  });
  r.add("Relu", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {ops::relu_grad(g, d[0], out(g, n))};
  });
  r.add("ReluGrad", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {ops::relu_grad(g, d[0], n.inputs[1]), ops::zeros_like(g, n.inputs[1])};
  });
  r.add("Softmax", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {through_softmax(g, d[0], out(g, n))};
  });
  // d logsoftmax: grad - sum(grad, -1) * softmax(logits).
  r.add("LogSoftmax", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    Output total = ops::sum(g, d[0], {-1}, true);
    return {ops::sub(g, d[0], ops::mul(g, total, ops::softmax(g, n.inputs[0])))};
  });
  // The logits gradient assumes label rows that sum to 1 (as TF's does). For the labels, TF
  // keeps only the loss term; backprop = softmax - labels adds -grad_backprop when one arrives.
  r.add("SoftmaxCrossEntropyWithLogits", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    Output labels_grad = broadcast_mul(g, d[0], ops::neg(g, ops::log_softmax(g, n.inputs[0])));
    if (!is_zeros(d[1])) labels_grad = ops::sub(g, labels_grad, d[1]);
    return {xent_logits_grad(g, n, d), labels_grad};
  });
  r.add("SparseSoftmaxCrossEntropyWithLogits", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {xent_logits_grad(g, n, d), std::nullopt};
  });
  r.add("MaxPool", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {add_like(g, "MaxPoolGrad", {n.inputs[0], out(g, n), d[0]}, n, kMaxPoolAttrs)};
  });
  r.add("MaxPoolGrad", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {ops::zeros_like(g, n.inputs[0]), ops::zeros_like(g, n.inputs[1]),
            add_like(g, "MaxPoolGradGrad", {n.inputs[0], n.inputs[1], d[0]}, n, kMaxPoolAttrs)};
  });
  r.add("MaxPoolGradGrad", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {ops::zeros_like(g, n.inputs[0]), ops::zeros_like(g, n.inputs[1]),
            add_like(g, "MaxPoolGrad", {n.inputs[0], n.inputs[1], d[0]}, n, kMaxPoolAttrs)};
  });
  r.add("AvgPool", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {add_like(g, "AvgPoolGrad", {shape_int32(g, n.inputs[0]), d[0]}, n, kPoolAttrs)};
  });
  r.add("AvgPoolGrad", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {std::nullopt, add_like(g, "AvgPool", {d[0]}, n, kPoolAttrs)};
  });
  r.add("MatMul", mat_mul_grad);
  r.add("Transpose", transpose_grad);
  for (const char* op :
       {"ArgMax", "Equal", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "_GroupedApplyAdam"}) {
    r.add_no_gradient(op);
  }
  // Sessions make it from backward passes whose gradients are built already (ops/fusions.cpp).
  r.add_no_gradient("_MaxPoolGradReluGrad");
}

}  // namespace dagrad::autodiff
