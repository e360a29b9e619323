// Saved graphs: nodes to JSON with nlohmann::json, and back through Graph::add_node, every field
// read by a checker that names the file, the node and the field it refuses.
#include "dagrad/core/graph_format.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "dagrad/core/base64.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/file_io.hpp"

namespace dagrad {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensor data is saved as the host's little-endian bytes");

// The deepest value of the format: root -> "nodes" -> node -> "attrs" -> attribute -> tensor ->
// "shape" -> dimension. Deeper values are dropped while parsing, so a hostile file cannot build
// a deep tree; what remains then fails the type checks.
constexpr int kMaxDepth = 7;

constexpr AttrKind kAttrKinds[] = {AttrKind::Int,    AttrKind::Float,   AttrKind::Bool,
                                   AttrKind::String, AttrKind::Type,    AttrKind::Shape,
                                   AttrKind::Tensor, AttrKind::ListInt, AttrKind::ListFloat};

// Where a value sits, for error messages: the file and a path such as "node 3 ('conv1')
// attribute 'strides'".
struct Where {
  const std::string& source;
  std::string path;

  Where operator/(std::string_view more) const {
    return {source, path.empty() ? std::string(more) : str_cat(path, " ", more)};
  }
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    invalid_argument("graph '", source, "': ", path, path.empty() ? "" : ": ", args...);
  }
};

// JSON text of a value for messages, cut short: a hostile file's values can be huge.
std::string shown(const json& v) {
  std::string text = v.dump(-1, ' ', true, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// ---- scalars --------------------------------------------------------------------------------

std::optional<std::int64_t> as_int64(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(INT64_MAX) ? std::nullopt
                                                     : std::optional<std::int64_t>(static_cast<std::int64_t>(u));
  }
  return v.is_number_integer() ? std::optional<std::int64_t>(v.get<std::int64_t>()) : std::nullopt;
}

std::int64_t int_value(const json& v, const Where& where) {
  const auto value = as_int64(v);
  if (!value) where.fail("expected an integer in int64's range, got ", shown(v));
  return *value;
}

// Floats: a JSON number when finite (written with the digits that read back the same bits,
// -0.0 included); infinities and NaNs, which JSON lacks, as the string "0x" + the 16 hex digits
// of their IEEE-754 bits, so that every NaN payload survives.
json float_to_json(double value) {
  if (std::isfinite(value)) return value;
  char bits[24];
  std::snprintf(bits, sizeof bits, "0x%016llx", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(value)));
  return bits;
}

double float_value(const json& v, const Where& where) {
  if (v.is_number_float()) {
    const double value = v.get<double>();
    if (!std::isfinite(value)) where.fail("number ", shown(v), " is out of double's range");
    return value;
  }
  if (v.is_number_integer()) {  // hand-written "1": exact only up to 2^53
    const auto i = as_int64(v);
    if (!i || *i > (std::int64_t{1} << 53) || *i < -(std::int64_t{1} << 53)) {
      where.fail("integer ", shown(v), " is not exactly a double; write it as a float");
    }
    return static_cast<double>(*i);
  }
  if (v.is_string()) {
    const std::string& text = v.get_ref<const std::string&>();
    std::uint64_t bits = 0;
    bool ok = text.size() == 18 && text.compare(0, 2, "0x") == 0;
    for (std::size_t i = 2; ok && i < text.size(); ++i) {
      const char c = text[i];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      ok = digit >= 0;
      bits = bits << 4 | static_cast<std::uint64_t>(digit);
    }
    const double value = std::bit_cast<double>(bits);
    if (ok && !std::isfinite(value)) return value;
    where.fail("a float given as a string must be \"0x\" and 16 lower-case hex digits of an infinity or NaN, got ",
               shown(v));
  }
  where.fail("expected a number, got ", shown(v));
}

DType dtype_value(const json& v, const Where& where) {
  if (!v.is_string()) where.fail("expected a dtype name, got ", shown(v));
  try {
    return parse_dtype(v.get_ref<const std::string&>());
  } catch (const Error&) {
    where.fail("unknown dtype ", shown(v));
  }
}

Shape shape_value(const json& v, const Where& where) {
  if (!v.is_array()) where.fail("expected a shape (an array of dimensions), got ", shown(v));
  if (v.size() > static_cast<std::size_t>(Shape::kMaxRank)) where.fail("rank ", v.size(), " exceeds ", Shape::kMaxRank);
  std::vector<std::int64_t> dims;
  for (const json& d : v) {
    const auto dim = as_int64(d);
    if (!dim || *dim < -1) where.fail("dimension ", dims.size(), " is ", shown(d), "; expected -1 (unknown) or >= 0");
    dims.push_back(*dim);
  }
  return Shape(std::move(dims));
}

json shape_to_json(const Shape& shape) { return shape.dims(); }

// ---- tensors --------------------------------------------------------------------------------

// {"dtype": "half", "shape": [2, 3], "data": base64 of the little-endian bytes, row-major}.
json tensor_to_json(const Tensor& value) {
  const Tensor host = value.device().is_cpu() ? value : value.to(Device::cpu());
  return {{"dtype", std::string(dtype_name(host.dtype()))},
          {"shape", shape_to_json(host.shape())},
          {"data", base64_encode(host.raw_data(), host.nbytes())}};
}

const json& field(const json& object, const char* key, const Where& where) {
  const auto it = object.find(key);
  if (it == object.end()) where.fail("has no field \"", key, "\"");
  return *it;
}

