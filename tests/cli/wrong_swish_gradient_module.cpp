// A test op library that replaces examples/custom_op's Swish gradient with a wrong one (it
// forgets the x s (1 - s) term): `dagrad check` must catch it. Loaded without the Swish library
// first, its registration fails (no op Swish), which the CLI must report naming the file.
#include <dagrad/core/op_library.hpp>
#include <dagrad/ops/math_ops.hpp>

namespace {

void plant_wrong_swish_gradient(dagrad::OpLibrary& library) {
  library.replace_gradient("Swish",
                           [](dagrad::Graph& g, const dagrad::Node& n,
                              const std::vector<dagrad::Output>& dy) -> std::vector<std::optional<dagrad::Output>> {
                             return {dagrad::ops::mul(g, dy[0], g.output(g.add_node("Sigmoid", {n.inputs[0]}).id))};
                           });
}

}  // namespace

DAGRAD_OP_LIBRARY(plant_wrong_swish_gradient)
