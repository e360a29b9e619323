// Graph builders for Add, AddV2, Sub, Mul, Neg, Reciprocal, AddN, Sum and Mean.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

Output add(Graph& g, Output x, Output y, std::string_view name = {});
Output sub(Graph& g, Output x, Output y, std::string_view name = {});
Output mul(Graph& g, Output x, Output y, std::string_view name = {});
Output neg(Graph& g, Output x, std::string_view name = {});
Output reciprocal(Graph& g, Output x, std::string_view name = {});
Output add_n(Graph& g, std::vector<Output> inputs, std::string_view name = {});
// Reduces over `axes` (negative counts from the end); an empty list reduces nothing.
Output sum(Graph& g, Output x, std::vector<std::int64_t> axes, bool keep_dims = false, std::string_view name = {});
Output mean(Graph& g, Output x, std::vector<std::int64_t> axes, bool keep_dims = false, std::string_view name = {});
// Sum over every axis, to a scalar.
Output reduce_sum_all(Graph& g, Output x, std::string_view name = {});

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in math_raw_ops.cpp).
namespace dagrad::raw_ops {

struct ReductionAttrs {  // Sum, Mean
  bool keep_dims = false;
  std::string_view name = {};
};

Tensor Add(const Tensor& x, const Tensor& y, const NameOnly& attrs = {});
Tensor AddV2(const Tensor& x, const Tensor& y, const NameOnly& attrs = {});
Tensor Sub(const Tensor& x, const Tensor& y, const NameOnly& attrs = {});
Tensor Mul(const Tensor& x, const Tensor& y, const NameOnly& attrs = {});
Tensor Neg(const Tensor& x, const NameOnly& attrs = {});
Tensor Reciprocal(const Tensor& x, const NameOnly& attrs = {});
Tensor AddN(const std::vector<Tensor>& inputs, const NameOnly& attrs = {});
// `axis` is an int32 or int64 scalar or vector, as in TF.
Tensor Sum(const Tensor& input, const Tensor& axis, const ReductionAttrs& attrs = {});
Tensor Mean(const Tensor& input, const Tensor& axis, const ReductionAttrs& attrs = {});

}  // namespace dagrad::raw_ops
