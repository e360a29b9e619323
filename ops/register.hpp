// The registration of the ops layer: register_ops (ops/register.cpp) registers every op family;
// register_all() calls it once.
#pragma once

#include "dagrad/core/op_registry.hpp"
#include "dagrad/core/rewrite.hpp"

namespace dagrad::ops {

// Every op schema of the library.
void register_ops(OpRegistry& registry);
// The fusions sessions apply (fusions.cpp).
void register_rewrites(RewriteRegistry& registry);

// One per op family, each defined beside its ops.

void register_array_ops(OpRegistry& registry);
void register_math_ops(OpRegistry& registry);
void register_state_ops(OpRegistry& registry);
void register_conv2d_ops(OpRegistry& registry);        // conv2d.cpp
void register_fused_conv2d_ops(OpRegistry& registry);  // fused_conv2d.cpp
void register_nn_ops(OpRegistry& registry);            // nn_ops.cpp
void register_pooling_ops(OpRegistry& registry);       // pooling_ops.cpp
void register_matrix_ops(OpRegistry& registry);        // matrix_ops.cpp
void register_compare_ops(OpRegistry& registry);       // compare_ops.cpp
void register_training_ops(OpRegistry& registry);      // training_ops.cpp
void register_shape_ops(OpRegistry& registry);
void register_collective_ops(OpRegistry& registry);  // collective_ops.cpp

}  // namespace dagrad::ops
