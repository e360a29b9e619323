// register_kernels: the CPU backend's one registration function, calling each family's.
#include "dagrad/backends/cpu/register.hpp"

namespace dagrad::cpu {

void register_kernels(KernelRegistry& r) {
  register_array_kernels(r);
  register_math_kernels(r);
  register_conv2d_kernels(r);
  register_nn_kernels(r);
  register_softmax_kernels(r);
  register_max_pool_kernels(r);
  register_avg_pool_kernels(r);
  register_matmul_kernels(r);
  register_training_kernels(r);
  register_compare_kernels(r);
  register_layout_kernels(r);
}

}  // namespace dagrad::cpu
