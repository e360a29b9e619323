// Op cases of MatMul (every transpose combination) and Transpose (every rank up to 5, size-1
// axes, the NHWC <-> NCHW permutations of a conv activation). The "large" cases cross the CPU
// kernels' blocking: forward only.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_matrix_cases(OpRegistry& r) {
  r.set_cases("MatMul", [] {
    std::vector<OpCase> cases;
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const std::string label = std::string(ta ? "aT" : "a") + (tb ? " bT" : " b");
        const AttrMap attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
        cases.push_back({.label = label,
                         .inputs = {uniform(ta ? Shape{4, 3} : Shape{3, 4}), uniform(tb ? Shape{2, 4} : Shape{4, 2})},
                         .attrs = attrs,
                         .gradient_order = 2});
        // m = 63, k = 450, n = 45: several register tiles, k blocks and threads' rows.
        cases.push_back(
            {.label = "large " + label,
             .inputs = {uniform(ta ? Shape{450, 63} : Shape{63, 450}), uniform(tb ? Shape{45, 450} : Shape{450, 45})},
             .attrs = attrs,
             .gradient_order = 0});
      }
    }
    return cases;
  });
  r.set_cases("Transpose", [] {
    const auto transpose = [](const char* label, Shape x, Tensor perm, bool large = false) {
      return OpCase{
          .label = label, .inputs = {uniform(x, -4, 4), fixed(perm)}, .gradient_order = large ? 0 : 1, .exact = true};
    };
    return std::vector<OpCase>{
        transpose("rank 3, int32 perm", {2, 3, 4}, int32s({2, 0, 1})),
        transpose("rank 2, int64 perm", {3, 5}, int64s({1, 0})),
        transpose("rank 1", {7}, int32s({0})),
        transpose("rank 5 with size-1 axes", {3, 1, 4, 2, 1}, int32s({4, 1, 0, 3, 2})),
        transpose("large rank 2", {90, 77}, int32s({1, 0}), true),
        transpose("large rank 4 with a size-1 axis", {1, 9, 8, 7}, int32s({3, 1, 0, 2}), true),
        transpose("large NHWC to NCHW", {8, 14, 14, 32}, int32s({0, 3, 1, 2}), true),
        transpose("large NCHW to NHWC", {8, 32, 14, 14}, int32s({0, 2, 3, 1}), true),
    };
  });
}

}  // namespace dagrad::ops::cases
