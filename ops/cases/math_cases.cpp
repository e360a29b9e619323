// Op cases of the math ops: the element-wise arithmetic with broadcasting, AddN, Sum and Mean.
// The "large" cases cross the CPU kernels' vector, tile and thread blocking: forward only.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

// Broadcasting pairs: same shapes, leading dims dropped, size-1 dims on both sides, scalars.
std::vector<OpCase> binary_cases(int gradient_order) {
  const auto pair = [gradient_order](const char* label, Shape x, Shape y, bool large = false) {
    return OpCase{.label = label,
                  .inputs = {uniform(x, -4, 4), uniform(y, -4, 4)},
                  .gradient_order = large ? 0 : gradient_order,
                  .exact = true};  // one rounding of one operation, as the reference does it
  };
  return {
      pair("same shape", {2, 3}, {2, 3}),
      pair("broadcast [2,1,3] [4,1]", {2, 1, 3}, {4, 1}),
      pair("scalar and [3,2]", {}, {3, 2}),
      pair("both ways [2,1,3,1] [1,2,1,2]", {2, 1, 3, 1}, {1, 2, 1, 2}),
      pair("scalars", {}, {}),
      pair("large [37,1,65] [23,1]", {37, 1, 65}, {23, 1}, true),
      pair("large [9,70,3,9] [70,1,9]", {9, 70, 3, 9}, {70, 1, 9}, true),
      pair("large [1000] and scalar", {1000}, {}, true),
  };
}

}  // namespace

void register_math_cases(OpRegistry& r) {
  // Linear ops: order 1 (their second derivatives are zero, a vacuous check); Mul is bilinear.
  for (const char* op : {"Add", "AddV2", "Sub"}) r.set_cases(op, [] { return binary_cases(1); });
  r.set_cases("Mul", [] { return binary_cases(2); });
  r.set_cases("Neg", [] {
    return std::vector<OpCase>{
        {.label = "[4]", .inputs = {uniform({4}, -4, 4)}, .exact = true},
        {.label = "large [37,90]", .inputs = {uniform({37, 90}, -4, 4)}, .gradient_order = 0, .exact = true}};
  });
  r.set_cases("Reciprocal", [] {
    return std::vector<OpCase>{
        {.label = "away from 0", .inputs = {away_from_zero({5})}, .gradient_order = 2, .exact = true},
        {.label = "large [40,200]", .inputs = {away_from_zero({40, 200})}, .gradient_order = 0, .exact = true}};
  });
  r.set_cases("AddN", [] {
    return std::vector<OpCase>{
        {.label = "three [2,2]",
         .inputs = {uniform({2, 2}, -4, 4), uniform({2, 2}, -4, 4), uniform({2, 2}, -4, 4)},
         .exact = true},
        {.label = "one [3]", .inputs = {uniform({3}, -4, 4)}, .exact = true},
        {.label = "large three [37,90]",
         .inputs = {uniform({37, 90}, -4, 4), uniform({37, 90}, -4, 4), uniform({37, 90}, -4, 4)},
         .gradient_order = 0,
         .exact = true}};
  });
  // Sum and Mean sum in double on both sides: only the order differs (the default tolerance).
  for (const char* op : {"Sum", "Mean"}) {
    r.set_cases(op, [] {
      const auto reduce = [](const char* label, Shape x, Tensor axes, bool keep, bool large = false) {
        return OpCase{.label = label,
                      .inputs = {uniform(x, -4, 4), fixed(axes)},
                      .attrs = {{"keep_dims", keep}},
                      .gradient_order = large ? 0 : 1};
      };
      return std::vector<OpCase>{
          reduce("axes 0,2", {2, 3, 4}, int32s({0, 2}), false),
          reduce("axis -1 kept", {2, 3, 4}, int32s({-1}), true),
          reduce("int64 axis 1", {3, 4}, int64s({1}), false),
          reduce("axes -1,0 of rank 4 kept", {3, 2, 2, 4}, int32s({-1, 0}), true),
          reduce("no axes", {3, 4}, int32s({}), false),
          reduce("every axis", {4, 5}, int64s({1, 0}), false),
          reduce("large axes 1,-1", {17, 40, 3, 29}, int32s({1, -1}), false, true),
          reduce("large axis 0", {300, 500}, int32s({0}), false, true),
          reduce("large axis 1 kept", {300, 500}, int32s({1}), true, true),
      };
    });
  }
}

}  // namespace dagrad::ops::cases
