// CPU kernels (oneTBB): ApplyGradientDescent, ApplyMomentum, ApplyAdam, updating the stored
// variables in place over fixed blocks with the reference kernels' element updates
// (ops/training_updates.hpp), so the results equal the reference bit for bit whatever the thread
// count (the updates are memory-bound: double arithmetic costs nothing measurable here).
#include <algorithm>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/training_ops.hpp"
#include "dagrad/ops/training_updates.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kBlock = 16384;  // elements per parallel piece

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
    for (i64 i = b; i < e; ++i) ops::gradient_descent_update(w[i], alpha, widen<T>(delta[i]));
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
    for (i64 i = b; i < e; ++i) ops::momentum_update(w[i], a[i], widen<T>(grad[i]), lr, mom, nesterov);
  });
  c.set_output(0, var);
}

template <class T>
void adam(KernelContext& c) {
  Tensor& var = ops::ref_variable(c, 0, 9);
  Tensor& m = ops::ref_variable(c, 1, 9);
  Tensor& v = ops::ref_variable(c, 2, 9);
  const ops::AdamCoefficients k(scalar(c, 5), scalar(c, 3), scalar(c, 4), scalar(c, 6), scalar(c, 7), scalar(c, 8),
                                c.attr<bool>("use_nesterov"));
  const T* grad = c.input(9).data<T>();
  T* w = var.data<T>();
  T* pm = m.data<T>();
  T* pv = v.data<T>();
  blocks(var.num_elements(), [&](i64 b, i64 e) {
    for (i64 i = b; i < e; ++i) ops::adam_update(w[i], pm[i], pv[i], widen<T>(grad[i]), k);
  });
  c.set_output(0, var);
}

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  add_kernels(r, "ApplyGradientDescent", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return gradient_descent<T>; });
  add_kernels(r, "ApplyMomentum", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return momentum<T>; });
  add_kernels(r, "ApplyAdam", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn { return adam<T>; });
}

}  // namespace dagrad::cpu
