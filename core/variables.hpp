// Variable storage held by a session: name -> tensor, updated in place by stateful ops.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/tensor.hpp"

namespace dagrad {

class VariableStore {
 public:
  bool contains(std::string_view name) const { return values_.count(name) != 0; }
  // The stored tensor; throws FailedPrecondition "Attempting to use uninitialized value NAME".
  Tensor& get(std::string_view name);
  // Undefined tensor when the variable has no value yet.
  Tensor get_or_undefined(std::string_view name) const;
  void set(std::string name, Tensor value) { values_[std::move(name)] = std::move(value); }
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Tensor, std::less<>> values_;
};

}  // namespace dagrad
