// `dagrad run-op OP ...`: runs one op eagerly on inputs from SPECs and prints or saves outputs
// (integers exactly, floating values with the digits that read back the same: Tensor::to_string).
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <string_view>

#include "dagrad/core/npy.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/input_spec.hpp"
#include "dagrad/tools/op_options.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

struct RunOpOptions {
  OpOptions op;
  std::vector<std::string> outs;  // NAME=FILE.npy, or FILE.npy for a single-output op
};

constexpr std::int64_t kPrintLimit = 100;  // values printed per output before "..."

// The op's outputs' names in order; the outputs of a list argument are NAME:0, NAME:1, ...
std::vector<std::string> output_names(const PreparedOp& op) {
  AttrMap attrs = op.attrs;
  std::vector<DType> dtypes;
  for (const Tensor& t : op.inputs) dtypes.push_back(t.dtype());
  complete_attrs(*op.def, attrs, dtypes);
  std::vector<std::string> names;
  std::map<const ArgDef*, int> listed;  // outputs named so far per list argument
  for (const ArgDef* arg : flat_output_args(*op.def, attrs)) {
    names.push_back(arg->number_attr.empty() ? arg->name : str_cat(arg->name, ":", listed[arg]++));
  }
  return names;
}

// Resolves --out arguments to (output index, file); "FILE.npy" alone names the only output.
std::vector<std::pair<std::size_t, std::string>> out_files(std::string_view op, const std::vector<std::string>& outputs,
                                                           const std::vector<std::string>& outs) {
  std::vector<std::pair<std::size_t, std::string>> files;
  std::string names;
  for (std::size_t i = 0; i < outputs.size(); ++i) names += (i ? ", " : "") + outputs[i];
  for (const auto& text : outs) {
    const std::size_t eq = text.find('=');
    std::size_t index = outputs.size();
    if (eq != std::string::npos) {
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i] == text.substr(0, eq)) index = i;
      }
    }
    if (index < outputs.size()) {
      files.emplace_back(index, text.substr(eq + 1));
    } else if (outputs.size() == 1 && eq == std::string::npos) {
      files.emplace_back(0, text);
    } else if (outputs.empty()) {
      invalid_argument(op, ": has no outputs to write");
    } else if (eq != std::string::npos) {
      invalid_argument(op, ": no output named '", text.substr(0, eq), "'; its outputs are ", names);
    } else {
      invalid_argument(op, ": has outputs ", names, "; name one with --out NAME=FILE.npy");
    }
    if (files.back().second.empty())
      throw UsageError("--out expects NAME=FILE.npy or FILE.npy, got " + abbreviated(text));
  }
  return files;
}

void run(const RunOpOptions& o) {
  const PreparedOp op = prepare_op(o.op);
  const std::vector<std::string> names = output_names(op);
  const auto files = out_files(op.def->name, names, o.outs);  // before running: a bad --out costs no compute
  const std::vector<Tensor> outputs = run_prepared(op);
  if (!files.empty()) {
    for (const auto& [index, path] : files) write_npy(path, outputs.at(index));
    return;
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor host = outputs[i].device().is_cpu() ? outputs[i] : outputs[i].to(Device::cpu());
    std::cout << names.at(i) << ": " << host.to_string(kPrintLimit) << "\n";
  }
}

}  // namespace

Subcommand add_run_op_command(CLI::App& parent) {
  auto options = std::make_shared<RunOpOptions>();
  CLI::App* app = parent.add_subcommand("run-op", "Run one op on .npy files or generated inputs");
  add_op_options(*app, options->op);
  app->add_option("--out", options->outs,
                  "Write an output: NAME=FILE.npy (FILE.npy alone for a single-output op); without --out, "
                  "every output is printed")
      ->allow_extra_args(false);
  return {app, std::string("dagrad run-op ") + kOpOptionsUsage + " [--out NAME=FILE.npy]...",
          [options] { run(*options); }};
}

}  // namespace dagrad::cli
