// Registration of the CUDA backend: its device runtime and its kernels (built with DAGRAD_WITH_CUDA).
#pragma once

#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::cuda {

inline constexpr const char* kBackend = "cuda";
inline constexpr int kPriority = 10;
// cuDNN's conv kernels rank above dagrad's own; they honour use_cudnn_on_gpu and fall back to
// dagrad's kernels where the attribute is false or cuDNN has no deterministic algorithm.
inline constexpr const char* kCudnnBackend = "cudnn";
inline constexpr int kCudnnPriority = 20;

// The CUDA backend's one registration function (backends/cuda/register.cpp): its device runtime
// and every kernel. Safe without a driver or device: device_count() is then 0, and the kernels
// are registered either way (`dagrad ops --kernels` lists them).
void register_backend(KernelRegistry& registry);

// Installs the CUDA DeviceRuntime (runtime.cpp).
void register_cuda_runtime();
// One per op family, each defined beside its kernels.
void register_array_kernels(KernelRegistry& registry);
void register_math_kernels(KernelRegistry& registry);
void register_state_kernels(KernelRegistry& registry);
void register_conv2d_kernels(KernelRegistry& registry);
void register_nn_kernels(KernelRegistry& registry);          // nn_kernels.cpp
void register_pooling_kernels(KernelRegistry& registry);     // pooling_kernels.cpp
void register_matrix_kernels(KernelRegistry& registry);      // matrix_kernels.cpp (MatMul on cuBLAS, Transpose)
void register_compare_kernels(KernelRegistry& registry);     // compare_kernels.cpp
void register_training_kernels(KernelRegistry& registry);    // training_kernels.cpp
void register_shape_kernels(KernelRegistry& registry);       // shape_kernels.cpp
void register_collective_kernels(KernelRegistry& registry);  // collective_kernels.cpp

}  // namespace dagrad::cuda
