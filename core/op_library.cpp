// OpLibrary: ops, kernels and gradients from outside dagrad, checked whole and then added.
#include "dagrad/core/op_library.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>

namespace dagrad {
namespace {

// Serialises add_to calls with each other (lookups take no lock: see the header).
std::mutex& adding_mutex() {
  static std::mutex mutex;
  return mutex;
}

bool valid_op_name(const std::string& name) {
  const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !letter(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || digit(c) || c == '_' || c == '>'; });
}

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::string text;
  for (DType d : dtypes) text += str_cat(text.empty() ? "" : ", ", dtype_name(d));
  return "{" + text + "}";
}

}  // namespace

OpLibrary& OpLibrary::op(OpDef def) {
  ops_.push_back(std::move(def));
  return *this;
}

OpLibrary& OpLibrary::kernel(KernelDef def) {
  kernels_.push_back(std::move(def));
  return *this;
}

OpLibrary& OpLibrary::gradient(std::string op, GradientFn fn) {
  gradients_.push_back({std::move(op), std::move(fn), false});
  return *this;
}

OpLibrary& OpLibrary::replace_gradient(std::string op, GradientFn fn) {
  gradients_.push_back({std::move(op), std::move(fn), true});
  return *this;
}

OpLibrary& OpLibrary::no_gradient(std::string op) {
  gradients_.push_back({std::move(op), std::nullopt, false});
  return *this;
}

void OpLibrary::check(const Registries& r) const {
  const std::string library = str_cat("op library '", name_, "': ");
  std::set<std::string, std::less<>> staged_ops;
  const auto find_op = [&](const std::string& name) -> const OpDef* {
    if (const OpDef* def = r.ops.find(name)) return def;
    for (const OpDef& def : ops_)
      if (def.name == name) return &def;
    return nullptr;
  };
  std::set<std::string, std::less<>> with_gradient;
  for (const GradientEntry& g : gradients_) {
    if (find_op(g.op) == nullptr)
      fail(Code::NotFound, library, "gradient for op '", g.op, "', which is not registered");
    if (g.fn && !*g.fn) invalid_argument(library, "the gradient function of op '", g.op, "' is empty");
    if (!with_gradient.insert(g.op).second) invalid_argument(library, "op '", g.op, "' is given two gradients");
    if (!g.replace && r.gradients.has_entry(g.op)) {
      invalid_argument(library, "op '", g.op, "' already has a gradient; replace it with replace_gradient");
    }
  }
  for (const OpDef& def : ops_) {
    if (!valid_op_name(def.name)) {
      invalid_argument(library, "op name '", def.name, "' is not [A-Za-z][A-Za-z0-9_>]* ('_' starts dagrad's own)");
    }
    if (r.ops.find(def.name) != nullptr || !staged_ops.insert(def.name).second) {
      invalid_argument(library, "op '", def.name,
                       "' is already registered; ops are never replaced (graphs point at their schemas): "
                       "give yours another name");
    }
    if (!def.shape_fn) invalid_argument(library, "op '", def.name, "' has no shape function");
    if (!def.cases && def.no_cases_reason.empty()) {
      invalid_argument(library, "op '", def.name,
                       "' has no cases, which `dagrad check` runs: give it some (OpDefBuilder::cases) or say why "
                       "not (OpDefBuilder::no_cases)");
    }
    if (with_gradient.count(def.name) == 0) {
      invalid_argument(library, "op '", def.name,
                       "' has no gradient: give it one (gradient) or declare it "
                       "not differentiable (no_gradient)");
    }
  }
  std::set<std::tuple<std::string, Device::Kind, DType, std::string>, std::less<>> staged_kernels;
  for (const KernelDef& k : kernels_) {
    const OpDef* def = find_op(k.op);
    const std::string what = str_cat("kernel ", k.op, " for ", device_kind_name(k.device), "/", dtype_name(k.dtype),
                                     " of backend '", k.backend, "'");
    if (def == nullptr) fail(Code::NotFound, library, what, ": op '", k.op, "' is not registered");
    if (k.backend.empty()) invalid_argument(library, what, ": the backend needs a name");
    if (!k.fn) invalid_argument(library, what, " is empty (a dtype its factory does not handle?)");
    const std::vector<DType> allowed = def->kernel_dtypes();
    const bool dtype_ok = allowed.empty() ? k.dtype == DType::Invalid
                                          : std::find(allowed.begin(), allowed.end(), k.dtype) != allowed.end();
    if (!dtype_ok) invalid_argument(library, what, ": the op's schema allows ", dtype_list(allowed));
    const std::vector<const KernelDef*> existing = r.kernels.list(k.op);
    const bool registered = std::any_of(existing.begin(), existing.end(), [&](const KernelDef* other) {
      return other->device == k.device && other->dtype == k.dtype && other->backend == k.backend;
    });
    if (registered || !staged_kernels.insert({k.op, k.device, k.dtype, k.backend}).second) {
      invalid_argument(library, what,
                       " is already registered; kernels are never replaced (compiled plans point at "
                       "them): register yours under another backend with a higher priority");
    }
  }
}

void OpLibrary::add_to(Registries& r) {
  std::lock_guard lock(adding_mutex());
  check(r);
  // Ops first: the kernel registry takes kernel dtypes from the schemas.
  for (OpDef& def : ops_) r.ops.add(std::move(def));
  for (KernelDef& k : kernels_) r.kernels.add(std::move(k));
  for (GradientEntry& g : gradients_) {
    if (!g.fn)
      r.gradients.add_no_gradient(std::move(g.op));
    else if (g.replace)
      r.gradients.replace(std::move(g.op), std::move(*g.fn));
    else
      r.gradients.add(std::move(g.op), std::move(*g.fn));
  }
  ops_.clear();
  kernels_.clear();
  gradients_.clear();
}

}  // namespace dagrad
