// Rounded integer division of positions and offsets by strides and dilations (b > 0), for any sign
// of a with |a| <= INT64_MAX: no intermediate leaves int64, as attributes may reach INT64_MAX.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b + (a % b != 0) : -((-a) / b); }
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a) / b) - ((-a) % b != 0); }

}  // namespace dagrad::cpu
