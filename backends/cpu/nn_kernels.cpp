// CPU kernels (oneTBB): BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax and the dense and sparse
// softmax cross-entropies. Each output element is computed by one task in a fixed order, and BiasAddGrad
// sums fixed-size row blocks combined in block order, so results never depend on thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/float_only.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::cpu {
namespace {

constexpr auto kCpu = Device::Kind::CPU;
constexpr std::int64_t kGrain = 1 << 14;     // elements per task for element-wise loops
constexpr std::int64_t kBlockRows = 256;     // BiasAddGrad rows per partial sum

using ops::ChannelSplit;
using ops::split_at_channel;

template <class F>
void parallel_elements(std::int64_t n, F&& f) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, kGrain), [&](const tbb::blocked_range<std::int64_t>& r) {
    for (std::int64_t i = r.begin(); i < r.end(); ++i) f(i);
  });
}

template <class F>
void parallel_rows(std::int64_t rows, std::int64_t row_cost, F&& f) {
  const std::int64_t grain = std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(row_cost, 1));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, grain), [&](const tbb::blocked_range<std::int64_t>& r) {
    for (std::int64_t i = r.begin(); i < r.end(); ++i) f(i);
  });
}

template <class T>
void relu(KernelContext& c) {
  const T* x = c.input(0).data<T>();
  Tensor& out = c.allocate_output(0);
  T* y = out.data<T>();
  parallel_elements(out.num_elements(), [&](std::int64_t i) { y[i] = x[i] < T(0) ? T(0) : x[i]; });
}

// TF multiplies by the 0/1 mask, so a NaN gradient stays NaN where features <= 0.
template <class T>
void relu_grad(KernelContext& c) {
  const T* g = c.input(0).data<T>();
  const T* f = c.input(1).data<T>();
  Tensor& out = c.allocate_output(0);
  T* y = out.data<T>();
  parallel_elements(out.num_elements(), [&](std::int64_t i) { y[i] = g[i] * (f[i] > T(0) ? T(1) : T(0)); });
}

template <class T>
void bias_add(KernelContext& c) {
  const ChannelSplit s = split_at_channel(c.input(0).shape(), c.attr<std::string>("data_format"));
  const T* x = c.input(0).data<T>();
  const T* bias = c.input(1).data<T>();
  T* y = c.allocate_output(0).data<T>();
  parallel_rows(s.outer * s.channels, s.inner, [&](std::int64_t row) {
    const T b = bias[row % s.channels];
    const T* xr = x + row * s.inner;
    T* yr = y + row * s.inner;
    for (std::int64_t i = 0; i < s.inner; ++i) yr[i] = xr[i] + b;
  });
}

template <class T>
void bias_add_grad(KernelContext& c) {
  const ChannelSplit s = split_at_channel(c.input(0).shape(), c.attr<std::string>("data_format"));
  const T* g = c.input(0).data<T>();
  T* out = c.allocate_output(0).data<T>();
  const std::int64_t blocks = (s.outer + kBlockRows - 1) / kBlockRows;
  std::vector<T> partial(static_cast<std::size_t>(std::max<std::int64_t>(blocks, 1) * s.channels), T(0));
  tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t b) {
    T* acc = partial.data() + b * s.channels;
    const std::int64_t end = std::min(s.outer, (b + 1) * kBlockRows);
    for (std::int64_t o = b * kBlockRows; o < end; ++o) {
      const T* row = g + o * s.channels * s.inner;
      if (s.inner == 1) {
        for (std::int64_t ch = 0; ch < s.channels; ++ch) acc[ch] += row[ch];
      } else {
        for (std::int64_t ch = 0; ch < s.channels; ++ch) {
          T sum = 0;
          for (std::int64_t i = 0; i < s.inner; ++i) sum += row[ch * s.inner + i];
          acc[ch] += sum;
        }
      }
    }
  });
  for (std::int64_t ch = 0; ch < s.channels; ++ch) {
    T sum = 0;
    for (std::int64_t b = 0; b < blocks; ++b) sum += partial[static_cast<std::size_t>(b * s.channels + ch)];
    out[ch] = sum;
  }
}

// One row of softmax statistics: the max and log(sum(exp(x - max))).
template <class T>
void row_stats(const T* x, std::int64_t n, T* max_out, T* log_sum_out) {
  T max = -INFINITY;
  for (std::int64_t j = 0; j < n; ++j) max = std::max(max, x[j]);
  T sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += std::exp(x[j] - max);
  *max_out = max;
  *log_sum_out = std::log(sum);
}

