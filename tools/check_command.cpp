// `dagrad check [OP...] [--device D] [--dtype T]... [--order N] [--full] [--json]`: runs the op cases of the
// registry (OpDef::cases) on every backend of a device, forward and gradients, and prints a table of
// op x backend x dtype x {forward, gradient, second order}; exits 1 when any check fails.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <tuple>
#include <utility>

#include "dagrad/autodiff/op_check.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

struct CheckCommandOptions {
  std::vector<std::string> ops;
  std::string device = "cpu";
  std::vector<std::string> dtypes;
  int order = 2;
  bool json = false;
  bool full = false;
  std::string shard;  // "K/N"
};

// "K/N" with 1 <= K <= N <= 1000.
std::pair<int, int> parse_shard(const std::string& text) {
  int k = 0, n = 0;
  char slash = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%4d%c%4d%c", &k, &slash, &n, &rest) != 3 || slash != '/' || k < 1 || n < k || n > 1000)
    throw UsageError("--shard: expected K/N with 1 <= K <= N <= 1000, got " + abbreviated(text));
  return {k, n};
}

OpCheckOptions check_options(const CheckCommandOptions& o) {
  OpCheckOptions options;
  options.ops = o.ops;
  options.device = Device::parse(o.device);
  device_runtime(options.device);  // "no CUDA device available" before any case runs
  for (const std::string& name : o.dtypes) options.dtypes.push_back(parse_dtype(name));
  options.max_order = o.order;
  if (!o.shard.empty()) std::tie(options.shard, options.shards) = parse_shard(o.shard);
  options.gradients = o.order > 0;
  options.mode = o.full ? GradCheckMode::Full : GradCheckMode::Fast;
  return options;
}

}  // namespace

Subcommand add_check_command(CLI::App& parent) {
  auto o = std::make_shared<CheckCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "check", "Check every op's kernels against the reference and its gradients, from the ops' cases");
  app->add_option("OP", o->ops, "Ops to check (default: every op with cases)");
  app->add_option("--device", o->device, "Device whose backends are checked: cpu, cuda or cuda:N");
  app->add_option("--dtype", o->dtypes, "Check only this dtype (repeatable): half, bfloat16, float, double, ...");
  app->add_option("--order", o->order, "Highest gradient order checked: 0 (forward only), 1 or 2")
      ->check(integer_in(0, 2));
  app->add_option("--shard", o->shard, "Check only shard K of N of the ops (K/N), for parallel runs");
  app->add_flag("--full", o->full, "Whole Jacobians in the gradient checks (default: random directions)");
  app->add_flag("--json", o->json, "Print the report as JSON, one object per checked row");
  return {app,
          "dagrad check [OP...] [--device cpu|cuda] [--dtype T]... [--order 0|1|2] [--shard K/N] [--full] [--json]",
          [o] {
            const OpCheckReport report = check_ops(check_options(*o));
            std::cout << (o->json ? report.json() : report.table());
            if (!report.passed()) fail(Code::InvalidArgument, "check: some checks failed (the FAIL lines above)");
          }};
}

}  // namespace dagrad::cli
