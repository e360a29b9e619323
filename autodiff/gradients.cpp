// The gradient builder: TF's SymbolicGradientBuilder (cc/framework/gradients.cc), iteratively.
// 1. Nodes reachable backwards from the ys; 2. from the xs forwards through those, counting per
// node the edges a gradient will arrive along (its pending count); 3. a ready queue: a node whose
// pending count reaches zero sums what arrived (AddN only where more than one gradient arrived),
// calls its gradient function, and sends one gradient along each input edge.
#include "dagrad/autodiff/gradients.hpp"

#include <deque>
#include <optional>

#include "dagrad/core/registries.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/math_ops.hpp"

namespace dagrad {
namespace {

std::string describe(const Output& out) {
  return str_cat("'", out.name(), "' (", dtype_name(out.dtype()), " ", out.shape().to_string(), ")");
}

// Shapes that may still both hold at run time: same rank, and known dims agree.
bool shapes_compatible(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

void check_endpoint(const Graph& g, const Output& out, std::string_view what, std::size_t i) {
  if (out.graph != &g) invalid_argument("gradients: ", what, "[", i, "] is not an output of this graph");
  g.output(out.node, out.index);  // range check
  if (!is_floating(out.dtype())) {
    invalid_argument("gradients: ", what, "[", i, "] ", describe(out),
                     " is not a floating-point tensor; only those have gradients");
  }
}

class Builder {
 public:
  Builder(Graph& g, const std::vector<Output>& ys, const std::vector<Output>& xs, const std::vector<Output>& grad_ys)
      : g_(g), ys_(ys), xs_(xs), grad_ys_(grad_ys), num_nodes_(g.num_nodes()) {}

  std::vector<std::optional<Output>> run() {
    mark_reachable_from_ys();
    count_pending_from_xs();
    for (std::size_t i = 0; i < ys_.size(); ++i) {
      if (!visited_[static_cast<std::size_t>(ys_[i].node)]) continue;  // depends on no x
      backprop(grad_ys_.empty() ? ops::ones_like(g_, ys_[i], "grad_ys") : grad_ys_[i], ys_[i]);
    }
    results_.assign(xs_.size(), std::nullopt);
    while (!ready_.empty()) {
      const int id = ready_.front();
      ready_.pop_front();
      process(g_.node(id));
    }
    return results_;
  }

 private:
  using Grad = std::optional<Output>;

  // Data edges only: control edges order execution but carry no values to differentiate.
  void mark_reachable_from_ys() {
    reachable_.assign(static_cast<std::size_t>(num_nodes_), 0);
    std::vector<int> stack;
    for (const auto& y : ys_) stack.push_back(y.node);
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      if (reachable_[static_cast<std::size_t>(id)]) continue;
      reachable_[static_cast<std::size_t>(id)] = 1;
      for (const auto& in : g_.node(id).inputs) stack.push_back(in.node);
    }
  }

  void count_pending_from_xs() {
    // Consumers of every node, computed once: the graph stores only input edges.
    std::vector<std::vector<int>> consumers(static_cast<std::size_t>(num_nodes_));
    for (int id = 0; id < num_nodes_; ++id) {
      if (!reachable_[static_cast<std::size_t>(id)]) continue;
      for (const auto& in : g_.node(id).inputs) consumers[static_cast<std::size_t>(in.node)].push_back(id);
    }
    visited_.assign(static_cast<std::size_t>(num_nodes_), 0);
    pending_.assign(static_cast<std::size_t>(num_nodes_), 0);
    backprops_.resize(static_cast<std::size_t>(num_nodes_));
    std::deque<int> queue;
    for (const auto& x : xs_) {
      if (!reachable_[static_cast<std::size_t>(x.node)] || visited_[static_cast<std::size_t>(x.node)]) continue;
      visited_[static_cast<std::size_t>(x.node)] = 1;
      queue.push_back(x.node);
    }
    while (!queue.empty()) {
      const int id = queue.front();
      queue.pop_front();
      backprops_[static_cast<std::size_t>(id)].resize(static_cast<std::size_t>(g_.node(id).num_outputs()));
      // One edge per use: Mul(x, x) sends two gradients to x.
      int expected = static_cast<int>(consumers[static_cast<std::size_t>(id)].size());
      for (int dst : consumers[static_cast<std::size_t>(id)]) {
        if (!visited_[static_cast<std::size_t>(dst)]) {
          visited_[static_cast<std::size_t>(dst)] = 1;
          queue.push_back(dst);
        }
      }
      for (const auto& y : ys_) expected += y.node == id;  // the initial gradient of a y
      pending_[static_cast<std::size_t>(id)] = expected;
    }
  }

  // Sends `grad` (none: no gradient) to output `src`; queues src's node once all have arrived.
  void backprop(Grad grad, const Output& src) {
    const auto id = static_cast<std::size_t>(src.node);
    if (!visited_[id]) return;  // no x feeds it: nothing to compute there
    if (grad && is_floating(src.dtype())) backprops_[id][static_cast<std::size_t>(src.index)].push_back(*grad);
    if (--pending_[id] == 0) ready_.push_back(src.node);
  }

  Grad sum_arrived(const Node& n, int index) {
    auto& arrived = backprops_[static_cast<std::size_t>(n.id)][static_cast<std::size_t>(index)];
    if (arrived.empty()) return std::nullopt;
    if (arrived.size() == 1) return arrived.front();
    return ops::add_n(g_, arrived, str_cat(n.name, "_sum"));
  }

  void process(const Node& n) {
    std::vector<Grad> dy(static_cast<std::size_t>(n.num_outputs()));
    bool any = false;
    for (int i = 0; i < n.num_outputs(); ++i) {
      dy[static_cast<std::size_t>(i)] = sum_arrived(n, i);
      any = any || dy[static_cast<std::size_t>(i)].has_value();
      for (std::size_t k = 0; k < xs_.size(); ++k) {
        if (xs_[k].node == n.id && xs_[k].index == i) results_[k] = dy[static_cast<std::size_t>(i)];
      }
    }
    backprops_[static_cast<std::size_t>(n.id)].clear();  // summed: the list is no longer needed
    // Stop where no input is fed, directly or not, by an x: the region ends at the xs.
    bool feeds_from_x = false;
    for (const auto& in : n.inputs) feeds_from_x = feeds_from_x || visited_[static_cast<std::size_t>(in.node)];
    if (!feeds_from_x) return;
    const GradientFn* fn = nullptr;
    if (any) {
      try {
        fn = gradient_registry().find(n.op());
      } catch (const Error& e) {
        throw Error(e.code(), with_node_name(str_cat("gradients: ", e.what()), n.name));
      }
    }
    if (fn == nullptr) {  // nothing arrived, or the op is declared not differentiable
      for (const auto& in : n.inputs) backprop(std::nullopt, in);
      return;
    }
    std::vector<Output> grads;
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Grad& d = dy[static_cast<std::size_t>(i)];
      grads.push_back(d ? *d : ops::zeros_like(g_, g_.output(n.id, i), str_cat(n.name, "_zeros")));
    }
    // TF's names: node n's gradient nodes under "gradients/n_grad/". A node name outside TF's
    // charset (dagrad does not refuse those) leaves them directly under "gradients/".
    const std::string scope = str_cat(n.name, "_grad");
    std::optional<NameScope> per_node;
    if (is_valid_name_scope(scope)) per_node.emplace(g_.name_scope(scope));
    std::vector<Grad> dx = (*fn)(g_, n, grads);
    if (dx.size() != n.inputs.size()) {
      fail(Code::Internal, "gradients: the gradient function of ", n.op(), " returned ", dx.size(), " gradients for ",
           n.inputs.size(), " inputs (node '", n.name, "')");
    }
    for (std::size_t k = 0; k < dx.size(); ++k) {
      const Output& in = n.inputs[k];
      if (dx[k] && is_floating(in.dtype())) check_gradient(n, k, *dx[k]);
      backprop(dx[k], in);
    }
  }

