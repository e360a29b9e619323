// `dagrad bench-op OP ...`: times one op through the same eager path as run-op and prints one
// JSON line: op, inputs' shapes, typed attributes, dtype, device, backend, path, threads, median
// and min ms, and flops and GFLOP/s where the op has a cost model (OpDef::cost).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "dagrad/core/threading.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/json_output.hpp"
#include "dagrad/tools/op_options.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

constexpr int kMaxRuns = 1000000;

struct BenchOptions {
  OpOptions op;
  int repeat = 10;
  int warmup = 2;
};

// The op's cost model (OpDef::cost) on this call's shapes, when it has one.
std::optional<double> op_flops(const PreparedOp& op, const AttrMap& attrs, const std::vector<Tensor>& outputs) {
  std::vector<Shape> inputs, results;
  for (const Tensor& t : op.inputs) inputs.push_back(t.shape());
  for (const Tensor& t : outputs) results.push_back(t.shape());
  return op.def->flops({attrs, inputs, results});
}

void run(const BenchOptions& o) {
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  const PreparedOp op = prepare_op(o.op);
  for (int i = 0; i < o.warmup; ++i) run_prepared(op);
  std::vector<double> ms;
  std::vector<Tensor> outputs;
  for (int i = 0; i < o.repeat; ++i) {
    outputs.clear();  // the previous outputs go back to the allocator's cache, as in a session
    const auto start = std::chrono::steady_clock::now();
    outputs = run_prepared(op);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  AttrMap attrs = op.attrs;
  std::vector<DType> dtypes;
  for (const auto& t : op.inputs) dtypes.push_back(t.dtype());
  complete_attrs(*op.def, attrs, dtypes);

  // Input shapes by argument name; a list argument's tensors as name_0, name_1, ... (as gradcheck names them).
  nlohmann::json inputs = nlohmann::json::object();
  const std::vector<const ArgDef*> args = flat_input_args(*op.def, attrs);
  std::map<std::string, int> list_index;
  for (std::size_t i = 0; i < op.inputs.size() && i < args.size(); ++i) {
    const std::string& arg = args[i]->name;
    const std::string name = args[i]->number_attr.empty() ? arg : str_cat(arg, "_", list_index[arg]++);
    inputs[name] = shape_json(op.inputs[i].shape());
  }
  const DType dtype = op.def->kernel_dtype(attrs);
  nlohmann::json line = {
      {"op", op.def->name},
      {"inputs", inputs},
      {"attrs", attrs_json(attrs)},
      {"dtype", dtype == DType::Invalid ? nlohmann::json(nullptr) : nlohmann::json(dtype_name(dtype))},
      {"device", op.device.to_string()},
      {"backend", op.backend.empty() ? "default" : op.backend},
      {"path", op.kernel_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(op.kernel_path)},
      {"threads", num_threads()},
      {"repeat", o.repeat},
      {"warmup", o.warmup},
      {"median_ms", median},
      {"min_ms", ms.front()}};
  // Exact: JSON numbers carry a double's shortest round-trip digits.
  if (const auto flops = op_flops(op, attrs, outputs)) {
    line.update(
        {{"flops", *flops}, {"gflops_median", *flops / (median * 1e6)}, {"gflops_best", *flops / (ms.front() * 1e6)}});
  }
  print_json_line(line);
}

}  // namespace

Subcommand add_bench_op_command(CLI::App& parent) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* app = parent.add_subcommand("bench-op", "Time one op and print a JSON line");
  add_op_options(*app, options->op);
  app->add_option("--repeat", options->repeat, "Timed runs (default 10)")->check(integer_in(1, kMaxRuns));
  app->add_option("--warmup", options->warmup, "Untimed runs first (default 2)")->check(integer_in(0, kMaxRuns));
  return {app, std::string("dagrad bench-op ") + kOpOptionsUsage + " [--repeat N] [--warmup N]",
          [options] { run(*options); }};
}

}  // namespace dagrad::cli
