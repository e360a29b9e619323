// CUDA kernels: ApplyGradientDescent, ApplyMomentum, ApplyAdam (and _GroupedApplyAdam). They update the session's
// stored variables in place on the device (kernels in training.cu) and output them; the scalar inputs (learning rate,
// betas, ...) are read by the kernels on the device, never synchronised to the host.
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/ops/training_ops.hpp"

namespace dagrad::cuda {
namespace {

// The stored tensor behind ref input i (ops::ref_variable's checks), on this device.
Tensor& ref_input(KernelContext& c, int i, int grad_index) {
  Tensor& value = ops::ref_variable(c, i, grad_index);
  // A value stored from the host (restored, or assigned on another device) moves here once.
  if (value.device() != c.device()) value = value.to(c.device());
  return value;
}

const void* scalar(const KernelContext& c, int i) { return c.input(i).raw_data(); }

// ApplyAdam (n = 1) and _GroupedApplyAdam (ops::AdamLayout): one launch per update, on the
// stream in order.
void adam(KernelContext& c, int n) {
  Launch launch(c);
  const ops::AdamLayout in{n};
  AdamScalars s;
  s.beta1_power = scalar(c, in.scalar(0)), s.beta2_power = scalar(c, in.scalar(1)), s.lr = scalar(c, in.scalar(2));
  s.beta1 = scalar(c, in.scalar(3)), s.beta2 = scalar(c, in.scalar(4)), s.epsilon = scalar(c, in.scalar(5));
  ops::require_separate_updates(c, in);
  for (int j = 0; j < n; ++j) {
    const int g = in.grad(j);
    Tensor& var = ref_input(c, in.var(j), g);
    Tensor& m = ref_input(c, in.m(j), g);
    Tensor& v = ref_input(c, in.v(j), g);
    launch_apply_adam(elem(var.dtype()), var.raw_data(), m.raw_data(), v.raw_data(), s, c.input(g).raw_data(),
                      c.attr<bool>("use_nesterov"), var.num_elements(), launch.stream);
    if (j == n - 1) c.set_output(0, var);
  }
}

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  add_kernels(r, "ApplyGradientDescent", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& var = ref_input(c, 0, 2);
      launch_apply_gradient_descent(elem(var.dtype()), var.raw_data(), scalar(c, 1), c.input(2).raw_data(),
                                    var.num_elements(), launch.stream);
      c.set_output(0, var);
    };
  });
  add_kernels(r, "ApplyMomentum", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& var = ref_input(c, 0, 3);
      Tensor& accum = ref_input(c, 1, 3);
      launch_apply_momentum(elem(var.dtype()), var.raw_data(), accum.raw_data(), scalar(c, 2), c.input(3).raw_data(),
                            scalar(c, 4), c.attr<bool>("use_nesterov"), var.num_elements(), launch.stream);
      c.set_output(0, var);
    };
  });
  add_kernels(r, "ApplyAdam", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { adam(c, 1); }; });
  add_kernels(r, "_GroupedApplyAdam", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { adam(c, static_cast<int>(c.attr<std::int64_t>("N"))); };
  });
}

}  // namespace dagrad::cuda
