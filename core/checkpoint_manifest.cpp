// manifest.json of a checkpoint: written with nlohmann::json, read back field by field, each
// missing or ill-typed field refused by name.
#include "dagrad/core/checkpoint_manifest.hpp"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "dagrad/core/error.hpp"
#include "dagrad/core/json_int64.hpp"

namespace dagrad {
namespace {

using nlohmann::json;

// The manifest's deepest value: root -> "variables" -> entry -> "shape" -> dimension.
constexpr int kMaxDepth = 4;

const json& field(const json& object, const char* key, const std::string& where, const std::string& source) {
  const auto it = object.find(key);
  if (it == object.end())
    invalid_argument("checkpoint manifest '", source, "': ", where, " has no field \"", key, "\"");
  return *it;
}

std::int64_t int_field(const json& object, const char* key, const std::string& where, const std::string& source,
                       std::int64_t min, std::int64_t max) {
  const json& v = field(object, key, where, source);
  const std::optional<std::int64_t> value = json_as_int64(v);
  if (!value || *value < min || *value > max) {
    invalid_argument("checkpoint manifest '", source, "': ", where, " field \"", key, "\" must be an integer in [", min,
                     ", ", max, "], got ", v.dump());
  }
  return *value;
}

std::string string_field(const json& object, const char* key, const std::string& where, const std::string& source) {
  const json& v = field(object, key, where, source);
  if (!v.is_string())
    invalid_argument("checkpoint manifest '", source, "': ", where, " field \"", key, "\" must be a string, got ",
                     v.dump());
  return v.get<std::string>();
}

ManifestEntry parse_entry(const json& e, std::size_t index, const std::string& source) {
  const std::string where = str_cat("variables[", index, "]");
  if (!e.is_object()) invalid_argument("checkpoint manifest '", source, "': ", where, " must be an object");
  ManifestEntry entry;
  entry.name = string_field(e, "name", where, source);
  const std::string named = str_cat(where, " ('", entry.name, "')");
  const std::string dtype = string_field(e, "dtype", named, source);
  try {
    entry.dtype = parse_dtype(dtype);
  } catch (const Error&) {
    invalid_argument("checkpoint manifest '", source, "': ", named, " has unknown dtype '", dtype, "'");
  }
  const json& shape = field(e, "shape", named, source);
  if (!shape.is_array())
    invalid_argument("checkpoint manifest '", source, "': ", named, " field \"shape\" must be an array");
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::optional<std::int64_t> dim = json_as_int64(shape[d]);
    if (!dim || *dim < 0) {
      invalid_argument("checkpoint manifest '", source, "': ", named, " has shape dimension ", d, " = ",
                       shape[d].dump(), "; dimensions must be non-negative integers");
    }
    dims.push_back(*dim);
  }
  entry.shape = Shape(std::move(dims));
  entry.file = string_field(e, "file", named, source);
  if (entry.file != checkpoint_file_for(entry.name)) {
    invalid_argument("checkpoint manifest '", source, "': ", named, " names file '", entry.file, "'; expected '",
                     checkpoint_file_for(entry.name), "'");
  }
  entry.bytes = int_field(e, "bytes", named, source, 0, INT64_MAX);
  entry.crc32 = static_cast<std::uint32_t>(int_field(e, "crc32", named, source, 0, 0xffffffffLL));
  return entry;
}

}  // namespace

std::string checkpoint_file_for(const std::string& name) {
  bool bad = name.empty() || name.front() == '/' || name.back() == '/' || name.find('\0') != std::string::npos;
  // Every path component must be an ordinary name: no "", ".", "..".
  for (std::size_t begin = 0; !bad && begin <= name.size();) {
    const std::size_t end = std::min(name.find('/', begin), name.size());
    const std::string_view part(name.data() + begin, end - begin);
    bad = part.empty() || part == "." || part == "..";
    begin = end + 1;
  }
  if (bad) invalid_argument("checkpoint: variable name '", name, "' cannot be used as a file name");
  return name + ".npy";
}

std::string manifest_to_json(const Manifest& m) {
  json variables = json::array();
  for (const ManifestEntry& e : m.variables) {
    variables.push_back({{"name", e.name},
                         {"dtype", std::string(dtype_name(e.dtype))},
                         {"shape", e.shape.dims()},
                         {"file", e.file},
                         {"bytes", e.bytes},
                         {"crc32", e.crc32}});
  }
  const json root = {{"format", kCheckpointFormatName},
                     {"version", kCheckpointFormatVersion},
                     {"step", m.step},
                     {"metadata", m.metadata},
                     {"variables", variables}};
  try {
    return root.dump(1) + "\n";
  } catch (const json::exception&) {  // JSON text must be UTF-8
    invalid_argument("checkpoint: variable names and metadata must be valid UTF-8");
  }
}

Manifest parse_manifest(const std::string& text, const std::string& source) {
  // Values nested deeper than any manifest field are dropped while parsing, so a hostile file
  // cannot build a deep tree; what remains then fails the field checks below.
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t, json&) { return depth <= kMaxDepth; };
  json root;
  try {
    root = json::parse(text, shallow);
  } catch (const json::exception& e) {
    invalid_argument("checkpoint manifest '", source, "' is not valid JSON: ", e.what());
  }
  if (!root.is_object()) invalid_argument("checkpoint manifest '", source, "' must hold a JSON object");
  const std::string format = string_field(root, "format", "the manifest", source);
  if (format != kCheckpointFormatName) {
    invalid_argument("checkpoint manifest '", source, "' has format \"", format, "\", expected \"",
                     kCheckpointFormatName, "\"");
  }
  const json& version = field(root, "version", "the manifest", source);
  if (json_as_int64(version) != std::optional<std::int64_t>(kCheckpointFormatVersion)) {
    invalid_argument("checkpoint manifest '", source, "' has format version ", version.dump(),
                     "; this dagrad reads version ", kCheckpointFormatVersion);
  }
  Manifest m;
  m.step = int_field(root, "step", "the manifest", source, 0, INT64_MAX);
  const json& metadata = field(root, "metadata", "the manifest", source);
  if (!metadata.is_object())
    invalid_argument("checkpoint manifest '", source, "': field \"metadata\" must be an object");
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string())
      invalid_argument("checkpoint manifest '", source, "': metadata \"", key, "\" must be a string, got ",
                       value.dump());
    m.metadata[key] = value.get<std::string>();
  }
  const json& variables = field(root, "variables", "the manifest", source);
  if (!variables.is_array())
    invalid_argument("checkpoint manifest '", source, "': field \"variables\" must be an array");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    m.variables.push_back(parse_entry(variables[i], i, source));
    if (!seen.insert(m.variables.back().name).second) {
      invalid_argument("checkpoint manifest '", source, "' lists variable '", m.variables.back().name, "' twice");
    }
  }
  return m;
}

}  // namespace dagrad
