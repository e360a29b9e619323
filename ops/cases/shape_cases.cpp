// Op cases of the shape ops: Shape, Reshape, BroadcastTo and BroadcastGradientArgs.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_shape_cases(OpRegistry& r) {
  r.set_cases("Shape", [] {
    return std::vector<OpCase>{
        {.label = "int32", .inputs = {uniform({2, 3, 1}, -2, 2)}, .gradient_order = 0, .exact = true},
        {.label = "int64",
         .inputs = {uniform({4}, -2, 2)},
         .attrs = {{"out_type", DType::Int64}},
         .gradient_order = 0,
         .exact = true},
    };
  });
  r.set_cases("Reshape", [] {
    return std::vector<OpCase>{
        {.label = "inferred dim", .inputs = {uniform({2, 6}, -4, 4), fixed(int32s({3, -1, 2}))}, .exact = true},
        {.label = "int64 shape", .inputs = {uniform({4}, -4, 4), fixed(int64s({2, 2}))}, .exact = true},
    };
  });
  r.set_cases("BroadcastTo", [] {
    const auto broadcast = [](const char* label, Shape x, Tensor shape, bool large = false) {
      return OpCase{
          .label = label, .inputs = {uniform(x, -4, 4), fixed(shape)}, .gradient_order = large ? 0 : 1, .exact = true};
    };
    return std::vector<OpCase>{
        broadcast("[3,1] to [2,3,4]", {3, 1}, int32s({2, 3, 4})),
        broadcast("scalar to [2,2]", {}, int64s({2, 2})),
        broadcast("rank 5, inner and outer", {1, 3, 1, 2}, int32s({2, 1, 3, 4, 2})),
        broadcast("large [90,1] to [90,77]", {90, 1}, int32s({90, 77}), true),
        broadcast("large [7,1,9] to [4,7,30,9]", {7, 1, 9}, int32s({4, 7, 30, 9}), true),
    };
  });
  r.set_cases("BroadcastGradientArgs", [] {
    return std::vector<OpCase>{
        {.label = "int32",
         .inputs = {fixed(int32s({2, 1, 3})), fixed(int32s({4, 1}))},
         .dtypes = {DType::Int32},
         .exact = true},
        {.label = "int64",
         .inputs = {fixed(int64s({5})), fixed(int64s({2, 5}))},
         .dtypes = {DType::Int64},
         .exact = true},
    };
  });
}

}  // namespace dagrad::ops::cases
