// Gradients of the array, shape and state ops, and their explicit no-gradient declarations.
#include "dagrad/autodiff/grads/common.hpp"
#include "dagrad/autodiff/grads/register.hpp"
#include "dagrad/ops/array_ops.hpp"

namespace dagrad::autodiff {

void register_array_gradients(GradientRegistry& r) {
  r.add("Identity", [](Graph&, const Node&, const std::vector<Output>& d) -> Grads { return {d[0]}; });
  // Between floating types the gradient is cast back; to or from integers nothing flows (TF's _CastGrad).
  r.add("Cast", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    const DType src = get_attr<DType>(n.attrs, "SrcT"), dst = get_attr<DType>(n.attrs, "DstT");
    if (!is_floating(src) || !is_floating(dst)) return {std::nullopt};
    return {ops::cast(g, d[0], src)};
  });
  // Values that do not depend on any input's value (or have no inputs).
  for (const char* op : {"Placeholder", "Const", "ZerosLike", "OnesLike", "NoOp"}) r.add_no_gradient(op);
  // minimize() places the collective after the gradients, so nothing differentiates through it
  // (its gradient would be another collective, run by every process).
  r.add_no_gradient("CollectiveReduceShards");
}

void register_shape_gradients(GradientRegistry& r) {
  r.add("Reshape", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {reshape_like(g, d[0], n.inputs[0]), std::nullopt};
  });
  r.add("BroadcastTo", [](Graph& g, const Node& n, const std::vector<Output>& d) -> Grads {
    return {sum_to_like(g, d[0], n.inputs[0]), std::nullopt};
  });
  // Integer results about shapes, and variables (a gradient w.r.t. a variable is taken at its
  // output, where it is an x; nothing flows further into the variable node itself).
  for (const char* op : {"Shape", "BroadcastGradientArgs", "VariableV2", "Assign"}) r.add_no_gradient(op);
}

}  // namespace dagrad::autodiff
