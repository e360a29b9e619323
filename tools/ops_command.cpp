// `dagrad ops [NAME...] [--kernels] [--device D] [--dtype T] [--paths] [--json]`: registered ops'
// schemas, read from the registries; their kernels, filtered by device and dtype; and the cpu
// backend's kernel paths (what --path forces) where an op has a table of them.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/registries.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/json_output.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

struct OpsOptions {
  std::vector<std::string> names;
  bool kernels = false;
  std::string device;  // "": every device
  std::string dtype;   // "": every dtype
  bool paths = false;
  bool json = false;
};

// Which kernels to list: none without --kernels, --device or --dtype; else those that match.
struct KernelFilter {
  bool enabled = false;
  std::optional<Device::Kind> device;
  std::optional<DType> dtype;

  bool accepts(const KernelDef& k) const {
    // A kernel registered for any dtype (DType::Invalid) runs whichever dtype is asked for.
    return (!device || k.device == *device) && (!dtype || k.dtype == DType::Invalid || k.dtype == *dtype);
  }
  std::vector<const KernelDef*> kernels_of(const OpDef& def) const {
    std::vector<const KernelDef*> out;
    for (const KernelDef* k : kernel_registry().list(def.name)) {
      if (accepts(*k)) out.push_back(k);
    }
    return out;
  }
};

KernelFilter make_filter(const OpsOptions& o) {
  KernelFilter f;
  f.enabled = o.kernels || !o.device.empty() || !o.dtype.empty();
  if (!o.device.empty()) f.device = Device::parse(o.device).kind;
  if (!o.dtype.empty()) f.dtype = parse_dtype(o.dtype);
  return f;
}

std::string_view kernel_dtype_name(DType dtype) { return dtype == DType::Invalid ? "(any dtype)" : dtype_name(dtype); }

// "cpu float: cpu, reference" per (device, dtype), backends in priority order.
void print_kernels(const std::vector<const KernelDef*>& kernels) {
  std::map<std::pair<Device::Kind, DType>, std::string> lines;  // DType order: half, bfloat16, ...
  for (const KernelDef* k : kernels) {
    auto& line = lines[{k->device, k->dtype}];
    line += (line.empty() ? "" : ", ") + k->backend;
  }
  if (lines.empty()) {
    std::cout << "    kernels: none\n";
    return;
  }
  std::cout << "    kernels:\n";
  for (const auto& [key, backends] : lines) {
    std::cout << "      " << device_kind_name(key.first) << " " << kernel_dtype_name(key.second) << ": " << backends
              << "\n";
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

void print_op(const OpDef& def, const OpsOptions& options, const KernelFilter& filter) {
  std::cout << def.signature() << "\n";
  if (!def.doc.empty()) std::cout << "    " << def.doc << "\n";
  if (filter.enabled) print_kernels(filter.kernels_of(def));
  if (options.paths) print_paths(def);
}

nlohmann::json args_json(const std::vector<ArgDef>& args) {
  nlohmann::json out = nlohmann::json::array();
  for (const ArgDef& a : args) {
    nlohmann::json arg = {{"name", a.name}};
    if (a.type_attr.empty())
      arg["dtype"] = dtype_name(a.fixed_type);
    else
      arg["type_attr"] = a.type_attr;
    if (!a.number_attr.empty()) arg["length_attr"] = a.number_attr;  // a list of that many tensors
    arg["host_memory"] = a.host_memory;
    arg["ref"] = a.is_ref;
    out.push_back(std::move(arg));
  }
  return out;
}

nlohmann::json attr_defs_json(const std::vector<AttrDef>& attrs) {
  nlohmann::json out = nlohmann::json::array();
  for (const AttrDef& a : attrs) {
    nlohmann::json attr = {{"name", a.name}, {"kind", attr_kind_name(a.kind)}, {"required", !a.default_value}};
    if (a.default_value) attr["default"] = attr_json(*a.default_value);
    if (!a.allowed_strings.empty()) attr["allowed"] = a.allowed_strings;
    if (!a.allowed_types.empty()) {
      attr["allowed"] = nlohmann::json::array();
      for (DType t : a.allowed_types) attr["allowed"].push_back(dtype_name(t));
    }
    if (a.minimum) attr["minimum"] = *a.minimum;
    out.push_back(std::move(attr));
  }
  return out;
}

nlohmann::json op_json(const OpDef& def, const OpsOptions& options, const KernelFilter& filter) {
  nlohmann::json op = {{"name", def.name},
                       {"signature", def.signature()},
                       {"doc", def.doc},
                       {"inputs", args_json(def.inputs)},
                       {"outputs", args_json(def.outputs)},
                       {"attrs", attr_defs_json(def.attrs)},
                       {"stateful", def.stateful},
                       {"has_cost_model", static_cast<bool>(def.cost)}};
  if (filter.enabled) {
    op["kernels"] = nlohmann::json::array();
    for (const KernelDef* k : filter.kernels_of(def)) {
      op["kernels"].push_back(
          {{"device", device_kind_name(k->device)},
           {"dtype", k->dtype == DType::Invalid ? nlohmann::json(nullptr) : nlohmann::json(dtype_name(k->dtype))},
           {"backend", k->backend},
           {"priority", k->priority}});
    }
  }
  if (options.paths) op["cpu_paths"] = cpu::conv2d_paths(def.name);
  return op;
}

void run(const OpsOptions& o) {
  const KernelFilter filter = make_filter(o);
  std::vector<const OpDef*> defs;
  for (const std::string& name : o.names) defs.push_back(&op_registry().get(name));  // NotFound: did you mean
  if (o.names.empty()) {
    // Every op; with a device or dtype filter, those that have a matching kernel.
    for (const OpDef* def : op_registry().list()) {
      if ((!filter.device && !filter.dtype) || !filter.kernels_of(*def).empty()) defs.push_back(def);
    }
  }
  if (o.json) {
    nlohmann::json ops = nlohmann::json::array();
    for (const OpDef* def : defs) ops.push_back(op_json(*def, o, filter));
    print_json_line({{"ops", ops}});
    return;
  }
  for (std::size_t i = 0; i < defs.size(); ++i) {
    if (i) std::cout << "\n";
    print_op(*defs[i], o, filter);
  }
}

}  // namespace

Subcommand add_ops_command(CLI::App& parent) {
  auto options = std::make_shared<OpsOptions>();
  CLI::App* app = parent.add_subcommand("ops", "List registered ops with their schemas");
  app->add_option("NAME", options->names, "Show only these ops");
  app->add_flag("--kernels", options->kernels, "Also list the registered (device, dtype, backend) kernels");
  app->add_option("--device", options->device, "List only kernels of this device (cpu or cuda); implies --kernels")
      ->check(check_device);
  app->add_option("--dtype", options->dtype, "List only kernels of this dtype (half, float, ...); implies --kernels")
      ->check(check_dtype);
  app->add_flag("--paths", options->paths, "Also list the cpu kernel paths, in dispatch order (what --path forces)");
  app->add_flag("--json", options->json, "Print the ops as one line of JSON");
  return {app, "dagrad ops [NAME...] [--kernels] [--device cpu|cuda] [--dtype T] [--paths] [--json]",
          [options] { run(*options); }};
}

}  // namespace dagrad::cli
