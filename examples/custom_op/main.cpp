// An op from outside dagrad, end to end: adds Swish and Sigmoid (swish_op.cpp), builds a graph
// with Swish, runs it, takes its gradient with dagrad::gradients and checks it three ways:
// against the formula, with finite differences (check_gradients, orders 1 and 2), and with the
// op case table that `dagrad check` runs (every kernel against the reference, every dtype).
// --plant-wrong-gradient replaces Swish's gradient with a wrong one first: the checks must fail.
// Exit status: 0 every check passed, 1 one failed (or an error), 2 usage.
#include <cmath>
#include <cstring>
#include <iostream>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/autodiff/gradients.hpp>
#include <dagrad/autodiff/op_check.hpp>
#include <dagrad/core/program.hpp>
#include <dagrad/core/session.hpp>
#include <dagrad/ops/array_ops.hpp>
#include <dagrad/ops/math_ops.hpp>

#include "swish_op.hpp"

namespace {

using namespace dagrad;

// d/dx sum(swish(x)) from the graph against s + x s (1 - s) in double.
bool gradient_matches_formula() {
  Graph g;
  const Output x = ops::placeholder(g, DType::Float64, Shape{2, 3}, "x");
  const Output loss = ops::reduce_sum_all(g, swish::swish(g, x));
  const Output dx = gradients(g, {loss}, {x}).at(0);
  const Tensor xs = Tensor::from_values<double>(Shape{2, 3}, {-3, -1, -0.25, 0, 0.5, 4});
  Session session(g);
  const Tensor got = session.run({{x, xs}}, dx);
  double worst = 0;
  for (std::int64_t i = 0; i < xs.num_elements(); ++i) {
    const double v = xs.data<double>()[i], s = 1 / (1 + std::exp(-v));
    worst = std::max(worst, std::fabs(got.data<double>()[i] - (s + v * s * (1 - s))));
  }
  std::cout << "d sum(swish(x)) / dx = " << got << " (largest error against the formula: " << worst << ")\n";
  return worst < 1e-12;
}

// Finite differences against the symbolic gradients, on the reference and on the CPU kernels.
bool gradients_pass_finite_differences() {
  bool passed = true;
  for (const char* op : {"Swish", "Sigmoid"}) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      for (int order : {1, 2}) {
        if (order == 2 && dtype != DType::Float64) continue;  // second differences need float64
        GradCheckOptions options;
        options.order = order;
        options.backend = "";  // the fastest kernels: this example's "cpu" ones
        const GradCheckResult result = check_gradients(op, {random_tensor(dtype, Shape{3, 5}, 7, -4, 4)}, {}, options);
        std::cout << result.report();
        passed = passed && result.passed;
      }
    }
  }
  return passed;
}

// What `dagrad --load-ops libswish_ops.so check Swish Sigmoid` runs.
bool case_table_passes() {
  OpCheckOptions options;
  options.ops = {"Swish", "Sigmoid"};
  const OpCheckReport report = check_ops(options);
  std::cout << report.table();
  return report.passed();
}

}  // namespace

int main(int argc, char** argv) {
  return run_main([&] {
    const bool plant = argc == 2 && std::strcmp(argv[1], "--plant-wrong-gradient") == 0;
    if (argc > 2 || (argc == 2 && !plant)) {
      std::cerr << "error: unknown argument\nusage: custom_op [--plant-wrong-gradient]\n";
      return kExitUsage;
    }
    OpLibrary library("swish");
    swish::add_ops(library);
    library.add_to(registries());
    if (plant) OpLibrary("planted").replace_gradient("Swish", swish::wrong_swish_gradient()).add_to(registries());

    const bool formula = gradient_matches_formula();
    const bool numeric = gradients_pass_finite_differences();
    const bool table = case_table_passes();
    std::cout << "formula: " << (formula ? "OK" : "FAILED") << ", finite differences: " << (numeric ? "OK" : "FAILED")
              << ", case table: " << (table ? "OK" : "FAILED") << "\n";
    if (formula && numeric && table) return kExitSuccess;
    std::cerr << "error: custom_op: a gradient check failed\n";
    return kExitError;
  });
}