  void check_gradient(const Node& n, std::size_t k, const Output& dx) const {
    const Output& in = n.inputs[k];
    if (dx.graph != &g_ || dx.dtype() != in.dtype() || !shapes_compatible(dx.shape(), in.shape())) {
      fail(Code::Internal, "gradients: the gradient function of ", n.op(), " returned ",
           dx.graph == &g_ ? describe(dx) : std::string("an output of another graph"), " for input ", k, " ",
           describe(in), " (node '", n.name, "')");
    }
  }

  Graph& g_;
  const std::vector<Output>& ys_;
  const std::vector<Output>& xs_;
  const std::vector<Output>& grad_ys_;
  const int num_nodes_;  // nodes added from here on are gradient nodes, never walked
  std::vector<char> reachable_, visited_;
  std::vector<int> pending_;
  std::vector<std::vector<std::vector<Output>>> backprops_;  // node -> output -> arrived gradients
  std::deque<int> ready_;
  std::vector<std::optional<Output>> results_;
};

}  // namespace

std::vector<Output> gradients(Graph& graph, const std::vector<Output>& ys, const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys, GradientOptions options) {
  for (std::size_t i = 0; i < ys.size(); ++i) check_endpoint(graph, ys[i], "ys", i);
  for (std::size_t i = 0; i < xs.size(); ++i) check_endpoint(graph, xs[i], "xs", i);
  if (!grad_ys.empty()) {
    if (grad_ys.size() != ys.size()) {
      invalid_argument("gradients: ", grad_ys.size(), " grad_ys given for ", ys.size(), " ys");
    }
    for (std::size_t i = 0; i < ys.size(); ++i) {
      if (grad_ys[i].graph != &graph) invalid_argument("gradients: grad_ys[", i, "] is not an output of this graph");
      if (grad_ys[i].dtype() != ys[i].dtype() || !shapes_compatible(grad_ys[i].shape(), ys[i].shape())) {
        invalid_argument("gradients: grad_ys[", i, "] ", describe(grad_ys[i]), " does not match ys[", i, "] ",
                         describe(ys[i]));
      }
    }
  }
  // Every node added here is under "gradients/" (in the enclosing scope, as with tf.gradients).
  auto scope = graph.name_scope("gradients");
  const auto found = Builder(graph, ys, xs, grad_ys).run();
  std::vector<Output> result;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (found[i]) {
      result.push_back(*found[i]);
    } else if (options.unconnected == UnconnectedGradients::Zero) {
      result.push_back(ops::zeros_like(graph, xs[i], "unconnected"));
    } else if (options.unconnected == UnconnectedGradients::None) {
      result.emplace_back();
    } else {
      invalid_argument("gradients: xs[", i, "] ", describe(xs[i]),
                       " is not connected to the ys: no y depends on it through differentiable ops. Pass "
                       "GradientOptions{.unconnected = UnconnectedGradients::Zero} for zeros instead");
    }
  }
  return result;
}

}  // namespace dagrad
