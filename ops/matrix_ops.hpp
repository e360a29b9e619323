// Graph builders for MatMul and Transpose.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

// a (or a^T) times b (or b^T); both rank 2.
Output mat_mul(Graph& g, Output a, Output b, bool transpose_a = false, bool transpose_b = false,
               std::string_view name = {});
// Permutes the axes: output dim i is input dim perm[i].
Output transpose(Graph& g, Output x, std::vector<std::int64_t> perm, std::string_view name = {});
Output transpose(Graph& g, Output x, Output perm, std::string_view name = {});

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in matrix_raw_ops.cpp).
namespace dagrad::raw_ops {

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
  std::string_view name = {};
};

Tensor MatMul(const Tensor& a, const Tensor& b, const MatMulAttrs& attrs = {});
// `perm` is an int32 or int64 vector.
Tensor Transpose(const Tensor& x, const Tensor& perm, const NameOnly& attrs = {});

}  // namespace dagrad::raw_ops
