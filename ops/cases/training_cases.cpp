// Op cases of the in-place optimiser updates; the updated variables are compared bit for bit
// (the reference and the CPU kernels share training_updates.hpp's per-element rules).
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

CaseInput scalar(double value) { return fixed_in_dtype(Tensor::scalar(value), false); }

std::vector<OpCase> with_flags(const std::vector<CaseInput>& inputs, const std::vector<const char*>& flags) {
  std::vector<OpCase> cases;
  for (const bool on : {false, true}) {
    AttrMap attrs;
    for (const char* flag : flags) attrs[flag] = on;
    cases.push_back(
        {.label = on ? "flags on" : "flags off", .inputs = inputs, .attrs = attrs, .gradient_order = 0, .exact = true});
  }
  return cases;
}

}  // namespace

void register_training_cases(OpRegistry& r) {
  r.set_cases("ApplyGradientDescent", [] {
    return with_flags({uniform({2, 3}), scalar(0.1), uniform({2, 3})}, {"use_locking"});
  });
  r.set_cases("ApplyMomentum", [] {
    return with_flags({uniform({5}), uniform({5}), scalar(0.05), uniform({5}), scalar(0.9)},
                      {"use_locking", "use_nesterov"});
  });
  r.set_cases("ApplyAdam", [] {
    return with_flags({uniform({2, 2}), uniform({2, 2}), uniform({2, 2}, 0.01, 1), scalar(0.81), scalar(0.998),
                       scalar(0.01), scalar(0.9), scalar(0.999), scalar(1e-3), uniform({2, 2})},
                      {"use_locking", "use_nesterov"});
  });
}

}  // namespace dagrad::ops::cases
