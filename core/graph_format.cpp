// Saved graphs: nodes to JSON with nlohmann::json, and back through Graph::add_node, every field
// read by a checker that names the file, the node and the field it refuses.
#include "dagrad/core/graph_format.hpp"

#include <optional>
#include <set>

#include "dagrad/core/file_io.hpp"
#include "dagrad/core/graph_json.hpp"

namespace dagrad {
namespace {

using namespace graph_json;

std::string output_reference(const Output& out) { return str_cat(out.op().name, ":", out.index); }

json node_to_json(const Graph& graph, const Node& node, const NodeDevices& devices) {
  json attrs = json::object(), inputs = json::array(), controls = json::array(), outputs = json::array();
  for (const auto& [name, value] : node.attrs) attrs[name] = attr_to_json(value);
  for (const Output& in : node.inputs) inputs.push_back(output_reference(in));
  for (int c : node.control_inputs) controls.push_back(graph.node(c).name);
  for (int k = 0; k < node.num_outputs(); ++k) {
    outputs.push_back({{"dtype", std::string(dtype_name(node.output_dtypes[static_cast<std::size_t>(k)]))},
                       {"shape", shape_to_json(node.output_shapes[static_cast<std::size_t>(k)])}});
  }
  json j = {{"name", node.name},          {"op", node.op()},   {"attrs", attrs}, {"inputs", inputs},
            {"control_inputs", controls}, {"outputs", outputs}};
  if (const auto it = devices.find(node.id); it != devices.end()) j["device"] = it->second;
  return j;
}

// The graph being rebuilt: node names seen so far, and every name in the file (to tell a
// forward reference, which would make a cycle possible, from a name that is nowhere).
struct Loader {
  Graph& graph;
  std::set<std::string, std::less<>> names_in_file;

  int node_named(std::string_view name, const Where& where) const {
    const Node* node = graph.find(name);
    if (node != nullptr) return node->id;
    if (names_in_file.count(name)) {
      where.fail("names node '", name, "', which is not defined before this node (a node's inputs come earlier in ",
                 "the file, so that no cycle can form)");
    }
    where.fail("names node '", name, "', which the graph does not have");
  }

