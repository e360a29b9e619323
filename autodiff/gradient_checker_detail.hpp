// Internal pieces of the gradient checker shared by its two source files (not a public header).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dagrad/autodiff/gradient_checker.hpp"
#include "dagrad/core/session.hpp"

namespace dagrad::gradcheck {

// Builds the function on one side: `numeric` is true for the float64 (finite-difference) side.
using SidedFunction = std::function<std::vector<Output>(Graph&, const std::vector<Output>&, bool numeric)>;

struct Problem {
  std::string what;
  SidedFunction fn;
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  std::vector<bool> checked;  // floating inputs
  int order = 1;
  std::vector<Tensor> weights;  // order 2: fixed output weights, exact in the outputs' dtypes
  std::string backend;
  Device device;
  std::string kernel_path;  // the symbolic side's
};

// One side, built and ready to run.
struct Built {
  std::unique_ptr<Graph> graph;
  std::vector<Output> inputs;   // per input: a placeholder (checked) or a constant
  std::vector<Output> outputs;  // the checked function's floating outputs
  std::vector<Output> grad_ys;  // symbolic side: placeholders for the output weights
  std::vector<Output> grads;    // symbolic side, per input: the gradient, or invalid
  std::unique_ptr<Session> session;
};

struct Differences {
  std::vector<double> plus, minus;  // all outputs, concatenated
  bool changed = false;
};

Problem make_problem(SidedFunction fn, const std::vector<Tensor>& inputs, const GradCheckOptions& options,
                     std::vector<std::string> names);
Built build(const Problem& p, bool numeric);
FeedMap base_feeds(const Problem& p, const Built& b, bool numeric);
std::vector<double> run_outputs(Built& b, const FeedMap& feeds);
// Per input: the gradient values (empty where it has none), for output weights `grad_ys`.
std::vector<std::vector<double>> run_gradients(const Problem& p, Built& b, const std::vector<Tensor>& grad_ys);
Differences perturb(const Problem& p, Built& numeric, std::size_t input, std::int64_t element,
                    const std::vector<double>* direction, double h);
GradCheckResult run_check(Problem& p, const GradCheckOptions& options);

}  // namespace dagrad::gradcheck
