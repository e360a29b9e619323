// Eager raw ops of the pooling family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/pooling_ops.hpp"

namespace dagrad::raw_ops {
namespace {

AttrMap max_pool_attrs(const MaxPoolAttrs& a) {
  return {{"ksize", a.ksize},
          {"strides", a.strides},
          {"padding", std::string(a.padding)},
          {"explicit_paddings", a.explicit_paddings},
          {"data_format", std::string(a.data_format)}};
}

AttrMap avg_pool_attrs(const AvgPoolAttrs& a) {
  return {{"ksize", a.ksize},
          {"strides", a.strides},
          {"padding", std::string(a.padding)},
          {"data_format", std::string(a.data_format)}};
}

}  // namespace

Tensor MaxPool(const Tensor& input, const MaxPoolAttrs& attrs) {
  return run_op("MaxPool", {input}, max_pool_attrs(attrs), {.name = attrs.name}).at(0);
}

Tensor MaxPoolGrad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad, const MaxPoolAttrs& attrs) {
  return run_op("MaxPoolGrad", {orig_input, orig_output, grad}, max_pool_attrs(attrs), {.name = attrs.name}).at(0);
}

Tensor MaxPoolGradGrad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                       const MaxPoolAttrs& attrs) {
  return run_op("MaxPoolGradGrad", {orig_input, orig_output, grad}, max_pool_attrs(attrs), {.name = attrs.name}).at(0);
}

Tensor AvgPool(const Tensor& value, const AvgPoolAttrs& attrs) {
  return run_op("AvgPool", {value}, avg_pool_attrs(attrs), {.name = attrs.name}).at(0);
}

Tensor AvgPoolGrad(const Tensor& orig_input_shape, const Tensor& grad, const AvgPoolAttrs& attrs) {
  return run_op("AvgPoolGrad", {orig_input_shape, grad}, avg_pool_attrs(attrs), {.name = attrs.name}).at(0);
}

}  // namespace dagrad::raw_ops
