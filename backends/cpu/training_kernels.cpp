// CPU kernels (oneTBB): ApplyGradientDescent, ApplyMomentum, ApplyAdam (and _GroupedApplyAdam), updating the stored
// variables in place over fixed blocks with the reference kernels' element updates
// (ops/training_updates.hpp), so the results equal the reference bit for bit whatever the thread
// count. ApplyAdam's square root and division cost more than its memory traffic: float32 and
// float64 run vectorised loops of the same arithmetic (adam_kernels.hpp).
#include <algorithm>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/adam_kernels.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/training_ops.hpp"
#include "dagrad/ops/training_updates.hpp"

namespace dagrad::cpu {
#if defined(__x86_64__)
namespace avx512_adam {  // isa/adam_avx512.cpp
void update_float(float* w, float* m, float* v, const float* g, long long count, const AdamConstants& k);
void update_double(double* w, double* m, double* v, const double* g, long long count, const AdamConstants& k);
}  // namespace avx512_adam
#endif

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
void adam_scalar(T* w, T* m, T* v, const T* g, long long count, const AdamConstants& k) {
  for (long long i = 0; i < count; ++i) ops::adam_update(w[i], m[i], v[i], widen<T>(g[i]), k);
}

#if defined(__x86_64__)
const AdamKernels avx512_adam_kernels{"avx512", &avx512_adam::update_float, &avx512_adam::update_double};
#endif
const AdamKernels scalar_adam_kernels{"scalar", &adam_scalar<float>, &adam_scalar<double>};

// ApplyAdam's and _GroupedApplyAdam's update (ops::AdamLayout): one parallel pass over fixed
// blocks of each variable, so a group gives the bits of its variables' ApplyAdam calls one by one.
template <class T>
void adam_group(KernelContext& c, int n) {
  const ops::AdamLayout in{n};
  const ops::AdamCoefficients k = ops::adam_coefficients(c, in);
  const AdamConstants constants{k.lr_t, k.beta1, k.beta2, k.epsilon, k.nesterov};
  static const AdamKernels* const active = usable_adam_kernels().front();
  auto loop = &adam_scalar<T>;
  if constexpr (std::is_same_v<T, float>) loop = active->update_float;
  if constexpr (std::is_same_v<T, double>) loop = active->update_double;
  ops::require_separate_updates(c, in);
  struct Piece {
    T *w, *m, *v;
    const T* g;
    i64 count;
  };
  std::vector<Piece> pieces;
  Tensor* last = nullptr;
  for (int j = 0; j < n; ++j) {
    const int grad = in.grad(j);
    Tensor& var = ops::ref_variable(c, in.var(j), grad);
    Tensor& m = ops::ref_variable(c, in.m(j), grad);
    Tensor& v = ops::ref_variable(c, in.v(j), grad);
    const i64 count = var.num_elements();
    for (i64 b = 0; b < count; b += kBlock)
      pieces.push_back({var.data<T>() + b, m.data<T>() + b, v.data<T>() + b, c.input(grad).data<T>() + b,
                        std::min(kBlock, count - b)});
    last = &var;
  }
  tbb::parallel_for(std::size_t{0}, pieces.size(), [&](std::size_t i) {
    const Piece& p = pieces[i];
    loop(p.w, p.m, p.v, p.g, p.count, constants);
  });
  c.set_output(0, *last);
}

}  // namespace

std::vector<const AdamKernels*> usable_adam_kernels() {
  std::vector<const AdamKernels*> sets;
#if defined(__x86_64__)
  if (cpu_info().avx512) sets.push_back(&avx512_adam_kernels);
#endif
  sets.push_back(&scalar_adam_kernels);
  return sets;
}

void register_training_kernels(KernelRegistry& r) {
  add_kernels(r, "ApplyGradientDescent", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return gradient_descent<T>; });
  add_kernels(r, "ApplyMomentum", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return momentum<T>; });
  add_kernels(r, "ApplyAdam", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { adam_group<T>(c, 1); }; });
  add_kernels(r, "_GroupedApplyAdam", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { adam_group<T>(c, static_cast<int>(c.attr<std::int64_t>("N"))); };
  });
}

}  // namespace dagrad::cpu
