// Graph: an append-only list of op nodes. Adding a node validates it and infers its outputs.
#pragma once

#include <compare>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/op_registry.hpp"

namespace dagrad {

class Graph;
struct Node;

// One output of one node: the edge type of the graph API.
struct Output {
  const Graph* graph = nullptr;
  int node = -1;
  int index = 0;

  const Node& op() const;
  DType dtype() const;
  const Shape& shape() const;
  std::string name() const;  // "node_name:index"
  bool valid() const { return graph != nullptr && node >= 0; }
  friend auto operator<=>(const Output&, const Output&) = default;
};

struct Node {
  int id = -1;
  std::string name;
  const OpDef* def = nullptr;
  AttrMap attrs;  // complete: every schema attribute is present
  std::vector<Output> inputs;
  std::vector<int> control_inputs;  // nodes that must run first
  std::vector<DType> output_dtypes;
  std::vector<Shape> output_shapes;

  const std::string& op() const { return def->name; }
  int num_outputs() const { return static_cast<int>(output_dtypes.size()); }
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;  // Outputs point at their graph
  Graph& operator=(const Graph&) = delete;

  // Validates attributes and inputs against the op's schema, infers output dtypes and shapes,
  // and appends the node. `name` is made unique ("x", "x_1", ...); empty means the op's name.
  const Node& add_node(std::string_view op, std::vector<Output> inputs, AttrMap attrs = {}, std::string_view name = {},
                       std::vector<int> control_inputs = {});

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const;
  const Node* find(std::string_view name) const;
  Output output(int node, int index = 0) const;

 private:
  std::string unique_name(std::string_view base);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, int, std::less<>> by_name_;
  // The next suffix to try per base name: names are never removed, so every smaller suffix is
  // taken, and a graph of n same-named nodes is built in O(n log n), not O(n^2).
  std::map<std::string, int, std::less<>> next_suffix_;
};

// Appends " (node 'name')" to an error message; messages themselves start with the op's name.
std::string with_node_name(std::string_view message, std::string_view name);

}  // namespace dagrad
