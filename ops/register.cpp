// register_ops: the ops layer's one registration function, calling each op family's.
#include "dagrad/ops/register.hpp"

#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops {

void register_ops(OpRegistry& r) {
  register_array_ops(r);
  register_math_ops(r);
  register_state_ops(r);
  register_conv2d_ops(r);
  register_fused_conv2d_ops(r);
  register_nn_ops(r);
  register_pooling_ops(r);
  register_matrix_ops(r);
  register_compare_ops(r);
  register_training_ops(r);
  register_shape_ops(r);
  register_collective_ops(r);
  cases::register_cases(r);
}

}  // namespace dagrad::ops
