// Picks the AVX2 + F16C conversions (isa/convert_f16c.cpp) when the CPU has them, else converts
// with Eigen's scalar casts, in parallel blocks of fixed size.
#include "dagrad/backends/cpu/convert.hpp"

#include <algorithm>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {
#if defined(__x86_64__)
namespace f16c {
void half_to_float(const std::uint16_t* in, float* out, long long count);
void float_to_half(const float* in, std::uint16_t* out, long long count);
void bf16_to_float(const std::uint16_t* in, float* out, long long count);
void float_to_bf16(const float* in, std::uint16_t* out, long long count);
}  // namespace f16c
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

template <class F>
void blocks(i64 count, F&& f) {
  if (count <= kBlock) return f(i64{0}, count);
  tbb::parallel_for(i64{0}, (count + kBlock - 1) / kBlock,
                    [&](i64 b) { f(b * kBlock, std::min(count, (b + 1) * kBlock)); });
}

template <class From, class To>
void scalar(const From* in, To* out, i64 begin, i64 end) {
  for (i64 i = begin; i < end; ++i) out[i] = static_cast<To>(in[i]);
}

}  // namespace

bool vector_conversions_available() { return cpu_info().f16c; }

void convert_to_float(const half* in, float* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) {
#if defined(__x86_64__)
    if (vector_conversions_available()) return f16c::half_to_float(bits(in) + b, out + b, e - b);
#endif
    scalar(in, out, b, e);
  });
}

void convert_to_float(const bfloat16* in, float* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) {
#if defined(__x86_64__)
    if (vector_conversions_available()) return f16c::bf16_to_float(bits(in) + b, out + b, e - b);
#endif
    scalar(in, out, b, e);
  });
}

void convert_from_float(const float* in, half* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) {
#if defined(__x86_64__)
    if (vector_conversions_available()) return f16c::float_to_half(in + b, bits(out) + b, e - b);
#endif
    scalar(in, out, b, e);
  });
}

void convert_from_float(const float* in, bfloat16* out, i64 count) {
  blocks(count, [&](i64 b, i64 e) {
#if defined(__x86_64__)
    if (vector_conversions_available()) return f16c::float_to_bf16(in + b, bits(out) + b, e - b);
#endif
    scalar(in, out, b, e);
  });
}

}  // namespace dagrad::cpu
