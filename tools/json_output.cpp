// Typed JSON for the CLI's outputs.
#include "dagrad/tools/json_output.hpp"

#include <iostream>
#include <type_traits>

#include "dagrad/core/tensor.hpp"

namespace dagrad::cli {

nlohmann::json shape_json(const Shape& shape) { return shape.dims(); }

nlohmann::json attr_json(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, DType>) {
          return dtype_name(v);
        } else if constexpr (std::is_same_v<T, Shape>) {
          return shape_json(v);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          if (!v.defined()) return nullptr;
          return {{"dtype", dtype_name(v.dtype())}, {"shape", shape_json(v.shape())}};
        } else {
          return v;  // integers, floats, booleans, strings and their lists as they are
        }
      },
      value);
}

nlohmann::json attrs_json(const AttrMap& attrs) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : attrs) out[name] = attr_json(value);
  return out;
}

void print_json_line(const nlohmann::json& document) {
  std::cout << document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace dagrad::cli
