// Running one op's kernel: the step shared by the session executor and eager raw ops.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/op_registry.hpp"

namespace dagrad {

class VariableStore;

struct KernelCall {
  const OpDef* def = nullptr;
  const AttrMap* attrs = nullptr;  // completed
  std::string_view node_name;
  const std::vector<DType>* output_dtypes = nullptr;
  const KernelDef* kernel = nullptr;
  Device device;
  VariableStore* variables = nullptr;
  std::vector<std::string> variable_names;  // per input: the variable behind a ref input
  void* stream = nullptr;
  std::string_view kernel_path;          // see KernelContext::kernel_path
  std::string_view* ran_path = nullptr;  // if set, receives KernelContext::ran_path
  // If set, receives the kernel's deferred work (KernelContext::defer), which the caller must
  // finish before reading the outputs; if null, the work is finished before execute_kernel returns.
  KernelContext::Finish* deferred = nullptr;
};

// Infers the concrete output shapes (validating the run-time shapes), runs the kernel and
// checks that every output came back with its inferred dtype and shape.
std::vector<Tensor> execute_kernel(const KernelCall& call, std::vector<Tensor> inputs);

// The kernel for an op on a device; backend "" picks the highest-priority one.
const KernelDef& select_kernel(const OpDef& def, const AttrMap& attrs, Device device, std::string_view backend);

}  // namespace dagrad
