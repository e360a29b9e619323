// Saved graphs: a Graph as versioned JSON text and back (the format: core/GRAPH_FORMAT.md).
// Loading rebuilds every node through Graph::add_node, so a file can only make nodes the API
// could: each is revalidated by its op's schema and shape function.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "dagrad/core/graph.hpp"

namespace dagrad {

inline constexpr const char* kGraphFormatName = "dagrad graph";
inline constexpr int kGraphFormatVersion = 1;

// Per-node device requests, by node id: "cpu" or "cuda:N" as Device::to_string writes them. A
// node without one runs where its session runs; sessions today run every node on their own
// device, so the requests are kept through a save and load for the caller, not acted on.
using NodeDevices = std::map<int, std::string>;

// The graph as JSON text: every node in order with its op, complete attributes (typed, floats
// and tensors bit for bit), inputs, control inputs, device and inferred outputs.
// InvalidArgument for a device that is not a device name or names no node of the graph.
std::string graph_to_json(const Graph& graph, const NodeDevices& devices = {});
// Writes graph_to_json to `path` whole (core/file_io.hpp): the old file or the new, never a part.
void save_graph(const Graph& graph, const std::string& path, const NodeDevices& devices = {});

struct LoadedGraph {
  std::unique_ptr<Graph> graph;
  NodeDevices devices;
};

// Parses JSON text written by graph_to_json (or by hand, to the same format). Every problem is
// an Error naming `source` and the node, attribute or field: malformed JSON, a wrong type, an
// unknown or newer format version, an unknown op, a duplicate name, an input naming no earlier
// node, a tensor whose data is not its shape's bytes, and whatever the op's schema refuses.
LoadedGraph graph_from_json(std::string_view text, const std::string& source);
// Reads `path` (at most kMaxGraphFileBytes) and parses it.
LoadedGraph load_graph(const std::string& path);

// One attribute value as the format writes it ({"KIND": value}) and back; what nodes use, exposed
// for tests and the fuzzer (no registered op has float attributes to carry them through a graph).
std::string attr_to_json_text(const AttrValue& value);
AttrValue attr_from_json_text(std::string_view text, const std::string& source);

inline constexpr std::size_t kMaxGraphFileBytes = std::size_t{2} << 30;

// The output a reference names: "node:index", or "node" for its output 0. NotFound naming
// `what` when no node has that name, OutOfRange for an index the node lacks.
Output find_output(const Graph& graph, std::string_view reference, std::string_view what);

}  // namespace dagrad
