// register_kernels: the reference backend's one registration function, calling each family's.
#include "dagrad/backends/reference/register.hpp"

namespace dagrad::reference {

void register_kernels(KernelRegistry& r) {
  register_array_kernels(r);
  register_math_kernels(r);
  register_state_kernels(r);
  register_conv2d_kernels(r);
  register_nn_kernels(r);
  register_pooling_kernels(r);
  register_matrix_kernels(r);
  register_compare_kernels(r);
  register_training_kernels(r);
  register_shape_kernels(r);
  register_collective_kernels(r);
}

}  // namespace dagrad::reference
