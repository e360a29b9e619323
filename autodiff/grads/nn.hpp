// Registration of the gradients of the nn, pooling, matrix, comparison and training ops.
#pragma once

#include "dagrad/core/gradient_registry.hpp"

namespace dagrad::autodiff {

// BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax, LogSoftmax, the two cross-entropy losses,
// MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad, MatMul, Transpose; explicit
// no-gradient for ArgMax, Equal and the Apply* optimiser updates.
void register_nn_gradients(GradientRegistry& registry);

}  // namespace dagrad::autodiff
