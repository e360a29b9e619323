// Overflow-checked int64 arithmetic (see checked.hpp for the rule it serves).
#include "dagrad/core/checked.hpp"

#include <limits>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

[[noreturn]] void overflow(std::string_view what, std::int64_t a, char op, std::int64_t b) {
  fail(Code::OutOfRange, what, ": integer overflow computing ", a, " ", op, " ", b);
}

}  // namespace

std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow(what, a, '+', b);
  return r;
}

std::int64_t checked_sub(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) overflow(what, a, '-', b);
  return r;
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow(what, a, '*', b);
  return r;
}

std::int64_t checked_product(std::initializer_list<std::int64_t> factors, std::string_view what) {
  std::int64_t r = 1;
  for (auto f : factors) r = checked_mul(r, f, what);
  return r;
}

std::size_t checked_bytes(std::int64_t count, std::size_t element_size, std::string_view what) {
  DAGRAD_REQUIRE_CODE(count >= 0, OutOfRange, what, ": negative element count ", count);
  const auto bytes = checked_mul(count, static_cast<std::int64_t>(element_size), what);
  return static_cast<std::size_t>(bytes);
}

}  // namespace dagrad
