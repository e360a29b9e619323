// Saved models: model.json (the signature) beside graph.json and a variables checkpoint, written
// whole through write_directory_whole and read back with every part checked before use.
#include "dagrad/core/saved_model.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "dagrad/core/file_io.hpp"
#include "dagrad/core/staged_directory.hpp"

namespace dagrad {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// root -> "inputs" -> entry: nothing a model manifest holds is deeper.
constexpr int kMaxDepth = 2;
constexpr std::size_t kMaxManifestBytes = std::size_t{1} << 20;

std::map<std::string, std::string> name_map(const json& root, const char* key, const std::string& source) {
  const auto it = root.find(key);
  if (it == root.end()) invalid_argument("model manifest '", source, "' has no field \"", key, "\"");
  if (!it->is_object()) invalid_argument("model manifest '", source, "': field \"", key, "\" must be an object");
  std::map<std::string, std::string> names;
  for (const auto& [name, value] : it->items()) {
    if (name.empty()) invalid_argument("model manifest '", source, "': ", key, " has an empty name");
    if (!value.is_string()) {
      invalid_argument("model manifest '", source, "': ", key, " \"", name, "\" must be a string \"node:index\", got ",
                       value.dump(-1, ' ', true, json::error_handler_t::replace));
    }
    names[name] = value.get<std::string>();
  }
  return names;
}

}  // namespace

std::string model_manifest_to_json(const Signature& signature) {
  const json root = {{"format", kModelFormatName},
                     {"format_version", kModelFormatVersion},
                     {"inputs", signature.inputs},
                     {"outputs", signature.outputs}};
  try {
    return root.dump(1) + "\n";
  } catch (const json::exception&) {  // JSON text must be UTF-8
    invalid_argument("save_model: signature names must be valid UTF-8");
  }
}

Signature parse_model_manifest(std::string_view text, const std::string& source) {
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t, json&) { return depth <= kMaxDepth; };
  json root;
  try {
    root = json::parse(text, shallow);
  } catch (const json::exception& e) {
    invalid_argument("model manifest '", source, "' is not valid JSON: ", e.what());
  }
  if (!root.is_object()) invalid_argument("model manifest '", source, "' must hold a JSON object");
  for (const auto& [key, value] : root.items()) {
    if (key != "format" && key != "format_version" && key != "inputs" && key != "outputs") {
      invalid_argument("model manifest '", source, "' has unknown field \"", key, "\"");
    }
  }
  const auto format = root.find("format");
  if (format == root.end() || *format != kModelFormatName) {
    invalid_argument("model manifest '", source, "': field \"format\" must be \"", kModelFormatName, "\"");
  }
  const auto version = root.find("format_version");
  if (version == root.end() || !version->is_number_integer() || version->get<std::int64_t>() < 1) {
    invalid_argument("model manifest '", source, "': field \"format_version\" must be a positive integer");
  }
  if (version->get<std::int64_t>() > kModelFormatVersion) {
    invalid_argument("model manifest '", source, "' has format_version ", version->get<std::int64_t>(),
                     ", newer than this dagrad reads (", kModelFormatVersion, ")");
  }
  return {name_map(root, "inputs", source), name_map(root, "outputs", source)};
}

void check_signature(const Graph& graph, const Signature& signature, const std::string& source) {
  for (const auto& [name, reference] : signature.inputs) {
    const Output out = find_output(graph, reference, str_cat(source, ": input '", name, "'"));
    if (out.op().op() != "Placeholder") {
      invalid_argument(source, ": input '", name, "' names '", reference, "', a ", out.op().op(),
                       "; inputs must be Placeholder outputs");
    }
  }
  for (const auto& [name, reference] : signature.outputs) {
    find_output(graph, reference, str_cat(source, ": output '", name, "'"));
  }
}

Output Model::input(std::string_view name) const {
  const auto it = signature.inputs.find(std::string(name));
  return find_output(*graph, it != signature.inputs.end() ? it->second : name, "model input");
}

Output Model::output(std::string_view name) const {
  const auto it = signature.outputs.find(std::string(name));
  return find_output(*graph, it != signature.outputs.end() ? it->second : name, "model output");
}

void save_model(const std::string& dir, const Graph& graph, Session& session, const Signature& signature,
                const NodeDevices& devices, const CheckpointInfo& info) {
  check_signature(graph, signature, "save_model");
  const std::string graph_text = graph_to_json(graph, devices);
  const std::string manifest_text = model_manifest_to_json(signature);
  write_directory_whole(dir, "model", kModelManifestFile, [&](const fs::path& staged) {
    save_checkpoint(session, graph, (staged / kModelVariablesDir).string(), info);
    OutputFile graph_file((staged / kModelGraphFile).string());
    graph_file.write(graph_text);
    graph_file.close();
    OutputFile manifest((staged / kModelManifestFile).string());  // last: it marks a complete model
    manifest.write(manifest_text);
    manifest.close();
  });
}

Model load_model(const std::string& dir, const SessionOptions& options) {
  const fs::path root = directory_to_read(dir, "model", kModelManifestFile);
  const std::string manifest_path = (root / kModelManifestFile).string();
  std::error_code ec;
  if (!fs::is_regular_file(manifest_path, ec)) {
    fail(Code::NotFound, "model '", dir, "' has no ", kModelManifestFile, " (not a saved model)");
  }
  Model model;
  model.signature =
      parse_model_manifest(read_file_limited(manifest_path, kMaxManifestBytes, "model manifest"), manifest_path);
  LoadedGraph loaded = load_graph((root / kModelGraphFile).string());
  model.graph = std::move(loaded.graph);
  model.devices = std::move(loaded.devices);
  check_signature(*model.graph, model.signature, manifest_path);
  model.session = std::make_unique<Session>(*model.graph, options);
  model.info = restore_checkpoint(*model.session, *model.graph, (root / kModelVariablesDir).string());
  return model;
}

}  // namespace dagrad
