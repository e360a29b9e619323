// Reference kernels: ApplyGradientDescent, ApplyMomentum, ApplyAdam. They update the session's
// stored variables in place (every reader of the variable shares that buffer) and output them.
#include <cmath>

#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/training_ops.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;
const std::initializer_list<DType> kFloats = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};

double scalar(KernelContext& c, int i) { return c.input(i).value_as_double(0); }

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  add_kernels(r, "ApplyGradientDescent", kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& var = ops::ref_variable(c, 0, 2);
      const double alpha = scalar(c, 1);
      const T* delta = c.input(2).data<T>();
      T* w = var.data<T>();
      for (std::int64_t i = 0; i < var.num_elements(); ++i) w[i] = narrow<T>(widen<T>(w[i]) - alpha * widen<T>(delta[i]));
      c.set_output(0, var);
    };
  });
  add_kernels(r, "ApplyMomentum", kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& var = ops::ref_variable(c, 0, 3);
      Tensor& accum = ops::ref_variable(c, 1, 3);
      const double lr = scalar(c, 2), momentum = scalar(c, 4);
      const bool nesterov = c.attr<bool>("use_nesterov");
      const T* grad = c.input(3).data<T>();
      T* w = var.data<T>();
      T* a = accum.data<T>();
      for (std::int64_t i = 0; i < var.num_elements(); ++i) {
        const double g = widen<T>(grad[i]);
        a[i] = narrow<T>(widen<T>(a[i]) * momentum + g);
        const double acc = widen<T>(a[i]);
        w[i] = narrow<T>(widen<T>(w[i]) - (nesterov ? g * lr + acc * momentum * lr : lr * acc));
      }
      c.set_output(0, var);
    };
  });
  add_kernels(r, "ApplyAdam", kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& var = ops::ref_variable(c, 0, 9);
      Tensor& m = ops::ref_variable(c, 1, 9);
      Tensor& v = ops::ref_variable(c, 2, 9);
      const double beta1_power = scalar(c, 3), beta2_power = scalar(c, 4), lr = scalar(c, 5);
      const double beta1 = scalar(c, 6), beta2 = scalar(c, 7), epsilon = scalar(c, 8);
      const bool nesterov = c.attr<bool>("use_nesterov");
      const double lr_t = lr * std::sqrt(1 - beta2_power) / (1 - beta1_power);
      const T* grad = c.input(9).data<T>();
      T* w = var.data<T>();
      T* pm = m.data<T>();
      T* pv = v.data<T>();
      for (std::int64_t i = 0; i < var.num_elements(); ++i) {
        const double g = widen<T>(grad[i]);
        pm[i] = narrow<T>(widen<T>(pm[i]) + (g - widen<T>(pm[i])) * (1 - beta1));
        pv[i] = narrow<T>(widen<T>(pv[i]) + (g * g - widen<T>(pv[i])) * (1 - beta2));
        const double mi = widen<T>(pm[i]), vi = widen<T>(pv[i]);
        const double step = nesterov ? (mi * beta1 + (1 - beta1) * g) : mi;
        w[i] = narrow<T>(widen<T>(w[i]) - lr_t * step / (std::sqrt(vi) + epsilon));
      }
      c.set_output(0, var);
    };
  });
}

}  // namespace dagrad::reference
