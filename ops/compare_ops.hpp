// Graph builders for ArgMax and Equal (not differentiable; used for accuracy).
#pragma once

#include <string_view>

#include "dagrad/core/graph.hpp"

namespace dagrad::ops {

// Index of the largest value along `axis` (the first one on ties); output int64 unless asked.
Output arg_max(Graph& g, Output input, std::int64_t axis, DType output_type = DType::Int64, std::string_view name = {});
// x == y element-wise with broadcasting, as bool.
Output equal(Graph& g, Output x, Output y, std::string_view name = {});

}  // namespace dagrad::ops
