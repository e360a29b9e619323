// The TF32 opt-in of the CUDA backend. float32 MatMul and cuDNN convolutions run on CUDA cores
// (full float32 products) unless the user sets DAGRAD_ALLOW_TF32=1 in the environment, which lets
// them use TF32 tensor cores (10-bit mantissa products, float32 sums), as TF's
// tf.config.experimental.enable_tensor_float_32_execution(True) does. Read once per process.
#pragma once

#include <cstdlib>
#include <cstring>

namespace dagrad::cuda {

inline bool tf32_allowed() {
  static const bool allowed = [] {
    const char* value = std::getenv("DAGRAD_ALLOW_TF32");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return allowed;
}

}  // namespace dagrad::cuda
