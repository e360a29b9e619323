// The part of a graph that some outputs need, copied into a graph of its own: what an inference
// model keeps of a training graph (no gradients, no optimiser, no initialisers).
#pragma once

#include <memory>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad {

// The nodes of `outputs` and, transitively, their inputs and control inputs, added in their order
// to a new graph with the same names and attributes (so every node is revalidated, and "name:i"
// references mean the same outputs in both graphs). InvalidArgument for an output of another graph.
std::unique_ptr<Graph> extract_subgraph(const Graph& graph, const std::vector<Output>& outputs);

}  // namespace dagrad
