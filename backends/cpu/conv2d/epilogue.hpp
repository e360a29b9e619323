// _FusedConv2D's BiasAdd (then Relu) as an epilogue the Conv2D kernels that take one apply to each
// run of output pixels they have just written, while it is in cache, instead of a pass over the
// whole output after them. The arithmetic of bias_add_relu (bias_add.hpp): y = x + b, rounded, then
// y < 0 ? 0 : y; so the fused kernel gives the bits of Conv2D, BiasAdd and Relu run one by one.
// bfloat16 kernels that sum in float32 rows apply it there, before they narrow: x is first rounded
// to bfloat16 (Conv2D's result), the bias is the widened bfloat16 one, and the caller's narrowing
// of y is BiasAdd's rounding. Relu before that narrowing gives Relu's bits after it: a nonzero sum
// of two bfloat16 values is at least 2^-133 in magnitude, so it never narrows to a zero of the
// other sign.
#pragma once

#include <cstdint>

#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {

struct ConvEpilogue {
  const float* bias = nullptr;  // one per output channel (NHWC: the innermost axis)
  bool relu = false;
  bool round_to_bfloat16 = false;  // for bfloat16 kernels' float32 rows (above)
};

// The epilogue on `pixels` NHWC pixels of `channels` values at y, on the vector micro-kernel.
// Returns whether every value before it was finite (a kernel whose finite rule recomputes
// non-finite results needs to know: Relu would hide a NaN).
inline bool apply_epilogue(const ConvEpilogue& e, float* y, std::int64_t pixels, std::int64_t channels) {
  return micro_kernels().epilogue(y, e.bias, pixels, channels, e.relu, e.round_to_bfloat16);
}

}  // namespace dagrad::cpu
