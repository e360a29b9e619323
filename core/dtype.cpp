// DType names, sizes and the double -> float round-to-odd step used for single rounding.
#include "dagrad/core/dtype.hpp"

#include <bit>
#include <cmath>
#include <string>

namespace dagrad {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Half:
      return "half";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
    case DType::Invalid:
      return "invalid";
  }
  return "invalid";
}

DType parse_dtype(std::string_view text) {
  if (text == "half" || text == "float16") return DType::Half;
  if (text == "bfloat16") return DType::BFloat16;
  if (text == "float" || text == "float32") return DType::Float32;
  if (text == "double" || text == "float64") return DType::Float64;
  if (text == "int32") return DType::Int32;
  if (text == "int64") return DType::Int64;
  if (text == "bool") return DType::Bool;
  invalid_argument("unknown dtype '", text, "'; expected one of half, bfloat16, float, double, int32, int64, bool");
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Half:
    case DType::BFloat16:
      return 2;
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::Float64:
    case DType::Int64:
      return 8;
    case DType::Bool:
      return 1;
    case DType::Invalid:
      break;
  }
  fail(Code::Internal, "dtype_size: invalid dtype");
}

bool is_floating(DType dtype) {
  return dtype == DType::Half || dtype == DType::BFloat16 || dtype == DType::Float32 || dtype == DType::Float64;
}

bool is_integer(DType dtype) { return dtype == DType::Int32 || dtype == DType::Int64; }

float round_to_odd_float(double value) {
  float nearest = static_cast<float>(value);
  if (std::isnan(value) || std::isinf(nearest) || static_cast<double>(nearest) == value) {
    return nearest;
  }
  // Step back toward zero if rounding went away from it, then force the last bit to 1.
  auto bits = std::bit_cast<std::uint32_t>(nearest);
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value)) bits -= 1;
  return std::bit_cast<float>(bits | 1u);
}

}  // namespace dagrad
