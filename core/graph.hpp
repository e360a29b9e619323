// Graph: an append-only list of op nodes. Adding a node validates it and infers its outputs.
#pragma once

#include <compare>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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

class NameScope;

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;  // Outputs point at their graph
  Graph& operator=(const Graph&) = delete;

  // Validates attributes and inputs against the op's schema, infers output dtypes and shapes,
  // and appends the node. `name` (empty: the op's name) goes under the open name scopes and is
  // then made unique ("x", "x_1", ...).
  const Node& add_node(std::string_view op, std::vector<Output> inputs, AttrMap attrs = {}, std::string_view name = {},
                       std::vector<int> control_inputs = {});

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const;
  const Node* find(std::string_view name) const;
  Output output(int node, int index = 0) const;

  // TF's name scopes: while the returned object lives, the nodes added get the name
  // "scope/name"; scopes nest ("outer/inner/name"). A scope may be entered again (its nodes then
  // share it, unique by suffix, unlike TF Python's "scope_1"); `scope` may hold '/' for several
  // levels at once. Throws InvalidArgument naming `scope` unless each '/'-separated part is a TF
  // node name ([A-Za-z0-9.][A-Za-z0-9_.-]*). Close scopes in the reverse order of opening them.
  [[nodiscard]] NameScope name_scope(std::string_view scope);
  // No scope while it lives (TF's name_scope(None)): for names built from other nodes' full
  // names, such as a variable's slots ("conv1/kernel/Adam").
  [[nodiscard]] NameScope root_name_scope();
  // The open scopes as a prefix: "" or "outer/inner/".
  const std::string& name_scope_prefix() const { return scope_prefix_; }
  // What add_node makes of `name` before uniquing it: the scope prefix, then `name` (or `op`).
  std::string scoped_name(std::string_view name) const;

 private:
  friend class NameScope;
  std::string unique_name(std::string_view base);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, int, std::less<>> by_name_;
  // The next suffix to try per base name: names are never removed, so every smaller suffix is
  // taken, and a graph of n same-named nodes is built in O(n log n), not O(n^2).
  std::map<std::string, int, std::less<>> next_suffix_;
  std::string scope_prefix_;  // "" or "outer/inner/"
};

// An open name scope of a graph (Graph::name_scope); closing it restores the enclosing scope.
class NameScope {
 public:
  NameScope(NameScope&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), enclosing_(std::move(other.enclosing_)) {}
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  NameScope& operator=(NameScope&&) = delete;
  ~NameScope() {
    if (graph_ != nullptr) graph_->scope_prefix_ = std::move(enclosing_);
  }

 private:
  friend class Graph;
  NameScope(Graph& graph, std::string enclosing) : graph_(&graph), enclosing_(std::move(enclosing)) {}
  Graph* graph_;
  std::string enclosing_;
};

// Whether `scope` can name a scope: '/'-separated TF node names, none empty.
bool is_valid_name_scope(std::string_view scope);

// Appends " (node 'name')" to an error message; messages themselves start with the op's name.
std::string with_node_name(std::string_view message, std::string_view name);

}  // namespace dagrad
