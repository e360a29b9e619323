// Wiring of the shared op options into CLI11, and their conversion into an eager op call.
#include "dagrad/tools/op_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "dagrad/core/eager.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/threading.hpp"
#include "dagrad/tools/attr_args.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/input_spec.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

std::string check_floating_dtype(const std::string& text) {
  try {
    if (is_floating(parse_dtype(text))) return {};
  } catch (const Error&) {
  }
  return "unknown floating dtype " + abbreviated(text) + "; expected half, bfloat16, float or double";
}

// The dtype a case runs in: --dtype, else the case's first, else float where the op allows it.
DType case_dtype(const OpDef& def, const OpCase& c, DType requested) {
  if (requested != DType::Invalid) return requested;
  if (!c.dtypes.empty()) return c.dtypes.front();
  const std::vector<DType> allowed = def.kernel_dtypes();
  if (allowed.empty() || std::find(allowed.begin(), allowed.end(), DType::Float32) != allowed.end())
    return DType::Float32;
  return allowed.front();
}

// --case LABEL: the inputs of one of the op's cases, made as `dagrad check` makes them; the case's
// attributes under those given with --attr.
OpInputs case_inputs(const OpDef& def, const std::string& label, DType requested, AttrMap& attrs) {
  if (!def.cases) invalid_argument(def.name, ": --case: the op has no cases (", def.no_cases_reason, ")");
  const std::vector<OpCase> cases = def.cases();
  const auto found = std::find_if(cases.begin(), cases.end(), [&](const OpCase& c) { return c.label == label; });
  if (found == cases.end()) {
    std::string labels;
    for (const OpCase& c : cases) labels += (labels.empty() ? "'" : ", '") + c.label + "'";
    invalid_argument(def.name, ": --case: no case ", abbreviated(label), "; its cases are ", labels);
  }
  AttrMap merged = found->attrs;
  for (const auto& [name, value] : attrs) merged[name] = value;
  attrs = merged;
  OpInputs in;
  const DType dtype = case_dtype(def, *found, requested);
  in.tensors = make_case_inputs(*found, dtype, 0);
  AttrMap complete = attrs;
  std::vector<DType> dtypes;
  for (const Tensor& t : in.tensors) dtypes.push_back(t.dtype());
  complete_attrs(def, complete, dtypes);
  in.args = flat_input_args(def, complete);
  return in;
}

// A named backend must have this op's kernel: run_op would quietly fall back to another one,
// which would make a benchmark or a comparison lie.
void check_backend(const PreparedOp& op) {
  if (op.backend.empty()) return;
  AttrMap attrs = op.attrs;
  std::vector<DType> dtypes;
  for (const auto& t : op.inputs) dtypes.push_back(t.dtype());
  complete_attrs(*op.def, attrs, dtypes);
  const DType dtype = op.def->kernel_dtype(attrs);
  if (kernel_registry().find(op.def->name, op.device.kind, dtype, op.backend) != nullptr) return;
  std::string have;
  for (const KernelDef* k : kernel_registry().list(op.def->name)) {
    if (k->device == op.device.kind && k->dtype == dtype) have += (have.empty() ? "" : ", ") + k->backend;
  }
  fail(Code::NotFound, op.def->name, ": no kernel from backend '", op.backend, "' on ",
       device_kind_name(op.device.kind), " for dtype ", dtype_name(dtype),
       "; registered backends: ", have.empty() ? std::string("none") : have);
}

}  // namespace

void add_op_options(CLI::App& app, OpOptions& o) {
  app.add_option("OP", o.op, "Op name, as `dagrad ops` lists it")->required();
  app.add_option("--in", o.inputs,
                 "Input NAME=SPEC; SPEC is FILE.npy, random:D0,D1,...[:SEED], zeros:D0,D1,..., scalar:V or "
                 "ints:v0,v1,... (repeat for each input; a list input may be given several times)")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--attr", o.attrs, "Attribute NAME=VALUE, parsed by the op's schema (list(int) as 1,2,3)")
      ->allow_extra_args(false);
  app.add_option("--dtype", o.dtype, "Cast every floating input to T: half, bfloat16, float or double")
      ->check(check_floating_dtype);
  app.add_option("--device", o.device, "Device: cpu, cuda or cuda:N")->check(check_device);
  app.add_option("--threads", o.threads, "CPU threads (0: all cores)")->check(integer_in(0, 1 << 16));
  app.add_option("--backend", o.backend,
                 "Kernel backend, e.g. reference or cpu (default: the fastest registered; gradcheck: reference)");
  app.add_option("--case", o.case_label,
                 "Take the inputs and attributes from the op's case LABEL (`dagrad check` lists them); "
                 "--attr values override the case's");
  app.add_option("--path", o.path,
                 "Force a kernel path of the cpu backend, e.g. nhwc_fast or generic for the conv ops "
                 "(`dagrad ops --paths` lists them; other ops ignore it)");
}

PreparedOp prepare_op(const OpOptions& o) {
  PreparedOp op;
  op.def = &op_registry().get(o.op);
  op.attrs = parse_attr_args(*op.def, o.attrs);
  op.device = Device::parse(o.device);
  op.backend = o.backend;
  op.kernel_path = o.path;
  // Only the cpu kernels have paths: another backend would ignore the path, and a benchmark lie.
  if (!o.path.empty() && !o.backend.empty() && o.backend != "cpu")
    throw UsageError("--path forces a path of the cpu backend's kernels; --backend " + o.backend + " has none");
  device_runtime(op.device);  // "no CUDA device available" before any file is read
  const DType target = o.dtype.empty() ? DType::Invalid : parse_dtype(o.dtype);
  if (!o.case_label.empty() && !o.inputs.empty()) throw UsageError("--in and --case exclude each other");
  OpInputs in =
      o.case_label.empty() ? op_inputs(*op.def, o.inputs) : case_inputs(*op.def, o.case_label, target, op.attrs);
  for (std::size_t i = 0; i < in.tensors.size(); ++i) {
    Tensor t = std::move(in.tensors[i]);
    if (target != DType::Invalid && is_floating(t.dtype()) && t.dtype() != target) t = t.cast(target);
    // Shape-like inputs are read on the host; everything else goes to the op's device.
    if (!in.args[i]->host_memory && t.device() != op.device) t = t.to(op.device);
    op.inputs.push_back(std::move(t));
  }
  check_backend(op);
  set_num_threads(o.threads);
  return op;
}

std::vector<Tensor> run_prepared(const PreparedOp& op) {
  return run_op(op.def->name, op.inputs, op.attrs, {.name = {}, .backend = op.backend, .kernel_path = op.kernel_path});
}

}  // namespace dagrad::cli
