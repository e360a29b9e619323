// _FusedConv2D's BiasAdd (then Relu) as an epilogue the Conv2D kernels that take one apply to each
// run of output pixels they have just written, while it is in cache, instead of a pass over the
// whole output after them. The arithmetic of bias_add_relu (bias_add.hpp): y = x + b, rounded, then
// y < 0 ? 0 : y; so the fused kernel gives the bits of Conv2D, BiasAdd and Relu run one by one.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

struct ConvEpilogue {
  const float* bias = nullptr;  // one per output channel (NHWC: the innermost axis)
  bool relu = false;
};

// The epilogue on `pixels` NHWC pixels of `channels` values at y. Returns whether every value
// before it was finite (a kernel whose finite rule recomputes non-finite results needs to know:
// Relu would hide a NaN).
inline bool apply_epilogue(const ConvEpilogue& e, float* y, std::int64_t pixels, std::int64_t channels) {
  bool finite = true;
  for (std::int64_t p = 0; p < pixels; ++p, y += channels)
    for (std::int64_t k = 0; k < channels; ++k) {
      const float v = y[k];
      finite &= v - v == 0.0f;  // false for Inf and NaN
      const float s = v + e.bias[k];
      y[k] = e.relu && s < 0.0f ? 0.0f : s;
    }
  return finite;
}

}  // namespace dagrad::cpu
