// execute_kernel: run-time shape inference, the kernel call, and output checks.
#include "dagrad/core/execute.hpp"

#include <new>
#include <stdexcept>

#include "dagrad/core/variables.hpp"

namespace dagrad {
namespace {

bool has_ref_arg(const std::vector<ArgDef>& args) {
  for (const auto& a : args) {
    if (a.is_ref) return true;
  }
  return false;
}

bool is_empty(const Shape& s) {
  for (auto d : s.dims()) {
    if (d == 0) return true;
  }
  return false;
}

// When every output is empty there is nothing to compute, and a kernel's loops over the other,
// possibly huge, dims (a [0, 10^18] tensor) would only spin: the outputs are allocated and the
// kernel is not called. Not for ops with side effects (variables, stateful ops) nor for ops
// without inputs (Placeholder refuses to run unfed, Const hands over its value).
bool nothing_to_compute(const OpDef& def, const std::vector<Shape>& out_shapes) {
  if (def.stateful || def.inputs.empty() || out_shapes.empty()) return false;
  if (has_ref_arg(def.inputs) || has_ref_arg(def.outputs)) return false;
  for (const auto& s : out_shapes) {
    if (!s.is_fully_defined() || !is_empty(s)) return false;
  }
  return true;
}

// Runs the kernel; memory exhaustion inside it (a std::vector too large for this machine) is
// reported as dagrad's ResourceExhausted naming the op, never as std::bad_alloc.
void run_kernel(const KernelCall& call, KernelContext& context) {
  try {
    call.kernel->fn(context);
  } catch (const Error& e) {
    // A workspace buffer over the memory limit: say which op asked for it.
    const std::string_view what = e.what();
    if (e.code() != Code::ResourceExhausted || what.starts_with(call.def->name)) throw;
    fail(Code::ResourceExhausted, call.def->name, ": ", what);
  } catch (const std::bad_alloc&) {
    fail(Code::ResourceExhausted, call.def->name, ": out of memory in the ", call.kernel->backend, " kernel");
  } catch (const std::length_error& e) {
    fail(Code::ResourceExhausted, call.def->name, ": out of memory in the ", call.kernel->backend, " kernel (",
         e.what(), ")");
  }
}

}  // namespace

const KernelDef& select_kernel(const OpDef& def, const AttrMap& attrs, Device device, std::string_view backend) {
  const DType dtype = def.kernel_dtype(attrs);
  const KernelDef* kernel = kernel_registry().find(def.name, device.kind, dtype, backend);
  if (kernel == nullptr && !backend.empty()) {
    // A named backend without this op falls back to the default choice for the device.
    kernel = kernel_registry().find(def.name, device.kind, dtype);
  }
  if (kernel == nullptr) return kernel_registry().get(def.name, device.kind, dtype);
  return *kernel;
}

std::vector<Tensor> execute_kernel(const KernelCall& call, std::vector<Tensor> inputs) {
  const OpDef& def = *call.def;
  const auto args = flat_input_args(def, *call.attrs);
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<const Tensor*> values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor& in = inputs[i];
    const ArgDef& arg = *args[i];
    if (!in.defined()) {
      if (arg.is_ref) {
        // An uninitialised variable may be assigned, never read.
        dtypes.push_back(DType::Invalid);
        shapes.emplace_back();
        values.push_back(nullptr);
        continue;
      }
      const std::string& var = call.variable_names.size() > i ? call.variable_names[i] : std::string();
      fail(Code::FailedPrecondition, "Attempting to use uninitialized value ", var.empty() ? arg.name : var);
    }
    if (arg.host_memory && !in.device().is_cpu()) in = in.to(Device::cpu());
    // A host-memory output (Shape's and BroadcastGradientArgs' on a GPU, as in TF) read by a
    // device input is copied to the device, as TF's placer inserts a host-to-device copy.
    if (!arg.host_memory && in.device().is_cpu() && !call.device.is_cpu()) in = in.to(call.device);
    if (!arg.host_memory && in.device() != call.device) {
      invalid_argument(def.name, ": input '", arg.name, "' is on ", in.device().to_string(), " but the op runs on ",
                       call.device.to_string());
    }
    dtypes.push_back(in.dtype());
    shapes.push_back(in.shape());
    values.push_back(in.device().is_cpu() ? &in : nullptr);
  }
  const std::vector<Shape> out_shapes = infer_shapes(def, *call.attrs, dtypes, shapes, values);
  KernelContext context(def.name, call.node_name, *call.attrs, call.device, std::move(inputs), *call.output_dtypes,
                        out_shapes);
  context.variables = call.variables;
  context.variable_names = call.variable_names;
  context.stream = call.stream;
  context.kernel_path = call.kernel_path;
  if (nothing_to_compute(def, out_shapes)) {
    for (int i = 0; i < context.num_outputs(); ++i) context.allocate_output(i);
  } else {
    run_kernel(call, context);
  }
  if (context.deferred()) {
    if (call.deferred != nullptr)
      *call.deferred = std::move(context.deferred());
    else
      context.deferred()(true);
  }
  if (call.ran_path != nullptr) *call.ran_path = context.ran_path;
  // Checked after the kernel (allocate_output checks before allocating): an op whose kernel
  // refuses to run, like an unfed Placeholder of partly unknown shape, reports its own error.
  for (const auto& s : out_shapes) {
    if (!s.is_fully_defined()) fail(Code::Internal, def.name, ": output shape ", s.to_string(), " unknown at run time");
  }
  auto& outputs = context.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    // An uninitialised variable; the schema is looked up only then, off the path of every call.
    if (!out.defined() && flat_output_args(def, *call.attrs).at(i)->is_ref) continue;
    if (!out.defined()) fail(Code::Internal, def.name, ": kernel ", call.kernel->backend, " left output ", i, " unset");
    if (out.dtype() != (*call.output_dtypes)[i] || out.shape() != out_shapes[i]) {
      fail(Code::Internal, def.name, ": kernel ", call.kernel->backend, " produced ", dtype_name(out.dtype()), " ",
           out.shape().to_string(), " for output ", i, "; expected ", dtype_name((*call.output_dtypes)[i]), " ",
           out_shapes[i].to_string());
    }
  }
  return std::move(outputs);
}

}  // namespace dagrad
