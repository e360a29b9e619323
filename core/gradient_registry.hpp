// Gradient functions by op name; registering "no gradient" is an explicit, separate act.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad {

// Builds the gradient of one node as new graph nodes. `grad_outputs[i]` is the gradient flowing
// into output i (zeros where none arrives). Returns one entry per input; nullopt where that
// input gets no gradient (e.g. a shape-only input).
using GradientFn = std::function<std::vector<std::optional<Output>>(Graph& graph, const Node& node,
                                                                    const std::vector<Output>& grad_outputs)>;

class GradientRegistry {
 public:
  void add(std::string op, GradientFn fn);
  // Declares that the op is not differentiable (its inputs never receive gradients).
  void add_no_gradient(std::string op);
  // Replaces an existing entry (tests use this to plant a wrong gradient).
  void replace(std::string op, GradientFn fn);
  bool has_entry(std::string_view op) const { return entries_.count(op) != 0; }
  // The function, or null for an explicit no-gradient; throws NotFound when there is no entry.
  const GradientFn* find(std::string_view op) const;

 private:
  std::map<std::string, std::optional<GradientFn>, std::less<>> entries_;
};

GradientRegistry& gradient_registry();

}  // namespace dagrad
