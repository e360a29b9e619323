// Whole-array conversions between half/bfloat16 and float32 for the CPU kernels: vectorised
// (AVX2 + F16C) where the running CPU has it, else Eigen's scalar casts; either way bitwise equal
// to static_cast (NaN, Inf and denormals included). Parallel over fixed blocks in the caller's arena.
#pragma once

#include <cstdint>

#include "dagrad/core/dtype.hpp"

namespace dagrad::cpu {

void convert_to_float(const half* in, float* out, std::int64_t count);
void convert_to_float(const bfloat16* in, float* out, std::int64_t count);
void convert_from_float(const float* in, half* out, std::int64_t count);
void convert_from_float(const float* in, bfloat16* out, std::int64_t count);

// Whether the vector conversions are in use (tests say which path they checked).
bool vector_conversions_available();

}  // namespace dagrad::cpu
