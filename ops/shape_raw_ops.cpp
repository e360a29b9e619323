// Eager raw ops of the shape family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/shape_ops.hpp"

namespace dagrad::raw_ops {

Tensor Shape(const Tensor& input, const ShapeAttrs& attrs) {
  return run_op("Shape", {input}, {{"out_type", attrs.out_type}}, {.name = attrs.name}).at(0);
}

Tensor Reshape(const Tensor& tensor, const Tensor& shape, const NameOnly& attrs) {
  return run_op("Reshape", {tensor, shape}, {}, {.name = attrs.name}).at(0);
}

Tensor BroadcastTo(const Tensor& input, const Tensor& shape, const NameOnly& attrs) {
  return run_op("BroadcastTo", {input, shape}, {}, {.name = attrs.name}).at(0);
}

BroadcastGradientArgsResult BroadcastGradientArgs(const Tensor& s0, const Tensor& s1, const NameOnly& attrs) {
  std::vector<Tensor> out = run_op("BroadcastGradientArgs", {s0, s1}, {}, {.name = attrs.name});
  return {std::move(out.at(0)), std::move(out.at(1))};
}

}  // namespace dagrad::raw_ops
