// CUDA kernels of MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad. The gradients
// gather: each input element sums the windows that cover it, in the reference's window order
// (row, then column) and in double, so no atomics are needed and results equal the reference.
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/exact_math.cuh"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

struct Window {
  PoolRange rows, cols;
};
__device__ __forceinline__ Window window_of(const PoolIndex& g, const PoolPos& out) {
  return {pool_window(out.row, g.stride_rows, g.pad_top, g.window_rows, g.rows),
          pool_window(out.col, g.stride_cols, g.pad_left, g.window_cols, g.cols)};
}

// Input offset of the first maximal element of the window of output `out` in row-major order
// (replace only on strictly greater, TF's rule); -1 for a window with no element.
template <class T>
__device__ std::int64_t window_argmax(const T* x, const PoolIndex& g, const PoolPos& out) {
  const Window w = window_of(g, out);
  std::int64_t best = -1;
  for (std::int64_t r = w.rows.begin; r < w.rows.end; ++r) {
    for (std::int64_t c = w.cols.begin; c < w.cols.end; ++c) {
      const std::int64_t k = pool_in_offset(g, {out.n, r, c, out.d});
      if (best < 0 || to_acc(x[k]) > to_acc(x[best])) best = k;
    }
  }
  return best;
}

template <class T>
__global__ void max_pool_kernel(const T* x, T* y, PoolIndex g) {
  DAGRAD_GRID_STRIDE(o, pool_out_count(g)) {
    const std::int64_t best = window_argmax(x, g, pool_unravel(g.nchw, g.out_rows, g.out_cols, g.depth, o));
    y[o] = best < 0 ? lowest_finite<T>() : x[best];  // an empty window: only with EXPLICIT padding of an empty input
  }
}

template <class T>
__global__ void avg_pool_kernel(const T* x, T* y, PoolIndex g) {
  DAGRAD_GRID_STRIDE(o, pool_out_count(g)) {
    const PoolPos out = pool_unravel(g.nchw, g.out_rows, g.out_cols, g.depth, o);
    const Window w = window_of(g, out);
    double sum = 0;
    for (std::int64_t r = w.rows.begin; r < w.rows.end; ++r) {
      for (std::int64_t c = w.cols.begin; c < w.cols.end; ++c)
        sum = add_rn(sum, to_double(x[pool_in_offset(g, {out.n, r, c, out.d})]));
    }
    const auto size = static_cast<double>((w.rows.end - w.rows.begin) * (w.cols.end - w.cols.begin));
    y[o] = from_double<T>(div_rn(sum, size));
  }
}

template <class T>
__global__ void pool_argmax_kernel(const T* x, std::int64_t* argmax, PoolIndex g) {
  DAGRAD_GRID_STRIDE(o, pool_out_count(g)) {
    argmax[o] = window_argmax(x, g, pool_unravel(g.nchw, g.out_rows, g.out_cols, g.depth, o));
  }
}

// Each input element sums grad over the windows whose argmax it is.
template <class T>
__global__ void max_pool_grad_kernel(const std::int64_t* argmax, const T* grad, T* out, PoolIndex g) {
  DAGRAD_GRID_STRIDE(i, pool_in_count(g)) {
    const PoolPos in = pool_unravel(g.nchw, g.rows, g.cols, g.depth, i);
    const PoolRange rows = pool_covering(in.row, g.stride_rows, g.pad_top, g.window_rows, g.out_rows);
    const PoolRange cols = pool_covering(in.col, g.stride_cols, g.pad_left, g.window_cols, g.out_cols);
    double acc = 0;
    for (std::int64_t r = rows.begin; r < rows.end; ++r) {
      for (std::int64_t c = cols.begin; c < cols.end; ++c) {
        const std::int64_t o = pool_out_offset(g, {in.n, r, c, in.d});
        if (argmax[o] == i) acc = add_rn(acc, to_double(grad[o]));
      }
    }
    out[i] = from_double<T>(acc);
  }
}

