// Graph builders and shared rules for Shape, Reshape, BroadcastTo and BroadcastGradientArgs.
#pragma once

#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

// The shape of x as a 1-D tensor of out_type (int32 or int64), always a Shape node.
Output shape(Graph& g, Output x, DType out_type = DType::Int32, std::string_view name = {});
// The shape of x as an int64 Const when it is fully known at graph time, else a Shape node.
// Gradient code uses it so that later shape functions see the dims.
Output shape_tensor(Graph& g, Output x, std::string_view name = {});
// TF's Reshape: `shape` holds the new dims; one of them may be -1 (inferred from the size).
Output reshape(Graph& g, Output x, Output shape, std::string_view name = {});
Output reshape(Graph& g, Output x, std::vector<std::int64_t> dims, std::string_view name = {});
// A braced list of dims ({0, -1}) would also fit Output's aggregate initialisation; this overload
// makes it unambiguous.
Output reshape(Graph& g, Output x, std::initializer_list<std::int64_t> dims, std::string_view name = {});
// TF's BroadcastTo: numpy broadcasting of x to `shape`.
Output broadcast_to(Graph& g, Output x, Output shape, std::string_view name = {});
Output broadcast_to(Graph& g, Output x, std::vector<std::int64_t> dims, std::string_view name = {});
Output broadcast_to(Graph& g, Output x, std::initializer_list<std::int64_t> dims, std::string_view name = {});
// TF's BroadcastGradientArgs: the axes each operand's gradient is summed over.
std::pair<Output, Output> broadcast_gradient_args(Graph& g, Output s0, Output s1, std::string_view name = {});

// The reduction axes of BroadcastGradientArgs for two concrete shapes (TF's BCast without the
// fewer-dims optimisation): axis i of the broadcast result is listed for an operand whose
// (1-padded) dim is 1, including when both are 1. Throws "Incompatible shapes: [..] vs. [..]".
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> broadcast_reduction_axes(
    const std::vector<std::int64_t>& s0, const std::vector<std::int64_t>& s1);

// Reshape's target: validates `dims` (at most one -1, no other negative value) and resolves the
// -1 against `num_elements`, with TF's messages. `num_elements` < 0: the input size is unknown,
// and the -1 stays -1.
Shape resolve_reshape(const std::vector<std::int64_t>& dims, std::int64_t num_elements);

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in shape_raw_ops.cpp). The shape-like
// inputs (shape, s0, s1) are int32 or int64 vectors.
namespace dagrad::raw_ops {

struct ShapeAttrs {
  DType out_type = DType::Int32;
  std::string_view name = {};
};
struct BroadcastGradientArgsResult {  // tf.raw_ops' (r0, r1)
  Tensor r0, r1;
};

Tensor Shape(const Tensor& input, const ShapeAttrs& attrs = {});
Tensor Reshape(const Tensor& tensor, const Tensor& shape, const NameOnly& attrs = {});
Tensor BroadcastTo(const Tensor& input, const Tensor& shape, const NameOnly& attrs = {});
BroadcastGradientArgsResult BroadcastGradientArgs(const Tensor& s0, const Tensor& s1, const NameOnly& attrs = {});

}  // namespace dagrad::raw_ops
