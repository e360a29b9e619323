// Graph builders for Add, AddV2, Sub, Mul, Neg, AddN, Sum and Mean.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad::ops {

Output add(Graph& g, Output x, Output y, std::string_view name = {});
Output sub(Graph& g, Output x, Output y, std::string_view name = {});
Output mul(Graph& g, Output x, Output y, std::string_view name = {});
Output neg(Graph& g, Output x, std::string_view name = {});
Output add_n(Graph& g, std::vector<Output> inputs, std::string_view name = {});
// Reduces over `axes` (negative counts from the end); an empty list reduces nothing.
Output sum(Graph& g, Output x, std::vector<std::int64_t> axes, bool keep_dims = false, std::string_view name = {});
Output mean(Graph& g, Output x, std::vector<std::int64_t> axes, bool keep_dims = false, std::string_view name = {});
// Sum over every axis, to a scalar.
Output reduce_sum_all(Graph& g, Output x, std::string_view name = {});

}  // namespace dagrad::ops
