// Element types: the DType enum, TF's spellings, host types and compile-time dispatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

// Eigen's half and bfloat16 are the host types TensorFlow itself uses: round-to-nearest-even
// conversions and the same bit layout as CUDA's __half and __nv_bfloat16.
#include <Eigen/Core>

#include "dagrad/core/error.hpp"

namespace dagrad {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

// Invalid marks "no dtype" (ops without a type attribute); users never spell it.
enum class DType : std::uint8_t { Invalid, Half, BFloat16, Float32, Float64, Int32, Int64, Bool };

inline constexpr DType kFloatingDTypes[] = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};
inline constexpr DType kAllDTypes[] = {DType::Half,  DType::BFloat16, DType::Float32, DType::Float64,
                                       DType::Int32, DType::Int64,    DType::Bool};

// TF's spelling: "half", "bfloat16", "float", "double", "int32", "int64", "bool".
std::string_view dtype_name(DType dtype);
// Accepts TF's spelling and numpy's aliases (float16, float32, float64); throws on anything else.
DType parse_dtype(std::string_view text);
std::size_t dtype_size(DType dtype);
bool is_floating(DType dtype);
bool is_integer(DType dtype);

template <class T>
struct dtype_of_impl;
template <>
struct dtype_of_impl<half> {
  static constexpr DType value = DType::Half;
};
template <>
struct dtype_of_impl<bfloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of_impl<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of_impl<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct dtype_of_impl<std::int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of_impl<std::int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of_impl<bool> {
  static constexpr DType value = DType::Bool;
};
template <class T>
inline constexpr DType dtype_of = dtype_of_impl<T>::value;

// Calls f.template operator()<T>() with the host type T of `dtype`:
//   visit_dtype(t.dtype(), [&]<class T>() { ... });
template <class F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Half:
      return f.template operator()<half>();
    case DType::BFloat16:
      return f.template operator()<bfloat16>();
    case DType::Float32:
      return f.template operator()<float>();
    case DType::Float64:
      return f.template operator()<double>();
    case DType::Int32:
      return f.template operator()<std::int32_t>();
    case DType::Int64:
      return f.template operator()<std::int64_t>();
    case DType::Bool:
      return f.template operator()<bool>();
    case DType::Invalid:
      break;
  }
  fail(Code::Internal, "visit_dtype: invalid dtype");
}

// The same, for the four floating types only.
template <class F>
decltype(auto) visit_floating(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Half:
      return f.template operator()<half>();
    case DType::BFloat16:
      return f.template operator()<bfloat16>();
    case DType::Float32:
      return f.template operator()<float>();
    case DType::Float64:
      return f.template operator()<double>();
    default:
      break;
  }
  fail(Code::Internal, "visit_floating: ", dtype_name(dtype), " is not a floating dtype");
}

template <class T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <class T>
inline constexpr bool is_floating_v = is_reduced_float_v<T> || std::is_floating_point_v<T>;

// Accumulator type for a storage type: float for half/bfloat16 (as TF and cuDNN do), else itself.
template <class T>
using accumulator_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

// Rounds a float64 value to float with round-to-odd: a second rounding of the result to a
// type with at most 22 significand bits then equals one correct rounding of the double.
float round_to_odd_float(double value);

// Converts a wide value to T with a single correct rounding (round to nearest even).
template <class T>
T narrow(double value) {
  if constexpr (is_reduced_float_v<T>) {
    return T(round_to_odd_float(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else {
    return static_cast<T>(value);
  }
}

template <class T>
double widen(T value) {
  return static_cast<double>(static_cast<accumulator_t<T>>(value));
}

// Converts between any two dtypes as TF's Cast does: one rounding for floating targets,
// truncation toward zero for float -> integer (saturating, NaN -> 0, where C++ would be
// undefined), modular wrap between integers, and != 0 for bool.
template <class D, class S>
D cast_value(S value) {
  if constexpr (std::is_same_v<D, bool>) {
    return widen<S>(value) != 0.0;
  } else if constexpr (std::is_integral_v<D> && std::is_integral_v<S>) {
    return static_cast<D>(value);
  } else if constexpr (std::is_integral_v<D>) {
    const double v = widen<S>(value);
    if (v != v) return 0;
    if (v <= static_cast<double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  } else if constexpr (std::is_same_v<S, std::int64_t> && std::is_same_v<D, float>) {
    return static_cast<float>(value);  // one rounding, not two through double
  } else {
    return narrow<D>(widen<S>(value));
  }
}

}  // namespace dagrad
