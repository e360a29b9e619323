// Eager execution: run one op on tensors through the same validation and kernels as a graph.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/attr.hpp"

namespace dagrad {

struct EagerOptions {
  std::string_view name;         // appears in error messages, as tf.raw_ops' name does
  std::string_view backend;      // "" for the fastest kernel, "reference" for the oracle
  std::string_view kernel_path;  // "" for the kernel's own choice; see SessionOptions::kernel_path
};

// Validates attributes and inputs, infers shapes, and runs the op's kernel on the inputs' device.
std::vector<Tensor> run_op(std::string_view op, std::vector<Tensor> inputs, AttrMap attrs = {},
                           EagerOptions options = {});

}  // namespace dagrad
