// Variable storage lookups.
#include "dagrad/core/variables.hpp"

namespace dagrad {

Tensor& VariableStore::get(std::string_view name) {
  auto it = values_.find(name);
  if (it == values_.end() || !it->second.defined()) {
    fail(Code::FailedPrecondition, "Attempting to use uninitialized value ", name);
  }
  return it->second;
}

Tensor VariableStore::get_or_undefined(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? Tensor() : it->second;
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> names;
  for (const auto& [name, value] : values_) names.push_back(name);
  return names;
}

}  // namespace dagrad
