// Reference kernels: ApplyGradientDescent, ApplyMomentum, ApplyAdam, _GroupedApplyAdam (element updates in
// ops/training_updates.hpp). They update the session's stored variables in place (every reader of
// the variable shares that buffer) and output them.
#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/training_ops.hpp"
#include "dagrad/ops/training_updates.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

double scalar(KernelContext& c, int i) { return c.input(i).value_as_double(0); }

// ApplyAdam (n = 1) and _GroupedApplyAdam (ops::AdamLayout): the n updates one after the other.
template <class T>
void adam(KernelContext& c, int n) {
  const ops::AdamLayout in{n};
  const ops::AdamCoefficients k = ops::adam_coefficients(c, in);
  ops::require_separate_updates(c, in);
  for (int j = 0; j < n; ++j) {
    const int g = in.grad(j);
    Tensor& var = ops::ref_variable(c, in.var(j), g);
    Tensor& m = ops::ref_variable(c, in.m(j), g);
    Tensor& v = ops::ref_variable(c, in.v(j), g);
    const T* grad = c.input(g).data<T>();
    T* w = var.data<T>();
    T* pm = m.data<T>();
    T* pv = v.data<T>();
    for (std::int64_t i = 0; i < var.num_elements(); ++i) ops::adam_update(w[i], pm[i], pv[i], widen<T>(grad[i]), k);
    if (j == n - 1) c.set_output(0, var);
  }
}

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  add_kernels(r, "ApplyGradientDescent", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& var = ops::ref_variable(c, 0, 2);
      const double alpha = scalar(c, 1);
      const T* delta = c.input(2).data<T>();
      T* w = var.data<T>();
      for (std::int64_t i = 0; i < var.num_elements(); ++i)
        ops::gradient_descent_update(w[i], alpha, widen<T>(delta[i]));
      c.set_output(0, var);
    };
  });
  add_kernels(r, "ApplyMomentum", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& var = ops::ref_variable(c, 0, 3);
      Tensor& accum = ops::ref_variable(c, 1, 3);
      const double lr = scalar(c, 2), momentum = scalar(c, 4);
      const bool nesterov = c.attr<bool>("use_nesterov");
      const T* grad = c.input(3).data<T>();
      T* w = var.data<T>();
      T* a = accum.data<T>();
      for (std::int64_t i = 0; i < var.num_elements(); ++i)
        ops::momentum_update(w[i], a[i], widen<T>(grad[i]), lr, momentum, nesterov);
      c.set_output(0, var);
    };
  });
  add_kernels(r, "ApplyAdam", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { adam<T>(c, 1); }; });
  add_kernels(r, "_GroupedApplyAdam", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { adam<T>(c, static_cast<int>(c.attr<std::int64_t>("N"))); };
  });
}

}  // namespace dagrad::reference
