// CUDA kernels of ApplyGradientDescent, ApplyMomentum and ApplyAdam: in-place updates computed in
// double with explicitly rounded operations in the reference's order, then rounded once to T, so
// a GPU training step updates variables exactly as the reference does.
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/exact_math.cuh"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void gradient_descent_kernel(T* var, const T* alpha_p, const T* delta, std::int64_t count) {
  const double alpha = to_double(*alpha_p);
  DAGRAD_GRID_STRIDE(i, count) {
    var[i] = from_double<T>(sub_rn(to_double(var[i]), mul_rn(alpha, to_double(delta[i]))));
  }
}

template <class T>
__global__ void momentum_kernel(T* var, T* accum, const T* lr_p, const T* grad, const T* momentum_p, bool nesterov,
                                std::int64_t count) {
  const double lr = to_double(*lr_p), momentum = to_double(*momentum_p);
  DAGRAD_GRID_STRIDE(i, count) {
    const double g = to_double(grad[i]);
    accum[i] = from_double<T>(add_rn(mul_rn(to_double(accum[i]), momentum), g));
    const double acc = to_double(accum[i]);
    const double step = nesterov ? add_rn(mul_rn(g, lr), mul_rn(mul_rn(acc, momentum), lr)) : mul_rn(lr, acc);
    var[i] = from_double<T>(sub_rn(to_double(var[i]), step));
  }
}

struct AdamArgs {
  const void* beta1_power;
  const void* beta2_power;
  const void* lr;
  const void* beta1;
  const void* beta2;
  const void* epsilon;
};

template <class T>
__global__ void adam_kernel(T* var, T* m, T* v, AdamArgs s, const T* grad, bool nesterov, std::int64_t count) {
  auto scalar = [](const void* p) { return to_double(*static_cast<const T*>(p)); };
  const double beta1_power = scalar(s.beta1_power), beta2_power = scalar(s.beta2_power), lr = scalar(s.lr);
  const double beta1 = scalar(s.beta1), beta2 = scalar(s.beta2), epsilon = scalar(s.epsilon);
  // lr * sqrt(1 - beta2^t) / (1 - beta1^t), as the reference computes it once.
  const double lr_t = div_rn(mul_rn(lr, __dsqrt_rn(sub_rn(1.0, beta2_power))), sub_rn(1.0, beta1_power));
  const double one_minus_beta1 = sub_rn(1.0, beta1), one_minus_beta2 = sub_rn(1.0, beta2);
  DAGRAD_GRID_STRIDE(i, count) {
    const double g = to_double(grad[i]);
    const double m0 = to_double(m[i]), v0 = to_double(v[i]);
    m[i] = from_double<T>(add_rn(m0, mul_rn(sub_rn(g, m0), one_minus_beta1)));
    v[i] = from_double<T>(add_rn(v0, mul_rn(sub_rn(mul_rn(g, g), v0), one_minus_beta2)));
    const double mi = to_double(m[i]), vi = to_double(v[i]);
    const double step = nesterov ? add_rn(mul_rn(mi, beta1), mul_rn(one_minus_beta1, g)) : mi;
    var[i] = from_double<T>(sub_rn(to_double(var[i]), div_rn(mul_rn(lr_t, step), add_rn(__dsqrt_rn(vi), epsilon))));
  }
}

template <class Launch>
void for_float(ElemType type, std::int64_t count, const char* name, Launch&& launch) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) launch.template operator()<T>(grid_for(count, kThreads));
  });
  check_launch(name);
}

}  // namespace

void launch_apply_gradient_descent(ElemType type, void* var, const void* alpha, const void* delta, std::int64_t count,
                                   void* stream) {
  for_float(type, count, "gradient_descent_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, gradient_descent_kernel<T>)
    (static_cast<T*>(var), static_cast<const T*>(alpha), static_cast<const T*>(delta), count);
  });
}

void launch_apply_momentum(ElemType type, void* var, void* accum, const void* lr, const void* grad,
                           const void* momentum, bool nesterov, std::int64_t count, void* stream) {
  for_float(type, count, "momentum_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, momentum_kernel<T>)
    (static_cast<T*>(var), static_cast<T*>(accum), static_cast<const T*>(lr), static_cast<const T*>(grad),
     static_cast<const T*>(momentum), nesterov, count);
  });
}

void launch_apply_adam(ElemType type, void* var, void* m, void* v, const AdamScalars& scalars, const void* grad,
                       bool nesterov, std::int64_t count, void* stream) {
  const AdamArgs args{scalars.beta1_power, scalars.beta2_power, scalars.lr,
                      scalars.beta1,       scalars.beta2,       scalars.epsilon};
  for_float(type, count, "adam_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, adam_kernel<T>)
    (static_cast<T*>(var), static_cast<T*>(m), static_cast<T*>(v), args, static_cast<const T*>(grad), nesterov, count);
  });
}

}  // namespace dagrad::cuda