  Output input(const json& v, const Where& where) const {
    if (!v.is_string()) where.fail("expected \"node:index\", got ", shown(v));
    const std::string& text = v.get_ref<const std::string&>();
    const std::size_t colon = text.rfind(':');
    std::int64_t index = -1;
    if (colon != std::string::npos && colon + 1 < text.size() && text.size() - colon <= 10) {
      index = 0;
      for (std::size_t i = colon + 1; i < text.size() && index >= 0; ++i) {
        index = text[i] >= '0' && text[i] <= '9' ? index * 10 + (text[i] - '0') : -1;
      }
    }
    if (index < 0) where.fail("expected \"node:index\", got ", shown(v));
    const int id = node_named(std::string_view(text).substr(0, colon), where);
    const Node& producer = graph.node(id);
    if (index >= producer.num_outputs()) {
      where.fail("names output ", index, " of '", producer.name, "', which has ", producer.num_outputs());
    }
    return graph.output(id, static_cast<int>(index));
  }
};

const json& array_field(const json& node, const char* key, const Where& where) {
  static const json empty = json::array();
  const auto it = node.find(key);
  if (it == node.end()) return empty;
  if (!it->is_array()) where.fail("field \"", key, "\" must be an array, got ", shown(*it));
  return *it;
}

// Checks that the outputs this dagrad infers are those the file recorded: a file from another
// version of an op's shape function fails here rather than running differently.
void check_outputs(const Node& node, const json& outputs, const Where& where) {
  if (!outputs.is_array()) where.fail("field \"outputs\" must be an array");
  if (outputs.size() != static_cast<std::size_t>(node.num_outputs())) {
    where.fail("the file records ", outputs.size(), " outputs; ", node.op(), " has ", node.num_outputs());
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Where at = where / str_cat("output ", k);
    if (!outputs[k].is_object()) at.fail("expected {dtype, shape}, got ", shown(outputs[k]));
    only_fields(outputs[k], {"dtype", "shape"}, at);
    const DType dtype = dtype_value(field(outputs[k], "dtype", at), at / "dtype");
    const Shape shape = shape_value(field(outputs[k], "shape", at), at / "shape");
    if (dtype != node.output_dtypes[k] || shape != node.output_shapes[k]) {
      at.fail("the file records ", dtype_name(dtype), " ", shape.to_string(), "; this dagrad infers ",
              dtype_name(node.output_dtypes[k]), " ", node.output_shapes[k].to_string());
    }
  }
}

void load_node(Loader& loader, const json& j, std::size_t index, NodeDevices& devices, const std::string& source) {
  const Where where{source, str_cat("node ", index)};
  if (!j.is_object()) where.fail("expected an object, got ", shown(j));
  const json& name_json = field(j, "name", where);
  if (!name_json.is_string() || name_json.get_ref<const std::string&>().empty()) {
    where.fail("field \"name\" must be a non-empty string, got ", shown(name_json));
  }
  const std::string& name = name_json.get_ref<const std::string&>();
  const Where at = where / str_cat("('", name, "')");
  only_fields(j, {"name", "op", "attrs", "inputs", "control_inputs", "device", "outputs"}, at);
  if (loader.graph.find(name) != nullptr) at.fail("the name is used by an earlier node");
  const json& op = field(j, "op", at);
  if (!op.is_string()) at.fail("field \"op\" must be a string, got ", shown(op));
  const OpDef* def = op_registry().find(op.get_ref<const std::string&>());
  if (def == nullptr)
    fail(Code::NotFound, "graph '", source, "': ", at.path, ": Op type not registered '", op.get<std::string>(), "'");

  AttrMap attrs;
  if (const auto it = j.find("attrs"); it != j.end()) {
    if (!it->is_object()) at.fail("field \"attrs\" must be an object, got ", shown(*it));
    for (const auto& [key, value] : it->items()) attrs[key] = attr_value(value, at / str_cat("attribute '", key, "'"));
  }
  std::vector<Output> inputs;
  const json& input_list = array_field(j, "inputs", at);
  for (std::size_t i = 0; i < input_list.size(); ++i)
    inputs.push_back(loader.input(input_list[i], at / str_cat("input ", i)));
  std::vector<int> controls;
  const json& control_list = array_field(j, "control_inputs", at);
  for (std::size_t i = 0; i < control_list.size(); ++i) {
    const Where c = at / str_cat("control input ", i);
    if (!control_list[i].is_string()) c.fail("expected a node name, got ", shown(control_list[i]));
    controls.push_back(loader.node_named(control_list[i].get_ref<const std::string&>(), c));
  }
  std::optional<std::string> device;
  if (const auto it = j.find("device"); it != j.end()) {
    if (!it->is_string()) at.fail("field \"device\" must be a string, got ", shown(*it));
    try {
      device = Device::parse(it->get_ref<const std::string&>()).to_string();
    } catch (const Error& e) {
      (at / "device").fail(e.what());
    }
  }
  const Node* node = nullptr;
  try {
    node = &loader.graph.add_node(def->name, std::move(inputs), std::move(attrs), name, std::move(controls));
  } catch (const Error& e) {
    throw Error(e.code(), str_cat("graph '", source, "': ", at.path, ": ", e.what()));
  }
  if (const auto it = j.find("outputs"); it != j.end()) check_outputs(*node, *it, at);
  if (device) devices[node->id] = *device;
}

}  // namespace

std::string graph_to_json(const Graph& graph, const NodeDevices& devices) {
  for (const auto& [id, device] : devices) {
    if (id < 0 || id >= graph.num_nodes())
      invalid_argument("save_graph: a device is given for node id ", id, ", which the graph lacks");
    Device::parse(device);
  }
  json nodes = json::array();
  for (int id = 0; id < graph.num_nodes(); ++id) nodes.push_back(node_to_json(graph, graph.node(id), devices));
  const json root = {{"format", kGraphFormatName}, {"format_version", kGraphFormatVersion}, {"nodes", nodes}};
  try {
    return root.dump(1) + "\n";
  } catch (const json::exception&) {  // JSON text must be UTF-8
    invalid_argument("save_graph: node names and string attributes must be valid UTF-8");
  }
}

void save_graph(const Graph& graph, const std::string& path, const NodeDevices& devices) {
  const std::string text = graph_to_json(graph, devices);
  write_file(path, [&](OutputFile& out) { out.write(text); });
}

LoadedGraph graph_from_json(std::string_view text, const std::string& source) {
  const json root = parse_json(text, source);
  const Where where{source, ""};
  if (!root.is_object()) where.fail("expected a JSON object");
  const json& format = field(root, "format", where);
  if (format != kGraphFormatName) {
    where.fail("field \"format\" is ", shown(format), "; expected \"", kGraphFormatName, "\"");
  }
  const json& version = field(root, "format_version", where);
  const auto v = json_as_int64(version);
  if (!v || *v < 1) where.fail("field \"format_version\" must be a positive integer, got ", shown(version));
  if (*v > kGraphFormatVersion) {
    where.fail("format_version ", *v, " is newer than this dagrad reads (", kGraphFormatVersion, ")");
  }
  only_fields(root, {"format", "format_version", "nodes"}, where);
  const json& nodes = field(root, "nodes", where);
  if (!nodes.is_array()) where.fail("field \"nodes\" must be an array");

  LoadedGraph loaded{std::make_unique<Graph>(), {}};
  Loader loader{*loaded.graph, {}};
  for (const json& n : nodes) {
    const auto it = n.is_object() ? n.find("name") : n.end();
    if (n.is_object() && it != n.end() && it->is_string()) loader.names_in_file.insert(it->get<std::string>());
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) load_node(loader, nodes[i], i, loaded.devices, source);
  return loaded;
}

std::string attr_to_json_text(const AttrValue& value) { return attr_to_json(value).dump(); }

AttrValue attr_from_json_text(std::string_view text, const std::string& source) {
  return attr_value(parse_json(text, source), Where{source, "attribute"});
}

LoadedGraph load_graph(const std::string& path) {
  return graph_from_json(read_file_limited(path, kMaxGraphFileBytes, "graph file"), path);
}

Output find_output(const Graph& graph, std::string_view reference, std::string_view what) {
  const std::size_t colon = reference.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < reference.size()) {
    const std::string_view digits = reference.substr(colon + 1);
    int index = 0;
    bool numeric = digits.size() <= 9;
    for (char c : digits) {
      numeric = numeric && c >= '0' && c <= '9';
      if (numeric) index = index * 10 + (c - '0');
    }
    if (const Node* node = numeric ? graph.find(reference.substr(0, colon)) : nullptr)
      return graph.output(node->id, index);
  }
  if (const Node* node = graph.find(reference)) return graph.output(node->id, 0);
  fail(Code::NotFound, what, ": the graph has no node '", reference, "'");
}

}  // namespace dagrad
