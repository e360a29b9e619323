// Shape rules shared by op schemas: numpy/TF broadcasting and reductions over axes.
#pragma once

#include <string_view>
#include <vector>

#include "dagrad/core/op_registry.hpp"

namespace dagrad::ops {

// TF's BroadcastBinaryOpShapeFn: "Incompatible shapes: [2,3] vs. [4]". Unknown dims broadcast
// optimistically and are checked again at run time.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Normalises reduction axes against `rank` (negative counts from the end); rejects out-of-range
// and duplicate axes with TF's messages. Returns a flag per dimension: reduced or not.
std::vector<bool> reduction_mask(const std::vector<std::int64_t>& axes, int rank);

// Shape function pieces.
void same_shape_as_input(ShapeContext& c);  // output 0 = input 0
void broadcast_binary(ShapeContext& c);     // output 0 = broadcast(input 0, input 1)
// Output 0 = the one shape all inputs share (a list such as AddN's), each unknown dim taken from
// an input that knows it; otherwise "<what>; input 0 has [..] and input i has [..]".
void same_shape_inputs(ShapeContext& c, std::string_view what);

}  // namespace dagrad::ops
