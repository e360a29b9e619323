// CUDA kernels of Equal (broadcasting) and ArgMax. ArgMax is deterministic without atomics: a
// short axis is scanned by one thread per output; a long one by a block per output whose
// threads scan fixed strided slices, combined by a fixed tree that prefers the lower index.
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;
// Axes at least this long get a block per output.
constexpr std::int64_t kBlockAxis = 512;

template <class T>
__device__ __forceinline__ bool equal_values(T a, T b) {
  if constexpr (is_reduced_v<T>)
    return static_cast<float>(a) == static_cast<float>(b);
  else
    return a == b;
}

template <class T>
__global__ void equal_kernel(const T* x, const T* y, bool* z, BroadcastIndex index) {
  DAGRAD_GRID_STRIDE(i, index.count) {
    std::int64_t xo, yo;
    broadcast_offsets(index, i, &xo, &yo);
    z[i] = equal_values(x[xo], y[yo]);
  }
}

// Values compare in the accumulator type, as in the reference: exact for every dtype (int64
// included; double would merge int64 values beyond 2^53).
template <class T>
__device__ __forceinline__ acc_t<T> key(T v) {
  return to_acc(v);
}

// Scans k = first, first + step, ... < size of row (o, i) and returns the first index of the
// largest non-NaN value, or -1 when all are NaN.
template <class T>
__device__ std::int64_t scan_max(const T* in, const AxisSplit& s, std::int64_t o, std::int64_t i, std::int64_t first,
                                 std::int64_t step) {
  std::int64_t best = -1;
  acc_t<T> best_value = 0;
  for (std::int64_t k = first; k < s.size; k += step) {
    const acc_t<T> v = key(in[axis_offset(s, o, k, i)]);
    if (v != v) continue;
    if (best < 0 || v > best_value) best = k, best_value = v;
  }
  return best;
}

// "best = 0; replace on strictly greater" equals: 0 when element 0 is NaN (nothing compares
// greater than it), else the first index of the largest non-NaN value.
template <class T>
__device__ std::int64_t finish_arg_max(const T* in, const AxisSplit& s, std::int64_t o, std::int64_t i,
                                       std::int64_t best) {
  const acc_t<T> first = key(in[axis_offset(s, o, 0, i)]);
  return first != first || best < 0 ? 0 : best;
}

template <class T, class Out>
__global__ void arg_max_thread_kernel(const T* in, Out* out, AxisSplit s) {
  const std::int64_t outputs = s.outer * s.inner;
  DAGRAD_GRID_STRIDE(j, outputs) {
    const std::int64_t o = j / s.inner, i = j % s.inner;
    out[j] = static_cast<Out>(finish_arg_max(in, s, o, i, scan_max(in, s, o, i, 0, 1)));
  }
}

template <class T, class Out>
__global__ void arg_max_block_kernel(const T* in, Out* out, AxisSplit s) {
  __shared__ std::int64_t best[kThreads];
  __shared__ acc_t<T> value[kThreads];
  const std::int64_t outputs = s.outer * s.inner;
  DAGRAD_BLOCK_STRIDE(j, outputs) {
    const std::int64_t o = j / s.inner, i = j % s.inner;
    const std::int64_t b = scan_max(in, s, o, i, threadIdx.x, kThreads);
    best[threadIdx.x] = b;
    value[threadIdx.x] = b < 0 ? acc_t<T>(0) : key(in[axis_offset(s, o, b, i)]);
    __syncthreads();
    for (unsigned width = kThreads / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) {
        const std::int64_t other = best[threadIdx.x + width];
        const acc_t<T> ov = value[threadIdx.x + width];
        const std::int64_t mine = best[threadIdx.x];
        const acc_t<T> mv = value[threadIdx.x];
        if (other >= 0 && (mine < 0 || ov > mv || (ov == mv && other < mine))) {
          best[threadIdx.x] = other;
          value[threadIdx.x] = ov;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[j] = static_cast<Out>(finish_arg_max(in, s, o, i, best[0]));
    __syncthreads();
  }
}

}  // namespace

void launch_equal(ElemType type, const void* x, const void* y, bool* z, const BroadcastIndex& index, void* stream) {
  if (index.count == 0) return;
  visit_elem(type, [&]<class T>() {
    DAGRAD_LAUNCH(grid_for(index.count, kThreads), kThreads, stream, equal_kernel<T>)
    (static_cast<const T*>(x), static_cast<const T*>(y), z, index);
  });
  check_launch("equal_kernel");
}

void launch_arg_max(ElemType type, ElemType out_type, const void* in, void* out, const AxisSplit& split, void* stream) {
  const std::int64_t outputs = split.outer * split.inner;
  if (outputs == 0 || split.size == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      visit_elem(out_type, [&]<class Out>() {
        if constexpr (std::is_same_v<Out, std::int32_t> || std::is_same_v<Out, std::int64_t>) {
          const auto* x = static_cast<const T*>(in);
          auto* y = static_cast<Out*>(out);
          if (split.size >= kBlockAxis) {
            const auto blocks = static_cast<unsigned>(outputs < 65535 * 16 ? outputs : 65535 * 16);
            DAGRAD_LAUNCH(blocks, kThreads, stream, arg_max_block_kernel<T, Out>)(x, y, split);
          } else {
            DAGRAD_LAUNCH(grid_for(outputs, kThreads), kThreads, stream, arg_max_thread_kernel<T, Out>)(x, y, split);
          }
        }
      });
    }
  });
  check_launch("arg_max_kernel");
}

}  // namespace dagrad::cuda
