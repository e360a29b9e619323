// Op cases of the array ops: Identity, ZerosLike, OnesLike, Cast; the graph-only ops have none.
#include "dagrad/core/error.hpp"
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_array_cases(OpRegistry& r) {
  r.set_cases("Identity", [] {
    return std::vector<OpCase>{{.label = "[2,3]", .inputs = {uniform({2, 3}, -4, 4)}, .exact = true}};
  });
  // Their outputs do not depend on the input's values: gradient zero by definition, no check.
  for (const char* op : {"ZerosLike", "OnesLike"}) {
    r.set_cases(op, [] {
      return std::vector<OpCase>{
          {.label = "[3,2]", .inputs = {uniform({3, 2}, -4, 4)}, .gradient_order = 0, .exact = true},
          {.label = "large [37,90]", .inputs = {uniform({37, 90}, -4, 4)}, .gradient_order = 0, .exact = true}};
    });
  }
  // Every target dtype from every source dtype (the case's dtypes), bit for bit; differentiable
  // between floating dtypes.
  r.set_cases("Cast", [] {
    std::vector<OpCase> cases;
    for (const DType to :
         {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Bool}) {
      const bool floating = is_floating(to);
      cases.push_back({.label = str_cat("to ", dtype_name(to)),
                       .inputs = {uniform({2, 3}, -4, 4)},
                       .attrs = {{"DstT", to}},
                       .gradient_order = floating ? 1 : 0,
                       .exact = true});
      cases.push_back({.label = str_cat("large to ", dtype_name(to)),
                       .inputs = {uniform({37, 90}, -300, 300)},
                       .attrs = {{"DstT", to}},
                       .gradient_order = 0,
                       .exact = true});
    }
    return cases;
  });
  r.set_no_cases("Placeholder", "graph-only: fed by the caller, it has no kernel work of its own");
  r.set_no_cases("Const", "graph-only: holds its value attribute; every case feeds its inputs through Const");
  r.set_no_cases("NoOp", "graph-only: no inputs and no outputs");
}

}  // namespace dagrad::ops::cases
