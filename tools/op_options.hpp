// The options shared by every subcommand that runs one op (run-op, gradcheck, bench-op):
// OP, --in, --attr, --dtype, --device, --threads, --backend, --path; and turning them into a ready call.
#pragma once

#include <string>
#include <vector>

#include "dagrad/core/op_registry.hpp"

namespace CLI {
class App;
}

namespace dagrad::cli {

struct OpOptions {
  std::string op;
  std::vector<std::string> inputs;  // NAME=SPEC
  std::vector<std::string> attrs;   // NAME=VALUE
  std::string dtype;                // "": inputs keep their dtypes
  std::string device = "cpu";
  int threads = 0;         // 0: all cores
  std::string backend;     // "": the highest-priority kernel
  std::string path;        // "": the kernel's own choice of path; else forced (EagerOptions::kernel_path)
  std::string case_label;  // non-empty: inputs and attributes from this op case (OpDef::cases)
};

// Adds the OP positional and the options above to `app`; values land in `options`, which must
// outlive parsing.
void add_op_options(CLI::App& app, OpOptions& options);
// The usage-line fragment for those options.
inline constexpr const char* kOpOptionsUsage =
    "OP [--in NAME=SPEC]... | [--case LABEL] [--attr NAME=VALUE]... [--dtype T] [--device cpu|cuda] [--threads N] "
    "[--backend B] [--path P]";

// An op call with parsed attributes and inputs cast to --dtype and placed on the device.
struct PreparedOp {
  const OpDef* def = nullptr;
  std::vector<Tensor> inputs;
  AttrMap attrs;
  Device device;
  std::string backend;
  std::string kernel_path;
};

// Parses and checks everything (throws dagrad::Error or UsageError); sets the thread count.
PreparedOp prepare_op(const OpOptions& options);
// Runs the call through the library's eager run_op; outputs stay on the op's device.
std::vector<Tensor> run_prepared(const PreparedOp& op);

}  // namespace dagrad::cli
