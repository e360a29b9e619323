// Registration of the gradients of the array, math, state, shape and conv ops (autodiff/grads/).
#pragma once

#include "dagrad/core/gradient_registry.hpp"

namespace dagrad::autodiff {

// Identity, Cast; no gradient: Placeholder, Const, ZerosLike, OnesLike, NoOp.
void register_array_gradients(GradientRegistry& registry);
// Add, AddV2, Sub, Mul, Neg, Reciprocal, AddN, Sum, Mean.
void register_math_gradients(GradientRegistry& registry);
// Reshape, BroadcastTo; no gradient: Shape, BroadcastGradientArgs, VariableV2, Assign.
void register_shape_gradients(GradientRegistry& registry);
// Conv2D, Conv2DBackpropInput(V2), Conv2DBackpropFilter(V2).
void register_conv2d_gradients(GradientRegistry& registry);

}  // namespace dagrad::autodiff
