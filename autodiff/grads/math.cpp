// Gradients of the math ops (TF's math_grad.py): broadcasting binary ops sum their gradient back
// to each operand's shape; reductions broadcast theirs back to the input's.
#include <algorithm>

#include "dagrad/autodiff/grads/common.hpp"
#include "dagrad/autodiff/grads/register.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/math_ops.hpp"
#include "dagrad/ops/shape_ops.hpp"

namespace dagrad::autodiff {
namespace {

Grads add_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output x = n.inputs[0], y = n.inputs[1];
  return {sum_to_like(g, d[0], x, y), sum_to_like(g, d[0], y, x)};
}

Grads sub_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output x = n.inputs[0], y = n.inputs[1];
  return {sum_to_like(g, d[0], x, y), ops::neg(g, sum_to_like(g, d[0], y, x))};
}

Grads mul_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output x = n.inputs[0], y = n.inputs[1];
  return {sum_to_like(g, ops::mul(g, d[0], y), x, y), sum_to_like(g, ops::mul(g, x, d[0]), y, x)};
}

// d(1/x) = -dy / x^2 = -dy * y * y.
Grads reciprocal_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output y = g.output(n.id);
  return {ops::neg(g, ops::mul(g, d[0], ops::mul(g, y, y)))};
}

// The upstream gradient of a reduction with the reduced axes put back as size 1.
Output with_kept_dims(Graph& g, const Node& n, Output grad) {
  if (get_attr<bool>(n.attrs, "keep_dims")) return grad;
  const Output x = n.inputs[0];
  const auto axes = const_input_values(n, 1);
  if (axes.empty()) return grad;  // nothing reduced
  std::vector<std::int64_t> kept(x.shape().dims());
  for (auto a : axes) kept[static_cast<std::size_t>(a < 0 ? a + x.shape().rank() : a)] = 1;
  int unknown = 0;
  bool zero = false;
  for (auto k : kept) {
    unknown += k < 0;
    zero = zero || k == 0;
  }
  if (unknown == 0 || (unknown == 1 && !zero)) return ops::reshape(g, grad, kept);
  // Several unknown dims: the kept-dims shape of x's reduction, computed at run time.
  return ops::reshape(g, grad, ops::shape(g, ops::sum(g, x, axes, true), DType::Int64));
}

Grads sum_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  return {broadcast_like(g, with_kept_dims(g, n, d[0]), n.inputs[0]), std::nullopt};
}

Grads mean_grad(Graph& g, const Node& n, const std::vector<Output>& d) {
  const Output x = n.inputs[0];
  Output kept = with_kept_dims(g, n, d[0]);
  const Tensor* axis_value =
      n.inputs[1].op().op() == "Const" ? &get_attr<Tensor>(n.inputs[1].op().attrs, "value") : nullptr;
  std::int64_t count = 1;
  bool known = axis_value != nullptr;
  if (known) {
    for (auto a : axis_value->to_int64_vector()) {
      const std::int64_t dim = x.shape()[static_cast<int>(a < 0 ? a + x.shape().rank() : a)];
      if (dim < 0)
        known = false;
      else
        count *= dim;
    }
  }
  Output scaled;
  if (known) {
    // An empty reduction has an empty x: any finite factor gives the (empty) gradient.
    scaled = ops::mul(g, kept, ops::scalar(g, 1.0 / static_cast<double>(std::max<std::int64_t>(count, 1)), x.dtype()));
  } else {
    // The count per output element, at run time: the sum of ones over the reduced axes.
    Output ones = g.output(g.add_node("Sum", {ops::ones_like(g, x), n.inputs[1]}, {{"keep_dims", true}}).id);
    scaled = ops::mul(g, kept, ops::reciprocal(g, ones));
  }
  return {broadcast_like(g, scaled, x), std::nullopt};
}

}  // namespace

void register_math_gradients(GradientRegistry& r) {
  r.add("Add", add_grad);
  r.add("AddV2", add_grad);
  r.add("Sub", sub_grad);
  r.add("Mul", mul_grad);
  r.add("Neg", [](Graph& g, const Node&, const std::vector<Output>& d) -> Grads { return {ops::neg(g, d[0])}; });
  r.add("Reciprocal", reciprocal_grad);
  // Every addend receives the whole gradient.
  r.add("AddN",
        [](Graph&, const Node& n, const std::vector<Output>& d) -> Grads { return Grads(n.inputs.size(), d[0]); });
  r.add("Sum", sum_grad);
  r.add("Mean", mean_grad);
}

}  // namespace dagrad::autodiff
