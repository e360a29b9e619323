// Building blocks shared by gradient functions: undoing broadcasting and reductions while
// keeping as much of the static shape as the graph knows.
#pragma once

#include <optional>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad::autodiff {

using Grads = std::vector<std::optional<Output>>;

// t with like's shape (t must have as many elements at run time): t itself when the static
// shapes already agree, a Reshape to constant dims when like has at most one unknown dim, else
// a Reshape to Shape(like).
Output reshape_like(Graph& g, Output t, Output like);

// Sums `grad` (shaped like a broadcast result) down to the shape of the operand x that was
// broadcast into it. `other` is the other operand of a binary op, when there is one: it settles
// at graph time whether an unknown dim of x was broadcast. When the static shapes cannot settle
// it, the axes come from BroadcastGradientArgs at run time, as in TF.
Output sum_to_like(Graph& g, Output grad, Output x, std::optional<Output> other = std::nullopt);

// t (whose dims are those of like, or 1) broadcast to like's shape.
Output broadcast_like(Graph& g, Output t, Output like);

// The values of a Const input (reduction axes, permutations); throws naming the op otherwise.
std::vector<std::int64_t> const_input_values(const Node& n, int input);

}  // namespace dagrad::autodiff
