// Launcher of the implicit-GEMM conv kernels (conv2d.cu), callable from host-compiled code.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/conv_index.hpp"
#include "dagrad/backends/cuda/launch.hpp"

namespace dagrad::cuda {

// The block tile used for `type` (tensor-core tile for half/bfloat16).
TileShape conv_tile(ElemType type);
// Bytes per element of the split-K partials (float, or double for float64).
std::int64_t conv_accumulator_bytes(ElemType type);
// C = A * B per group. With splits > 1, `work` holds splits * groups * m * n accumulators.
// Requires m, n, k > 0, ceil(n / bn) <= 65535 and groups * splits <= 65535.
void launch_conv(ElemType type, const ConvGemm& p, const void* a, const void* b, void* c, void* work, int splits,
                 void* stream);

}  // namespace dagrad::cuda
