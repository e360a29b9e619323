// `dagrad gradcheck OP ...`: the finite-difference gradient checker on one op (on the reference
// kernels unless --backend or --path says otherwise), a header naming the backend checked and one
// line per input, or one line of JSON; exit status 0 when every input passes, 1 when any fails.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "dagrad/autodiff/gradient_checker.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/op_options.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

struct GradCheckCommandOptions {
  OpOptions op;
  std::string mode = "full";
  int order = 1;
  GradCheckOptions check;
  bool json = false;
};

// The kernels checked when --backend is not given: as in the library (GradCheckOptions::backend),
// the reference kernels, so that a failure is the gradient formula's; with --path, the cpu
// kernels, whose path it forces.
std::string checked_backend(const PreparedOp& op) {
  if (!op.backend.empty()) return op.backend;
  return op.kernel_path.empty() ? GradCheckOptions{}.backend : "cpu";
}

void run(const GradCheckCommandOptions& o) {
  const PreparedOp op = prepare_op(o.op);
  GradCheckOptions options = o.check;
  options.mode = o.mode == "fast" ? GradCheckMode::Fast : GradCheckMode::Full;
  options.order = o.order;
  options.backend = checked_backend(op);
  options.kernel_path = op.kernel_path;
  options.device = op.device;
  const GradCheckResult result = check_gradients(op.def->name, op.inputs, op.attrs, options);
  std::cout << (o.json ? result.json() : result.report());
  if (!result.passed) fail(Code::InvalidArgument, "gradcheck: ", op.def->name, " failed the gradient check");
}

}  // namespace

Subcommand add_gradcheck_command(CLI::App& parent) {
  auto o = std::make_shared<GradCheckCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "gradcheck", "Check an op's symbolic gradients against finite differences evaluated in float64");
  add_op_options(*app, o->op);
  app->add_option("--mode", o->mode, "full: whole Jacobians; fast: random directional derivatives")
      ->check(CLI::IsMember({"full", "fast"}));
  app->add_option("--order", o->order, "1: the gradient; 2: the gradient of the gradient")->check(integer_in(1, 2));
  app->add_option("--seed", o->check.seed, "Seed of the random output weights and directions")
      ->check(unsigned_integer());
  app->add_option("--directions", o->check.directions, "Fast mode: random directions per input")
      ->check(integer_in(1, 10000));
  app->add_option("--step", o->check.step, "Finite-difference step (default: per dtype)")->check(positive_number());
  app->add_option("--atol", o->check.atol,
                  "Absolute tolerance, times max(1, largest Jacobian entry) (default: per dtype)")
      ->check(positive_number());
  app->add_option("--rtol", o->check.rtol, "Relative tolerance (default: per dtype)")->check(positive_number());
  app->add_flag("--json", o->json, "Print the result as one line of JSON");
  return {app,
          std::string("dagrad gradcheck ") + kOpOptionsUsage +
              " [--mode full|fast] [--order 1|2] [--seed N] [--directions N] [--step H] [--atol A] [--rtol R] [--json]",
          [o] { run(*o); }};
}

}  // namespace dagrad::cli
