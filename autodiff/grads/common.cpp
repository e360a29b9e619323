// Undoing broadcasting and reductions in gradients, statically where the shapes allow.
#include "dagrad/autodiff/grads/common.hpp"

#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/math_ops.hpp"
#include "dagrad/ops/shape_ops.hpp"

namespace dagrad::autodiff {
namespace {

int count_unknown(const Shape& s) {
  int n = 0;
  for (auto d : s.dims()) n += d < 0;
  return n;
}

bool has_zero(const Shape& s) {
  for (auto d : s.dims()) {
    if (d == 0) return true;
  }
  return false;
}

Output sum_keep_dims(Graph& g, Output t, Output axes) {
  return g.output(g.add_node("Sum", {t, axes}, {{"keep_dims", true}}).id);
}

}  // namespace

Output reshape_like(Graph& g, Output t, Output like) {
  const Shape& target = like.shape();
  const int unknown = count_unknown(target);
  // Two unknown dims in the same places may still be different dims: only <= 1 is settled.
  if (t.shape() == target && unknown <= 1) return t;
  // A -1 cannot be inferred for an empty tensor, so zero dims beside an unknown one go dynamic.
  if (unknown == 0 || (unknown == 1 && !has_zero(target))) return ops::reshape(g, t, target.dims());
  return ops::reshape(g, t, ops::shape(g, like, DType::Int64));
}

Output sum_to_like(Graph& g, Output grad, Output x, std::optional<Output> other) {
  const Shape& gs = grad.shape();
  const Shape& xs = x.shape();
  const int big = gs.rank(), small = xs.rank(), lead = gs.rank() - xs.rank();
  if (lead < 0) {
    fail(Code::Internal, "sum_to_like: gradient of shape ", gs.to_string(), " cannot be reduced to shape ",
         xs.to_string());
  }
  std::vector<std::int64_t> leading, kept;
  bool settled = true;
  for (int a = 0; a < lead; ++a) leading.push_back(a);
  for (int i = 0; i < small; ++i) {
    const int a = lead + i;
    const std::int64_t xd = xs[i], od = gs[a];
    if (xd == 1) {
      if (od != 1) kept.push_back(i);  // summing a size-1 axis changes nothing, so skip known ones
    } else if (xd < 0 && od != 1) {
      // x's dim is unknown: it was broadcast only if it is 1 at run time while the result's is not.
      // The other operand settles it when its dim is 1 (or missing): then the result's dim is x's.
      bool other_is_one = false;
      if (other) {
        const Shape& os = other->shape();
        const int oi = a - (big - os.rank());
        other_is_one = oi < 0 || os[oi] == 1;
      }
      settled = settled && other_is_one;
    }
  }
  if (!settled) {
    auto [rx, ry] = ops::broadcast_gradient_args(g, ops::shape(g, x, DType::Int64), ops::shape(g, grad, DType::Int64));
    (void)ry;
    return reshape_like(g, sum_keep_dims(g, grad, rx), x);
  }
  Output t = grad;
  if (!leading.empty()) t = ops::sum(g, t, leading, false);
  if (!kept.empty()) t = ops::sum(g, t, kept, true);
  return reshape_like(g, t, x);
}

Output broadcast_like(Graph& g, Output t, Output like) {
  const Shape& target = like.shape();
  if (t.shape() == target && target.is_fully_defined()) return t;
  Output b = ops::broadcast_to(g, t, ops::shape_tensor(g, like));
  return reshape_like(g, b, like);
}

std::vector<std::int64_t> const_input_values(const Node& n, int input) {
  const Node& producer = n.inputs.at(static_cast<std::size_t>(input)).op();
  if (producer.op() != "Const") {
    invalid_argument(n.op(), " gradient: input ", input, " of node '", n.name,
                     "' must be a constant, got the output of ", producer.op(), " node '", producer.name, "'");
  }
  return get_attr<Tensor>(producer.attrs, "value").to_int64_vector();
}

}  // namespace dagrad::autodiff
