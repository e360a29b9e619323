// register_backend: the CUDA backend's one registration function, its runtime and kernels.
#include "dagrad/backends/cuda/register.hpp"

namespace dagrad::cuda {

void register_backend(KernelRegistry& r) {
  register_cuda_runtime();
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

}  // namespace dagrad::cuda
