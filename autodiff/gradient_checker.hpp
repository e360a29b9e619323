// The finite-difference gradient checker: numeric Jacobians (central differences, evaluated in
// float64) against the symbolic ones built by dagrad::gradients, for every input separately.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad {

enum class GradCheckMode {
  Full,  // whole Jacobians: 2 runs per input element + 1 run per output element
  Fast,  // random directional derivatives: J·u against <gradient, u>, a few runs per direction
};

struct GradCheckOptions {
  GradCheckMode mode = GradCheckMode::Full;
  int order = 1;                  // 1: the gradient; 2: the gradient of the gradient
  std::uint64_t seed = 20261202;  // random output weights and directions; printed in reports
  int directions = 4;             // fast mode: random directions per input
  // 0 means the default of the checked dtype (see default_step / default_tolerance).
  double step = 0;
  double atol = 0;
  double rtol = 0;
  // The kernels both sides run: "reference" (the default: the oracle kernels, so that a failure
  // is the gradient's), a backend's name ("cpu", "cuda"), or "" (each op's highest-priority kernel).
  std::string backend = "reference";
  Device device = Device::cpu();  // where both sides run
  std::string kernel_path;        // symbolic side only: a forced kernel path (SessionOptions)
  // Names of the inputs to check (empty: every floating input); the others are held constant.
  // An input whose Jacobian is zero by design (ReluGrad's features) must be left out: the
  // checker fails a check that would pass vacuously.
  std::vector<std::string> inputs_to_check;
};

// The defaults per dtype. The numeric side is always evaluated in float64, so the tolerance is
// set by the rounding of the symbolic side in the checked dtype.
double default_step(DType dtype);
double default_atol(DType dtype);
double default_rtol(DType dtype);

struct InputCheck {
  enum class Status {
    Passed,      // numeric and symbolic agree, and the output depends on the input
    Failed,      // see `message`
    NoGradient,  // declared without gradient, and no perturbation changed the output: consistent
    Skipped,     // not floating (e.g. input_sizes), or not in inputs_to_check: held constant
  };
  std::string name;  // the op's argument name ("filter"), or "x0", "x1", ... for a graph function
  DType dtype = DType::Invalid;
  Shape shape;
  Status status = Status::Skipped;
  // The worst entry (largest error relative to its tolerance). Full mode: the input element and
  // the output element (over all outputs, concatenated); fast mode: the direction, and -1.
  std::int64_t input_index = -1;
  std::int64_t output_index = -1;
  double numeric = 0, symbolic = 0, abs_error = 0, rel_error = 0, tolerance = 0;
  double max_abs_numeric = 0;       // scale of the Jacobian (or of the directional derivatives)
  std::int64_t perturbations = 0;   // finite differences taken
  std::int64_t changed_output = 0;  // of which changed the output at all
  std::string message;              // why it failed, or a note

  bool ok() const { return status != Status::Failed; }
  std::string to_string() const;  // one line
};

struct GradCheckResult {
  std::string what;              // the op, or "graph function"
  GradCheckOptions options;      // with the defaults resolved
  DType dtype = DType::Invalid;  // the checked (first floating) dtype
  std::vector<InputCheck> inputs;
  bool passed = false;  // every input ok, and at least one Passed

  // A header line (op, mode, order, backend and device, seed, step, tolerances) and one line per input.
  std::string report() const;
  // The same as one line of JSON: {"op", "passed", ..., "inputs": [{"name", "status", ...}]}.
  std::string json() const;
  std::string_view backend_name() const;  // options.backend; "default" where it is ""
};

// Checks op `op` at `inputs` (floating inputs are checked; integer ones are fixed constants).
// `attrs` need not name the type attributes that the inputs bind. Every floating output counts
// (full mode: every element of every output is one row of the Jacobian).
GradCheckResult check_gradients(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {},
                                const GradCheckOptions& options = {});

// The names check_gradients gives the inputs of `op` (its argument names; the elements of a list
// argument get a suffix: inputs_0, inputs_1, ...), as GradCheckOptions::inputs_to_check takes them.
std::vector<std::string> gradcheck_input_names(const std::string& op, const std::vector<Tensor>& inputs,
                                               const AttrMap& attrs = {});

// Builds a function of its inputs (placeholders of the inputs' dtypes, or float64 for the
// numeric side) and returns its outputs. Constants inside should take their dtype from the inputs.
using GraphFunction = std::function<std::vector<Output>(Graph& graph, const std::vector<Output>& inputs)>;

// The graph-level variant: checks the gradients of `fn` with respect to each floating input.
GradCheckResult check_graph_gradients(const GraphFunction& fn, const std::vector<Tensor>& inputs,
                                      const GradCheckOptions& options = {}, std::vector<std::string> input_names = {});

// Uniform values in [lo, hi) of a floating dtype, exactly representable in it, from a seed.
Tensor random_tensor(DType dtype, const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

}  // namespace dagrad
