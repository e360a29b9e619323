// Picks the widest conversion set the CPU runs (isa/convert_avx512.cpp, with or without AVX-512
// BF16's rounding instruction; isa/convert_f16c.cpp; or Eigen's scalar casts) and converts in
// parallel blocks of fixed size.
#include "dagrad/backends/cpu/convert.hpp"

#include <algorithm>
#include <cstring>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {
#if defined(__x86_64__)
// The same four loops in each ISA file.
namespace f16c {
void half_to_float(const std::uint16_t* in, float* out, long long count);
void float_to_half(const float* in, std::uint16_t* out, long long count);
void bf16_to_float(const std::uint16_t* in, float* out, long long count);
void float_to_bf16(const float* in, std::uint16_t* out, long long count);
}  // namespace f16c
namespace avx512_convert {
void half_to_float(const std::uint16_t* in, float* out, long long count);
void float_to_half(const float* in, std::uint16_t* out, long long count);
void bf16_to_float(const std::uint16_t* in, float* out, long long count);
void float_to_bf16(const float* in, std::uint16_t* out, long long count);
void float_to_bf16_native(const float* in, std::uint16_t* out, long long count);  // AVX-512 BF16
}  // namespace avx512_convert
#endif

namespace {

using i64 = std::int64_t;
constexpr i64 kBlock = 16384;  // elements per task: big enough to amortise a task, small for balance

// half and bfloat16 are one 16-bit field (Eigen's raw storage), so their arrays are uint16 arrays.
static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);
const std::uint16_t* bits(const half* p) { return reinterpret_cast<const std::uint16_t*>(p); }
const std::uint16_t* bits(const bfloat16* p) { return reinterpret_cast<const std::uint16_t*>(p); }
std::uint16_t* bits(half* p) { return reinterpret_cast<std::uint16_t*>(p); }
std::uint16_t* bits(bfloat16* p) { return reinterpret_cast<std::uint16_t*>(p); }

// Eigen's casts, one element at a time, on the bit patterns.
template <class T>
T from_bits(std::uint16_t b) {
  T v;
  std::memcpy(static_cast<void*>(&v), &b, sizeof b);
  return v;
}
template <class T>
std::uint16_t to_bits(T v) {
  std::uint16_t b;
  std::memcpy(&b, static_cast<const void*>(&v), sizeof b);
  return b;
}
template <class T>
void widen(const std::uint16_t* in, float* out, long long count) {
  for (long long i = 0; i < count; ++i) out[i] = static_cast<float>(from_bits<T>(in[i]));
}
template <class T>
void narrow(const float* in, std::uint16_t* out, long long count) {
  for (long long i = 0; i < count; ++i) out[i] = to_bits(static_cast<T>(in[i]));
}
const ConversionKernels scalar_kernels{"scalar", &widen<half>, &narrow<half>, &widen<bfloat16>, &narrow<bfloat16>};
#if defined(__x86_64__)
const ConversionKernels f16c_kernels{"f16c", &f16c::half_to_float, &f16c::float_to_half, &f16c::bf16_to_float,
                                     &f16c::float_to_bf16};
const ConversionKernels avx512_kernels{"avx512", &avx512_convert::half_to_float, &avx512_convert::float_to_half,
                                       &avx512_convert::bf16_to_float, &avx512_convert::float_to_bf16};
const ConversionKernels avx512_bf16_kernels{"avx512_bf16", &avx512_convert::half_to_float,
                                            &avx512_convert::float_to_half, &avx512_convert::bf16_to_float,
                                            &avx512_convert::float_to_bf16_native};
#endif

const ConversionKernels& active_kernels() {
  static const ConversionKernels* const active = usable_conversion_kernels().front();
  return *active;
}

template <class F>
void blocks(i64 count, F&& f) {
  if (count <= kBlock) return f(i64{0}, count);
  tbb::parallel_for(i64{0}, (count + kBlock - 1) / kBlock,
                    [&](i64 b) { f(b * kBlock, std::min(count, (b + 1) * kBlock)); });
}

}  // namespace

std::vector<const ConversionKernels*> usable_conversion_kernels() {
  std::vector<const ConversionKernels*> sets;
#if defined(__x86_64__)
  if (cpu_info().avx512_bf16) sets.push_back(&avx512_bf16_kernels);
  if (cpu_info().avx512) sets.push_back(&avx512_kernels);
  if (cpu_info().f16c) sets.push_back(&f16c_kernels);
#endif
  sets.push_back(&scalar_kernels);
  return sets;
}

void convert_to_float(const half* in, float* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) { active_kernels().half_to_float(bits(in) + b, out + b, e - b); });
}

void convert_to_float(const bfloat16* in, float* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) { active_kernels().bf16_to_float(bits(in) + b, out + b, e - b); });
}

void convert_from_float(const float* in, half* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) { active_kernels().float_to_half(in + b, bits(out) + b, e - b); });
}

void convert_from_float(const float* in, bfloat16* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) { active_kernels().float_to_bf16(in + b, bits(out) + b, e - b); });
}

}  // namespace dagrad::cpu
