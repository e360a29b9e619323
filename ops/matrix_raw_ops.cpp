// Eager raw ops of the matrix family: each builds TF's attribute map and calls run_op.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/matrix_ops.hpp"

namespace dagrad::raw_ops {

Tensor MatMul(const Tensor& a, const Tensor& b, const MatMulAttrs& attrs) {
  return run_op("MatMul", {a, b}, {{"transpose_a", attrs.transpose_a}, {"transpose_b", attrs.transpose_b}},
                {.name = attrs.name})
      .at(0);
}

Tensor Transpose(const Tensor& x, const Tensor& perm, const NameOnly& attrs) {
  return run_op("Transpose", {x, perm}, {}, {.name = attrs.name}).at(0);
}

}  // namespace dagrad::raw_ops
