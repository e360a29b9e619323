// Input generators shared by the library's op cases (ops/cases/), beyond core/op_case.hpp's:
// values kept away from the kinks and ties that would make finite differences meaningless.
#pragma once

#include <string>
#include <vector>

#include "dagrad/core/op_case.hpp"
#include "dagrad/core/op_registry.hpp"

namespace dagrad::ops::cases {

// Magnitudes in [0.25, 1) (integers: 1 to 4) with random signs: far from Relu's kink and
// Reciprocal's pole.
CaseInput away_from_zero(Shape shape);
// Distinct multiples of 1/64 (exact in half and bfloat16), shuffled: no ties in a max window,
// and no two within a finite-difference step of each other.
CaseInput distinct(Shape shape);
// Integers in [-2, 2] in the dtype under test: equal pairs and tied maxima occur in every dtype.
CaseInput small_integers(Shape shape);
// Rows of positive values summing to 1 (softmax cross-entropy labels), in the dtype under test.
CaseInput probabilities(std::int64_t rows, std::int64_t classes);
// `rows` class indices in [0, classes), in `index_dtype` (sparse cross-entropy labels).
CaseInput class_labels(std::int64_t rows, std::int64_t classes, DType index_dtype = DType::Int32);
// The output `index` of `op` run on the case's inputs `from` (e.g. MaxPoolGrad's orig_output);
// held constant by the gradient checks.
CaseInput output_of(std::string op, std::vector<int> from, AttrMap attrs, int index = 0);

// A shape as the int32 vector that shape inputs take (input_sizes, orig_input_shape).
Tensor int32_dims(const Shape& shape);

// The cases of every op of the library (register.cpp), called by ops::register_ops.
void register_cases(OpRegistry& registry);
// The cases (or the reason there are none) of each op family.
void register_array_cases(OpRegistry& registry);
void register_math_cases(OpRegistry& registry);
void register_state_cases(OpRegistry& registry);
void register_conv2d_cases(OpRegistry& registry);
void register_nn_cases(OpRegistry& registry);
void register_pooling_cases(OpRegistry& registry);
void register_matrix_cases(OpRegistry& registry);
void register_compare_cases(OpRegistry& registry);
void register_training_cases(OpRegistry& registry);
void register_shape_cases(OpRegistry& registry);
void register_collective_cases(OpRegistry& registry);

}  // namespace dagrad::ops::cases
