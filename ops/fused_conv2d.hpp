// _FusedConv2D: Conv2D, then BiasAdd, then optionally Relu, as one op that sessions put in the
// place of such chains (ops/fusions.cpp), so that the conv's output is finished while it is in
// cache and no intermediate is stored. TF's op of that name lists fused_ops as list(string); here
// it is one string, "BiasAdd" or "BiasAdd,Relu" (the op is internal: graphs never name it).
#pragma once

#include "dagrad/core/attr.hpp"

namespace dagrad::ops {

// Whether the op's fused_ops end in Relu.
bool fused_conv2d_relu(const AttrMap& attrs);

}  // namespace dagrad::ops
