// dagrad::gradients: symbolic gradients built as new graph nodes, as tf.gradients builds them.
#pragma once

#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad {

// What an x that no y depends on (or that is reached only through ops without a gradient) gets:
// an error, zeros of its shape, or an empty Output (valid() is false), like TF's "none".
enum class UnconnectedGradients { Error, Zero, None };

struct GradientOptions {
  UnconnectedGradients unconnected = UnconnectedGradients::Error;
};

// Adds nodes computing d(sum of ys)/d(x) for each x and returns one Output per x, with x's dtype
// and shape. `grad_ys` (one per y, or empty for ones) are the gradients flowing into the ys, so
// the result is the vector-Jacobian product sum_i grad_ys[i] * dys[i]/dx. Only nodes on a path
// from some x to some y get gradient nodes; gradients flowing into one output along several
// edges are summed with one AddN. Iterative: graphs of any depth work.
std::vector<Output> gradients(Graph& graph, const std::vector<Output>& ys, const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys = {}, GradientOptions options = {});

}  // namespace dagrad
