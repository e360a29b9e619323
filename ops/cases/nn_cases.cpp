// Op cases of the nn ops: BiasAdd and its gradient, Relu and its gradient, the softmaxes and the
// two cross-entropy losses.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_nn_cases(OpRegistry& r) {
  r.set_cases("BiasAdd", [] {
    return std::vector<OpCase>{
        {.label = "NHWC", .inputs = {uniform({2, 3, 2, 3}), uniform({3})}},
        {.label = "NCHW", .inputs = {uniform({2, 3, 2, 2}), uniform({3})}, .attrs = {{"data_format", "NCHW"}}},
    };
  });
  r.set_cases("BiasAddGrad", [] {
    return std::vector<OpCase>{
        {.label = "[4,3]", .inputs = {uniform({4, 3})}},
        {.label = "NCHW", .inputs = {uniform({2, 3, 2, 2})}, .attrs = {{"data_format", "NCHW"}}},
    };
  });
  // Piecewise linear: order 1, with inputs away from the kink; ReluGrad is linear in gradients
  // and has a zero Jacobian in features (not differentiable there).
  r.set_cases("Relu", [] { return std::vector<OpCase>{{.label = "[3,4]", .inputs = {away_from_zero({3, 4})}}}; });
  r.set_cases("ReluGrad", [] {
    CaseInput features = away_from_zero({3, 4});
    features.differentiable = false;
    return std::vector<OpCase>{{.label = "[3,4]", .inputs = {uniform({3, 4}), features}}};
  });
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    r.set_cases(op, [] {
      return std::vector<OpCase>{{.label = "[3,5]", .inputs = {uniform({3, 5}, -2, 2)}, .gradient_order = 2}};
    });
  }
  r.set_cases("SoftmaxCrossEntropyWithLogits", [] {
    return std::vector<OpCase>{
        {.label = "[3,4]", .inputs = {uniform({3, 4}, -2, 2), probabilities(3, 4)}, .gradient_order = 2}};
  });
  r.set_cases("SparseSoftmaxCrossEntropyWithLogits", [] {
    return std::vector<OpCase>{
        {.label = "int32 labels", .inputs = {uniform({3, 4}, -2, 2), fixed(int32s({0, 3, 1}))}, .gradient_order = 2},
        {.label = "int64 labels", .inputs = {uniform({2, 5}, -2, 2), fixed(int64s({4, 0}))}, .gradient_order = 2},
    };
  });
}

}  // namespace dagrad::ops::cases
