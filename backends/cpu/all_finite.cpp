// The finite scan of all_finite.hpp on bit patterns: a value is Inf or NaN exactly when its
// exponent bits are all ones.
#include "dagrad/backends/cpu/all_finite.hpp"

#include <algorithm>
#include <cstring>

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;

// One branch-free loop of and, add and or, which the compiler vectorises with plain SSE2: adding
// the lowest exponent bit to the magnitude carries into the sign bit exactly when the exponent
// bits are all ones (the magnitude of +Inf, 0x7f800000 for float32, plus 0x00800000 is 0x80000000).
template <class Bits, class T>
bool block_finite(const T* values, i64 count, Bits magnitude_mask, Bits exponent_one) {
  static_assert(sizeof(Bits) == sizeof(T));
  Bits seen = 0;
  for (i64 i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, values + i, sizeof bits);
    seen |= static_cast<Bits>((bits & magnitude_mask) + exponent_one);
  }
  return (seen & ~magnitude_mask) == 0;
}

// Blocks of a fixed size; stopping at the first bad block only saves time, the answer is the same.
template <class Bits, class T>
bool all_finite_bits(const T* values, i64 count, Bits magnitude_mask, Bits exponent_one) {
  constexpr i64 kBlock = i64{1} << 14;
  return tbb::parallel_reduce(
      tbb::blocked_range<i64>(0, (count + kBlock - 1) / kBlock), true,
      [=](const tbb::blocked_range<i64>& r, bool ok) {
        for (i64 b = r.begin(); ok && b < r.end(); ++b)
          ok = block_finite(values + b * kBlock, std::min(kBlock, count - b * kBlock), magnitude_mask, exponent_one);
        return ok;
      },
      [](bool a, bool b) { return a && b; });
}

}  // namespace

bool all_finite(const float* values, i64 count) {
  return all_finite_bits<std::uint32_t>(values, count, 0x7fffffffu, 0x00800000u);
}
bool all_finite(const half* values, i64 count) { return all_finite_bits<std::uint16_t>(values, count, 0x7fff, 0x0400); }
bool all_finite(const bfloat16* values, i64 count) {
  return all_finite_bits<std::uint16_t>(values, count, 0x7fff, 0x0080);
}

}  // namespace dagrad::cpu
