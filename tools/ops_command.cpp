// `dagrad ops [NAME] [--kernels] [--paths]`: every registered op's schema, read from the registries,
// and the cpu backend's kernel paths (what --path forces) where an op has a table of them.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>

#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/registries.hpp"
#include "dagrad/tools/command.hpp"

namespace dagrad::cli {
namespace {

struct OpsOptions {
  std::string name;
  bool kernels = false;
  bool paths = false;
};

// "cpu float: cpu, reference" per (device, dtype), backends in priority order.
void print_kernels(const OpDef& def) {
  std::map<std::pair<Device::Kind, DType>, std::string> lines;  // DType order: half, bfloat16, ...
  for (const KernelDef* k : kernel_registry().list(def.name)) {
    auto& line = lines[{k->device, k->dtype}];
    line += (line.empty() ? "" : ", ") + k->backend;
  }
  if (lines.empty()) {
    std::cout << "    kernels: none\n";
    return;
  }
  std::cout << "    kernels:\n";
  for (const auto& [key, backends] : lines) {
    const std::string_view dtype = key.second == DType::Invalid ? "(any dtype)" : dtype_name(key.second);
    std::cout << "      " << device_kind_name(key.first) << " " << dtype << ": " << backends << "\n";
  }
}

// "cpu paths: depthwise, ..., generic" in dispatch order; nothing for ops without a table.
void print_paths(const OpDef& def) {
  const auto paths = cpu::conv2d_paths(def.name);
  if (paths.empty()) return;
  std::cout << "    cpu paths:";
  for (std::size_t i = 0; i < paths.size(); ++i) std::cout << (i ? ", " : " ") << paths[i];
  std::cout << "\n";
}

void print_op(const OpDef& def, const OpsOptions& options) {
  std::cout << def.signature() << "\n";
  if (!def.doc.empty()) std::cout << "    " << def.doc << "\n";
  if (options.kernels) print_kernels(def);
  if (options.paths) print_paths(def);
}

}  // namespace

Subcommand add_ops_command(CLI::App& parent) {
  auto options = std::make_shared<OpsOptions>();
  CLI::App* app = parent.add_subcommand("ops", "List registered ops with their schemas");
  app->add_option("NAME", options->name, "Show only this op");
  app->add_flag("--kernels", options->kernels, "Also list the registered (device, dtype, backend) kernels");
  app->add_flag("--paths", options->paths, "Also list the cpu kernel paths, in dispatch order (what --path forces)");
  return {app, "dagrad ops [NAME] [--kernels] [--paths]", [options] {
            if (!options->name.empty()) {
              print_op(op_registry().get(options->name), *options);
              return;
            }
            bool first = true;
            for (const OpDef* def : op_registry().list()) {
              if (!first) std::cout << "\n";
              first = false;
              print_op(*def, *options);
            }
          }};
}

}  // namespace dagrad::cli
