// Graph builders for Placeholder, Const, Identity, ZerosLike, OnesLike, Cast and NoOp.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

Output placeholder(Graph& g, DType dtype, Shape shape, std::string_view name = {});
Output constant(Graph& g, Tensor value, std::string_view name = {});
// A scalar constant of the given dtype.
Output scalar(Graph& g, double value, DType dtype, std::string_view name = {});
Output identity(Graph& g, Output x, std::string_view name = {});
Output zeros_like(Graph& g, Output x, std::string_view name = {});
Output ones_like(Graph& g, Output x, std::string_view name = {});
Output cast(Graph& g, Output x, DType dtype, bool truncate = false, std::string_view name = {});
// A node that does nothing once `deps` have run (tf.group).
const Node& group(Graph& g, const std::vector<const Node*>& deps, std::string_view name = {});

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in array_raw_ops.cpp). They run
// through the same validation and kernels as graph nodes, on the inputs' device.
namespace dagrad::raw_ops {

struct ConstAttrs {
  DType dtype = DType::Invalid;  // Invalid: the value's own dtype
  std::string_view name = {};
};
struct CastAttrs {
  DType DstT = DType::Invalid;  // required
  bool Truncate = false;
  std::string_view name = {};
};

Tensor Const(const Tensor& value, const ConstAttrs& attrs = {});
Tensor Identity(const Tensor& input, const NameOnly& attrs = {});
Tensor ZerosLike(const Tensor& x, const NameOnly& attrs = {});
Tensor OnesLike(const Tensor& x, const NameOnly& attrs = {});
Tensor Cast(const Tensor& x, const CastAttrs& attrs);
void NoOp(const NameOnly& attrs = {});

}  // namespace dagrad::raw_ops
