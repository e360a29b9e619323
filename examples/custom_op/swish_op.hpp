// Swish (x * sigmoid(x)) and Sigmoid, two ops added to dagrad from outside the library through
// the public headers only (core/op_library.hpp): schemas, cases, reference and CPU kernels in
// the four floating dtypes, and gradients built from ops.
#pragma once

#include <dagrad/core/graph.hpp>
#include <dagrad/core/op_library.hpp>

namespace swish {

// Fills `library` with the two ops; the program adds it (library.add_to(dagrad::registries())),
// or the module's DAGRAD_OP_LIBRARY does for `dagrad --load-ops`.
void add_ops(dagrad::OpLibrary& library);

// Graph builders, as dagrad::ops has for its own ops.
dagrad::Output swish(dagrad::Graph& g, dagrad::Output x);
dagrad::Output sigmoid(dagrad::Graph& g, dagrad::Output x);

// Swish's gradient, and one that drops a term: the example plants it to show the checks catch it.
dagrad::GradientFn swish_gradient();
dagrad::GradientFn wrong_swish_gradient();

}  // namespace swish
