// Kernels keyed by (op, device kind, dtype), each from a named backend with a priority.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "dagrad/core/attr.hpp"
#include "dagrad/core/device.hpp"

namespace dagrad {

class VariableStore;

// What a kernel sees: validated attributes, inputs on its device, and inferred output shapes.
class KernelContext {
 public:
  KernelContext(std::string_view op, std::string_view node, const AttrMap& attrs, Device device,
                std::vector<Tensor> inputs, std::vector<DType> output_dtypes, std::vector<Shape> output_shapes);

  std::string_view op_name() const { return op_; }
  std::string_view node_name() const { return node_; }
  const AttrMap& attrs() const { return *attrs_; }
  template <class T>
  const T& attr(std::string_view name) const {
    return get_attr<T>(*attrs_, name);
  }
  Device device() const { return device_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return inputs_.at(static_cast<std::size_t>(i)); }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  const Shape& output_shape(int i) const { return output_shapes_.at(static_cast<std::size_t>(i)); }
  DType output_dtype(int i) const { return output_dtypes_.at(static_cast<std::size_t>(i)); }
  // Allocates output i with its inferred dtype and shape on the kernel's device.
  Tensor& allocate_output(int i);
  // Output `output` in the buffer of the first of `inputs` where that is safe (TF's
  // forward_input_or_allocate_output), else allocate_output(output). Safe: no other Tensor holds
  // the buffer (the executor hands over an input it reads for the last time; feeds, fetches,
  // Const values and variables keep a reference of their own) and it has the output's dtype,
  // shape and device. The kernel must then read each element of that input before writing the
  // output element of the same index, and no element of it after that.
  Tensor& forward_input_or_allocate_output(std::initializer_list<int> inputs, int output);
  // Hands over an existing tensor (forwarding an input, a constant) as output i.
  void set_output(int i, Tensor tensor);
  std::vector<Tensor>& outputs() { return outputs_; }

  // Variables, for stateful ops: `variable_names[i]` names the variable behind ref input i; an op
  // whose output is a variable (VariableV2) finds its own name after its inputs' names.
  VariableStore* variables = nullptr;
  std::vector<std::string> variable_names;
  // Backend-specific execution handle (the CUDA stream of the session), or null.
  void* stream = nullptr;
  // A kernel path forced by name (SessionOptions / EagerOptions::kernel_path), or empty for the
  // kernel's own choice. Only kernels with a table of paths read it (the CPU conv kernels).
  std::string_view kernel_path;
  // The path the kernel ran, for profiles: set by kernels with a table of paths (a name of static
  // storage from KernelDef::paths), empty otherwise.
  std::string_view ran_path;

  // Work that completes after the kernel returns (an exchange in flight): the kernel allocates its
  // outputs, keeps what the work needs alive in `finish`, and hands it over here. finish(false)
  // makes progress and returns whether the work is done; finish(true) returns once it is, or
  // throws. Nothing reads the outputs before then: the session executor finishes the work before
  // the first node that reads them runs (polling it after every node meanwhile) and before the
  // run returns; every other caller of a kernel (eager ops, the CLI) finishes it at once.
  using Finish = std::function<bool(bool wait)>;
  void defer(Finish finish) { deferred_ = std::move(finish); }
  Finish& deferred() { return deferred_; }

 private:
  Finish deferred_;
  std::string_view op_;
  std::string_view node_;
  const AttrMap* attrs_;
  Device device_;
  std::vector<Tensor> inputs_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  std::vector<Tensor> outputs_;

  bool can_forward(int input, int output) const;
};

using KernelFn = std::function<void(KernelContext&)>;

struct KernelDef {
  std::string op;
  Device::Kind device = Device::Kind::CPU;
  DType dtype = DType::Invalid;
  std::string backend;  // "reference", "cpu", "cuda", "cudnn"
  int priority = 0;     // the highest wins unless a backend is asked for by name
  KernelFn fn;
  // The kernel's paths in its own order of preference (the CPU conv kernels'), which a call can
  // force by name (KernelContext::kernel_path); empty for a kernel with one way of working.
  std::vector<std::string> paths;
};

// The words of the InvalidArgument a kernel raises when a forced path does not apply to the
// call (as opposed to one that does not exist): check_ops skips such a path for that case.
inline constexpr std::string_view kPathDoesNotApply = "does not apply to this call";

class OpRegistry;

// The tag of add_kernels that takes the dtypes from the op's schema.
struct SchemaDTypes {};
inline constexpr SchemaDTypes kSchemaDTypes{};

class KernelRegistry {
 public:
  KernelRegistry() = default;
  // With the op registry, registrations can take their dtypes from the schemas (kSchemaDTypes).
  explicit KernelRegistry(const OpRegistry* ops) : ops_(ops) {}

  void add(KernelDef def);
  // The kernel to run: from `backend` if named (else the highest priority). Throws NotFound
  // naming op, device and dtype when there is none.
  const KernelDef& get(std::string_view op, Device::Kind device, DType dtype, std::string_view backend = {}) const;
  const KernelDef* find(std::string_view op, Device::Kind device, DType dtype, std::string_view backend = {}) const;
  std::vector<const KernelDef*> list(std::string_view op = {}) const;
  // Declares the paths of every dtype's kernel of (op, device, backend); Internal if there is none.
  void set_paths(std::string_view op, Device::Kind device, std::string_view backend, std::vector<std::string> paths);
  // The dtypes the kernels of `op` are keyed by: what its kernel type attribute allows (every
  // dtype where it allows any). Throws Internal for an op without a type attribute, an unknown
  // op, or a registry made without an op registry.
  std::vector<DType> schema_dtypes(std::string_view op) const;

 private:
  const OpRegistry* ops_ = nullptr;
  std::map<std::tuple<std::string, Device::Kind, DType>, std::vector<KernelDef>, std::less<>> kernels_;
};

KernelRegistry& kernel_registry();

// Registers one kernel function for several dtypes: `fn` is instantiated per dtype.
template <class F>
void add_kernels(KernelRegistry& registry, std::string op, Device::Kind device, std::string backend, int priority,
                 std::initializer_list<DType> dtypes, F&& make_fn) {
  for (DType dtype : dtypes) {
    registry.add({op, device, dtype, backend, priority, visit_dtype(dtype, make_fn)});
  }
}

// The same for every dtype that op's schema allows: a backend that covers its ops whole (the
// reference) cannot drift from the schemas.
template <class F>
void add_kernels(KernelRegistry& registry, std::string op, Device::Kind device, std::string backend, int priority,
                 SchemaDTypes, F&& make_fn) {
  for (DType dtype : registry.schema_dtypes(op)) {
    registry.add({op, device, dtype, backend, priority, visit_dtype(dtype, make_fn)});
  }
}

// The one float-only idiom: add_kernels instantiates a factory for every dtype the dispatch
// switch knows; wrapped in float_kernels, the real factory is instantiated only for the four float
// types, so float-only kernels need not compile for integers or bool:
//   add_kernels(r, "Relu", kCpu, kBackend, kPriority, kFloats, float_kernels([]<class T>() { ... }));
template <class F>
auto float_kernels(F make) {
  return [make]<class T>() -> KernelFn {
    if constexpr (is_floating_v<T>)
      return make.template operator()<T>();
    else
      return nullptr;
  };
}

}  // namespace dagrad
