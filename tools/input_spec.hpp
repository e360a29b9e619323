// Op inputs from the command line: SPECs (FILE.npy, random:, zeros:, scalar:, ints:) matched
// to the op's input names. Shared by every subcommand that runs an op.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dagrad/core/op_registry.hpp"

namespace dagrad::cli {

// The tensor a SPEC describes:
//   FILE.npy                  the file's contents, in its dtype
//   random:D0,D1,...[:SEED]   float32, uniform in [-1, 1), the same values for the same seed (default 0)
//   zeros:D0,D1,...           float32 zeros
//   scalar:V                  a float32 scalar
//   ints:v0,v1,...            an int32 vector (shape inputs such as input_sizes; "ints:" is empty)
// An empty dimension list ("random:", "zeros:") gives a scalar. Throws dagrad::Error.
Tensor make_input(std::string_view spec);

// Splits "NAME=VALUE" at its first '='; throws UsageError naming `flag` when NAME is missing.
std::pair<std::string, std::string> split_name_value(std::string_view text, std::string_view flag);

struct OpInputs {
  std::vector<Tensor> tensors;      // in the op's flat input order
  std::vector<const ArgDef*> args;  // the schema argument of each tensor
};

// Matches NAME=SPEC arguments to the op's inputs: every input must be given once; a list input
// (AddN's `inputs`) takes every argument with its name, in order. Throws dagrad::Error on
// unknown, missing or repeated names.
OpInputs op_inputs(const OpDef& def, const std::vector<std::string>& name_specs);

}  // namespace dagrad::cli