template <class T>
void softmax(KernelContext& c, bool log) {
  const Tensor& in = c.input(0);
  const std::int64_t classes = in.shape()[in.rank() - 1];
  const std::int64_t rows = classes == 0 ? 0 : in.num_elements() / classes;
  const T* x = in.data<T>();
  T* y = c.allocate_output(0).data<T>();
  parallel_rows(rows, classes, [&](std::int64_t r) {
    T max, log_sum;
    row_stats(x + r * classes, classes, &max, &log_sum);
    for (std::int64_t j = 0; j < classes; ++j) {
      const T s = x[r * classes + j] - max - log_sum;
      y[r * classes + j] = log ? s : std::exp(s);
    }
  });
}

template <class T, class Label>
void sparse_xent(KernelContext& c) {
  const Tensor& logits = c.input(0);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const Label* label = c.input(1).data<Label>();
  ops::check_sparse_labels(label, rows, classes);
  const T* x = logits.data<T>();
  T* loss = c.allocate_output(0).data<T>();
  T* backprop = c.allocate_output(1).data<T>();
  parallel_rows(rows, classes, [&](std::int64_t r) {
    T max, log_sum;
    const T* row = x + r * classes;
    row_stats(row, classes, &max, &log_sum);
    loss[r] = log_sum - (row[label[r]] - max);
    for (std::int64_t j = 0; j < classes; ++j) {
      backprop[r * classes + j] = std::exp(row[j] - max - log_sum) - (j == label[r] ? T(1) : T(0));
    }
  });
}

// Dense-label softmax cross-entropy. The rows are short and this op runs once per step, so each
// row uses the reference's double arithmetic in its order: results equal the reference bit for
// bit, for half and bfloat16 too.
template <class T>
void xent(KernelContext& c) {
  const Tensor& logits = c.input(0);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const T* x = logits.data<T>();
  const T* labels = c.input(1).data<T>();
  T* loss = c.allocate_output(0).data<T>();
  T* backprop = c.allocate_output(1).data<T>();
  parallel_rows(rows, classes, [&](std::int64_t r) {
    const T* row = x + r * classes;
    double max = -INFINITY;
    for (std::int64_t j = 0; j < classes; ++j) max = std::max(max, widen<T>(row[j]));
    double sum = 0;
    for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(widen<T>(row[j]) - max);
    const double log_sum = std::log(sum);
    double total = 0;
    for (std::int64_t j = 0; j < classes; ++j) {
      const double s = widen<T>(row[j]) - max, label = widen<T>(labels[r * classes + j]);
      total += label * (log_sum - s);
      backprop[r * classes + j] = narrow<T>(std::exp(s - log_sum) - label);
    }
    loss[r] = narrow<T>(total);
  });
}

}  // namespace

void register_nn_kernels(KernelRegistry& r) {
  const std::initializer_list<DType> types = {DType::Float32, DType::Float64};
  add_kernels(r, "BiasAdd", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn { return bias_add<T>; }));
  add_kernels(r, "BiasAddGrad", kCpu, kBackend, kPriority, types,
              float_only([]<class T>() -> KernelFn { return bias_add_grad<T>; }));
  add_kernels(r, "Relu", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn { return relu<T>; }));
  add_kernels(r, "ReluGrad", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn { return relu_grad<T>; }));
  add_kernels(r, "Softmax", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn {
                return [](KernelContext& c) { softmax<T>(c, false); };
              }));
  add_kernels(r, "LogSoftmax", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn {
                return [](KernelContext& c) { softmax<T>(c, true); };
              }));
  add_kernels(r, "SoftmaxCrossEntropyWithLogits", kCpu, kBackend, kPriority,
              {DType::Half, DType::BFloat16, DType::Float32, DType::Float64},
              []<class T>() -> KernelFn { return xent<T>; });
  add_kernels(r, "SparseSoftmaxCrossEntropyWithLogits", kCpu, kBackend, kPriority, types,
              float_only([]<class T>() -> KernelFn {
                return [](KernelContext& c) {
                  if (c.input(1).dtype() == DType::Int32) sparse_xent<T, std::int32_t>(c);
                  else sparse_xent<T, std::int64_t>(c);
                };
              }));
}

}  // namespace dagrad::cpu
