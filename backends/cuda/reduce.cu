// Sum and Mean on CUDA: one block per output element; each thread sums a fixed strided slice and
// the block combines the slices by a fixed tree, so results do not depend on scheduling.
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

// Floats accumulate in float (double for double); integers wrap in their unsigned type.
template <class T>
using sum_t = wrap_t<acc_t<T>>;

template <class T>
__global__ void reduce_kernel(const T* in, T* out, ReduceIndex index, bool mean) {
  using A = sum_t<T>;
  __shared__ A partial[kThreads];
  DAGRAD_BLOCK_STRIDE(o, index.out_count) {
    const std::int64_t base = reduce_base(index, o);
    A total = A(0);
    for (std::int64_t j = threadIdx.x; j < index.reduced_count; j += kThreads) {
      const T v = in[base + reduce_offset(index, j)];
      if constexpr (is_float_v<T>)
        total += to_acc(v);
      else
        total = A(total + static_cast<A>(v));
    }
    partial[threadIdx.x] = total;
    __syncthreads();
    for (unsigned width = kThreads / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[threadIdx.x] = A(partial[threadIdx.x] + partial[threadIdx.x + width]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const A sum = partial[0];
      if constexpr (is_float_v<T>) {
        // 0/0 is NaN for an empty mean, as in TF.
        out[o] = from_acc<T>(mean ? sum / static_cast<A>(index.reduced_count) : sum);
      } else {
        const T total_t = static_cast<T>(sum);
        out[o] = !mean                      ? total_t
                 : index.reduced_count == 0 ? T(0)
                                            : static_cast<T>(total_t / static_cast<T>(index.reduced_count));
      }
    }
    __syncthreads();
  }
}

}  // namespace

void launch_reduce(ElemType type, bool mean, const void* in, void* out, const ReduceIndex& index, void* stream) {
  if (index.out_count == 0) return;
  const auto blocks = static_cast<unsigned>(index.out_count < 65535 * 16 ? index.out_count : 65535 * 16);
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      DAGRAD_LAUNCH(blocks, kThreads, stream, reduce_kernel<T>)
      (static_cast<const T*>(in), static_cast<T*>(out), index, mean);
    }
  });
  check_launch("reduce_kernel");
}

}  // namespace dagrad::cuda
