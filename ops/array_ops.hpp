// Graph builders for Placeholder, Const, Identity, ZerosLike, OnesLike, Cast and NoOp.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

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
