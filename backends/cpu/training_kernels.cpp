// CPU kernels (oneTBB): ApplyGradientDescent, ApplyMomentum, ApplyAdam, updating the stored
// variables in place over fixed blocks. Each element's update is the reference kernel's double
// expression in the same order, rounded once per stored value, so the results equal the
// reference bit for bit whatever the thread count (the updates are memory-bound: double costs
// nothing measurable here).
#include <algorithm>
#include <cmath>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/training_ops.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kBlock = 16384;  // elements per parallel piece
const std::initializer_list<DType> kFloats = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};

template <class F>
void blocks(i64 n, F&& body) {
  tbb::parallel_for(i64{0}, (n + kBlock - 1) / kBlock, [&](i64 b) { body(b * kBlock, std::min(n, (b + 1) * kBlock)); });
}

double scalar(KernelContext& c, int i) { return c.input(i).value_as_double(0); }

template <class T>
void gradient_descent(KernelContext& c) {
  Tensor& var = ops::ref_variable(c, 0, 2);
  const double alpha = scalar(c, 1);
  const T* delta = c.input(2).data<T>();
  T* w = var.data<T>();
  blocks(var.num_elements(), [&](i64 b, i64 e) {
    for (i64 i = b; i < e; ++i) w[i] = narrow<T>(widen<T>(w[i]) - alpha * widen<T>(delta[i]));
  });
  c.set_output(0, var);
}

template <class T>
void momentum(KernelContext& c) {
  Tensor& var = ops::ref_variable(c, 0, 3);
  Tensor& accum = ops::ref_variable(c, 1, 3);
  const double lr = scalar(c, 2), mom = scalar(c, 4);
  const bool nesterov = c.attr<bool>("use_nesterov");
  const T* grad = c.input(3).data<T>();
  T* w = var.data<T>();
  T* a = accum.data<T>();
  blocks(var.num_elements(), [&](i64 b, i64 e) {
    for (i64 i = b; i < e; ++i) {
      const double g = widen<T>(grad[i]);
      a[i] = narrow<T>(widen<T>(a[i]) * mom + g);
      const double acc = widen<T>(a[i]);  // the stored (rounded) accumulator, as TF reads it back
      w[i] = narrow<T>(widen<T>(w[i]) - (nesterov ? g * lr + acc * mom * lr : lr * acc));
    }
  });
  c.set_output(0, var);
}

template <class T>
void adam(KernelContext& c) {
  Tensor& var = ops::ref_variable(c, 0, 9);
  Tensor& m = ops::ref_variable(c, 1, 9);
  Tensor& v = ops::ref_variable(c, 2, 9);
  const double beta1_power = scalar(c, 3), beta2_power = scalar(c, 4), lr = scalar(c, 5);
  const double beta1 = scalar(c, 6), beta2 = scalar(c, 7), epsilon = scalar(c, 8);
  const bool nesterov = c.attr<bool>("use_nesterov");
  // TF's alpha: the bias correction folded into the step size; epsilon is added after the sqrt.
  const double lr_t = lr * std::sqrt(1 - beta2_power) / (1 - beta1_power);
  const double one_minus_beta1 = 1 - beta1, one_minus_beta2 = 1 - beta2;
  const T* grad = c.input(9).data<T>();
  T* w = var.data<T>();
  T* pm = m.data<T>();
  T* pv = v.data<T>();
  blocks(var.num_elements(), [&](i64 b, i64 e) {
    for (i64 i = b; i < e; ++i) {
      const double g = widen<T>(grad[i]);
      const double m0 = widen<T>(pm[i]), v0 = widen<T>(pv[i]);
      pm[i] = narrow<T>(m0 + (g - m0) * one_minus_beta1);
      pv[i] = narrow<T>(v0 + (g * g - v0) * one_minus_beta2);
      const double mi = widen<T>(pm[i]), vi = widen<T>(pv[i]);
      const double step = nesterov ? (mi * beta1 + one_minus_beta1 * g) : mi;
      w[i] = narrow<T>(widen<T>(w[i]) - lr_t * step / (std::sqrt(vi) + epsilon));
    }
  });
  c.set_output(0, var);
}

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  add_kernels(r, "ApplyGradientDescent", kCpu, kBackend, kPriority, kFloats,
              []<class T>() -> KernelFn { return gradient_descent<T>; });
  add_kernels(r, "ApplyMomentum", kCpu, kBackend, kPriority, kFloats,
              []<class T>() -> KernelFn { return momentum<T>; });
  add_kernels(r, "ApplyAdam", kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn { return adam<T>; });
}

}  // namespace dagrad::cpu
