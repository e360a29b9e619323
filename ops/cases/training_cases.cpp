// Op cases of the in-place optimiser updates; the updated variables are compared bit for bit
// (the reference and the CPU kernels share training_updates.hpp's per-element rules).
#include <functional>

#include "dagrad/core/error.hpp"
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

CaseInput scalar(double value) { return fixed_in_dtype(Tensor::scalar(value), false); }

// Each flag combination (all off, all on), on a small variable and on one of more elements than a
// parallel block, so that several threads share the update.
std::vector<OpCase> with_flags(const std::function<std::vector<CaseInput>(Shape)>& inputs,
                               const std::vector<const char*>& flags) {
  std::vector<OpCase> cases;
  for (const Shape& shape : {Shape{2, 3}, Shape{37, 1000}}) {
    for (const bool on : {false, true}) {
      AttrMap attrs;
      for (const char* flag : flags) attrs[flag] = on;
      cases.push_back({.label = str_cat(shape.to_string(), on ? " flags on" : " flags off"),
                       .inputs = inputs(shape),
                       .attrs = attrs,
                       .gradient_order = 0,
                       .exact = true});
    }
  }
  return cases;
}

}  // namespace

void register_training_cases(OpRegistry& r) {
  r.set_cases("ApplyGradientDescent", [] {
    return with_flags(
        [](Shape s) {
          return std::vector<CaseInput>{uniform(s), scalar(0.1), uniform(s)};
        },
        {"use_locking"});
  });
  r.set_cases("ApplyMomentum", [] {
    return with_flags(
        [](Shape s) {
          return std::vector<CaseInput>{uniform(s), uniform(s), scalar(0.05), uniform(s), scalar(0.9)};
        },
        {"use_locking", "use_nesterov"});
  });
  // v, a running mean of squares, is positive.
  r.set_cases("ApplyAdam", [] {
    return with_flags(
        [](Shape s) {
          return std::vector<CaseInput>{uniform(s),   uniform(s),  uniform(s, 0.01, 1), scalar(0.81), scalar(0.998),
                                        scalar(0.01), scalar(0.9), scalar(0.999),       scalar(1e-3), uniform(s)};
        },
        {"use_locking", "use_nesterov"});
  });
  // Three updates: the case's shape, a scalar variable, and one of more elements than a block.
  r.set_cases("_GroupedApplyAdam", [] {
    std::vector<OpCase> cases = with_flags(
        [](Shape s) {
          const Shape shapes[] = {s, Shape{}, Shape{3, 7000}};
          std::vector<CaseInput> in;
          for (const double v_low : {-1.0, -1.0, 0.01})  // var, m, then v (positive) for each update
            for (const Shape& shape : shapes) in.push_back(uniform(shape, v_low, 1));
          for (const double value : {0.81, 0.998, 0.01, 0.9, 0.999, 1e-3}) in.push_back(scalar(value));
          for (const Shape& shape : shapes) in.push_back(uniform(shape));
          return in;
        },
        {"use_locking", "use_nesterov"});
    for (OpCase& c : cases) c.attrs["N"] = std::int64_t{3};
    return cases;
  });
}

}  // namespace dagrad::ops::cases
