// Test helper: whether two graphs are the same node for node, attributes bit for bit, and a
// description of the first difference.
#pragma once

#include <bit>
#include <cstring>
#include <string>
#include <type_traits>
#include <variant>

#include <dagrad/dagrad.hpp>

namespace dagrad::testing {

inline bool same_tensor_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

inline bool same_double_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Floats compare by their bits, so NaN payloads and the sign of zero count.
inline bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, double>) {
          return same_double_bits(x, y);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          if (x.size() != y.size()) return false;
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (!same_double_bits(x[i], y[i])) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return same_tensor_bits(x, y);
        } else {
          return x == y;
        }
      },
      a);
}

// "" when equal, else what differs first.
inline std::string graph_difference(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes()) return str_cat(a.num_nodes(), " nodes vs ", b.num_nodes());
  for (int id = 0; id < a.num_nodes(); ++id) {
    const Node &x = a.node(id), &y = b.node(id);
    const std::string at = str_cat("node ", id, " ('", x.name, "'): ");
    if (x.name != y.name || x.op() != y.op()) return at + "name or op differs: " + y.name + " " + y.op();
    if (x.attrs.size() != y.attrs.size()) return at + "attribute count differs";
    for (const auto& [name, value] : x.attrs) {
      const auto it = y.attrs.find(name);
      if (it == y.attrs.end() || !same_attr(value, it->second)) return at + "attribute '" + name + "' differs";
    }
    if (x.inputs.size() != y.inputs.size()) return at + "input count differs";
    for (std::size_t i = 0; i < x.inputs.size(); ++i) {
      if (x.inputs[i].node != y.inputs[i].node || x.inputs[i].index != y.inputs[i].index)
        return at + "an input differs";
    }
    if (x.control_inputs != y.control_inputs) return at + "control inputs differ";
    if (x.output_dtypes != y.output_dtypes || x.output_shapes != y.output_shapes) return at + "outputs differ";
  }
  return "";
}

}  // namespace dagrad::testing
