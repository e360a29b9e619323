// The gradient checker's engine: builds the checked function twice (in the checked dtype with its
// gradient graph, and in float64 for finite differences), runs both, and compares per input.
#include "dagrad/autodiff/gradient_checker.hpp"

#include <cmath>
#include <memory>

#include "dagrad/autodiff/gradient_checker_detail.hpp"
#include "dagrad/autodiff/gradients.hpp"
#include "dagrad/core/registries.hpp"
#include "dagrad/core/session.hpp"
#include "dagrad/ops/array_ops.hpp"

namespace dagrad {
namespace gradcheck {
namespace {

// Floating inputs become placeholders (float64 ones on the numeric side); the others constants,
// so that shape functions see their values (input_sizes, reduction axes).
std::vector<Output> make_inputs(Graph& g, const Problem& p, bool numeric) {
  std::vector<Output> ins;
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    const Tensor& t = p.inputs[i];
    if (!p.checked[i] && !is_floating(t.dtype())) {
      ins.push_back(ops::constant(g, t, p.names[i]));
    } else {
      ins.push_back(ops::placeholder(g, numeric ? DType::Float64 : t.dtype(), t.shape(), p.names[i]));
    }
  }
  return ins;
}

std::vector<Output> floating_outputs(const std::vector<Output>& outs) {
  std::vector<Output> result;
  for (const auto& o : outs) {
    if (is_floating(o.dtype())) result.push_back(o);
  }
  return result;
}

// The checked function: fn itself (order 1), or the gradients of <weights, fn> (order 2).
std::vector<Output> checked_function(Graph& g, const Problem& p, const std::vector<Output>& ins, bool numeric) {
  std::vector<Output> outs = floating_outputs(p.fn(g, ins, numeric));
  if (p.order == 1) return outs;
  std::vector<Output> weights, xs;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    weights.push_back(
        ops::constant(g, numeric ? p.weights[k].cast(DType::Float64) : p.weights[k].cast(outs[k].dtype())));
  }
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (p.checked[i]) xs.push_back(ins[i]);
  }
  std::vector<Output> grads;
  for (const auto& d : gradients(g, outs, xs, weights, {.unconnected = UnconnectedGradients::None})) {
    if (d.valid()) grads.push_back(d);
  }
  if (grads.empty()) invalid_argument("gradcheck: order 2: no input has a first-order gradient to differentiate");
  return grads;
}

}  // namespace

Built build(const Problem& p, bool numeric) {
  Built b;
  b.graph = std::make_unique<Graph>();
  Graph& g = *b.graph;
  b.inputs = make_inputs(g, p, numeric);
  b.outputs = checked_function(g, p, b.inputs, numeric);
  if (b.outputs.empty()) invalid_argument("gradcheck: ", p.what, " has no floating-point output to differentiate");
  if (!numeric) {
    std::vector<Output> xs;
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
      if (p.checked[i]) xs.push_back(b.inputs[i]);
    }
    for (const auto& y : b.outputs) b.grad_ys.push_back(ops::placeholder(g, y.dtype(), y.shape(), "grad_y"));
    const auto grads = gradients(g, b.outputs, xs, b.grad_ys, {.unconnected = UnconnectedGradients::None});
    std::size_t k = 0;
    b.grads.resize(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
      if (p.checked[i]) b.grads[i] = grads[k++];
    }
  }
  // The numeric side runs in float64, which a forced path need not claim: only the symbolic side is forced.
  b.session = std::make_unique<Session>(
      g, SessionOptions{.device = p.device, .backend = p.backend, .kernel_path = numeric ? "" : p.kernel_path});
  return b;
}

FeedMap base_feeds(const Problem& p, const Built& b, bool numeric) {
  FeedMap feeds;
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    if (b.inputs[i].op().op() != "Placeholder") continue;
    feeds[b.inputs[i]] = numeric ? p.inputs[i].cast(DType::Float64) : p.inputs[i];
  }
  return feeds;
}

std::vector<double> run_outputs(Built& b, const FeedMap& feeds) {
  std::vector<double> values;
  for (const Tensor& t : b.session->run(feeds, b.outputs)) {
    for (std::int64_t e = 0; e < t.num_elements(); ++e) values.push_back(t.value_as_double(e));
  }
  return values;
}

