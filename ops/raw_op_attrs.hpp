// Shared by the eager raw_ops declarations: the trailing argument of an op without attributes.
// Each raw op takes its inputs, then one struct of named arguments in tf.raw_ops' order with
// `name` last, so that C++20 designated initialisers read like the Python keyword arguments:
//   raw_ops::AddV2(x, y, {.name = "add"});  raw_ops::Sum(x, axis, {.keep_dims = true});
#pragma once

#include <string_view>

namespace dagrad::raw_ops {

struct NameOnly {
  std::string_view name = {};  // appears in error messages, as tf.raw_ops' name does
};

}  // namespace dagrad::raw_ops
