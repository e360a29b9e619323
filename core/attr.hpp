// Attribute values (TF's int, float, bool, string, type, shape, tensor, list(int), list(float)).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dagrad/core/dtype.hpp"
#include "dagrad/core/shape.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad {

enum class AttrKind { Int, Float, Bool, String, Type, Shape, Tensor, ListInt, ListFloat };

// The variant's order matches AttrKind.
using AttrValue = std::variant<std::int64_t, double, bool, std::string, DType, Shape, Tensor, std::vector<std::int64_t>,
                               std::vector<double>>;
using AttrMap = std::map<std::string, AttrValue, std::less<>>;

inline AttrKind attr_kind(const AttrValue& value) { return static_cast<AttrKind>(value.index()); }
// TF's spelling: "int", "float", "bool", "string", "type", "shape", "tensor", "list(int)", "list(float)".
std::string_view attr_kind_name(AttrKind kind);
// Display form: 3, 0.5, true, "SAME", float, [2,3], Tensor<...>, [1, 2, 2, 1].
std::string attr_to_string(const AttrValue& value);
// Parses text as the CLI writes it: a comma list for lists ("" is the empty list), TF's type names,
// "true"/"false", shapes as comma lists with ? or -1 for unknown dims.
AttrValue parse_attr(AttrKind kind, std::string_view text);

// Reads a typed attribute; throws Internal if absent or of another kind (schemas guarantee both).
template <class T>
const T& get_attr(const AttrMap& attrs, std::string_view name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) fail(Code::Internal, "attribute '", name, "' is missing");
  const T* value = std::get_if<T>(&it->second);
  if (value == nullptr) fail(Code::Internal, "attribute '", name, "' has kind ", attr_kind_name(attr_kind(it->second)));
  return *value;
}

}  // namespace dagrad
