// Shared bits of the CUDA kernel registrations (host code): dtype mapping and the launch context.
#pragma once

#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/launch.hpp"
#include "dagrad/backends/cuda/register.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad::cuda {

static_assert(static_cast<int>(ElemType::Half) == static_cast<int>(DType::Half) &&
              static_cast<int>(ElemType::BFloat16) == static_cast<int>(DType::BFloat16) &&
              static_cast<int>(ElemType::Float32) == static_cast<int>(DType::Float32) &&
              static_cast<int>(ElemType::Float64) == static_cast<int>(DType::Float64) &&
              static_cast<int>(ElemType::Int32) == static_cast<int>(DType::Int32) &&
              static_cast<int>(ElemType::Int64) == static_cast<int>(DType::Int64) &&
              static_cast<int>(ElemType::Bool) == static_cast<int>(DType::Bool));

inline ElemType elem(DType dtype) { return static_cast<ElemType>(dtype); }

inline constexpr auto kCuda = Device::Kind::CUDA;

// Kernels run on the context's device, on the session's stream (null: the legacy default stream).
struct Launch {
  explicit Launch(const KernelContext& c) : guard(c.device().index), stream(c.stream) {}
  DeviceGuard guard;
  void* stream;
};

}  // namespace dagrad::cuda
