// The input generators of the library's op cases.
#include "dagrad/ops/cases/case_inputs.hpp"

#include <algorithm>
#include <numeric>

#include "dagrad/core/eager.hpp"
#include "dagrad/core/random.hpp"

namespace dagrad::ops::cases {

using i64 = std::int64_t;

CaseInput away_from_zero(Shape shape) {
  return {[shape](DType dtype, std::uint64_t seed, const std::vector<Tensor>&) {
    Tensor t = Tensor::empty(DType::Float64, shape);
    SplitMix64 rng(seed, 0xAFA7);
    const bool integral = !is_floating(dtype);
    for (i64 i = 0; i < t.num_elements(); ++i) {
      const double magnitude = integral ? 1.0 + static_cast<double>(rng.below(4)) : 0.25 + 0.75 * rng.uniform();
      t.data<double>()[i] = rng.below(2) ? magnitude : -magnitude;
    }
    return t.cast(dtype);
  }};
}

CaseInput distinct(Shape shape) {
  return {[shape](DType dtype, std::uint64_t seed, const std::vector<Tensor>&) {
    Tensor t = Tensor::empty(DType::Float64, shape);
    const i64 n = t.num_elements();
    std::vector<i64> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), -n / 2);
    SplitMix64 rng(seed, 0xD157);
    for (i64 i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
    for (i64 i = 0; i < n; ++i) t.data<double>()[i] = static_cast<double>(order[i]) / 64.0;
    return t.cast(dtype);
  }};
}

CaseInput small_integers(Shape shape) {
  return {[shape](DType dtype, std::uint64_t seed, const std::vector<Tensor>&) {
            Tensor t = Tensor::empty(DType::Float64, shape);
            SplitMix64 rng(seed, 0x5A11);
            for (i64 i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = static_cast<double>(rng.below(5)) - 2;
            return t.cast(dtype);
          },
          false};
}

CaseInput probabilities(i64 rows, i64 classes) {
  return {[rows, classes](DType dtype, std::uint64_t seed, const std::vector<Tensor>&) {
    Tensor t = Tensor::empty(DType::Float64, Shape{rows, classes});
    SplitMix64 rng(seed, 0x9B0B);
    double* p = t.data<double>();
    for (i64 r = 0; r < rows; ++r) {
      double sum = 0;
      for (i64 j = 0; j < classes; ++j) sum += p[r * classes + j] = 0.1 + rng.uniform();
      for (i64 j = 0; j < classes; ++j) p[r * classes + j] /= sum;
    }
    return t.cast(dtype);
  }};
}

CaseInput class_labels(i64 rows, i64 classes, DType index_dtype) {
  return {[rows, classes, index_dtype](DType, std::uint64_t seed, const std::vector<Tensor>&) {
            Tensor t = Tensor::empty(DType::Float64, Shape{rows});
            SplitMix64 rng(seed, 0x1AB3);
            for (i64 i = 0; i < rows; ++i)
              t.data<double>()[i] = static_cast<double>(rng.below(static_cast<std::uint64_t>(classes)));
            return t.cast(index_dtype);
          },
          false};
}

CaseInput output_of(std::string op, std::vector<int> from, AttrMap attrs, int index) {
  return {[op, from, attrs, index](DType, std::uint64_t, const std::vector<Tensor>& made) {
            std::vector<Tensor> inputs;
            for (int i : from) inputs.push_back(made.at(static_cast<std::size_t>(i)));
            return run_op(op, inputs, attrs, {.name = {}, .backend = "reference"}).at(static_cast<std::size_t>(index));
          },
          false};
}

Tensor int32_dims(const Shape& shape) {
  std::vector<std::int32_t> dims;
  for (const std::int64_t d : shape.dims()) dims.push_back(static_cast<std::int32_t>(d));
  return int32s(dims);
}

}  // namespace dagrad::ops::cases
