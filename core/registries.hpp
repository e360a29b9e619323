// The process-wide registries, filled once by register_all() on first use.
#pragma once

#include "dagrad/core/gradient_registry.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/op_registry.hpp"
#include "dagrad/core/rewrite.hpp"

namespace dagrad {

struct Registries {
  OpRegistry ops;
  KernelRegistry kernels{&ops};  // takes kernel dtypes from the op schemas
  GradientRegistry gradients;
  RewriteRegistry rewrites;  // the fusions sessions apply (core/rewrite.hpp)
};

// Defined in dagrad.cpp: calls every register_* function of ops/, backends/ and autodiff/.
// Explicit calls, not static initialisers, so that static linking keeps every registration.
void register_all(Registries& registries);

// Filled on first use by whichever thread comes first while the others wait (a function-local
// static), so concurrent first use is safe. Lookups take no lock: add or replace entries (custom
// ops, kernels, gradients) before other threads use the registries, as TF registers at startup.
Registries& registries();

}  // namespace dagrad
