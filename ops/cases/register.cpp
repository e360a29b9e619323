// register_cases: the op cases of every op family of the library (ops/cases/).
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_cases(OpRegistry& r) {
  register_array_cases(r);
  register_math_cases(r);
  register_state_cases(r);
  register_conv2d_cases(r);
  register_nn_cases(r);
  register_pooling_cases(r);
  register_matrix_cases(r);
  register_compare_cases(r);
  register_training_cases(r);
  register_shape_cases(r);
  register_collective_cases(r);
}

}  // namespace dagrad::ops::cases
