// Graph builders for the in-place optimiser updates ApplyGradientDescent, ApplyMomentum and
// ApplyAdam (TF's update rules; the variable inputs are refs, updated where they are stored).
#pragma once

#include <string_view>

#include "dagrad/core/graph.hpp"
#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::ops {

// var -= alpha * delta.
Output apply_gradient_descent(Graph& g, Output var, Output alpha, Output delta, std::string_view name = {});
// accum = accum * momentum + grad; var -= lr * accum
// (Nesterov: var -= lr * grad + lr * momentum * accum).
Output apply_momentum(Graph& g, Output var, Output accum, Output lr, Output grad, Output momentum,
                      bool use_nesterov = false, std::string_view name = {});
// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1);
// v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon)
// (Nesterov: m replaced by m * beta1 + (1 - beta1) * grad in the last step).
struct AdamInputs {
  Output var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad;
};
Output apply_adam(Graph& g, const AdamInputs& in, bool use_nesterov = false, std::string_view name = {});

// For the kernels of every backend: the stored variable behind ref input i, checked against the
// shape of input like_input (the gradient), with TF's messages.
Tensor& ref_variable(KernelContext& c, int i, int like_input);

// The flat inputs of ApplyAdam (n = 1) and _GroupedApplyAdam (n updates), for every backend's
// kernels: the var, m and v lists, the six scalars, the grad list.
struct AdamLayout {
  int n;
  int var(int j) const { return j; }
  int m(int j) const { return n + j; }
  int v(int j) const { return 2 * n + j; }
  int scalar(int i) const { return 3 * n + i; }  // beta1_power, beta2_power, lr, beta1, beta2, epsilon
  int grad(int j) const { return 3 * n + 6 + j; }
};
// The update's coefficients from the call's scalars (read on the host; ops/training_updates.hpp,
// an internal header).
struct AdamCoefficients;
AdamCoefficients adam_coefficients(KernelContext& c, const AdamLayout& in);

// _GroupedApplyAdam's kernels: each variable belongs to one of the updates, since they run at
// once; InvalidArgument naming it otherwise.
void require_separate_updates(const KernelContext& c, const AdamLayout& in);

}  // namespace dagrad::ops
