// Shared by the eager raw_ops declarations: the trailing argument of an op without attributes.
// Each raw op takes its inputs, then one struct of named arguments in tf.raw_ops' order with
// `name` last, so that C++20 designated initialisers read like the Python keyword arguments:
//   raw_ops::AddV2(x, y, {.name = "add"});  raw_ops::Sum(x, axis, {.keep_dims = true});
#pragma once

#include <string_view>
#include <vector>

namespace dagrad::raw_ops {

struct NameOnly {
  std::string_view name = {};  // appears in error messages, as tf.raw_ops' name does
};

// The registered ops that have no typed raw op, each with the reason (graph-only ops: they need a
// Session's feeds or variables, as their tf.raw_ops forms need a graph). Every other op has one;
// tests/ops/raw_ops_coverage_test.cpp checks that against the op registry.
struct OpWithoutRawOp {
  std::string_view op, reason;
};
const std::vector<OpWithoutRawOp>& ops_without_raw_op();

}  // namespace dagrad::raw_ops
