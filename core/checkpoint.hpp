// Checkpoints: every variable of a graph saved to / restored from a directory of .npy files
// (variable "conv1/kernel" -> DIR/conv1/kernel.npy).
#pragma once

#include <string>
#include <vector>

#include "dagrad/core/session.hpp"

namespace dagrad {

// The names of the graph's variables (VariableV2 nodes: shared_name, else the node name).
std::vector<std::string> variable_names(const Graph& graph);

// Writes each variable's current value; FailedPrecondition if one is uninitialised.
void save_checkpoint(Session& session, const Graph& graph, const std::string& dir);
// Reads every variable's file and checks dtype and shape against the graph before changing any
// variable: NotFound for a missing file, InvalidArgument for a shape or dtype mismatch.
void restore_checkpoint(Session& session, const Graph& graph, const std::string& dir);

}  // namespace dagrad
