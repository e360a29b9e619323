// Op cases of the variable ops: Assign (VariableV2 is the storage every ref input is made of).
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_state_cases(OpRegistry& r) {
  r.set_cases("Assign", [] {
    return std::vector<OpCase>{{.label = "[2,3]",
                                .inputs = {uniform({2, 3}, -4, 4), uniform({2, 3}, -4, 4)},
                                .gradient_order = 0,
                                .exact = true}};
  });
  r.set_no_cases("VariableV2", "graph-only storage: the Assign and Apply* cases read and write variables");
}

}  // namespace dagrad::ops::cases
