// The one checked-arithmetic rule: every size, index and offset derived from user data (shapes,
// attributes, file headers, CLI specs) is computed with these functions, which throw
// dagrad::Error (OutOfRange) naming what was being computed and the operands, never wrap.
// Code that works on values already bounded by a checked result may use plain int64 arithmetic;
// say so in a comment where it does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace dagrad {

// a + b, a - b and a * b on int64. `what` names the quantity in the error message
// ("Conv2D: workspace bytes"); it is read only when the operation overflows.
std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what = "size");
std::int64_t checked_sub(std::int64_t a, std::int64_t b, std::string_view what = "size");
std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what = "dimensions");

// The product of all `factors` (each >= 0), checked at every step.
std::int64_t checked_product(std::initializer_list<std::int64_t> factors, std::string_view what = "dimensions");

// count * element_size as a size_t byte count, for allocations; count must be >= 0.
std::size_t checked_bytes(std::int64_t count, std::size_t element_size, std::string_view what = "buffer");

}  // namespace dagrad
