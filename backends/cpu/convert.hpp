// Whole-array conversions between half/bfloat16 and float32 for the CPU kernels: vectorised
// (AVX-512, or AVX2 + F16C) where the running CPU has it, else Eigen's scalar casts; every set is
// bitwise equal to static_cast (NaN, Inf and denormals included). Parallel over fixed blocks in
// the caller's arena.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/core/dtype.hpp"

namespace dagrad::cpu {

void convert_to_float(const half* in, float* out, std::int64_t count);
void convert_to_float(const bfloat16* in, float* out, std::int64_t count);
void convert_from_float(const float* in, half* out, std::int64_t count);
void convert_from_float(const float* in, bfloat16* out, std::int64_t count);

// One set of conversion loops over 16-bit patterns (half or bfloat16 bits).
struct ConversionKernels {
  const char* name;  // "avx512_bf16", "avx512", "f16c" or "scalar"
  void (*half_to_float)(const std::uint16_t* in, float* out, long long count);
  void (*float_to_half)(const float* in, std::uint16_t* out, long long count);
  void (*bf16_to_float)(const std::uint16_t* in, float* out, long long count);
  void (*float_to_bf16)(const float* in, std::uint16_t* out, long long count);
};

// The sets this CPU can run, widest first: the conversions above use the first; tests check each.
std::vector<const ConversionKernels*> usable_conversion_kernels();

}  // namespace dagrad::cpu
