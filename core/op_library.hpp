// Adding ops from outside dagrad: an OpLibrary gathers ops (schema, shape function, cases), their
// kernels and gradients, checks them all against the registries and adds them all or none.
//
// The recipe (examples/custom_op/ is a whole one, Swish with its gradient):
//   1. The schema: library.op(OpDefBuilder("Swish").input("x", "T").output("y", "T")
//        .attr_type("T", {...}).shape_fn(ops::same_shape_as_input).doc("...").cases(...).build());
//      The cases (core/op_case.hpp) are what `dagrad check` and check_ops run.
//   2. Kernels, keyed by (op, device kind, dtype) and a backend name:
//        library.kernels("Swish", Device::Kind::CPU, "reference", 0, {dtypes...}, factory);
//      one "reference" kernel per dtype (plain loops in double: the oracle every other backend is
//      checked against), then faster ones under a backend name of your own and a higher priority.
//      A CUDA kernel is one more kernels(..., Device::Kind::CUDA, "cuda", ...) whose function
//      launches on the stream in KernelContext::stream (compile that file with nvcc).
//   3. The gradient, built as graph nodes from ops (dagrad's or your own):
//        library.gradient("Swish", fn);   or library.no_gradient("Swish");
//   4. Adding it: in your own program, library.add_to(registries()); or, in a shared module,
//        DAGRAD_OP_LIBRARY(add_swish)   // void add_swish(dagrad::OpLibrary&)
//      which `dagrad --load-ops FILE ...` and load_op_library(FILE) load (TF's load_op_library).
//
// Rules add_to checks, before it adds anything: a name already registered is an error naming it
// (ops and kernels are never replaced: graphs and compiled plans point at them; put a kernel under
// your own backend with a higher priority instead; replace_gradient replaces a gradient
// explicitly); a kernel or gradient needs a registered op, and a kernel's dtype must be one its
// schema allows; each op needs cases (or a reason in OpDefBuilder::no_cases) and a gradient (or
// no_gradient). Op names are [A-Za-z][A-Za-z0-9_>]* ('_' starts dagrad's internal ops).
//
// Threads: add ops before other threads use dagrad (at startup, as TF registers), or while no
// session, run_op or check runs: lookups take no lock. Two add_to or load_op_library calls at once
// are safe with each other.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dagrad/core/gradient_registry.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/op_registry.hpp"
#include "dagrad/core/registries.hpp"

namespace dagrad {

class OpLibrary {
 public:
  // `name` names the library in errors ("op library 'swish': ...").
  explicit OpLibrary(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  OpLibrary& op(OpDef def);
  OpLibrary& kernel(KernelDef def);
  // One kernel per dtype: `make_fn.template operator()<T>()` returns the kernel of host type T
  // (wrap a floating-only factory in float_kernels, kernel_registry.hpp).
  template <class F>
  OpLibrary& kernels(const std::string& op, Device::Kind device, const std::string& backend, int priority,
                     std::initializer_list<DType> dtypes, F&& make_fn) {
    for (DType dtype : dtypes) kernel({op, device, dtype, backend, priority, visit_dtype(dtype, make_fn)});
    return *this;
  }
  OpLibrary& gradient(std::string op, GradientFn fn);
  // Replaces the gradient of an op that has one (a registered op of dagrad's included).
  OpLibrary& replace_gradient(std::string op, GradientFn fn);
  OpLibrary& no_gradient(std::string op);

  // Checks everything against `registries` and adds it all, or throws (InvalidArgument, NotFound)
  // naming the library, the op and the value, and adds nothing.
  void add_to(Registries& registries);

 private:
  struct GradientEntry {
    std::string op;
    std::optional<GradientFn> fn;  // nullopt: no gradient
    bool replace = false;
  };
  void check(const Registries& registries) const;

  std::string name_;
  std::vector<OpDef> ops_;
  std::vector<KernelDef> kernels_;
  std::vector<GradientEntry> gradients_;
};

// Loads the shared module at `path` (a path, never searched for) made with DAGRAD_OP_LIBRARY
// and adds its library to registries(); loading a file again does nothing. The module must not
// link dagrad itself: it uses the dagrad of the program that loads it (link it with
// dagrad::op_library), and that program must export dagrad's symbols (the dagrad CLI does: see
// tools/CMakeLists.txt). Loading a library runs its code: load only files you trust. Throws
// NotFound for a missing file, InvalidArgument for a file that is not such a module, a module
// built for another kOpLibraryAbi, or a library that add_to refuses, each naming the file.
void load_op_library(const std::string& path);

// Raised whenever OpLibrary, OpDef, KernelDef, KernelContext or GradientFn change in a way that
// breaks modules built before: load_op_library refuses a module built with another value.
inline constexpr int kOpLibraryAbi = 1;

namespace detail {
// Fails when the module has a copy of dagrad of its own (linked with dagrad::dagrad): its ops would
// go to registries the loading program never reads.
inline void require_loading_programs_dagrad(const OpLibrary& library, const Registries& loading) {
  if (&registries() != &loading) {
    fail(Code::FailedPrecondition, "the module that fills op library '", library.name(),
         "' holds a copy of dagrad of its own: link it with dagrad::op_library, not dagrad::dagrad");
  }
}
}  // namespace detail

}  // namespace dagrad

// Defines the two functions load_op_library calls in a shared module; `add_ops` is a function
// void(dagrad::OpLibrary&) that fills the library (the loader adds it).
#define DAGRAD_OP_LIBRARY(add_ops)                                                                      \
  extern "C" int dagrad_op_library_abi() { return ::dagrad::kOpLibraryAbi; }                            \
  extern "C" void dagrad_op_library_fill(::dagrad::OpLibrary& library, ::dagrad::Registries& loading) { \
    ::dagrad::detail::require_loading_programs_dagrad(library, loading);                                \
    add_ops(library);                                                                                   \
  }
