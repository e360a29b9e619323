// Registration of the gradients (autodiff/grads/): register_gradients (register.cpp) registers
// every op's gradient or explicit "no gradient"; register_all() calls it once.
#pragma once

#include "dagrad/core/gradient_registry.hpp"

namespace dagrad::autodiff {

// Every gradient of the library.
void register_gradients(GradientRegistry& registry);

// One per op family, each defined beside its gradients.

// Identity, Cast; no gradient: Placeholder, Const, ZerosLike, OnesLike, NoOp.
void register_array_gradients(GradientRegistry& registry);
// Add, AddV2, Sub, Mul, Neg, Reciprocal, AddN, Sum, Mean.
void register_math_gradients(GradientRegistry& registry);
// Reshape, BroadcastTo; no gradient: Shape, BroadcastGradientArgs, VariableV2, Assign.
void register_shape_gradients(GradientRegistry& registry);
// Conv2D, Conv2DBackpropInput(V2), Conv2DBackpropFilter(V2).
void register_conv2d_gradients(GradientRegistry& registry);
// BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax, LogSoftmax, the two cross-entropy losses,
// MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad, MatMul, Transpose; explicit
// no-gradient for ArgMax, Equal and the Apply* optimiser updates.
void register_nn_gradients(GradientRegistry& registry);

}  // namespace dagrad::autodiff
