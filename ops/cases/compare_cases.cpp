// Op cases of ArgMax and Equal: selections, so every backend must equal the reference exactly.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_compare_cases(OpRegistry& r) {
  r.set_cases("ArgMax", [] {
    const auto scalar = [](std::int32_t axis) { return fixed(Tensor::scalar<std::int32_t>(axis)); };
    return std::vector<OpCase>{
        {.label = "axis 1", .inputs = {distinct({3, 5}), scalar(1)}, .exact = true},
        {.label = "axis 0, int32 output",
         .inputs = {distinct({4, 3}), scalar(0)},
         .attrs = {{"output_type", DType::Int32}},
         .exact = true},
        // Small integers: ties, where the first maximum must win.
        {.label = "ties", .inputs = {small_integers({3, 6}), scalar(1)}, .exact = true},
    };
  });
  r.set_cases("Equal", [] {
    // Small integer values, so that equal pairs occur in every dtype.
    return std::vector<OpCase>{
        {.label = "broadcast", .inputs = {small_integers({3, 4}), small_integers({4})}, .exact = true},
    };
  });
}

}  // namespace dagrad::ops::cases
