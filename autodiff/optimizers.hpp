// Optimisers as graph ops: minimize() builds the gradient graph of a loss and one in-place
// update per trainable variable (ApplyGradientDescent / ApplyMomentum / ApplyAdam, TF's rules),
// so one Session::run of the returned node performs a whole training step.
#pragma once

#include <optional>
#include <string>

#include "dagrad/autodiff/data_parallel.hpp"
#include "dagrad/core/graph.hpp"
#include "dagrad/ops/layers.hpp"

namespace dagrad {

struct OptimizerOptions {
  std::string name = "adam";  // "sgd", "momentum", "nesterov" or "adam"
  double learning_rate = 0.001;
  double momentum = 0.9;  // momentum and nesterov
  double beta1 = 0.9;     // adam
  double beta2 = 0.999;
  double epsilon = 1e-7;  // Keras' default
  // Set: data-parallel training (see DataParallel); the gradients come from its shard losses.
  std::optional<DataParallel> data_parallel;
};

// Adds the gradients of `loss` (a scalar) for every trainable variable of `vars`, the slot
// variables the optimiser needs (TF's names: VAR/Momentum, VAR/Adam, VAR/Adam_1, beta1_power,
// beta2_power; added to `vars` with their initial values), and the updates. The updates wait
// for every gradient, so no variable changes before all gradients have read it. Returns the
// step: a NoOp grouping the updates. Throws InvalidArgument for an unknown optimiser name.
// With `data_parallel`, `loss` is only what the caller reports (e.g. the mean of the shard
// losses): each shard loss is differentiated on its own, one CollectiveReduceShards per pack of
// variables (DataParallel::bytes_per_pack; all in one by default) merges the shards of every
// process (packs one after another, in the variables' order, so all processes issue the
// collectives alike), and the updates apply the merged gradients.
const Node& minimize(Graph& g, Output loss, layers::VariableSet& vars, const OptimizerOptions& options);

}  // namespace dagrad
