// The CLI's machine-readable output: typed JSON for attributes and shapes, and one line per
// document (every --json output and bench-op's line), written with nlohmann-json.
#pragma once

#include <nlohmann/json.hpp>

#include "dagrad/core/attr.hpp"
#include "dagrad/core/shape.hpp"

namespace dagrad::cli {

// An attribute as JSON of its own type: numbers, booleans, strings ("SAME"), dtype names
// ("float"), shapes and lists as arrays (-1 for an unknown dimension), a tensor as its dtype and
// shape.
nlohmann::json attr_json(const AttrValue& value);
nlohmann::json attrs_json(const AttrMap& attrs);
nlohmann::json shape_json(const Shape& shape);

// Writes `document` to standard output on one line (bytes that are not UTF-8 replaced).
void print_json_line(const nlohmann::json& document);

}  // namespace dagrad::cli
