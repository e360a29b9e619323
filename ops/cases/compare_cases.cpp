// Op cases of ArgMax and Equal: selections, so every backend must equal the reference exactly.
// Neither is differentiable (gradient order 0).
#include "dagrad/core/error.hpp"
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_compare_cases(OpRegistry& r) {
  r.set_cases("ArgMax", [] {
    const auto axis = [](std::int32_t a) { return fixed(Tensor::scalar<std::int32_t>(a)); };
    std::vector<OpCase> cases = {
        {.label = "axis 1", .inputs = {distinct({3, 5}), axis(1)}, .gradient_order = 0, .exact = true},
        {.label = "axis 0, int32 output",
         .inputs = {distinct({4, 3}), axis(0)},
         .attrs = {{"output_type", DType::Int32}},
         .gradient_order = 0,
         .exact = true},
        {.label = "large axis 0", .inputs = {distinct({200, 40}), axis(0)}, .gradient_order = 0, .exact = true},
    };
    // Small integers make ties, where the first maximum must win: every axis of a rank-3 input,
    // negative ones included, and both output types.
    for (std::int32_t a = -3; a < 3; ++a) {
      for (const DType out : {DType::Int32, DType::Int64}) {
        cases.push_back({.label = str_cat("ties, axis ", a, ", ", dtype_name(out), " output"),
                         .inputs = {small_integers({5, 40, 3}), axis(a)},
                         .attrs = {{"output_type", out}},
                         .gradient_order = 0,
                         .exact = true});
      }
    }
    return cases;
  });
  r.set_cases("Equal", [] {
    // Small integer values, so that equal pairs occur in every dtype.
    const auto pair = [](const char* label, Shape x, Shape y) {
      return OpCase{
          .label = label, .inputs = {small_integers(x), small_integers(y)}, .gradient_order = 0, .exact = true};
    };
    return std::vector<OpCase>{
        pair("broadcast", {3, 4}, {4}),
        pair("broadcast, swapped", {4}, {3, 4}),
        pair("both ways", {3, 1, 5}, {4, 1}),
        pair("large", {7, 30, 20}, {30, 1}),
    };
  });
}

}  // namespace dagrad::ops::cases
