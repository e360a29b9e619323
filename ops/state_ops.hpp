// Graph builders for variables: VariableV2 and Assign.
#pragma once

#include <string_view>

#include "dagrad/core/graph.hpp"

namespace dagrad::ops {

// A variable held by the session, named by the node (or `shared_name`).
Output variable(Graph& g, Shape shape, DType dtype, std::string_view name = {});
// Sets the variable behind `ref` to a copy of `value`; outputs the new value.
Output assign(Graph& g, Output ref, Output value, bool validate_shape = true, std::string_view name = {});

}  // namespace dagrad::ops