void only_fields(const json& object, std::initializer_list<std::string_view> known, const Where& where) {
  for (const auto& [key, value] : object.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key == k;
    if (!ok) where.fail("unknown field \"", key, "\"");
  }
}

Tensor tensor_value(const json& v, const Where& where) {
  if (!v.is_object()) where.fail("expected a tensor object {dtype, shape, data}, got ", shown(v));
  only_fields(v, {"dtype", "shape", "data"}, where);
  const DType dtype = dtype_value(field(v, "dtype", where), where / "dtype");
  const Shape shape = shape_value(field(v, "shape", where), where / "shape");
  if (!shape.is_fully_defined()) where.fail("a tensor's shape must be fully defined, got ", shape.to_string());
  const json& data = field(v, "data", where);
  if (!data.is_string()) where.fail("field \"data\" must be a base64 string");
  // The byte count is checked before anything is allocated: a hostile shape fails here, and
  // base64_decode refuses text of any other length before writing a byte.
  std::size_t bytes = 0;
  try {
    bytes = checked_bytes(shape.num_elements(), dtype_size(dtype), "graph tensor bytes");
  } catch (const Error& e) {
    where.fail(e.what());
  }
  const std::string& text = data.get_ref<const std::string&>();
  if (text.size() != base64_length(bytes)) {
    where.fail("data holds ", text.size(), " base64 characters; ", dtype_name(dtype), " ", shape.to_string(), " needs ",
               base64_length(bytes), " (", bytes, " bytes)");
  }
  Tensor value = Tensor::empty(dtype, shape);
  base64_decode(text, value.raw_data(), bytes, str_cat("graph '", where.source, "': ", where.path, " data"));
  if (dtype == DType::Bool) {
    const auto* b = static_cast<const unsigned char*>(value.raw_data());
    for (std::size_t i = 0; i < bytes; ++i) {
      if (b[i] > 1) where.fail("bool element ", i, " has byte ", int{b[i]}, "; expected 0 or 1");
    }
  }
  return value;
}

// ---- attributes -----------------------------------------------------------------------------

// An attribute is {"KIND": value} with TF's kind names, so that loading never guesses a kind.
json attr_to_json(const AttrValue& value) {
  json v;
  switch (attr_kind(value)) {
    case AttrKind::Int:
      v = std::get<std::int64_t>(value);
      break;
    case AttrKind::Float:
      v = float_to_json(std::get<double>(value));
      break;
    case AttrKind::Bool:
      v = std::get<bool>(value);
      break;
    case AttrKind::String:
      v = std::get<std::string>(value);
      break;
    case AttrKind::Type:
      v = std::string(dtype_name(std::get<DType>(value)));
      break;
    case AttrKind::Shape:
      v = shape_to_json(std::get<Shape>(value));
      break;
    case AttrKind::Tensor:
      v = tensor_to_json(std::get<Tensor>(value));
      break;
    case AttrKind::ListInt:
      v = std::get<std::vector<std::int64_t>>(value);
      break;
    case AttrKind::ListFloat:
      v = json::array();
      for (double f : std::get<std::vector<double>>(value)) v.push_back(float_to_json(f));
      break;
  }
  return {{std::string(attr_kind_name(attr_kind(value))), std::move(v)}};
}

AttrValue attr_value(const json& attr, const Where& where) {
  if (!attr.is_object() || attr.size() != 1) {
    where.fail("expected an object with one key, the attribute's kind (e.g. {\"int\": 3}), got ", shown(attr));
  }
  const std::string& kind_name = attr.begin().key();
  const json& v = attr.begin().value();
  const Where at = where / kind_name;
  for (AttrKind kind : kAttrKinds) {
    if (attr_kind_name(kind) != kind_name) continue;
    switch (kind) {
      case AttrKind::Int:
        return int_value(v, at);
      case AttrKind::Float:
        return float_value(v, at);
      case AttrKind::Bool:
        if (!v.is_boolean()) at.fail("expected true or false, got ", shown(v));
        return v.get<bool>();
      case AttrKind::String:
        if (!v.is_string()) at.fail("expected a string, got ", shown(v));
        return v.get<std::string>();
      case AttrKind::Type:
        return dtype_value(v, at);
      case AttrKind::Shape:
        return shape_value(v, at);
      case AttrKind::Tensor:
        return tensor_value(v, at);
      case AttrKind::ListInt:
      case AttrKind::ListFloat: {
        if (!v.is_array()) at.fail("expected an array, got ", shown(v));
        std::vector<std::int64_t> ints;
        std::vector<double> floats;
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (kind == AttrKind::ListInt) ints.push_back(int_value(v[i], at / str_cat("element ", i)));
          if (kind == AttrKind::ListFloat) floats.push_back(float_value(v[i], at / str_cat("element ", i)));
        }
        if (kind == AttrKind::ListInt) return ints;
        return floats;
      }
    }
  }
  where.fail("unknown attribute kind \"", kind_name,
             "\"; expected int, float, bool, string, type, shape, tensor, list(int) or list(float)");
}

// ---- nodes ----------------------------------------------------------------------------------

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

json parse_json(std::string_view text, const std::string& source) {
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t, json&) { return depth <= kMaxDepth; };
  try {
    return json::parse(text, shallow);
  } catch (const json::exception& e) {
    invalid_argument("graph '", source, "' is not valid JSON: ", e.what());
  }
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
  const auto v = as_int64(version);
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
