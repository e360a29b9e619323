// CUDA kernels for variables: VariableV2 reads the session's store, Assign stores a device copy.
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/core/variables.hpp"

namespace dagrad::cuda {
namespace {

VariableStore& store(KernelContext& c) {
  if (c.variables == nullptr) invalid_argument(c.op_name(), ": variables exist only inside a Session");
  return *c.variables;
}

}  // namespace

void register_state_kernels(KernelRegistry& r) {
  add_kernels(r, "VariableV2", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const std::string& name = c.variable_names.back();
      Tensor value = store(c).get_or_undefined(name);
      if (value.defined() && value.shape() != c.output_shape(0)) {
        invalid_argument("VariableV2: variable '", name, "' holds shape ", value.shape().to_string(),
                         " but was declared ", c.output_shape(0).to_string());
      }
      // A value stored from the host (e.g. restored before the run) moves to the device once.
      if (value.defined() && value.device() != c.device()) {
        value = value.to(c.device());
        store(c).set(name, value);
      }
      c.set_output(0, std::move(value));
    };
  });
  add_kernels(r, "Assign", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor value = c.input(1).clone();  // a device-to-device copy, ordered after queued kernels
      store(c).set(c.variable_names.at(0), value);
      c.set_output(0, std::move(value));
    };
  });
}

}  // namespace dagrad::cuda
