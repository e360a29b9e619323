// The saved graph format's JSON values (core/GRAPH_FORMAT.md): scalars, shapes, tensors and
// attributes to nlohmann::json and back, each read by a checker that names the file and the field.
// Internal to core's graph and model readers: not installed (it needs nlohmann::json).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dagrad/core/attr.hpp"
#include "dagrad/core/json_int64.hpp"

namespace dagrad::graph_json {

using nlohmann::json;

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
std::string shown(const json& v);

// The most JSON values (numbers, strings, arrays, objects, ...) a graph file may hold.
inline constexpr std::int64_t kMaxJsonValues = std::int64_t{1} << 24;

// Parses `text` (ResourceExhausted beyond kMaxJsonValues values), dropping values nested deeper than the format goes,
// so that a hostile file cannot build a deep tree (what remains then fails the type checks); InvalidArgument naming
// `source`.
json parse_json(std::string_view text, const std::string& source);

const json& field(const json& object, const char* key, const Where& where);
// Refuses any field of `object` not in `known`.
void only_fields(const json& object, std::initializer_list<std::string_view> known, const Where& where);

DType dtype_value(const json& v, const Where& where);
Shape shape_value(const json& v, const Where& where);
json shape_to_json(const Shape& shape);

// An attribute as {"KIND": value}, and back.
json attr_to_json(const AttrValue& value);
AttrValue attr_value(const json& attr, const Where& where);

}  // namespace dagrad::graph_json