template <class T>
__global__ void max_pool_grad_grad_kernel(const T* x, const T* grad, T* y, PoolIndex g) {
  DAGRAD_GRID_STRIDE(o, pool_out_count(g)) {
    const std::int64_t best = window_argmax(x, g, pool_unravel(g.nchw, g.out_rows, g.out_cols, g.depth, o));
    y[o] = best < 0 ? from_double<T>(0.0) : grad[best];
  }
}

// Each input element sums grad / (window size) over the windows that hold it.
template <class T>
__global__ void avg_pool_grad_kernel(const T* grad, T* out, PoolIndex g) {
  DAGRAD_GRID_STRIDE(i, pool_in_count(g)) {
    const PoolPos in = pool_unravel(g.nchw, g.rows, g.cols, g.depth, i);
    const PoolRange rows = pool_covering(in.row, g.stride_rows, g.pad_top, g.window_rows, g.out_rows);
    const PoolRange cols = pool_covering(in.col, g.stride_cols, g.pad_left, g.window_cols, g.out_cols);
    double acc = 0;
    for (std::int64_t r = rows.begin; r < rows.end; ++r) {
      const PoolRange wr = pool_window(r, g.stride_rows, g.pad_top, g.window_rows, g.rows);
      for (std::int64_t c = cols.begin; c < cols.end; ++c) {
        const PoolRange wc = pool_window(c, g.stride_cols, g.pad_left, g.window_cols, g.cols);
        const auto size = static_cast<double>((wr.end - wr.begin) * (wc.end - wc.begin));
        acc = add_rn(acc, div_rn(to_double(grad[pool_out_offset(g, {in.n, r, c, in.d})]), size));
      }
    }
    out[i] = from_double<T>(acc);
  }
}

// Launches kernel<T> over `count` threads for the float types.
template <class Launch>
void for_float(ElemType type, std::int64_t count, const char* name, Launch&& launch) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) launch.template operator()<T>(grid_for(count, kThreads));
  });
  check_launch(name);
}

}  // namespace

void launch_max_pool(ElemType type, const void* x, void* y, const PoolIndex& g, void* stream) {
  for_float(type, pool_out_count(g), "max_pool_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, max_pool_kernel<T>)(static_cast<const T*>(x), static_cast<T*>(y), g);
  });
}

void launch_avg_pool(ElemType type, const void* x, void* y, const PoolIndex& g, void* stream) {
  for_float(type, pool_out_count(g), "avg_pool_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, avg_pool_kernel<T>)(static_cast<const T*>(x), static_cast<T*>(y), g);
  });
}

void launch_max_pool_grad(ElemType type, const void* x, const void* grad, void* out, std::int64_t* argmax,
                          const PoolIndex& g, void* stream) {
  for_float(type, pool_out_count(g), "pool_argmax_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, pool_argmax_kernel<T>)(static_cast<const T*>(x), argmax, g);
  });
  for_float(type, pool_in_count(g), "max_pool_grad_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, max_pool_grad_kernel<T>)
    (argmax, static_cast<const T*>(grad), static_cast<T*>(out), g);
  });
}

void launch_max_pool_grad_grad(ElemType type, const void* x, const void* grad, void* out, const PoolIndex& g,
                               void* stream) {
  for_float(type, pool_out_count(g), "max_pool_grad_grad_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, max_pool_grad_grad_kernel<T>)
    (static_cast<const T*>(x), static_cast<const T*>(grad), static_cast<T*>(out), g);
  });
}

void launch_avg_pool_grad(ElemType type, const void* grad, void* out, const PoolIndex& g, void* stream) {
  for_float(type, pool_in_count(g), "avg_pool_grad_kernel", [&]<class T>(unsigned grid) {
    DAGRAD_LAUNCH(grid, kThreads, stream, avg_pool_grad_kernel<T>)
    (static_cast<const T*>(grad), static_cast<T*>(out), g);
  });
}

}  // namespace dagrad::cuda
