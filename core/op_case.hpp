// Op cases: sample calls of an op, declared once with the op (OpDef::cases), that every check
// iterates: each backend's kernels against the reference in every dtype, determinism across thread
// counts, gradient checks of order 1 and 2, and bench-op. The library's cases live in ops/cases/;
// an embedding program gives its own ops cases the same way, and `dagrad check` runs them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dagrad/core/attr.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad {

// One input of a case: made for the dtype under test from a seed; `made` holds the case's
// earlier inputs (MaxPoolGrad's orig_output is MaxPool of its orig_input).
struct CaseInput {
  std::function<Tensor(DType dtype, std::uint64_t seed, const std::vector<Tensor>& made)> make;
  bool differentiable = true;  // false: held constant by the gradient checks
  // The outputs do not vary with this input near the case (ReluGrad's features, MaxPoolGrad's
  // orig_input: they only choose where gradients go): the gradient checks perturb it and require
  // zero numeric and symbolic Jacobians, exactly.
  bool zero_jacobian = false;
};

// Uniform values in [lo, hi) in the dtype under test (integers: rounded), rounded to that dtype.
// Choose the range away from the op's kinks (Relu's 0, Reciprocal's pole, ties of MaxPool).
CaseInput uniform(Shape shape, double lo = -1, double hi = 1);
// Exactly `value` (shape-like inputs: axes, sizes, permutations, labels), never differentiated.
CaseInput fixed(Tensor value);
// `value` cast to the dtype under test (hand-made data such as probability rows).
CaseInput fixed_in_dtype(Tensor value, bool differentiable = true);
// `input` marked as having a zero Jacobian (CaseInput::zero_jacobian).
CaseInput with_zero_jacobian(CaseInput input);
// An int32 / int64 vector, for the shape-like inputs.
Tensor int32s(std::vector<std::int32_t> values);
Tensor int64s(std::vector<std::int64_t> values);

struct OpCase {
  std::string label;  // what the case covers, e.g. "NCHW SAME stride 2"
  std::vector<CaseInput> inputs;
  AttrMap attrs;              // need not name the type attributes the inputs bind
  std::vector<DType> dtypes;  // empty: every dtype the op's kernel type attribute allows
  // Highest order checked: 1 or 2; 0 for none (not differentiable here, or a case sized to cross
  // the kernels' blocking and threading, too large for finite differences).
  int gradient_order = 1;
  double tolerance_scale = 1;  // the forward check's per-dtype tolerance times this
  bool exact = false;          // backends must equal the reference bit for bit (selections, integers)
};

using OpCasesFn = std::function<std::vector<OpCase>()>;

// A case's inputs in `dtype`: input i made from seed + i, after the inputs before it.
std::vector<Tensor> make_case_inputs(const OpCase& c, DType dtype, std::uint64_t seed);

}  // namespace dagrad
