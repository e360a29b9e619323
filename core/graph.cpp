// Graph construction: validation and shape inference happen where the user adds the node.
#include "dagrad/core/graph.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace dagrad {

const Node& Output::op() const {
  if (graph == nullptr) invalid_argument("use of an empty Output");
  return graph->node(node);
}
DType Output::dtype() const { return op().output_dtypes.at(static_cast<std::size_t>(index)); }
const Shape& Output::shape() const { return op().output_shapes.at(static_cast<std::size_t>(index)); }
std::string Output::name() const { return op().name + ":" + std::to_string(index); }

std::string with_node_name(std::string_view message, std::string_view name) {
  if (name.empty()) return std::string(message);
  return str_cat(message, " (node '", name, "')");
}

const Node& Graph::node(int id) const {
  if (id < 0 || id >= num_nodes()) fail(Code::OutOfRange, "node id ", id, " out of range (", num_nodes(), " nodes)");
  return *nodes_[static_cast<std::size_t>(id)];
}

const Node* Graph::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : nodes_[static_cast<std::size_t>(it->second)].get();
}

Output Graph::output(int id, int index) const {
  const Node& n = node(id);
  if (index < 0 || index >= n.num_outputs()) {
    fail(Code::OutOfRange, "node '", n.name, "' has ", n.num_outputs(), " outputs; asked for ", index);
  }
  return Output{this, id, index};
}

bool is_valid_name_scope(std::string_view scope) {
  // TF's node-name rule per part: a letter, digit or '.', then letters, digits and "_.-".
  auto first_ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.'; };
  auto rest_ok = [&](char c) { return first_ok(c) || c == '_' || c == '-'; };
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(scope.find('/', begin), scope.size());
    if (end == begin || !first_ok(scope[begin])) return false;
    for (std::size_t i = begin + 1; i < end; ++i) {
      if (!rest_ok(scope[i])) return false;
    }
    if (end == scope.size()) return true;
    begin = end + 1;
  }
}

NameScope Graph::name_scope(std::string_view scope) {
  if (!is_valid_name_scope(scope)) {
    invalid_argument("name scope '", scope,
                     "' is not valid: each '/'-separated part must match [A-Za-z0-9.][A-Za-z0-9_.-]*");
  }
  std::string enclosing = scope_prefix_;
  scope_prefix_ += scope;
  scope_prefix_ += '/';
  return NameScope(*this, std::move(enclosing));
}

NameScope Graph::root_name_scope() { return NameScope(*this, std::exchange(scope_prefix_, {})); }

std::string Graph::scoped_name(std::string_view name) const { return str_cat(scope_prefix_, name); }

std::string Graph::unique_name(std::string_view base) {
  std::string name(base);
  if (!by_name_.count(name)) return name;
  auto [it, inserted] = next_suffix_.try_emplace(name, 1);
  int suffix = it->second;
  do {
    name = str_cat(base, "_", suffix++);
  } while (by_name_.count(name));
  it->second = suffix;
  return name;
}

const Node& Graph::add_node(std::string_view op, std::vector<Output> inputs, AttrMap attrs, std::string_view name,
                            std::vector<int> control_inputs) {
  const OpDef& def = op_registry().get(op);
  const std::string unique = unique_name(scoped_name(name.empty() ? op : name));
  auto node = std::make_unique<Node>();
  try {
    std::vector<DType> dtypes;
    std::vector<Shape> shapes;
    std::vector<const Tensor*> values;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Output& in = inputs[i];
      if (in.graph != this) invalid_argument("input ", i, " is not an output of this graph");
      const Node& producer = this->node(in.node);
      if (in.index < 0 || in.index >= producer.num_outputs()) {
        invalid_argument("input ", i, " names output ", in.index, " of '", producer.name, "', which has ",
                         producer.num_outputs());
      }
      dtypes.push_back(in.dtype());
      shapes.push_back(in.shape());
      values.push_back(producer.op() == "Const" ? &get_attr<Tensor>(producer.attrs, "value") : nullptr);
    }
    for (int c : control_inputs) this->node(c);  // range check
    node->output_dtypes = complete_attrs(def, attrs, dtypes);
    node->output_shapes = infer_shapes(def, attrs, dtypes, shapes, values);
  } catch (const Error& e) {
    throw Error(e.code(), with_node_name(e.what(), unique));
  }
  node->id = num_nodes();
  node->name = unique;
  node->def = &def;
  node->attrs = std::move(attrs);
  node->inputs = std::move(inputs);
  node->control_inputs = std::move(control_inputs);
  by_name_.emplace(unique, node->id);
  nodes_.push_back(std::move(node));
  return *nodes_.back();
}

}  // namespace dagrad
