// Graph builders for ArgMax and Equal (not differentiable; used for accuracy).
#pragma once

#include <string_view>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

// Index of the largest value along `axis` (the first one on ties); output int64 unless asked.
Output arg_max(Graph& g, Output input, std::int64_t axis, DType output_type = DType::Int64, std::string_view name = {});
// x == y element-wise with broadcasting, as bool.
Output equal(Graph& g, Output x, Output y, std::string_view name = {});

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in compare_raw_ops.cpp).
namespace dagrad::raw_ops {

struct ArgMaxAttrs {
  DType output_type = DType::Int64;
  std::string_view name = {};
};
struct EqualAttrs {
  bool incompatible_shape_error = true;
  std::string_view name = {};
};

// `dimension` is an int32 or int64 scalar.
Tensor ArgMax(const Tensor& input, const Tensor& dimension, const ArgMaxAttrs& attrs = {});
Tensor Equal(const Tensor& x, const Tensor& y, const EqualAttrs& attrs = {});

}  // namespace dagrad::raw_ops
