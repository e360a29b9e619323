// register_all: the one list of every registration in the library. Explicit calls survive
// static linking, where self-registering static objects would be dropped by the linker.
#include "dagrad/autodiff/grads/nn.hpp"
#include "dagrad/autodiff/grads/register.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/backends/reference/register.hpp"
#ifdef DAGRAD_WITH_CUDA
#include "dagrad/backends/cuda/register.hpp"
#endif
#include "dagrad/core/registries.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad {

void register_all(Registries& r) {
  ops::register_array_ops(r.ops);
  ops::register_math_ops(r.ops);
  ops::register_state_ops(r.ops);
  ops::register_conv2d_ops(r.ops);
  ops::register_nn_ops(r.ops);
  ops::register_pooling_ops(r.ops);
  ops::register_matrix_ops(r.ops);
  ops::register_compare_ops(r.ops);
  ops::register_training_ops(r.ops);
  ops::register_shape_ops(r.ops);

  reference::register_array_kernels(r.kernels);
  reference::register_math_kernels(r.kernels);
  reference::register_state_kernels(r.kernels);
  reference::register_conv2d_kernels(r.kernels);
  reference::register_nn_kernels(r.kernels);
  reference::register_pooling_kernels(r.kernels);
  reference::register_matrix_kernels(r.kernels);
  reference::register_compare_kernels(r.kernels);
  reference::register_training_kernels(r.kernels);
  reference::register_shape_kernels(r.kernels);
  cpu::register_array_kernels(r.kernels);
  cpu::register_math_kernels(r.kernels);
  cpu::register_conv2d_kernels(r.kernels);
  cpu::register_nn_kernels(r.kernels);
  cpu::register_softmax_kernels(r.kernels);
  cpu::register_pooling_kernels(r.kernels);
  cpu::register_matmul_kernels(r.kernels);
  cpu::register_training_kernels(r.kernels);
  cpu::register_compare_kernels(r.kernels);
  cpu::register_layout_kernels(r.kernels);

  autodiff::register_nn_gradients(r.gradients);
  autodiff::register_array_gradients(r.gradients);
  autodiff::register_math_gradients(r.gradients);
  autodiff::register_shape_gradients(r.gradients);
  autodiff::register_conv2d_gradients(r.gradients);

#ifdef DAGRAD_WITH_CUDA
  // Registered with or without a device: `dagrad ops --kernels` lists them either way.
  cuda::register_cuda_runtime();
  cuda::register_array_kernels(r.kernels);
  cuda::register_math_kernels(r.kernels);
  cuda::register_state_kernels(r.kernels);
  cuda::register_conv2d_kernels(r.kernels);
  cuda::register_nn_kernels(r.kernels);
  cuda::register_pooling_kernels(r.kernels);
  cuda::register_matrix_kernels(r.kernels);
  cuda::register_compare_kernels(r.kernels);
  cuda::register_training_kernels(r.kernels);
  cuda::register_shape_kernels(r.kernels);
#endif
}

}  // namespace dagrad
