// Reference kernels: BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax, LogSoftmax and the softmax
// cross-entropy losses. Floats are computed in double and rounded once.
#include <cmath>
#include <vector>

#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

using ops::ChannelSplit;
using ops::split_at_channel;

// Per row of a [rows, classes] matrix: the shifted logits x - max and log(sum(exp(x - max))).
template <class T>
void shifted_row(const T* row, std::int64_t classes, std::vector<double>& shifted, double* log_sum) {
  double max = -INFINITY;
  for (std::int64_t j = 0; j < classes; ++j) max = std::max(max, widen<T>(row[j]));
  double sum = 0;
  shifted.resize(static_cast<std::size_t>(classes));
  for (std::int64_t j = 0; j < classes; ++j) {
    shifted[static_cast<std::size_t>(j)] = widen<T>(row[j]) - max;
    sum += std::exp(shifted[static_cast<std::size_t>(j)]);
  }
  *log_sum = std::log(sum);
}

// Rows of the last axis: (rows, classes).
std::pair<std::int64_t, std::int64_t> rows_and_classes(const Shape& shape) {
  const std::int64_t classes = shape[shape.rank() - 1];
  return {classes == 0 ? 0 : shape.num_elements() / classes, classes};
}

template <class T>
void softmax_kernel(KernelContext& c, bool log) {
  const Tensor& in = c.input(0);
  Tensor& out = c.allocate_output(0);
  const auto [rows, classes] = rows_and_classes(in.shape());
  std::vector<double> shifted;
  for (std::int64_t r = 0; r < rows; ++r) {
    double log_sum = 0;
    shifted_row(in.data<T>() + r * classes, classes, shifted, &log_sum);
    T* y = out.data<T>() + r * classes;
    for (std::int64_t j = 0; j < classes; ++j) {
      const double s = shifted[static_cast<std::size_t>(j)] - log_sum;
      y[j] = narrow<T>(log ? s : std::exp(s));
    }
  }
}

template <class T, class Label>
void sparse_xent(KernelContext& c) {
  const Tensor& logits = c.input(0);
  const Tensor& labels = c.input(1);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const Label* label = labels.data<Label>();
  ops::check_sparse_labels(label, rows, classes);
  T* loss = c.allocate_output(0).data<T>();
  T* backprop = c.allocate_output(1).data<T>();
  std::vector<double> shifted;
  for (std::int64_t r = 0; r < rows; ++r) {
    double log_sum = 0;
    shifted_row(logits.data<T>() + r * classes, classes, shifted, &log_sum);
    loss[r] = narrow<T>(log_sum - shifted[static_cast<std::size_t>(label[r])]);
    for (std::int64_t j = 0; j < classes; ++j) {
      const double p = std::exp(shifted[static_cast<std::size_t>(j)] - log_sum);
      backprop[r * classes + j] = narrow<T>(p - (j == label[r] ? 1.0 : 0.0));
    }
  }
}

}  // namespace

void register_nn_kernels(KernelRegistry& r) {
  add_kernels(r, "BiasAdd", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& value = c.input(0);
      const T* bias = c.input(1).data<T>();
      Tensor& out = c.allocate_output(0);
      if (out.num_elements() == 0) return;
      const ChannelSplit s = split_at_channel(value.shape(), c.attr<std::string>("data_format"));
      const T* x = value.data<T>();
      T* y = out.data<T>();
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::int64_t ch = 0; ch < s.channels; ++ch) {
          for (std::int64_t i = 0; i < s.inner; ++i) {
            const std::int64_t k = (o * s.channels + ch) * s.inner + i;
            y[k] = narrow<T>(widen<T>(x[k]) + widen<T>(bias[ch]));
          }
        }
      }
    };
  });
  add_kernels(r, "BiasAddGrad", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& grad = c.input(0);
      Tensor& out = c.allocate_output(0);
      std::vector<double> acc(static_cast<std::size_t>(out.num_elements()), 0.0);
      // An empty gradient sums to zero: no loop over its (possibly huge) rows of nothing.
      const ChannelSplit s = grad.num_elements() == 0
                                 ? ChannelSplit{0, 0, 0}
                                 : split_at_channel(grad.shape(), c.attr<std::string>("data_format"));
      const T* g = grad.data<T>();
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::int64_t ch = 0; ch < s.channels; ++ch) {
          for (std::int64_t i = 0; i < s.inner; ++i) {
            acc[static_cast<std::size_t>(ch)] += widen<T>(g[(o * s.channels + ch) * s.inner + i]);
          }
        }
      }
      for (std::size_t ch = 0; ch < acc.size(); ++ch) out.data<T>()[ch] = narrow<T>(acc[ch]);
    };
  });
  add_kernels(r, "Relu", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      Tensor& out = c.allocate_output(0);
      T* y = out.data<T>();
      // x < 0 ? 0 : x keeps NaN (as TF's max(x, 0) does).
      for (std::int64_t i = 0; i < out.num_elements(); ++i) y[i] = widen<T>(x[i]) < 0 ? T(0) : x[i];
    };
  });
  add_kernels(r, "ReluGrad", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* g = c.input(0).data<T>();
      const T* f = c.input(1).data<T>();
      Tensor& out = c.allocate_output(0);
      T* y = out.data<T>();
      // TF multiplies by the 0/1 mask, so a NaN gradient stays NaN even where features <= 0.
      for (std::int64_t i = 0; i < out.num_elements(); ++i) {
        y[i] = narrow<T>(widen<T>(g[i]) * (widen<T>(f[i]) > 0 ? 1.0 : 0.0));
      }
    };
  });
  add_kernels(r, "Softmax", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { softmax_kernel<T>(c, false); }; });
  add_kernels(r, "LogSoftmax", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { softmax_kernel<T>(c, true); }; });
  add_kernels(r, "SoftmaxCrossEntropyWithLogits", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& logits = c.input(0);
      const T* labels = c.input(1).data<T>();
      const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
      T* loss = c.allocate_output(0).data<T>();
      T* backprop = c.allocate_output(1).data<T>();
      std::vector<double> shifted;
      for (std::int64_t r = 0; r < rows; ++r) {
        double log_sum = 0, total = 0;
        shifted_row(logits.data<T>() + r * classes, classes, shifted, &log_sum);
        for (std::int64_t j = 0; j < classes; ++j) {
          const double s = shifted[static_cast<std::size_t>(j)];
          const double label = widen<T>(labels[r * classes + j]);
          total += label * (log_sum - s);
          backprop[r * classes + j] = narrow<T>(std::exp(s - log_sum) - label);
        }
        loss[r] = narrow<T>(total);
      }
    };
  });
  add_kernels(r, "SparseSoftmaxCrossEntropyWithLogits", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn {
                return [](KernelContext& c) {
                  if (c.input(1).dtype() == DType::Int32)
                    sparse_xent<T, std::int32_t>(c);
                  else
                    sparse_xent<T, std::int64_t>(c);
                };
              });
}

}  // namespace dagrad::reference
