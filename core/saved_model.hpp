// Saved models: a directory holding a graph (core/GRAPH_FORMAT.md), its variables as a
// checkpoint (core/CHECKPOINT.md) and a signature naming the inputs to feed and the outputs to
// fetch, so that a trained model runs without the code that built it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "dagrad/core/checkpoint.hpp"
#include "dagrad/core/graph_format.hpp"
#include "dagrad/core/session.hpp"

namespace dagrad {

inline constexpr const char* kModelFormatName = "dagrad model";
inline constexpr int kModelFormatVersion = 1;
inline constexpr const char* kModelManifestFile = "model.json";
inline constexpr const char* kModelGraphFile = "graph.json";
inline constexpr const char* kModelVariablesDir = "variables";

// Signature names to outputs as "node:index": `inputs` must be Placeholder outputs (what a caller
// feeds), `outputs` are what a run fetches when the caller names none.
struct Signature {
  std::map<std::string, std::string> inputs;
  std::map<std::string, std::string> outputs;
};

struct Model {
  std::unique_ptr<Graph> graph;
  NodeDevices devices;
  Signature signature;
  // Runs the graph, every variable restored from the model's checkpoint. Declared after `graph`,
  // which it refers to, so that it is destroyed first.
  std::unique_ptr<Session> session;
  CheckpointInfo info;  // the checkpoint's step and metadata

  // A signature name, else a reference "node:index" or "node" (find_output). NotFound otherwise.
  Output input(std::string_view name) const;
  Output output(std::string_view name) const;
};

// Writes DIR/model.json (format, version, signature), DIR/graph.json and DIR/variables/ (every
// variable's value in `session`), the whole directory at once like save_checkpoint: DIR holds
// the old model or the new, and an existing DIR that is not a model is never replaced.
// InvalidArgument for a signature entry naming no output or an input that is not a Placeholder.
void save_model(const std::string& dir, const Graph& graph, Session& session, const Signature& signature,
                const NodeDevices& devices = {}, const CheckpointInfo& info = {});

// Reads a model saved by save_model: the graph is rebuilt and revalidated node by node, the
// signature checked against it, and a session made with `options` with every variable restored.
// Each problem is an Error naming the file and the field.
Model load_model(const std::string& dir, const SessionOptions& options = {});

// The signature as model.json holds it, and back (exposed for the fuzzer and tests).
std::string model_manifest_to_json(const Signature& signature);
Signature parse_model_manifest(std::string_view text, const std::string& source);
// Checks each signature entry against the graph (see save_model); `source` names the file.
void check_signature(const Graph& graph, const Signature& signature, const std::string& source);

}  // namespace dagrad
