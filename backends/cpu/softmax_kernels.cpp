// CPU kernels (oneTBB): Softmax, LogSoftmax and the dense and sparse softmax cross-entropies, one
// task per block of rows, each row in a fixed order, so results never depend on thread count.
// Softmax, LogSoftmax and the sparse loss run half/bfloat16 rows widened to float32 through the
// float32 code (max, exp, sum and log in float32, as TF), rounded once per output: exactly the
// float32 kernel's result on the widened input, rounded.
#include <algorithm>
#include <cmath>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/float_chunks.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kGrain = 1 << 14;  // elements per task

// f(row, buffer) for every row; buffer holds `classes` accumulator values for widened rows.
template <class T, class F>
void parallel_rows(i64 rows, i64 classes, F&& f) {
  const i64 grain = std::max<i64>(1, kGrain / std::max<i64>(classes, 1));
  tbb::parallel_for(tbb::blocked_range<i64>(0, rows, grain), [&](const tbb::blocked_range<i64>& r) {
    std::vector<accumulator_t<T>> buffer(is_reduced_float_v<T> ? static_cast<std::size_t>(classes) : 0);
    for (i64 i = r.begin(); i < r.end(); ++i) f(i, buffer.data());
  });
}

// A row in the accumulator type: the row itself, or the buffer holding it widened.
template <class T>
const accumulator_t<T>* load_row(const T* row, i64 n, accumulator_t<T>* buffer) {
  if constexpr (is_reduced_float_v<T>) {
    convert_to_float(row, buffer, n);
    return buffer;
  } else {
    return row;
  }
}

// One row of softmax statistics: the max and log(sum(exp(x - max))).
template <class A>
void row_stats(const A* x, i64 n, A* max_out, A* log_sum_out) {
  A max = -INFINITY;
  for (i64 j = 0; j < n; ++j) max = std::max(max, x[j]);
  A sum = 0;
  for (i64 j = 0; j < n; ++j) sum += std::exp(x[j] - max);
  *max_out = max;
  *log_sum_out = std::log(sum);
}

template <class T>
void softmax(KernelContext& c, bool log) {
  using A = accumulator_t<T>;
  const Tensor& in = c.input(0);
  const i64 classes = in.shape()[in.rank() - 1];
  const i64 rows = classes == 0 ? 0 : in.num_elements() / classes;
  const T* x = in.data<T>();
  T* y = c.allocate_output(0).data<T>();
  parallel_rows<T>(rows, classes, [&](i64 r, A* buffer) {
    const A* xr = load_row(x + r * classes, classes, buffer);
    A* yr = stage(y + r * classes, buffer);  // overwrites xr element by element, after reading it
    A max, log_sum;
    row_stats(xr, classes, &max, &log_sum);
    for (i64 j = 0; j < classes; ++j) {
      const A s = xr[j] - max - log_sum;
      yr[j] = log ? s : std::exp(s);
    }
    store(yr, y + r * classes, classes);
  });
}

template <class T, class Label>
void sparse_xent(KernelContext& c) {
  using A = accumulator_t<T>;
  const Tensor& logits = c.input(0);
  const i64 rows = logits.shape()[0], classes = logits.shape()[1];
  const Label* label = c.input(1).data<Label>();
  ops::check_sparse_labels(label, rows, classes);
  const T* x = logits.data<T>();
  T* loss = c.allocate_output(0).data<T>();
  T* backprop = c.allocate_output(1).data<T>();
  parallel_rows<T>(rows, classes, [&](i64 r, A* buffer) {
    const A* row = load_row(x + r * classes, classes, buffer);
    A* out = stage(backprop + r * classes, buffer);
    A max, log_sum;
    row_stats(row, classes, &max, &log_sum);
    loss[r] = static_cast<T>(log_sum - (row[label[r]] - max));
    for (i64 j = 0; j < classes; ++j) out[j] = std::exp(row[j] - max - log_sum) - (j == label[r] ? A(1) : A(0));
    store(out, backprop + r * classes, classes);
  });
}

// Dense-label softmax cross-entropy. The rows are short and this op runs once per step, so each
// row uses the reference's double arithmetic in its order: results equal the reference bit for
// bit, for half and bfloat16 too.
template <class T>
void xent(KernelContext& c) {
  const Tensor& logits = c.input(0);
  const i64 rows = logits.shape()[0], classes = logits.shape()[1];
  const T* x = logits.data<T>();
  const T* labels = c.input(1).data<T>();
  T* loss = c.allocate_output(0).data<T>();
  T* backprop = c.allocate_output(1).data<T>();
  parallel_rows<double>(rows, classes, [&](i64 r, double*) {
    const T* row = x + r * classes;
    double max = -INFINITY;
    for (i64 j = 0; j < classes; ++j) max = std::max(max, widen<T>(row[j]));
    double sum = 0;
    for (i64 j = 0; j < classes; ++j) sum += std::exp(widen<T>(row[j]) - max);
    const double log_sum = std::log(sum);
    double total = 0;
    for (i64 j = 0; j < classes; ++j) {
      const double s = widen<T>(row[j]) - max, label = widen<T>(labels[r * classes + j]);
      total += label * (log_sum - s);
      backprop[r * classes + j] = narrow<T>(std::exp(s - log_sum) - label);
    }
    loss[r] = narrow<T>(total);
  });
}

}  // namespace

void register_softmax_kernels(KernelRegistry& r) {
  add_kernels(r, "Softmax", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return [](KernelContext& c) { softmax<T>(c, false); }; }));
  add_kernels(r, "LogSoftmax", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return [](KernelContext& c) { softmax<T>(c, true); }; }));
  add_kernels(r, "SoftmaxCrossEntropyWithLogits", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return xent<T>; }));
  add_kernels(r, "SparseSoftmaxCrossEntropyWithLogits", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn {
                return [](KernelContext& c) {
                  if (c.input(1).dtype() == DType::Int32)
                    sparse_xent<T, std::int32_t>(c);
                  else
                    sparse_xent<T, std::int64_t>(c);
                };
              }));
}

}  // namespace dagrad::cpu
