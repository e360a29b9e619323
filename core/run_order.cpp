// The order in which a session's plan runs its nodes (Session::compile).
#include "dagrad/core/run_order.hpp"

#include <algorithm>

namespace dagrad {

std::vector<int> run_order(const Graph& g, const std::vector<char>& needed, const Rewritten& rewritten,
                           const FeedMap& feeds) {
  std::vector<int> order;
  const auto index_after = [&](int id) -> std::size_t {  // 0 for a node not planned (fed)
    const auto moved = rewritten.moved_to.find(id);      // a moved node runs as its fused node
    if (moved != rewritten.moved_to.end()) id = moved->second;
    const auto it = std::find(order.begin(), order.end(), id);
    return it == order.end() ? 0 : static_cast<std::size_t>(it - order.begin()) + 1;
  };
  int last_early = -1;
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (!needed[static_cast<std::size_t>(id)] || rewritten.absorbed[static_cast<std::size_t>(id)]) continue;
    const auto replacement = rewritten.fused.find(id);
    const Node& n = replacement != rewritten.fused.end() ? replacement->second : g.node(id);
    if (!n.def->start_early) {
      order.push_back(id);
      continue;
    }
    std::size_t at = last_early < 0 ? 0 : index_after(last_early);
    for (const auto& in : n.inputs)
      if (!feeds.count(in)) at = std::max(at, index_after(in.node));
    for (int c : n.control_inputs) at = std::max(at, index_after(c));
    order.insert(order.begin() + static_cast<std::ptrdiff_t>(at), id);
    last_early = id;
  }
  return order;
}

}  // namespace dagrad
