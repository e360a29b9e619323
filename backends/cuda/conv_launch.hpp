// Launcher of the implicit-GEMM conv kernels (conv2d.cu), callable from host-compiled code.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/conv_plan.hpp"
#include "dagrad/backends/cuda/launch.hpp"

namespace dagrad::cuda {

// C = A * B per group with the kernel, tile and splits of `plan` (plan_conv). With plan.splits > 1,
// `work` holds plan.splits * groups * m * n accumulators. Requires m, n, k > 0, ceil(n / bn) <= 65535
// and groups * splits <= 65535.
void launch_conv(ElemType type, const ConvGemm& p, const ConvPlan& plan, const void* a, const void* b, void* c,
                 void* work, void* stream);

}  // namespace dagrad::cuda
