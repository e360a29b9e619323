// The input generators of op cases.
#include "dagrad/core/op_case.hpp"

#include <cmath>

#include "dagrad/core/random.hpp"

namespace dagrad {

CaseInput uniform(Shape shape, double lo, double hi) {
  return {[shape, lo, hi](DType dtype, std::uint64_t seed, const std::vector<Tensor>&) {
    Tensor wide = Tensor::empty(DType::Float64, shape);
    SplitMix64 rng(seed, 0x0CA5E);
    const bool integral = !is_floating(dtype);
    for (std::int64_t i = 0; i < wide.num_elements(); ++i) {
      const double v = lo + (hi - lo) * rng.uniform();
      wide.data<double>()[i] = integral ? std::floor(v) : v;
    }
    return wide.cast(dtype);
  }};
}

CaseInput fixed(Tensor value) {
  return {[value](DType, std::uint64_t, const std::vector<Tensor>&) { return value; }, false};
}

CaseInput fixed_in_dtype(Tensor value, bool differentiable) {
  return {[value](DType dtype, std::uint64_t, const std::vector<Tensor>&) { return value.cast(dtype); },
          differentiable};
}

CaseInput with_zero_jacobian(CaseInput input) {
  input.differentiable = false;
  input.zero_jacobian = true;
  return input;
}

std::vector<Tensor> make_case_inputs(const OpCase& c, DType dtype, std::uint64_t seed) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) inputs.push_back(c.inputs[i].make(dtype, seed + i, inputs));
  return inputs;
}

Tensor int32s(std::vector<std::int32_t> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return Tensor::from_values<std::int32_t>(Shape{n}, values);
}

Tensor int64s(std::vector<std::int64_t> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return Tensor::from_values<std::int64_t>(Shape{n}, values);
}

}  // namespace dagrad
