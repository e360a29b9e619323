// Op cases of the math ops: the element-wise arithmetic with broadcasting, AddN, Sum and Mean.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_math_cases(OpRegistry& r) {
  // Linear ops: order 1 (their second derivatives are zero, a vacuous check); Mul is bilinear.
  for (const char* op : {"Add", "AddV2", "Sub"}) {
    r.set_cases(op, [] {
      return std::vector<OpCase>{
          {.label = "same shape", .inputs = {uniform({2, 3}, -4, 4), uniform({2, 3}, -4, 4)}},
          {.label = "broadcast [2,1,3] [4,1]", .inputs = {uniform({2, 1, 3}, -4, 4), uniform({4, 1}, -4, 4)}},
          {.label = "scalar and [3,2]", .inputs = {uniform({}, -4, 4), uniform({3, 2}, -4, 4)}},
      };
    });
  }
  r.set_cases("Mul", [] {
    return std::vector<OpCase>{
        {.label = "broadcast [2,3] [2,1]",
         .inputs = {uniform({2, 3}, -4, 4), uniform({2, 1}, -4, 4)},
         .gradient_order = 2},
        {.label = "scalar and [3,2]", .inputs = {uniform({}, -4, 4), uniform({3, 2}, -4, 4)}, .gradient_order = 2},
    };
  });
  r.set_cases("Neg", [] { return std::vector<OpCase>{{.label = "[4]", .inputs = {uniform({4}, -4, 4)}}}; });
  r.set_cases("Reciprocal", [] {
    return std::vector<OpCase>{{.label = "away from 0", .inputs = {away_from_zero({5})}, .gradient_order = 2}};
  });
  r.set_cases("AddN", [] {
    return std::vector<OpCase>{
        {.label = "three [2,2]", .inputs = {uniform({2, 2}, -4, 4), uniform({2, 2}, -4, 4), uniform({2, 2}, -4, 4)}},
        {.label = "one [3]", .inputs = {uniform({3}, -4, 4)}}};
  });
  for (const char* op : {"Sum", "Mean"}) {
    r.set_cases(op, [] {
      return std::vector<OpCase>{
          {.label = "axes 0,2",
           .inputs = {uniform({2, 3, 4}, -4, 4), fixed(int32s({0, 2}))},
           .attrs = {{"keep_dims", false}}},
          {.label = "axis -1 kept",
           .inputs = {uniform({2, 3, 4}, -4, 4), fixed(int32s({-1}))},
           .attrs = {{"keep_dims", true}}},
          {.label = "int64 axis 1", .inputs = {uniform({3, 4}, -4, 4), fixed(int64s({1}))}},
      };
    });
  }
}

}  // namespace dagrad::ops::cases
