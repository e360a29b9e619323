// Op cases of the nn ops: BiasAdd and its gradient, Relu and its gradient, the softmaxes and the
// two cross-entropy losses. The "large" cases cross the CPU kernels' vector, row and thread
// blocking: forward only.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

const AttrMap kNchw = {{"data_format", "NCHW"}};

}  // namespace

void register_nn_cases(OpRegistry& r) {
  r.set_cases("BiasAdd", [] {
    return std::vector<OpCase>{
        {.label = "NHWC", .inputs = {uniform({2, 3, 2, 3}), uniform({3})}, .exact = true},
        {.label = "NCHW", .inputs = {uniform({2, 3, 2, 2}), uniform({3})}, .attrs = kNchw, .exact = true},
        {.label = "large NHWC", .inputs = {uniform({3, 7, 9, 12}), uniform({12})}, .gradient_order = 0, .exact = true},
        {.label = "large NCHW",
         .inputs = {uniform({3, 12, 7, 9}), uniform({12})},
         .attrs = kNchw,
         .gradient_order = 0,
         .exact = true},
    };
  });
  r.set_cases("BiasAddGrad", [] {
    return std::vector<OpCase>{
        {.label = "[4,3]", .inputs = {uniform({4, 3})}},
        {.label = "NCHW", .inputs = {uniform({2, 3, 2, 2})}, .attrs = kNchw},
        {.label = "large [2700,8]", .inputs = {uniform({2700, 8})}, .gradient_order = 0},
        {.label = "large NCHW", .inputs = {uniform({3, 8, 7, 9})}, .attrs = kNchw, .gradient_order = 0},
    };
  });
  // Piecewise linear: order 1, with inputs away from the kink; ReluGrad is linear in gradients
  // and its features only say where gradients pass: a zero Jacobian.
  r.set_cases("Relu", [] {
    return std::vector<OpCase>{
        {.label = "[3,4]", .inputs = {away_from_zero({3, 4})}, .exact = true},
        {.label = "large", .inputs = {away_from_zero({3, 7, 9, 12})}, .gradient_order = 0, .exact = true}};
  });
  r.set_cases("ReluGrad", [] {
    return std::vector<OpCase>{
        {.label = "[3,4]", .inputs = {uniform({3, 4}), with_zero_jacobian(away_from_zero({3, 4}))}, .exact = true},
        {.label = "large",
         .inputs = {uniform({3, 7, 9, 12}), away_from_zero({3, 7, 9, 12})},
         .gradient_order = 0,
         .exact = true}};
  });
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    r.set_cases(op, [] {
      return std::vector<OpCase>{
          {.label = "[3,5]", .inputs = {uniform({3, 5}, -2, 2)}, .gradient_order = 2},
          {.label = "large [63,45]", .inputs = {uniform({63, 45}, -3, 3)}, .gradient_order = 0},
      };
    });
  }
  r.set_cases("SoftmaxCrossEntropyWithLogits", [] {
    const auto large = [](const char* label, std::int64_t rows, std::int64_t classes) {
      return OpCase{.label = label,
                    .inputs = {uniform({rows, classes}, -3, 3), uniform({rows, classes}, -3, 3)},
                    .gradient_order = 0,
                    .exact = true};
    };
    return std::vector<OpCase>{
        {.label = "[3,4]", .inputs = {uniform({3, 4}, -2, 2), probabilities(3, 4)}, .gradient_order = 2, .exact = true},
        large("one class, any labels", 1, 1),
        large("[32,10], any labels", 32, 10),
        large("large [300,77], any labels", 300, 77),
    };
  });
  r.set_cases("SparseSoftmaxCrossEntropyWithLogits", [] {
    return std::vector<OpCase>{
        {.label = "int32 labels", .inputs = {uniform({3, 4}, -2, 2), fixed(int32s({0, 3, 1}))}, .gradient_order = 2},
        {.label = "int64 labels", .inputs = {uniform({2, 5}, -2, 2), fixed(int64s({4, 0}))}, .gradient_order = 2},
        {.label = "large [63,45]", .inputs = {uniform({63, 45}, -3, 3), class_labels(63, 45)}, .gradient_order = 0},
    };
  });
}

}  // namespace dagrad::ops::cases
