// Eager raw ops of the compare family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/compare_ops.hpp"

namespace dagrad::raw_ops {

Tensor ArgMax(const Tensor& input, const Tensor& dimension, const ArgMaxAttrs& attrs) {
  return run_op("ArgMax", {input, dimension}, {{"output_type", attrs.output_type}}, {.name = attrs.name}).at(0);
}

Tensor Equal(const Tensor& x, const Tensor& y, const EqualAttrs& attrs) {
  return run_op("Equal", {x, y}, {{"incompatible_shape_error", attrs.incompatible_shape_error}}, {.name = attrs.name})
      .at(0);
}

}  // namespace dagrad::raw_ops
