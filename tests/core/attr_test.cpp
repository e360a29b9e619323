// parse_attr on hostile text: out-of-range numbers and impossible shape dims are refused by name,
// and what it accepts prints back to text that parses to the same value.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using dagrad::testing::error_of;

TEST_CASE("parse_attr names an integer beyond int64 as out of range", "[attr]") {
  CHECK(std::get<std::int64_t>(parse_attr(AttrKind::Int, "9223372036854775807")) == INT64_MAX);
  CHECK(std::get<std::int64_t>(parse_attr(AttrKind::Int, "-9223372036854775808")) == INT64_MIN);
  CHECK_THAT(error_of([] { parse_attr(AttrKind::Int, "9223372036854775808"); }), Contains("out of range for int64"));
  CHECK_THAT(error_of([] { parse_attr(AttrKind::ListInt, "1,-99999999999999999999"); }),
             Contains("'-99999999999999999999' is out of range"));
  CHECK_THAT(error_of([] { parse_attr(AttrKind::Int, "12abc"); }), Contains("expected an integer, got '12abc'"));
}

TEST_CASE("parse_attr refuses a float that overflows to infinity but keeps inf and nan", "[attr]") {
  CHECK_THAT(error_of([] { parse_attr(AttrKind::Float, "1e999"); }), Contains("'1e999' is out of range for a double"));
  CHECK_THAT(error_of([] { parse_attr(AttrKind::ListFloat, "0.5,-1e400"); }), Contains("'-1e400' is out of range"));
  CHECK(std::isinf(std::get<double>(parse_attr(AttrKind::Float, "inf"))));
  CHECK(std::isnan(std::get<double>(parse_attr(AttrKind::Float, "nan"))));
  CHECK(std::get<double>(parse_attr(AttrKind::Float, "1e-400")) == 0.0);  // underflow rounds, as TF's does
}

TEST_CASE("parse_attr accepts -1 or ? as an unknown dim and refuses dims below -1", "[attr]") {
  CHECK(std::get<Shape>(parse_attr(AttrKind::Shape, "?,28,-1")) == Shape{-1, 28, -1});
  CHECK_THAT(error_of([] { parse_attr(AttrKind::Shape, "2,-5"); }), Contains("Dimension -5 must be >= -1"));
  CHECK_THAT(error_of([] { parse_attr(AttrKind::Shape, "-9223372036854775808"); }), Contains("must be >= -1"));
}

TEST_CASE("what parse_attr accepts survives printing and parsing again", "[attr]") {
  const struct {
    AttrKind kind;
    const char* text;
  } cases[] = {{AttrKind::Int, "-9223372036854775808"},
               {AttrKind::ListInt, "1,9223372036854775807,-3"},
               {AttrKind::ListInt, ""},
               {AttrKind::Shape, "[?,0,7]"},
               {AttrKind::Shape, ""},
               {AttrKind::Bool, "True"},
               {AttrKind::Type, "float16"}};
  for (const auto& c : cases) {
    INFO(attr_kind_name(c.kind) << " " << c.text);
    const AttrValue value = parse_attr(c.kind, c.text);
    const AttrValue again = parse_attr(c.kind, attr_to_string(value));
    CHECK(attr_to_string(again) == attr_to_string(value));
  }
}
