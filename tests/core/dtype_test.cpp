// DType conversions: half/bfloat16 bit layouts, round-to-nearest-even, single rounding from
// double, and TF's Cast rules for integers and bool.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

template <class T>
std::uint16_t bits(T value) {
  return Eigen::numext::bit_cast<std::uint16_t>(value);
}

template <class T>
T from_bits(std::uint16_t b) {
  return Eigen::numext::bit_cast<T>(b);
}

}  // namespace

TEST_CASE("half and bfloat16 have CUDA's bit layouts", "[core]") {
  CHECK(bits(half(1.0f)) == 0x3C00);
  CHECK(bits(half(-2.0f)) == 0xC000);
  CHECK(bits(half(65504.0f)) == 0x7BFF);               // largest finite half
  CHECK(bits(half(std::ldexp(1.0f, -24))) == 0x0001);  // smallest subnormal
  CHECK(bits(half(std::numeric_limits<float>::infinity())) == 0x7C00);
  CHECK(bits(half(-std::numeric_limits<float>::infinity())) == 0xFC00);
  const std::uint16_t half_nan = bits(half(std::numeric_limits<float>::quiet_NaN()));
  CHECK((half_nan & 0x7C00) == 0x7C00);
  CHECK((half_nan & 0x03FF) != 0);

  CHECK(bits(bfloat16(1.0f)) == 0x3F80);
  CHECK(bits(bfloat16(-2.0f)) == 0xC000);
  CHECK(bits(bfloat16(std::numeric_limits<float>::infinity())) == 0x7F80);
  const std::uint16_t bf_nan = bits(bfloat16(std::numeric_limits<float>::quiet_NaN()));
  CHECK((bf_nan & 0x7F80) == 0x7F80);
  CHECK((bf_nan & 0x007F) != 0);
  CHECK(static_cast<float>(from_bits<half>(0x3555)) == 0.333251953125f);
  CHECK(static_cast<float>(from_bits<bfloat16>(0x4049)) == 3.140625f);
}

TEST_CASE("every half and bfloat16 value survives a round trip through float", "[core]") {
  int failures = 0;
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto h = from_bits<half>(static_cast<std::uint16_t>(b));
    const auto bf = from_bits<bfloat16>(static_cast<std::uint16_t>(b));
    const float hf = static_cast<float>(h), bff = static_cast<float>(bf);
    if (!std::isnan(hf) && bits(half(hf)) != b) ++failures;
    if (!std::isnan(bff) && bits(bfloat16(bff)) != b) ++failures;
    if (!std::isnan(hf) && bits(narrow<half>(static_cast<double>(hf))) != b) ++failures;
    if (!std::isnan(bff) && bits(narrow<bfloat16>(static_cast<double>(bff))) != b) ++failures;
  }
  CHECK(failures == 0);
}

TEST_CASE("conversions to half and bfloat16 round to nearest even at ties", "[core]") {
  // Half has 10 fraction bits: 1 + 2^-11 lies exactly between 0x3C00 and 0x3C01.
  CHECK(bits(half(1.0f + std::ldexp(1.0f, -11))) == 0x3C00);
  CHECK(bits(half(1.0f + 3 * std::ldexp(1.0f, -11))) == 0x3C02);
  CHECK(bits(half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20))) == 0x3C01);
  // Subnormal tie: 2^-25 is halfway between 0 and the smallest subnormal.
  CHECK(bits(half(std::ldexp(1.0f, -25))) == 0x0000);
  CHECK(bits(half(3 * std::ldexp(1.0f, -25))) == 0x0002);
  // 65520 is halfway between 65504 (odd fraction) and 65536, which overflows to inf.
  CHECK(bits(half(65520.0f)) == 0x7C00);
  CHECK(bits(half(65519.0f)) == 0x7BFF);
  // bfloat16 has 7 fraction bits: 1 + 2^-8 lies between 0x3F80 and 0x3F81.
  CHECK(bits(bfloat16(1.0f + std::ldexp(1.0f, -8))) == 0x3F80);
  CHECK(bits(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8))) == 0x3F82);
  CHECK(bits(narrow<half>(1.0 + std::ldexp(1.0, -11))) == 0x3C00);
  CHECK(bits(narrow<bfloat16>(1.0 + 3 * std::ldexp(1.0, -8))) == 0x3F82);
}

TEST_CASE("narrow<T>(double) rounds once, where double -> float -> T would round twice", "[core]") {
  // Just above a half tie: float keeps only the tie (2^-40 is below its precision), and the
  // second rounding then goes to even, below the correctly rounded result.
  const double above = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  REQUIRE(bits(half(static_cast<float>(above))) == 0x3C00);  // the double-rounding answer
  CHECK(bits(narrow<half>(above)) == 0x3C01);
  // Just below a tie whose even neighbour is above.
  const double below = 1.0 + 3 * std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
  REQUIRE(bits(half(static_cast<float>(below))) == 0x3C02);
  CHECK(bits(narrow<half>(below)) == 0x3C01);
  // The same for bfloat16.
  const double bf_above = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  REQUIRE(bits(bfloat16(static_cast<float>(bf_above))) == 0x3F80);
  CHECK(bits(narrow<bfloat16>(bf_above)) == 0x3F81);
  // Negative values mirror positive ones.
  CHECK(bits(narrow<half>(-above)) == 0xBC01);
  // Exact values, infinities and NaN pass through.
  CHECK(bits(narrow<half>(0.5)) == 0x3800);
  CHECK(bits(narrow<half>(std::numeric_limits<double>::infinity())) == 0x7C00);
  CHECK(std::isnan(static_cast<float>(narrow<half>(std::nan("")))));
  CHECK(bits(narrow<half>(1e10)) == 0x7C00);  // overflow
  CHECK(narrow<float>(1.0 + std::ldexp(1.0, -30)) == 1.0f);
}

TEST_CASE("cast_value follows TF's Cast for integers and bool", "[core]") {
  CHECK(cast_value<std::int32_t, float>(-1.7f) == -1);
  CHECK(cast_value<std::int32_t, double>(2.9) == 2);
  CHECK(cast_value<std::int32_t, double>(1e20) == std::numeric_limits<std::int32_t>::max());
  CHECK(cast_value<std::int32_t, double>(-1e20) == std::numeric_limits<std::int32_t>::min());
  CHECK(cast_value<std::int32_t, double>(std::nan("")) == 0);
  CHECK(cast_value<std::int32_t, std::int64_t>((std::int64_t{1} << 32) + 5) == 5);  // wraps
  CHECK(cast_value<bool, float>(0.25f) == true);
  CHECK(cast_value<bool, std::int32_t>(0) == false);
  CHECK(cast_value<float, bool>(true) == 1.0f);
  // int64 -> float rounds once: 2^24 + 1 is a tie between 2^24 and 2^24 + 2.
  CHECK(cast_value<float, std::int64_t>((std::int64_t{1} << 24) + 1) == 16777216.0f);
  CHECK(cast_value<float, std::int64_t>((std::int64_t{1} << 24) + 3) == 16777220.0f);
  CHECK(bits(cast_value<half, double>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))) == 0x3C01);
}
