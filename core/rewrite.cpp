// The rewrite registry and the validation of fused nodes.
#include "dagrad/core/rewrite.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "dagrad/core/registries.hpp"

namespace dagrad {

void RewriteRegistry::add(std::string name, RewriteFn fn) {
  for (const Entry& e : entries_) {
    if (e.name == name) fail(Code::Internal, "rewrite ", name, " registered twice");
  }
  entries_.push_back({std::move(name), std::move(fn)});
}

RewriteRegistry& rewrite_registry() { return registries().rewrites; }

namespace {

// The plan as rewrites see it: who reads each output, which nodes have control edges.
class CompileView final : public PlanView {
 public:
  CompileView(const Graph& g, const std::vector<char>& needed, const std::vector<Output>& feeds,
              const std::vector<Output>& fetches, const std::vector<const Node*>& targets, Device device,
              std::string_view backend)
      : graph_(g),
        needed_(needed),
        absorbed_(needed.size(), 0),
        controlled_(needed.size(), 0),
        targeted_(needed.size(), 0),
        first_control_reader_(needed.size(), g.num_nodes()),
        device_(device),
        backend_(backend) {
    for (int id = 0; id < g.num_nodes(); ++id) {
      if (!needed[static_cast<std::size_t>(id)]) continue;
      const Node& n = g.node(id);
      for (const Output& in : n.inputs) {
        if (std::find(feeds.begin(), feeds.end(), in) != feeds.end()) continue;
        auto [it, first] = readers_.try_emplace(in, &n);
        if (!first) it->second = nullptr;  // a second read
      }
      if (!n.control_inputs.empty()) controlled_[static_cast<std::size_t>(id)] = 1;
      for (int c : n.control_inputs) {
        controlled_[static_cast<std::size_t>(c)] = 1;
        int& first = first_control_reader_[static_cast<std::size_t>(c)];
        first = std::min(first, id);
      }
    }
    for (const Node* t : targets)
      controlled_[static_cast<std::size_t>(t->id)] = targeted_[static_cast<std::size_t>(t->id)] = 1;
    for (const auto& out : fetches) readers_[out] = nullptr;
    for (const auto& out : feeds) readers_[out] = nullptr;
  }
  const Graph& graph() const override { return graph_; }
  const Node* sole_reader(const Output& out) const override {
    auto it = readers_.find(out);
    return it == readers_.end() ? nullptr : it->second;
  }
  bool absorbable(const Node& n) const override {
    const auto id = static_cast<std::size_t>(n.id);
    return needed_[id] && !absorbed_[id] && !controlled_[id];
  }
  bool has_kernel(std::string_view op, DType dtype) const override {
    return kernel_registry().find(op, device_.kind, dtype, backend_) != nullptr ||
           (!backend_.empty() && kernel_registry().find(op, device_.kind, dtype) != nullptr);
  }
  bool movable(const Node& n, int to) const override {
    const auto id = static_cast<std::size_t>(n.id);
    if (!needed_[id] || absorbed_[id] || targeted_[id] || first_control_reader_[id] <= to) return false;
    for (int k = 0; k < n.num_outputs(); ++k)
      if (readers_.count(graph_.output(n.id, k))) return false;
    return true;
  }
  bool in_plan(const Node& n) const override {
    return needed_[static_cast<std::size_t>(n.id)] && !absorbed_[static_cast<std::size_t>(n.id)];
  }
  bool is_absorbed(int id) const { return absorbed_[static_cast<std::size_t>(id)]; }
  void absorb(int id) { absorbed_[static_cast<std::size_t>(id)] = 1; }
  std::vector<char> absorbed() && { return std::move(absorbed_); }

 private:
  const Graph& graph_;
  const std::vector<char>& needed_;
  std::vector<char> absorbed_, controlled_, targeted_;
  std::vector<int> first_control_reader_;  // per node: the least id of a node with a control edge from it
  std::map<Output, const Node*> readers_;
  Device device_;
  std::string_view backend_;
};

}  // namespace

Rewritten apply_rewrites(const Graph& g, const std::vector<char>& needed, const std::vector<Output>& feeds,
                         const std::vector<Output>& fetches, const std::vector<const Node*>& targets, Device device,
                         std::string_view backend) {
  CompileView view(g, needed, feeds, fetches, targets, device, backend);
  std::map<int, Node> fused;
  std::map<int, int> moved_to;
  for (int id = g.num_nodes() - 1; id >= 0; --id) {
    if (!needed[static_cast<std::size_t>(id)] || view.is_absorbed(id)) continue;
    const Node& node = g.node(id);
    for (const auto& rewrite : rewrite_registry().entries()) {
      std::optional<Fusion> fusion = rewrite.fn(node, view);
      if (!fusion) continue;
      bool valid = true;
      for (int a : fusion->absorbed) valid = valid && a != id && a >= 0 && a < id && view.absorbable(g.node(a));
      std::set<int> members(fusion->absorbed.begin(), fusion->absorbed.end());
      for (int m : fusion->moved) valid = valid && m >= 0 && m < id && view.movable(g.node(m), id);
      members.insert(fusion->moved.begin(), fusion->moved.end());
      valid = valid && members.size() == fusion->absorbed.size() + fusion->moved.size();  // no node twice
      // A moved node passes no node that runs there outside the fusion, so that no other node sees
      // what it changes in a different order.
      if (valid && !fusion->moved.empty()) {
        for (int between = *std::min_element(fusion->moved.begin(), fusion->moved.end()) + 1; valid && between < id;
             ++between)
          valid = !view.in_plan(g.node(between)) || members.count(between);
      }
      std::optional<Node> replacement = valid ? fused_node(g, *fusion, node) : std::nullopt;
      if (!replacement) continue;
      for (int a : members) view.absorb(a);
      for (int m : fusion->moved) moved_to[m] = id;
      fused.emplace(id, std::move(*replacement));
      break;
    }
  }
  return {std::move(fused), std::move(view).absorbed(), std::move(moved_to)};
}

std::optional<Node> fused_node(const Graph& graph, const Fusion& fusion, const Node& replaced) {
  const OpDef& def = op_registry().get(fusion.op);
  Node node;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<const Tensor*> values;
  for (const Output& in : fusion.inputs) {
    const Node& producer = graph.node(graph.output(in.node, in.index).node);
    dtypes.push_back(in.dtype());
    shapes.push_back(in.shape());
    values.push_back(producer.op() == "Const" ? &get_attr<Tensor>(producer.attrs, "value") : nullptr);
  }
  node.attrs = fusion.attrs;
  try {
    node.output_dtypes = complete_attrs(def, node.attrs, dtypes);
    node.output_shapes = infer_shapes(def, node.attrs, dtypes, shapes, values);
  } catch (const Error&) {
    return std::nullopt;  // the fused op refuses what the chain accepts: the chain runs as built
  }
  if (node.output_dtypes != replaced.output_dtypes || node.output_shapes.size() != replaced.output_shapes.size()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < node.output_shapes.size(); ++i) {
    if (!node.output_shapes[i].is_compatible_with(replaced.output_shapes[i])) return std::nullopt;
  }
  node.output_shapes = replaced.output_shapes;  // the graph's (possibly more precise) shapes
  node.id = replaced.id;
  node.name = replaced.name;
  node.def = &def;
  node.inputs = fusion.inputs;
  return node;
}

}  // namespace dagrad
