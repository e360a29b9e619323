// The rewrite registry and the validation of fused nodes.
#include "dagrad/core/rewrite.hpp"

#include "dagrad/core/registries.hpp"

namespace dagrad {

void RewriteRegistry::add(std::string name, RewriteFn fn) {
  for (const Entry& e : entries_) {
    if (e.name == name) fail(Code::Internal, "rewrite ", name, " registered twice");
  }
  entries_.push_back({std::move(name), std::move(fn)});
}

RewriteRegistry& rewrite_registry() { return registries().rewrites; }

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
