// Turns CUDA runtime status codes into dagrad::Error (never an abort).
#pragma once

#include <cuda_runtime_api.h>

#include "dagrad/core/error.hpp"

namespace dagrad::cuda {

inline void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const Code code = status == cudaErrorMemoryAllocation ? Code::ResourceExhausted : Code::Internal;
  fail(code, "CUDA error in ", what, ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

// Checks that the last kernel launch was accepted (bad configuration, missing image for the GPU).
#if defined(DAGRAD_CUDA_SIM)
// tests/support/cuda_sim.hpp runs launches on the host: nothing to check. Another namespace, so
// that this definition never meets the real one at link time.
inline namespace simulated {
inline void check_launch(const char*) {}
}  // namespace simulated
#else
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }
#endif

// Makes device `index` current for the scope (kernels launch on the current device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != index) check_cuda(cudaSetDevice(index), "cudaSetDevice");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace dagrad::cuda
