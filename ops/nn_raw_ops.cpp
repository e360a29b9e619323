// Eager raw ops of the nn family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::raw_ops {
namespace {

Tensor run_one(std::string_view op, std::vector<Tensor> inputs, AttrMap attrs, std::string_view name) {
  return run_op(op, std::move(inputs), std::move(attrs), {.name = name}).at(0);
}

CrossEntropyResult run_cross_entropy(std::string_view op, const Tensor& features, const Tensor& labels,
                                     std::string_view name) {
  std::vector<Tensor> out = run_op(op, {features, labels}, {}, {.name = name});
  return {std::move(out.at(0)), std::move(out.at(1))};
}

}  // namespace

Tensor BiasAdd(const Tensor& value, const Tensor& bias, const BiasAddAttrs& attrs) {
  return run_one("BiasAdd", {value, bias}, {{"data_format", std::string(attrs.data_format)}}, attrs.name);
}

Tensor BiasAddGrad(const Tensor& out_backprop, const BiasAddAttrs& attrs) {
  return run_one("BiasAddGrad", {out_backprop}, {{"data_format", std::string(attrs.data_format)}}, attrs.name);
}

Tensor Relu(const Tensor& features, const NameOnly& attrs) { return run_one("Relu", {features}, {}, attrs.name); }

Tensor ReluGrad(const Tensor& gradients, const Tensor& features, const NameOnly& attrs) {
  return run_one("ReluGrad", {gradients, features}, {}, attrs.name);
}

Tensor Softmax(const Tensor& logits, const NameOnly& attrs) { return run_one("Softmax", {logits}, {}, attrs.name); }

Tensor LogSoftmax(const Tensor& logits, const NameOnly& attrs) {
  return run_one("LogSoftmax", {logits}, {}, attrs.name);
}

CrossEntropyResult SoftmaxCrossEntropyWithLogits(const Tensor& features, const Tensor& labels, const NameOnly& attrs) {
  return run_cross_entropy("SoftmaxCrossEntropyWithLogits", features, labels, attrs.name);
}

CrossEntropyResult SparseSoftmaxCrossEntropyWithLogits(const Tensor& features, const Tensor& labels,
                                                       const NameOnly& attrs) {
  return run_cross_entropy("SparseSoftmaxCrossEntropyWithLogits", features, labels, attrs.name);
}

}  // namespace dagrad::raw_ops
