// The CUDA gather kernel of Transpose and BroadcastTo: each output element copies the input
// element its GatherIndex names (gather_index.hpp).
#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void gather_kernel(const T* in, T* out, GatherIndex index) {
  DAGRAD_GRID_STRIDE(i, index.count) { out[i] = in[gather_offset(index, i)]; }
}

}  // namespace

void launch_gather(ElemType type, const void* in, void* out, const GatherIndex& index, void* stream) {
  if (index.count == 0) return;
  visit_elem(type, [&]<class T>() {
    DAGRAD_LAUNCH(grid_for(index.count, kThreads), kThreads, stream, gather_kernel<T>)
    (static_cast<const T*>(in), static_cast<T*>(out), index);
  });
  check_launch("gather_kernel");
}

}  // namespace dagrad::cuda
