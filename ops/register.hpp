// The registration functions of every op family, called once from register_all().
#pragma once

#include "dagrad/core/op_registry.hpp"

namespace dagrad::ops {

void register_array_ops(OpRegistry& registry);
void register_math_ops(OpRegistry& registry);
void register_state_ops(OpRegistry& registry);

}  // namespace dagrad::ops