std::vector<std::vector<double>> run_gradients(const Problem& p, Built& b, const std::vector<Tensor>& grad_ys) {
  FeedMap feeds = base_feeds(p, b, false);
  for (std::size_t k = 0; k < grad_ys.size(); ++k) feeds[b.grad_ys[k]] = grad_ys[k];
  std::vector<Output> fetches;
  for (const auto& d : b.grads) {
    if (d.valid()) fetches.push_back(d);
  }
  const auto values = b.session->run(feeds, fetches);
  std::vector<std::vector<double>> result(p.inputs.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    if (!b.grads[i].valid()) continue;
    const Tensor& t = values[k++];
    for (std::int64_t e = 0; e < t.num_elements(); ++e) result[i].push_back(t.value_as_double(e));
  }
  return result;
}

// f(x + h) and f(x - h) on the float64 graph, for input i moved along `direction` (a one-hot
// when `element` >= 0).
Differences perturb(const Problem& p, Built& numeric, std::size_t i, std::int64_t element,
                    const std::vector<double>* direction, double h) {
  FeedMap feeds = base_feeds(p, numeric, true);
  const Tensor x = feeds.at(numeric.inputs[i]);
  Differences d;
  for (int sign : {1, -1}) {
    Tensor moved = x.clone();
    double* v = moved.data<double>();
    if (element >= 0) {
      v[element] += sign * h;
    } else {
      for (std::int64_t e = 0; e < moved.num_elements(); ++e)
        v[e] += sign * h * (*direction)[static_cast<std::size_t>(e)];
    }
    feeds[numeric.inputs[i]] = moved;
    (sign > 0 ? d.plus : d.minus) = run_outputs(numeric, feeds);
  }
  d.changed = d.plus != d.minus;
  return d;
}

}  // namespace gradcheck

GradCheckResult check_graph_gradients(const GraphFunction& fn, const std::vector<Tensor>& inputs,
                                      const GradCheckOptions& options, std::vector<std::string> input_names) {
  auto sided = [fn](Graph& g, const std::vector<Output>& ins, bool) { return fn(g, ins); };
  gradcheck::Problem p = gradcheck::make_problem(sided, inputs, options, std::move(input_names));
  p.what = "graph function";
  return gradcheck::run_check(p, options);
}

std::vector<std::string> gradcheck_input_names(const std::string& op, const std::vector<Tensor>& inputs,
                                               const AttrMap& attrs) {
  const OpDef& def = op_registry().get(op);
  // The flat argument list needs list lengths (AddN's N): complete a copy of the attributes.
  AttrMap complete = attrs;
  std::vector<DType> dtypes;
  for (const auto& t : inputs) dtypes.push_back(t.dtype());
  complete_attrs(def, complete, dtypes);
  std::vector<std::string> names;
  for (const ArgDef* arg : flat_input_args(def, complete)) names.push_back(arg->name);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::size_t same = 0;
    for (const auto& n : names) same += n == names[i];
    if (same > 1) names[i] += str_cat("_", i);  // list inputs: inputs_0, inputs_1, ...
  }
  return names;
}

GradCheckResult check_gradients(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                                const GradCheckOptions& options) {
  const OpDef& def = op_registry().get(op);
  if (def.stateful) invalid_argument("gradcheck: ", op, " is stateful and cannot be checked");
  // Type attributes are bound again from the inputs on each side; floating ones that the inputs
  // do not bind (Cast's DstT) become float64 on the numeric side.
  AttrMap fixed;
  std::vector<std::string> floating_type_attrs;
  for (const auto& [name, value] : attrs) {
    const AttrDef* a = def.find_attr(name);
    bool bound = false;
    for (const auto& arg : def.inputs) bound = bound || arg.type_attr == name;
    if (a != nullptr && a->kind == AttrKind::Type && bound) continue;
    if (a != nullptr && a->kind == AttrKind::Type && is_floating(std::get<DType>(value))) {
      floating_type_attrs.push_back(name);
    }
    fixed.emplace(name, value);
  }
  auto fn = [op, fixed, floating_type_attrs](Graph& g, const std::vector<Output>& ins, bool numeric) {
    AttrMap a = fixed;
    for (const auto& name : floating_type_attrs) {
      if (numeric) a[name] = DType::Float64;
    }
    const Node& n = g.add_node(op, ins, a, op);
    std::vector<Output> outs;
    for (int k = 0; k < n.num_outputs(); ++k) outs.push_back(g.output(n.id, k));
    return outs;
  };
  gradcheck::Problem p = gradcheck::make_problem(fn, inputs, options, gradcheck_input_names(op, inputs, fixed));
  p.what = op;
  return gradcheck::run_check(p, options);
}

}  // namespace dagrad
