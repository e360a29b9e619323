// Element-wise CUDA kernels of Relu, ReluGrad, Reciprocal and BiasAdd. Each computes one +, *
// or / of T values in the accumulator type and rounds once: since float (double) has more than
// twice the significand bits of half/bfloat16 (float), that equals the reference's double
// result rounded once, bit for bit.
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/exact_math.cuh"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void relu_kernel(const T* x, T* y, std::int64_t count) {
  // x < 0 ? 0 : x keeps NaN, as TF's max(x, 0) does.
  DAGRAD_GRID_STRIDE(i, count) { y[i] = to_acc(x[i]) < acc_t<T>(0) ? from_acc<T>(acc_t<T>(0)) : x[i]; }
}

template <class T>
__global__ void relu_grad_kernel(const T* g, const T* f, T* y, std::int64_t count) {
  // A multiplication by the 0/1 mask, as TF's: a NaN gradient stays NaN where features <= 0.
  DAGRAD_GRID_STRIDE(i, count) {
    const acc_t<T> mask = to_acc(f[i]) > acc_t<T>(0) ? acc_t<T>(1) : acc_t<T>(0);
    y[i] = from_acc<T>(mul_rn(to_acc(g[i]), mask));
  }
}

template <class T>
__global__ void reciprocal_kernel(const T* x, T* y, std::int64_t count, int* zero_flag) {
  DAGRAD_GRID_STRIDE(i, count) {
    if constexpr (is_float_v<T>) {
      y[i] = from_acc<T>(div_rn(acc_t<T>(1), to_acc(x[i])));
    } else if (x[i] == T(0)) {
      *zero_flag = 1;  // every writer stores the same value: no race on the result
      y[i] = T(0);
    } else {
      y[i] = static_cast<T>(T(1) / x[i]);
    }
  }
}

template <class T>
__global__ void bias_add_kernel(const T* x, const T* bias, T* y, std::int64_t count, std::int64_t channels,
                                std::int64_t inner) {
  DAGRAD_GRID_STRIDE(i, count) { y[i] = from_acc<T>(add_rn(to_acc(x[i]), to_acc(bias[(i / inner) % channels]))); }
}

}  // namespace

void launch_relu(ElemType type, const void* x, void* y, std::int64_t count, void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, relu_kernel<T>)
      (static_cast<const T*>(x), static_cast<T*>(y), count);
    }
  });
  check_launch("relu_kernel");
}

void launch_relu_grad(ElemType type, const void* gradients, const void* features, void* y, std::int64_t count,
                      void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, relu_grad_kernel<T>)
      (static_cast<const T*>(gradients), static_cast<const T*>(features), static_cast<T*>(y), count);
    }
  });
  check_launch("relu_grad_kernel");
}

void launch_reciprocal(ElemType type, const void* x, void* y, std::int64_t count, int* zero_flag, void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, reciprocal_kernel<T>)
      (static_cast<const T*>(x), static_cast<T*>(y), count, zero_flag);
    }
  });
  check_launch("reciprocal_kernel");
}

void launch_bias_add(ElemType type, const void* x, const void* bias, void* y, std::int64_t count, std::int64_t channels,
                     std::int64_t inner, void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, bias_add_kernel<T>)
      (static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<T*>(y), count, channels, inner);
    }
  });
  check_launch("bias_add_kernel");
}

}  // namespace dagrad::cuda
