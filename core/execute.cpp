// execute_kernel: run-time shape inference, the kernel call, and output checks.
#include "dagrad/core/execute.hpp"

#include "dagrad/core/variables.hpp"

namespace dagrad {

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
  call.kernel->fn(context);
  // Checked after the kernel (allocate_output checks before allocating): an op whose kernel
  // refuses to run, like an unfed Placeholder of partly unknown shape, reports its own error.
  for (const auto& s : out_shapes) {
    if (!s.is_fully_defined()) fail(Code::Internal, def.name, ": output shape ", s.to_string(), " unknown at run time");
  }
  auto& outputs = context.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    if (!out.defined() && def.outputs[i].is_ref) continue;  // an uninitialised variable
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
