// run_op: complete attributes, pick the kernel for the inputs' device, execute in the default arena.
#include "dagrad/core/eager.hpp"

#include "dagrad/core/execute.hpp"
#include "dagrad/core/graph.hpp"
#include "dagrad/core/threading.hpp"

namespace dagrad {

std::vector<Tensor> run_op(std::string_view op, std::vector<Tensor> inputs, AttrMap attrs, EagerOptions options) {
  try {
    const OpDef& def = op_registry().get(op);
    if (def.stateful) invalid_argument(op, " is stateful and runs only inside a Session");
    std::vector<DType> dtypes;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) invalid_argument(op, ": input ", i, " is an undefined tensor");
      dtypes.push_back(inputs[i].dtype());
    }
    const std::vector<DType> output_dtypes = complete_attrs(def, attrs, dtypes);
    Device device = Device::cpu();
    const auto args = flat_input_args(def, attrs);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!args[i]->host_memory) {
        device = inputs[i].device();
        break;
      }
    }
    KernelCall call{&def,   &attrs,  options.name, &output_dtypes, &select_kernel(def, attrs, device, options.backend),
                    device, nullptr, {},           nullptr,        options.kernel_path};
    std::vector<Tensor> outputs;
    default_arena().execute([&] { outputs = execute_kernel(call, std::move(inputs)); });
    if (!device.is_cpu()) device_runtime(device).synchronize(device.index);
    return outputs;
  } catch (const Error& e) {
    throw Error(e.code(), with_node_name(e.what(), options.name));
  }
}

}  // namespace dagrad
