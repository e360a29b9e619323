// Op cases of MatMul (every transpose combination) and Transpose.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_matrix_cases(OpRegistry& r) {
  r.set_cases("MatMul", [] {
    std::vector<OpCase> cases;
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        cases.push_back({.label = std::string(ta ? "aT" : "a") + (tb ? " bT" : " b"),
                         .inputs = {uniform(ta ? Shape{4, 3} : Shape{3, 4}), uniform(tb ? Shape{2, 4} : Shape{4, 2})},
                         .attrs = {{"transpose_a", ta}, {"transpose_b", tb}},
                         .gradient_order = 2});
      }
    }
    return cases;
  });
  r.set_cases("Transpose", [] {
    return std::vector<OpCase>{
        {.label = "rank 3, int32 perm", .inputs = {uniform({2, 3, 4}, -4, 4), fixed(int32s({2, 0, 1}))}, .exact = true},
        {.label = "rank 2, int64 perm", .inputs = {uniform({3, 5}, -4, 4), fixed(int64s({1, 0}))}, .exact = true},
    };
  });
}

}  // namespace dagrad::ops::cases
