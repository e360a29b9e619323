// Kernel registration, lookup and the kernel context.
#include "dagrad/core/kernel_registry.hpp"

#include <algorithm>

#include "dagrad/core/op_registry.hpp"

namespace dagrad {

KernelContext::KernelContext(std::string_view op, std::string_view node, const AttrMap& attrs, Device device,
                             std::vector<Tensor> inputs, std::vector<DType> output_dtypes,
                             std::vector<Shape> output_shapes)
    : op_(op),
      node_(node),
      attrs_(&attrs),
      device_(device),
      inputs_(std::move(inputs)),
      output_dtypes_(std::move(output_dtypes)),
      output_shapes_(std::move(output_shapes)),
      outputs_(output_shapes_.size()) {}

Tensor& KernelContext::allocate_output(int i) {
  auto& slot = outputs_.at(static_cast<std::size_t>(i));
  // Run-time shapes are concrete unless the op's shape function is wrong: say so, not "bad shape".
  if (!output_shape(i).is_fully_defined()) {
    fail(Code::Internal, op_, ": output shape ", output_shape(i).to_string(), " unknown at run time");
  }
  try {
    slot = Tensor::empty(output_dtype(i), output_shape(i), device_);
  } catch (const Error& e) {
    // Too large for the memory limit, or for int64: say which op and which output asked.
    throw Error(e.code(), str_cat(op_, ": output ", i, ": ", e.what()));
  }
  return slot;
}

bool KernelContext::can_forward(int input, int output) const {
  const Tensor& in = inputs_.at(static_cast<std::size_t>(input));
  return in.buffer_unshared() && in.device() == device_ && in.dtype() == output_dtype(output) &&
         in.shape() == output_shape(output);
}

Tensor& KernelContext::forward_input_or_allocate_output(std::initializer_list<int> inputs, int output) {
  for (int input : inputs) {
    if (!can_forward(input, output)) continue;
    auto& slot = outputs_.at(static_cast<std::size_t>(output));
    slot = inputs_[static_cast<std::size_t>(input)];  // input(input) stays readable: one buffer, two names
    return slot;
  }
  return allocate_output(output);
}

void KernelContext::set_output(int i, Tensor tensor) {
  if (tensor.defined() && (tensor.dtype() != output_dtype(i) || tensor.shape() != output_shape(i))) {
    fail(Code::Internal, op_, ": kernel produced output ", i, " as ", dtype_name(tensor.dtype()), " ",
         tensor.shape().to_string(), " but ", dtype_name(output_dtype(i)), " ", output_shape(i).to_string(),
         " was inferred");
  }
  outputs_.at(static_cast<std::size_t>(i)) = std::move(tensor);
}

void KernelRegistry::add(KernelDef def) {
  // Keyed by the schema: a kernel no call could select is a mistake, said at registration.
  if (ops_ != nullptr) {
    const std::string what = str_cat("kernel ", def.op, " for ", device_kind_name(def.device), "/",
                                     dtype_name(def.dtype), " of backend ", def.backend);
    const OpDef* op = ops_->find(def.op);
    if (op == nullptr) fail(Code::NotFound, what, ": op '", def.op, "' is not registered");
    const std::vector<DType> allowed = op->kernel_dtypes();
    const bool dtype_ok = allowed.empty() ? def.dtype == DType::Invalid
                                          : std::find(allowed.begin(), allowed.end(), def.dtype) != allowed.end();
    if (!dtype_ok) invalid_argument(what, ": the schema of ", def.op, " does not allow ", dtype_name(def.dtype));
  }
  auto& list = kernels_[{def.op, def.device, def.dtype}];
  for (const auto& k : list) {
    if (k.backend == def.backend) {
      fail(Code::Internal, "kernel ", def.op, " for ", device_kind_name(def.device), "/", dtype_name(def.dtype),
           " registered twice by backend ", def.backend);
    }
  }
  list.push_back(std::move(def));
  std::stable_sort(list.begin(), list.end(),
                   [](const KernelDef& a, const KernelDef& b) { return a.priority > b.priority; });
}

const KernelDef* KernelRegistry::find(std::string_view op, Device::Kind device, DType dtype,
                                      std::string_view backend) const {
  auto it = kernels_.find(std::make_tuple(std::string(op), device, dtype));
  if (it == kernels_.end() || it->second.empty()) return nullptr;
  if (backend.empty()) return &it->second.front();
  for (const auto& k : it->second) {
    if (k.backend == backend) return &k;
  }
  return nullptr;
}

const KernelDef& KernelRegistry::get(std::string_view op, Device::Kind device, DType dtype,
                                     std::string_view backend) const {
  const KernelDef* def = find(op, device, dtype, backend);
  if (def == nullptr) {
    fail(Code::NotFound, "No kernel registered for op ", op, " on device ", device_kind_name(device), " with dtype ",
         dtype_name(dtype), backend.empty() ? "" : " from backend ", backend);
  }
  return *def;
}

void KernelRegistry::set_paths(std::string_view op, Device::Kind device, std::string_view backend,
                               std::vector<std::string> paths) {
  bool found = false;
  for (auto& [key, defs] : kernels_) {
    if (std::get<0>(key) != op || std::get<1>(key) != device) continue;
    for (KernelDef& def : defs) {
      if (def.backend != backend) continue;
      def.paths = paths;
      found = true;
    }
  }
  if (!found) fail(Code::Internal, "kernel paths of ", op, ": no ", backend, " kernel registered");
}

std::vector<DType> KernelRegistry::schema_dtypes(std::string_view op) const {
  if (ops_ == nullptr) fail(Code::Internal, "kernels of ", op, ": this kernel registry has no op registry");
  std::vector<DType> dtypes = ops_->get(op).kernel_dtypes();
  if (dtypes.empty()) fail(Code::Internal, "kernels of ", op, ": the op has no type attribute to take dtypes from");
  return dtypes;
}

std::vector<const KernelDef*> KernelRegistry::list(std::string_view op) const {
  std::vector<const KernelDef*> all;
  for (const auto& [key, defs] : kernels_) {
    if (!op.empty() && std::get<0>(key) != op) continue;
    for (const auto& d : defs) all.push_back(&d);
  }
  return all;
}

}  // namespace dagrad
