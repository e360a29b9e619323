// Test helpers for the CUDA backend's tests: the skip-without-device macro, random inputs, bitwise
// comparison, unit roundoffs, and running one op on cuda:0 with its result back on the host.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <dagrad/dagrad.hpp>

namespace dagrad::testing {

inline std::string cuda_skip_reason() {
#ifdef DAGRAD_WITH_CUDA
  return "SKIPPED: no CUDA device is present (no NVIDIA GPU or driver on this machine)";
#else
  return "SKIPPED: dagrad was built without the CUDA backend";
#endif
}

// Returns from the test with a visible message when there is no GPU to run on.
#define DAGRAD_SKIP_WITHOUT_CUDA_DEVICE()                      \
  if (!::dagrad::device_available(::dagrad::Device::cuda())) { \
    WARN(::dagrad::testing::cuda_skip_reason());               \
    return;                                                    \
  }

// Uniform in [-2, 2] for floats, integers in [-50, 50].
inline Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> integer(-50, 50);
  for (std::int64_t i = 0; i < t.num_elements(); ++i)
    t.data<double>()[i] = is_floating(dtype) ? real(rng) : integer(rng);
  return t.cast(dtype);
}

inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// 2^-p for a type with a p-bit significand (half 11, bfloat16 8, float 24, double 53).
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::Half:
      return std::ldexp(1.0, -11);
    case DType::BFloat16:
      return std::ldexp(1.0, -8);
    case DType::Float32:
      return std::ldexp(1.0, -24);
    default:
      return std::ldexp(1.0, -53);
  }
}
// How far two roundings to T of values within a hair of `r` can land apart: an ulp relative
// (2u, with the second-order term), or the subnormal spacing where T's results are subnormal.
inline double rounding_bound(DType t, double r) {
  double denorm_min = 0;
  switch (t) {
    case DType::Half:
      denorm_min = std::ldexp(1.0, -24);
      break;
    case DType::BFloat16:
      denorm_min = std::ldexp(1.0, -133);
      break;
    case DType::Float32:
      denorm_min = std::ldexp(1.0, -149);
      break;
    default:
      break;
  }
  return 2 * unit_roundoff(t) * (1 + 2 * unit_roundoff(t)) * std::fabs(r) + 2 * denorm_min;
}
// The unit roundoff of the type a CUDA kernel accumulates T in (float, or double for double).
inline double accumulator_roundoff(DType t) { return unit_roundoff(t == DType::Float64 ? t : DType::Float32); }

// `got` is within `tol(i, ref)` of the reference, element by element (NaN where it is NaN).
template <class Tol>
void check_close(const Tensor& got, const Tensor& ref, Tol&& tol) {
  REQUIRE(got.dtype() == ref.dtype());
  REQUIRE(got.shape() == ref.shape());
  std::int64_t bad = 0, worst = -1;
  for (std::int64_t i = 0; i < ref.num_elements(); ++i) {
    const double r = ref.value_as_double(i), g = got.value_as_double(i);
    const bool ok = (std::isnan(r) && std::isnan(g)) || std::fabs(g - r) <= tol(i, r);
    if (!ok && worst < 0) worst = i;
    bad += !ok;
  }
  INFO("first bad element " << worst << ": got " << (worst >= 0 ? got.value_as_double(worst) : 0.0) << " want "
                            << (worst >= 0 ? ref.value_as_double(worst) : 0.0));
  CHECK(bad == 0);
}

// Runs `op` on cuda:0 (device inputs copied there; host-memory inputs stay on the host) with
// `backend`, and returns every output on the host.
inline std::vector<Tensor> run_on_cuda(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                                       std::string_view backend = {}) {
  std::vector<Tensor> device_inputs;
  for (const auto& t : inputs) device_inputs.push_back(t.to(Device::cuda()));
  std::vector<Tensor> outputs = run_op(op, device_inputs, attrs, {.backend = backend});
  for (auto& t : outputs) t = t.to(Device::cpu());
  return outputs;
}

inline std::vector<Tensor> run_reference(const std::string& op, const std::vector<Tensor>& inputs,
                                         const AttrMap& attrs) {
  return run_op(op, inputs, attrs, {.backend = "reference"});
}

}  // namespace dagrad::testing
