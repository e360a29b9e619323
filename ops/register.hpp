// The registration functions of every op family, called once from register_all().
#pragma once

#include "dagrad/core/op_registry.hpp"

namespace dagrad::ops {

void register_array_ops(OpRegistry& registry);
void register_math_ops(OpRegistry& registry);
void register_state_ops(OpRegistry& registry);
void register_conv2d_ops(OpRegistry& registry);    // conv2d.cpp
void register_nn_ops(OpRegistry& registry);        // nn_ops.cpp
void register_pooling_ops(OpRegistry& registry);   // pooling_ops.cpp
void register_matrix_ops(OpRegistry& registry);    // matrix_ops.cpp
void register_compare_ops(OpRegistry& registry);   // compare_ops.cpp
void register_training_ops(OpRegistry& registry);  // training_ops.cpp
void register_shape_ops(OpRegistry& registry);

}  // namespace dagrad::ops
