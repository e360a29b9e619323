// Eager raw ops of the math family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/math_ops.hpp"

namespace dagrad::raw_ops {

Tensor Add(const Tensor& x, const Tensor& y, const NameOnly& attrs) {
  return run_op("Add", {x, y}, {}, {.name = attrs.name}).front();
}

Tensor AddV2(const Tensor& x, const Tensor& y, const NameOnly& attrs) {
  return run_op("AddV2", {x, y}, {}, {.name = attrs.name}).front();
}

Tensor Sub(const Tensor& x, const Tensor& y, const NameOnly& attrs) {
  return run_op("Sub", {x, y}, {}, {.name = attrs.name}).front();
}

Tensor Mul(const Tensor& x, const Tensor& y, const NameOnly& attrs) {
  return run_op("Mul", {x, y}, {}, {.name = attrs.name}).front();
}

Tensor Neg(const Tensor& x, const NameOnly& attrs) { return run_op("Neg", {x}, {}, {.name = attrs.name}).front(); }

Tensor Reciprocal(const Tensor& x, const NameOnly& attrs) {
  return run_op("Reciprocal", {x}, {}, {.name = attrs.name}).front();
}

Tensor AddN(const std::vector<Tensor>& inputs, const NameOnly& attrs) {
  return run_op("AddN", inputs, {}, {.name = attrs.name}).front();
}

Tensor Sum(const Tensor& input, const Tensor& axis, const ReductionAttrs& attrs) {
  return run_op("Sum", {input, axis}, {{"keep_dims", attrs.keep_dims}}, {.name = attrs.name}).front();
}

Tensor Mean(const Tensor& input, const Tensor& axis, const ReductionAttrs& attrs) {
  return run_op("Mean", {input, axis}, {{"keep_dims", attrs.keep_dims}}, {.name = attrs.name}).front();
}

}  // namespace dagrad::raw_ops
