// Checkpoints: every variable of a graph saved to / restored from a directory holding one .npy
// file per variable (variable "conv1/kernel" -> DIR/conv1/kernel.npy) and manifest.json
// (format version, each variable's dtype, shape, file, size and crc32, the step, metadata).
// The format is described in core/CHECKPOINT.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dagrad/core/session.hpp"

namespace dagrad {

// What a checkpoint records besides the variables: the training step and the caller's
// key/value pairs (e.g. the epoch and the position in it).
struct CheckpointInfo {
  std::int64_t step = 0;
  std::map<std::string, std::string> metadata;
};

// The names of the graph's variables (VariableV2 nodes: shared_name, else the node name).
std::vector<std::string> variable_names(const Graph& graph);

// Writes every variable's current value and `info`. The checkpoint is written whole into a
// temporary directory beside `dir` (DIR.tmp-PID-N) and then swapped with `dir` atomically, so
// `dir` always holds a complete checkpoint: the previous one until the new one is in place.
// FailedPrecondition if a variable is uninitialised; InvalidArgument if `dir` exists and is not
// a checkpoint (it is never replaced then); any write failure throws and leaves `dir` as it was.
void save_checkpoint(Session& session, const Graph& graph, const std::string& dir, const CheckpointInfo& info = {});

// Reads the manifest and every variable's file and checks them against the manifest (size,
// crc32, dtype, shape) and the graph (every variable present, same dtype, compatible shape)
// before changing any variable. Each problem throws naming the file, the variable and what was
// expected and found: NotFound for a missing directory, manifest, file or variable,
// InvalidArgument for the rest. Returns the step and metadata saved with the checkpoint.
CheckpointInfo restore_checkpoint(Session& session, const Graph& graph, const std::string& dir);

}  // namespace dagrad
