// The fusions sessions apply when they compile a plan (core/rewrite.hpp): each matches a chain of
// ops that one fused op computes with the same bits, where no one else reads the chain's inside:
// Conv2D -> BiasAdd [-> Relu] and MaxPoolGrad -> ReluGrad; and runs of ApplyAdam nodes (minimize's
// updates) as one pass.
#include <algorithm>
#include <set>

#include "dagrad/core/rewrite.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

// The node producing `out` when it runs `op`, `reader` is the only reader of `out`, and the node
// may be absorbed; else null.
const Node* sole_producer(const PlanView& plan, const Output& out, std::string_view op, const Node& reader) {
  const Node& producer = plan.graph().node(out.node);
  if (producer.op() != op || plan.sole_reader(out) != &reader || !plan.absorbable(producer)) return nullptr;
  return &producer;
}

// Conv2D -> BiasAdd [-> Relu] as _FusedConv2D, matched at its last node.
std::optional<Fusion> fuse_conv2d_bias_relu(const Node& last, const PlanView& plan) {
  const bool relu = last.op() == "Relu";
  const Node* bias_add = relu ? sole_producer(plan, last.inputs[0], "BiasAdd", last) : &last;
  if (bias_add == nullptr || bias_add->op() != "BiasAdd") return std::nullopt;
  const Node* conv = sole_producer(plan, bias_add->inputs[0], "Conv2D", *bias_add);
  if (conv == nullptr ||
      get_attr<std::string>(conv->attrs, "data_format") != get_attr<std::string>(bias_add->attrs, "data_format")) {
    return std::nullopt;
  }
  const DType dtype = get_attr<DType>(conv->attrs, "T");
  if (!plan.has_kernel("_FusedConv2D", dtype)) return std::nullopt;
  Fusion fusion{"_FusedConv2D", {conv->inputs[0], conv->inputs[1], bias_add->inputs[1]}, conv->attrs, {conv->id}};
  fusion.attrs["num_args"] = std::int64_t{1};
  fusion.attrs["fused_ops"] = std::string(relu ? "BiasAdd,Relu" : "BiasAdd");
  if (relu) fusion.absorbed.push_back(bias_add->id);
  return fusion;
}

// MaxPoolGrad -> ReluGrad (the backward pass of Relu -> MaxPool) as _MaxPoolGradReluGrad, matched
// at the ReluGrad: the mask is applied while the pooling gradient is in cache.
std::optional<Fusion> fuse_max_pool_grad_relu_grad(const Node& relu_grad, const PlanView& plan) {
  if (relu_grad.op() != "ReluGrad") return std::nullopt;
  const Node* pool_grad = sole_producer(plan, relu_grad.inputs[0], "MaxPoolGrad", relu_grad);
  if (pool_grad == nullptr) return std::nullopt;
  const DType dtype = get_attr<DType>(pool_grad->attrs, "T");
  if (!plan.has_kernel("_MaxPoolGradReluGrad", dtype)) return std::nullopt;
  const std::vector<Output>& in = pool_grad->inputs;
  return Fusion{"_MaxPoolGradReluGrad", {in[0], in[1], in[2], relu_grad.inputs[1]}, pool_grad->attrs, {pool_grad->id}};
}

// A run of ApplyAdam nodes with the same scalars and attributes as _GroupedApplyAdam, matched at
// its last node: the nodes before it that the plan runs just before it (nothing else in between),
// whose outputs nobody reads, moved to its place. Each variable belongs to one update (they run at
// once). minimize adds its updates in such a run.
std::optional<Fusion> group_apply_adam(const Node& last, const PlanView& plan) {
  if (last.op() != "ApplyAdam") return std::nullopt;
  const DType dtype = get_attr<DType>(last.attrs, "T");
  if (!plan.has_kernel("_GroupedApplyAdam", dtype)) return std::nullopt;
  const auto same_scalars = [&](const Node& n) {
    const auto flag = [](const Node& u, const char* name) { return get_attr<bool>(u.attrs, name); };
    return n.op() == "ApplyAdam" && get_attr<DType>(n.attrs, "T") == dtype &&
           flag(n, "use_locking") == flag(last, "use_locking") &&
           flag(n, "use_nesterov") == flag(last, "use_nesterov") &&
           std::equal(n.inputs.begin() + 3, n.inputs.begin() + 9, last.inputs.begin() + 3);
  };
  std::vector<const Node*> run{&last};
  std::set<Output> variables(last.inputs.begin(), last.inputs.begin() + 3);
  for (int id = last.id - 1; id >= 0; --id) {
    const Node& n = plan.graph().node(id);
    if (!plan.in_plan(n)) continue;
    if (!same_scalars(n) || !plan.movable(n, last.id)) break;
    const std::set<Output> own(n.inputs.begin(), n.inputs.begin() + 3);
    if (own.size() < 3 || std::any_of(own.begin(), own.end(), [&](const Output& v) { return variables.count(v); }))
      break;
    variables.insert(own.begin(), own.end());
    run.insert(run.begin(), &n);
  }
  if (run.size() < 2) return std::nullopt;
  const auto n = static_cast<std::int64_t>(run.size());
  Fusion fusion{"_GroupedApplyAdam", {}, last.attrs, {}};
  fusion.attrs["N"] = n;
  for (int slot : {0, 1, 2})  // var, m, v
    for (const Node* u : run) fusion.inputs.push_back(u->inputs[static_cast<std::size_t>(slot)]);
  fusion.inputs.insert(fusion.inputs.end(), last.inputs.begin() + 3, last.inputs.begin() + 9);
  for (const Node* u : run) fusion.inputs.push_back(u->inputs[9]);
  for (std::size_t i = 0; i + 1 < run.size(); ++i) fusion.moved.push_back(run[i]->id);
  return fusion;
}

}  // namespace

void register_rewrites(RewriteRegistry& r) {
  r.add("fuse_conv2d_bias_relu", fuse_conv2d_bias_relu);
  r.add("fuse_max_pool_grad_relu_grad", fuse_max_pool_grad_relu_grad);
  r.add("group_apply_adam", group_apply_adam);
}

}  // namespace dagrad::ops
