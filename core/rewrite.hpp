// Graph rewrites: fusions a session applies when it compiles a plan (SessionOptions::rewrite).
// A rewrite looks at one node of the plan and may replace it, together with nodes that feed only
// it, by one node of a fused op that gives the node's outputs with the same bits. The graph itself
// never changes: the plan runs the fused node in the place of the node it replaces (its outputs
// keep that node's id, so every reader finds them), and the absorbed nodes do not run. A fusion
// may also run the work of earlier nodes whose outputs nobody reads (one Adam pass for several
// ApplyAdam nodes): they move to the fused node's place, past no node outside the fusion. Rewrites
// are registered like ops (the ops layer registers its fusions) and name ops, which core does not.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad {

struct Fusion {
  std::string op;              // the fused op
  std::vector<Output> inputs;  // outputs of the session's graph
  AttrMap attrs;               // completed with the fused op's defaults
  std::vector<int> absorbed;   // nodes that no longer run: their outputs are read only within the fusion
  std::vector<int> moved;      // nodes whose work the fused node does in their stead (PlanView::movable)
};

// What a rewrite may ask about the plan it rewrites.
class PlanView {
 public:
  virtual ~PlanView() = default;
  virtual const Graph& graph() const = 0;
  // The one node of the plan that reads `out`, when exactly one does, once, and `out` is neither
  // fetched nor fed; else null.
  virtual const Node* sole_reader(const Output& out) const = 0;
  // Whether the node runs in the plan as it stands: needed, and not absorbed by a fusion.
  virtual bool in_plan(const Node& node) const = 0;
  // Whether the node may be absorbed: in the plan, not yet absorbed, no control edges to or from it.
  virtual bool absorbable(const Node& node) const = 0;
  // Whether the session's device (and backend, if it names one) has a kernel for op in dtype.
  virtual bool has_kernel(std::string_view op, DType dtype) const = 0;
  // Whether the node's work may run later, at the place of node `to` (of a larger id), unseen: it
  // is in the plan, not absorbed, not a target, nothing reads, fetches or feeds its outputs, and
  // every node its control edges lead to comes after `to`. (apply_rewrites also checks that it
  // moves past no node outside the fusion.)
  virtual bool movable(const Node& node, int to) const = 0;
};

using RewriteFn = std::function<std::optional<Fusion>(const Node& node, const PlanView& plan)>;

class RewriteRegistry {
 public:
  struct Entry {
    std::string name;
    RewriteFn fn;
  };
  void add(std::string name, RewriteFn fn);
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

RewriteRegistry& rewrite_registry();

// A node of op `fusion.op` with the fusion's inputs, validated and shape-inferred as Graph::add_node
// does, that stands in for `replaced`: its id and name. Null when its outputs' dtypes or shapes
// would differ from the replaced node's (the rewrite does not apply).
std::optional<Node> fused_node(const Graph& graph, const Fusion& fusion, const Node& replaced);

// A session's compile step: the registered rewrites applied to the plan's `needed` nodes, from the
// last back (a rewrite sees its node's readers before they are fused themselves, and the longest
// chain ending at a node wins). `feeds` and `fetches` are the plan's; fused nodes are keyed by the
// id they replace, `absorbed` marks (per node id) the nodes that no longer run (absorbed or moved),
// `moved_to` maps each moved node to the fused node that runs its work.
struct Rewritten {
  std::map<int, Node> fused;
  std::vector<char> absorbed;
  std::map<int, int> moved_to;
};
Rewritten apply_rewrites(const Graph& graph, const std::vector<char>& needed, const std::vector<Output>& feeds,
                         const std::vector<Output>& fetches, const std::vector<const Node*>& targets, Device device,
                         std::string_view backend);

}  // namespace dagrad
