// Device-side element types and conversions shared by the CUDA kernels (nvcc, or the host
// compiler under tests/support/cuda_sim.hpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dagrad/backends/cuda/launch.hpp"

// kernel<<<grid, block, 0, stream>>>(args...) as DAGRAD_LAUNCH(grid, block, stream, kernel)(args...):
// a macro so that tests/support/cuda_sim.hpp can run the same launch on the host. The kernel
// comes last because its template arguments may hold commas.
#if !defined(DAGRAD_CUDA_SIM)
#define DAGRAD_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, ::dagrad::cuda::as_stream(stream)>>>
#endif

// The loops every element-wise kernel runs: each thread takes elements (or each block takes rows)
// a whole grid apart, in 64-bit indices, so any launch size covers any count.
#define DAGRAD_GRID_STRIDE(i, count)                                                      \
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < (count); \
       i += std::int64_t{gridDim.x} * blockDim.x)
#define DAGRAD_BLOCK_STRIDE(i, count) for (std::int64_t i = blockIdx.x; i < (count); i += gridDim.x)

namespace dagrad::cuda {

template <class T>
inline constexpr bool is_reduced_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class T>
inline constexpr bool is_float_v = is_reduced_v<T> || std::is_floating_point_v<T>;
// float for half/bfloat16, else the type itself.
template <class T>
using acc_t = std::conditional_t<is_reduced_v<T>, float, T>;

template <class T>
__device__ __forceinline__ acc_t<T> to_acc(T v) {
  if constexpr (is_reduced_v<T>)
    return static_cast<float>(v);
  else
    return v;
}
template <class T>
__device__ __forceinline__ T from_acc(acc_t<T> v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return v;
}
// Integers wrap through the unsigned type of their width (no signed-overflow UB); others are themselves.
template <class T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct wrap_type {
  using type = T;
};
template <class T>
struct wrap_type<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using wrap_t = typename wrap_type<T>::type;

// Exact widening to double, then one rounding to T (dagrad::narrow).
template <class T>
__host__ __device__ __forceinline__ double to_double(T v) {
  if constexpr (is_reduced_v<T>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}
template <class T>
__host__ __device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_same_v<T, __half>)
    return __double2half(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __double2bfloat16(v);
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0.0;
  else
    return static_cast<T>(v);
}

// The sign bit of a floating value, NaN included.
template <class T>
__host__ __device__ __forceinline__ bool sign_bit(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return (static_cast<__half_raw>(v).x & 0x8000u) != 0;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return (static_cast<__nv_bfloat16_raw>(v).x & 0x8000u) != 0;
  else
    return std::signbit(v);
}

// The default quiet NaN of T with the given sign: what the reference's conversions (Eigen's,
// x86's) make of a NaN, where the GPU's conversion instructions return one with every
// significand bit set.
template <class T>
__host__ __device__ __forceinline__ T quiet_nan(bool negative) {
  if constexpr (std::is_same_v<T, __half>) {
    __half_raw r;
    r.x = negative ? 0xfe00u : 0x7e00u;
    return r;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat16_raw r;
    r.x = negative ? 0xffc0u : 0x7fc0u;
    return r;
  } else if constexpr (std::is_same_v<T, float>) {
    const std::uint32_t bits = negative ? 0xffc00000u : 0x7fc00000u;
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
#endif
  } else {
    const std::uint64_t bits = negative ? 0xfff8000000000000ull : 0x7ff8000000000000ull;
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(static_cast<long long>(bits));
#else
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
#endif
  }
}

// The most negative finite value of a floating type (MaxPool's result for an empty window, as on CPU).
template <class T>
__host__ __device__ __forceinline__ T lowest_finite() {
  if constexpr (std::is_same_v<T, __half>)
    return from_double<T>(-65504.0);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return from_double<T>(-0x1.fep127);
  else
    return std::numeric_limits<T>::lowest();
}

// Calls f.template operator()<T>() with the device type of `type`.
template <class F>
void visit_elem(ElemType type, F&& f) {
  switch (type) {
    case ElemType::Half:
      return f.template operator()<__half>();
    case ElemType::BFloat16:
      return f.template operator()<__nv_bfloat16>();
    case ElemType::Float32:
      return f.template operator()<float>();
    case ElemType::Float64:
      return f.template operator()<double>();
    case ElemType::Int32:
      return f.template operator()<std::int32_t>();
    case ElemType::Int64:
      return f.template operator()<std::int64_t>();
    case ElemType::Bool:
      return f.template operator()<bool>();
    case ElemType::Invalid:
      break;
  }
}

// Grid size for a grid-stride loop over `count` elements.
inline unsigned grid_for(std::int64_t count, int threads) {
  const std::int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks < 1 ? 1 : blocks) : 65535 * 8);
}

}  // namespace dagrad::cuda
