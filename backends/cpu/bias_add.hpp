// BiasAdd's element loop, optionally followed by Relu's on each chunk while it is in cache: the
// BiasAdd kernel and the epilogue of _FusedConv2D (conv2d/register.cpp) share it, so the fused op
// gives the bits of BiasAdd then Relu.
#pragma once

#include <cstdint>

#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::cpu {

// y = x + bias along the channel axis of `split` (then Relu where `relu`) over `total` elements,
// in parallel; y may be x. T: half, bfloat16, float or double.
template <class T>
void bias_add_relu(const T* x, const T* bias, T* y, const ops::ChannelSplit& split, std::int64_t total, bool relu);

}  // namespace dagrad::cpu
