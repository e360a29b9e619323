// Reference kernels: MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad and
// _MaxPoolGradReluGrad (ReluGrad's mask on MaxPoolGrad's result). Plain loops over every window
// (SAME, VALID or EXPLICIT padding, all through the shared geometry); the max of a window is its
// first maximal element in row-major order (TF's).
#include <algorithm>
#include <limits>
#include <vector>

#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/pooling_ops.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

// Calls f(out_offset, in_offsets of the window's in-bounds elements) for every output element;
// none when the output is empty (its other dims may be huge: no loop over rows of nothing).
template <class F>
void for_each_window(const ops::Pool2DGeometry& geo, F&& f) {
  if (geo.batch == 0 || geo.out_rows == 0 || geo.out_cols == 0 || geo.depth == 0) return;
  std::vector<std::int64_t> window;
  for (std::int64_t n = 0; n < geo.batch; ++n) {
    for (std::int64_t orow = 0; orow < geo.out_rows; ++orow) {
      for (std::int64_t ocol = 0; ocol < geo.out_cols; ++ocol) {
        const std::int64_t r0 = orow * geo.stride_rows - geo.pad_top, c0 = ocol * geo.stride_cols - geo.pad_left;
        const std::int64_t r1 = std::min(r0 + geo.window_rows, geo.rows), c1 = std::min(c0 + geo.window_cols, geo.cols);
        for (std::int64_t d = 0; d < geo.depth; ++d) {
          window.clear();
          for (std::int64_t r = std::max<std::int64_t>(r0, 0); r < r1; ++r) {
            for (std::int64_t col = std::max<std::int64_t>(c0, 0); col < c1; ++col)
              window.push_back(geo.in_offset(n, r, col, d));
          }
          f(geo.out_offset(n, orow, ocol, d), window);
        }
      }
    }
  }
}

// The first maximal element of a window (TF's argmax rule: replace only on strictly greater), or
// -1 for an empty window (EXPLICIT padding over an input with no rows or columns).
template <class T>
std::int64_t window_argmax(const T* x, const std::vector<std::int64_t>& window) {
  if (window.empty()) return -1;
  std::int64_t best = window.front();
  for (std::int64_t k : window) {
    if (widen<T>(x[k]) > widen<T>(x[best])) best = k;
  }
  return best;
}

ops::Pool2DGeometry geometry(KernelContext& c, const Shape& input) {
  return ops::pool2d_geometry(c.op_name(), c.attrs(), input);
}

// MaxPoolGrad's output (also _MaxPoolGradReluGrad's, before its mask): each window's gradient
// added at its first maximum, in double, rounded once.
template <class T>
Tensor& max_pool_grad(KernelContext& c) {
  const T* x = c.input(0).data<T>();
  const T* grad = c.input(2).data<T>();
  Tensor& out = c.allocate_output(0);
  std::vector<double> acc(static_cast<std::size_t>(out.num_elements()), 0.0);
  for_each_window(geometry(c, c.input(0).shape()), [&](std::int64_t o, const std::vector<std::int64_t>& w) {
    const std::int64_t k = window_argmax(x, w);
    if (k >= 0) acc[static_cast<std::size_t>(k)] += widen<T>(grad[o]);
  });
  for (std::size_t i = 0; i < acc.size(); ++i) out.data<T>()[i] = narrow<T>(acc[i]);
  return out;
}

}  // namespace

void register_pooling_kernels(KernelRegistry& r) {
  add_kernels(r, "MaxPool", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      T* y = c.allocate_output(0).data<T>();
      // An empty window gives the lowest finite value, as TF's CPU kernel (which starts from it).
      const T lowest = std::numeric_limits<T>::lowest();
      for_each_window(geometry(c, c.input(0).shape()), [&](std::int64_t o, const std::vector<std::int64_t>& w) {
        const std::int64_t k = window_argmax(x, w);
        y[o] = k < 0 ? lowest : x[k];
      });
    };
  });
  add_kernels(r, "MaxPoolGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { max_pool_grad<T>(c); }; });
  add_kernels(r, "_MaxPoolGradReluGrad", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& out = max_pool_grad<T>(c);
      const T* features = c.input(3).data<T>();
      T* y = out.data<T>();
      // ReluGrad's reference arithmetic on MaxPoolGrad's rounded result.
      for (std::int64_t i = 0; i < out.num_elements(); ++i)
        y[i] = narrow<T>(widen<T>(y[i]) * (widen<T>(features[i]) > 0 ? 1.0 : 0.0));
    };
  });
  add_kernels(r, "MaxPoolGradGrad", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      const T* grad = c.input(2).data<T>();
      T* y = c.allocate_output(0).data<T>();
      for_each_window(geometry(c, c.input(0).shape()), [&](std::int64_t o, const std::vector<std::int64_t>& w) {
        const std::int64_t k = window_argmax(x, w);
        y[o] = k < 0 ? T(0) : grad[k];
      });
    };
  });
  add_kernels(r, "AvgPool", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      T* y = c.allocate_output(0).data<T>();
      for_each_window(geometry(c, c.input(0).shape()), [&](std::int64_t o, const std::vector<std::int64_t>& w) {
        double sum = 0;
        for (std::int64_t k : w) sum += widen<T>(x[k]);
        y[o] = narrow<T>(sum / static_cast<double>(w.size()));
      });
    };
  });
  add_kernels(r, "AvgPoolGrad", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* grad = c.input(1).data<T>();
      Tensor& out = c.allocate_output(0);
      std::vector<double> acc(static_cast<std::size_t>(out.num_elements()), 0.0);
      for_each_window(geometry(c, out.shape()), [&](std::int64_t o, const std::vector<std::int64_t>& w) {
        const double share = widen<T>(grad[o]) / static_cast<double>(w.size());
        for (std::int64_t k : w) acc[static_cast<std::size_t>(k)] += share;
      });
      for (std::size_t i = 0; i < acc.size(); ++i) out.data<T>()[i] = narrow<T>(acc[i]);
    };
  });
}

}  // namespace dagrad::reference
