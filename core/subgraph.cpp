// extract_subgraph: one backward sweep marks what the outputs need (node ids are topological, so
// no recursion and no queue), one forward sweep copies it.
#include "dagrad/core/subgraph.hpp"

namespace dagrad {

std::unique_ptr<Graph> extract_subgraph(const Graph& graph, const std::vector<Output>& outputs) {
  std::vector<bool> needed(static_cast<std::size_t>(graph.num_nodes()), false);
  for (const Output& out : outputs) {
    if (out.graph != &graph) invalid_argument("extract_subgraph: an output is not of this graph");
    needed[static_cast<std::size_t>(graph.output(out.node, out.index).node)] = true;
  }
  for (int id = graph.num_nodes() - 1; id >= 0; --id) {
    if (!needed[static_cast<std::size_t>(id)]) continue;
    const Node& node = graph.node(id);
    for (const Output& in : node.inputs) needed[static_cast<std::size_t>(in.node)] = true;
    for (int c : node.control_inputs) needed[static_cast<std::size_t>(c)] = true;
  }
  auto sub = std::make_unique<Graph>();
  std::vector<int> new_id(needed.size(), -1);
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[static_cast<std::size_t>(id)]) continue;
    const Node& node = graph.node(id);
    std::vector<Output> inputs;
    for (const Output& in : node.inputs)
      inputs.push_back(sub->output(new_id[static_cast<std::size_t>(in.node)], in.index));
    std::vector<int> controls;
    for (int c : node.control_inputs) controls.push_back(new_id[static_cast<std::size_t>(c)]);
    new_id[static_cast<std::size_t>(id)] =
        sub->add_node(node.op(), std::move(inputs), node.attrs, node.name, std::move(controls)).id;
  }
  return sub;
}

}  // namespace dagrad
