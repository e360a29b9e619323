// Launches the implicit-GEMM conv kernels and their layout transposes (conv2d_launch.cuh) on a stream.
#include "dagrad/backends/cuda/conv2d_launch.cuh"
#include "dagrad/backends/cuda/conv_launch.hpp"
#include "dagrad/backends/cuda/cuda_check.hpp"

namespace dagrad::cuda {
namespace {

struct StreamLaunch {
  cudaStream_t stream;
  template <class... Params, class... Args>
  void operator()(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, const Args&... args) const {
    kernel<<<grid, block, 0, stream>>>(args...);
    check_launch(name);
  }
};

}  // namespace

void launch_conv(ElemType type, const ConvRun& run, const ConvBuffers& buffers, void* stream) {
  launch_conv_run(type, run, buffers, StreamLaunch{as_stream(stream)});
}

}  // namespace dagrad::cuda
