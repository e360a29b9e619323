// Lazily filled registries and the gradient registry.
#include "dagrad/core/registries.hpp"

namespace dagrad {

Registries& registries() {
  // Never destroyed: kernels may run from other static destructors at exit.
  static Registries* instance = [] {
    auto* r = new Registries();
    register_all(*r);
    return r;
  }();
  return *instance;
}

OpRegistry& op_registry() { return registries().ops; }
KernelRegistry& kernel_registry() { return registries().kernels; }
GradientRegistry& gradient_registry() { return registries().gradients; }

void GradientRegistry::add(std::string op, GradientFn fn) {
  if (entries_.count(op)) fail(Code::Internal, "gradient for ", op, " registered twice");
  entries_.emplace(std::move(op), std::move(fn));
}

void GradientRegistry::add_no_gradient(std::string op) {
  if (entries_.count(op)) fail(Code::Internal, "gradient for ", op, " registered twice");
  entries_.emplace(std::move(op), std::nullopt);
}

void GradientRegistry::replace(std::string op, GradientFn fn) { entries_[std::move(op)] = std::move(fn); }

const GradientFn* GradientRegistry::find(std::string_view op) const {
  auto it = entries_.find(op);
  if (it == entries_.end()) {
    fail(Code::NotFound, "No gradient defined for op: ", op,
         ". Register one, or declare it not differentiable with add_no_gradient");
  }
  return it->second ? &*it->second : nullptr;
}

}  // namespace dagrad
