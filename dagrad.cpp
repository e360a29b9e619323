// register_all: one registration call per layer. Explicit calls survive static linking, where
// self-registering static objects would be dropped by the linker; each layer's register.cpp
// lists its own families.
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
  ops::register_ops(r.ops);
  ops::register_rewrites(r.rewrites);
  reference::register_kernels(r.kernels);
  cpu::register_kernels(r.kernels);
  autodiff::register_gradients(r.gradients);
#ifdef DAGRAD_WITH_CUDA
  cuda::register_backend(r.kernels);
#endif
}

}  // namespace dagrad
