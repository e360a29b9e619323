// Launcher of the implicit-GEMM conv kernels (conv2d.cu), callable from host-compiled code.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/conv_plan.hpp"
#include "dagrad/backends/cuda/launch.hpp"

namespace dagrad::cuda {

// C = A * B per group as `run` (plan_conv_run) says, with NCHW operands transposed where it stages
// them. Requires m, n, k > 0 and conv_grid_fits(run.gemm, run.plan).
void launch_conv(ElemType type, const ConvRun& run, const ConvBuffers& buffers, void* stream);

}  // namespace dagrad::cuda
