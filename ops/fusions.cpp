// The fusions sessions apply when they compile a plan (core/rewrite.hpp): each matches a chain of
// ops that one fused op computes with the same bits, where no one else reads the chain's inside:
// Conv2D -> BiasAdd [-> Relu] and MaxPoolGrad -> ReluGrad.
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

}  // namespace

void register_rewrites(RewriteRegistry& r) {
  r.add("fuse_conv2d_bias_relu", fuse_conv2d_bias_relu);
  r.add("fuse_max_pool_grad_relu_grad", fuse_max_pool_grad_relu_grad);
}

}  // namespace dagrad::ops
