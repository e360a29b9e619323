// CUDA kernels of Softmax, LogSoftmax and the two softmax cross-entropy losses: one block per row,
// in the accumulator type (float for half/bfloat16/float, double for double). Row max and sums
// combine per-thread partials by a fixed tree, so results repeat bitwise.
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

template <class A>
__device__ __forceinline__ A exp_of(A v) {
  if constexpr (std::is_same_v<A, float>)
    return ::expf(v);
  else
    return ::exp(v);
}
template <class A>
__device__ __forceinline__ A log_of(A v) {
  if constexpr (std::is_same_v<A, float>)
    return ::logf(v);
  else
    return ::log(v);
}

// Combines every thread's `v` by `op` in a fixed tree; all threads get the result.
template <class A, class Op>
__device__ A block_combine(A* shared, A v, Op op) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + width]);
    __syncthreads();
  }
  const A result = shared[0];
  __syncthreads();
  return result;
}

// The row's max (NaN ignored, as the reference's std::max(max, x) ignores it) and log(sum(exp(x - max))).
template <class T>
__device__ void row_stats(const T* row, std::int64_t classes, acc_t<T>* shared, acc_t<T>* max, acc_t<T>* log_sum) {
  using A = acc_t<T>;
  A m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < classes; j += kThreads) {
    const A v = to_acc(row[j]);
    if (v > m) m = v;
  }
  m = block_combine(shared, m, [](A a, A b) { return b > a ? b : a; });
  A sum = 0;
  for (std::int64_t j = threadIdx.x; j < classes; j += kThreads) sum += exp_of(to_acc(row[j]) - m);
  sum = block_combine(shared, sum, [](A a, A b) { return a + b; });
  *max = m;
  *log_sum = log_of(sum);
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, std::int64_t rows, std::int64_t classes, bool log) {
  using A = acc_t<T>;
  __shared__ A shared[kThreads];
  DAGRAD_BLOCK_STRIDE(r, rows) {
    const T* row = x + r * classes;
    A m, log_sum;
    row_stats(row, classes, shared, &m, &log_sum);
    for (std::int64_t j = threadIdx.x; j < classes; j += kThreads) {
      const A s = to_acc(row[j]) - m - log_sum;
      y[r * classes + j] = from_acc<T>(log ? s : exp_of(s));
    }
  }
}

template <class T>
__global__ void softmax_xent_kernel(const T* x, const T* labels, T* loss, T* backprop, std::int64_t rows,
                                    std::int64_t classes) {
  using A = acc_t<T>;
  __shared__ A shared[kThreads];
  DAGRAD_BLOCK_STRIDE(r, rows) {
    const T* row = x + r * classes;
    A m, log_sum;
    row_stats(row, classes, shared, &m, &log_sum);
    A total = 0;
    for (std::int64_t j = threadIdx.x; j < classes; j += kThreads) {
      const A s = to_acc(row[j]) - m;
      const A label = to_acc(labels[r * classes + j]);
      total += label * (log_sum - s);
      backprop[r * classes + j] = from_acc<T>(exp_of(s - log_sum) - label);
    }
    total = block_combine(shared, total, [](A a, A b) { return a + b; });
    if (threadIdx.x == 0) loss[r] = from_acc<T>(total);
  }
}

template <class T, class Label>
__global__ void sparse_xent_kernel(const T* x, const Label* labels, T* loss, T* backprop, std::int64_t rows,
                                   std::int64_t classes) {
  using A = acc_t<T>;
  __shared__ A shared[kThreads];
  DAGRAD_BLOCK_STRIDE(r, rows) {
    const T* row = x + r * classes;
    A m, log_sum;
    row_stats(row, classes, shared, &m, &log_sum);
    const auto label = static_cast<std::int64_t>(labels[r]);
    for (std::int64_t j = threadIdx.x; j < classes; j += kThreads) {
      const A p = exp_of(to_acc(row[j]) - m - log_sum);
      backprop[r * classes + j] = from_acc<T>(p - (j == label ? A(1) : A(0)));
    }
    if (threadIdx.x == 0) loss[r] = from_acc<T>(log_sum - (to_acc(row[label]) - m));
  }
}

unsigned row_blocks(std::int64_t rows) { return static_cast<unsigned>(rows < 65535 * 16 ? rows : 65535 * 16); }

}  // namespace

void launch_softmax(ElemType type, bool log, const void* logits, void* out, std::int64_t rows, std::int64_t classes,
                    void* stream) {
  if (rows == 0 || classes == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      DAGRAD_LAUNCH(row_blocks(rows), kThreads, stream, softmax_kernel<T>)
      (static_cast<const T*>(logits), static_cast<T*>(out), rows, classes, log);
    }
  });
  check_launch("softmax_kernel");
}

void launch_softmax_xent(ElemType type, const void* logits, const void* labels, void* loss, void* backprop,
                         std::int64_t rows, std::int64_t classes, void* stream) {
  if (rows == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      DAGRAD_LAUNCH(row_blocks(rows), kThreads, stream, softmax_xent_kernel<T>)
      (static_cast<const T*>(logits), static_cast<const T*>(labels), static_cast<T*>(loss), static_cast<T*>(backprop),
       rows, classes);
    }
  });
  check_launch("softmax_xent_kernel");
}

void launch_sparse_softmax_xent(ElemType type, ElemType label_type, const void* logits, const void* labels, void* loss,
                                void* backprop, std::int64_t rows, std::int64_t classes, void* stream) {
  if (rows == 0 || classes == 0) return;  // no classes: no valid label, so no rows either
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      auto run = [&]<class Label>() {
        DAGRAD_LAUNCH(row_blocks(rows), kThreads, stream, sparse_xent_kernel<T, Label>)
        (static_cast<const T*>(logits), static_cast<const Label*>(labels), static_cast<T*>(loss),
         static_cast<T*>(backprop), rows, classes);
      };
      if (label_type == ElemType::Int32)
        run.template operator()<std::int32_t>();
      else
        run.template operator()<std::int64_t>();
    }
  });
  check_launch("sparse_xent_kernel");
}

}  // namespace dagrad::cuda
