// Eager raw ops of the array family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/array_ops.hpp"

namespace dagrad::raw_ops {

Tensor Const(const Tensor& value, const ConstAttrs& attrs) {
  if (!value.defined()) invalid_argument("Const: 'value' is an undefined tensor");
  const DType dtype = attrs.dtype == DType::Invalid ? value.dtype() : attrs.dtype;
  const Tensor host = value.device().is_cpu() ? value : value.to(Device::cpu());
  return run_op("Const", {}, {{"value", host}, {"dtype", dtype}}, {.name = attrs.name}).front();
}

Tensor Identity(const Tensor& input, const NameOnly& attrs) {
  return run_op("Identity", {input}, {}, {.name = attrs.name}).front();
}

Tensor ZerosLike(const Tensor& x, const NameOnly& attrs) {
  return run_op("ZerosLike", {x}, {}, {.name = attrs.name}).front();
}

Tensor OnesLike(const Tensor& x, const NameOnly& attrs) {
  return run_op("OnesLike", {x}, {}, {.name = attrs.name}).front();
}

Tensor Cast(const Tensor& x, const CastAttrs& attrs) {
  AttrMap map{{"Truncate", attrs.Truncate}};
  // Left out when unset, so that the schema reports the missing attribute in its own words.
  if (attrs.DstT != DType::Invalid) map.emplace("DstT", attrs.DstT);
  return run_op("Cast", {x}, std::move(map), {.name = attrs.name}).front();
}

void NoOp(const NameOnly& attrs) { run_op("NoOp", {}, {}, {.name = attrs.name}); }

}  // namespace dagrad::raw_ops
