// The three process-wide registries, filled once by register_all() on first use.
#pragma once

#include "dagrad/core/gradient_registry.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/op_registry.hpp"

namespace dagrad {

struct Registries {
  OpRegistry ops;
  KernelRegistry kernels;
  GradientRegistry gradients;
};

// Defined in dagrad.cpp: calls every register_* function of ops/, backends/ and autodiff/.
// Explicit calls, not static initialisers, so that static linking keeps every registration.
void register_all(Registries& registries);

Registries& registries();

}  // namespace dagrad
