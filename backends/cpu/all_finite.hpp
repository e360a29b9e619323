// Whether a float array holds no Inf or NaN: one linear scan, for the conv dispatcher to keep
// inputs that would meet padding zeros in a fast path (0 * Inf = NaN) on the generic path.
#pragma once

#include <cstdint>

#include "dagrad/core/dtype.hpp"

namespace dagrad::cpu {

// True when none of the `count` values is Inf or NaN. A function of the values only, whatever
// the thread count.
bool all_finite(const float* values, std::int64_t count);
bool all_finite(const half* values, std::int64_t count);
bool all_finite(const bfloat16* values, std::int64_t count);

}  // namespace dagrad::cpu
