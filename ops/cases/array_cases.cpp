// Op cases of the array ops: Identity, ZerosLike, OnesLike, Cast; the graph-only ops have none.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_array_cases(OpRegistry& r) {
  r.set_cases("Identity", [] { return std::vector<OpCase>{{.label = "[2,3]", .inputs = {uniform({2, 3}, -4, 4)}}}; });
  // Their outputs do not depend on the input's values: gradient zero by definition, no check.
  for (const char* op : {"ZerosLike", "OnesLike"}) {
    r.set_cases(op, [] {
      return std::vector<OpCase>{{.label = "[3,2]", .inputs = {uniform({3, 2}, -4, 4)}, .gradient_order = 0}};
    });
  }
  r.set_cases("Cast", [] {
    return std::vector<OpCase>{
        {.label = "to float", .inputs = {uniform({2, 3}, -4, 4)}, .attrs = {{"DstT", DType::Float32}}},
        {.label = "to half", .inputs = {uniform({5}, -4, 4)}, .attrs = {{"DstT", DType::Half}}},
        {.label = "to int32", .inputs = {uniform({4}, -4, 4)}, .attrs = {{"DstT", DType::Int32}}, .gradient_order = 0},
        {.label = "to bool", .inputs = {uniform({4}, -2, 2)}, .attrs = {{"DstT", DType::Bool}}, .gradient_order = 0},
    };
  });
  r.set_no_cases("Placeholder", "graph-only: fed by the caller, it has no kernel work of its own");
  r.set_no_cases("Const", "graph-only: holds its value attribute; every case feeds its inputs through Const");
  r.set_no_cases("NoOp", "graph-only: no inputs and no outputs");
}

}  // namespace dagrad::ops::cases
