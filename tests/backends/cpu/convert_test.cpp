// The CPU backend's half/bfloat16 <-> float32 array conversions are bitwise equal to Eigen's
// static_cast: every 16-bit pattern widened, and narrowed floats covering NaN payloads, Inf,
// denormals, overflow and rounding ties, plus random bit patterns; lengths leave vector tails.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dagrad/backends/cpu/convert.hpp"

namespace {

using namespace dagrad;

template <class T>
std::uint16_t bits_of(T v) {
  std::uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}
std::uint32_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float float_of(std::uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}
template <class T>
T from_bits(std::uint16_t b) {
  T v;
  std::memcpy(static_cast<void*>(&v), &b, 2);  // half/bfloat16 are one 16-bit field
  return v;
}

// Every 16-bit pattern (65536 + 3 so the last vector is partial), widened by `widen`.
template <class T>
void check_widen_all(void (*widen)(const std::uint16_t*, float*, long long)) {
  std::vector<std::uint16_t> in;
  for (std::uint32_t b = 0; b < 65536 + 3; ++b) in.push_back(static_cast<std::uint16_t>(b));
  std::vector<float> out(in.size(), 123.0f);
  widen(in.data(), out.data(), static_cast<long long>(in.size()));
  std::size_t i = 0;  // the first mismatch, if any (one assertion instead of 65539)
  while (i < in.size() && bits_of(out[i]) == bits_of(static_cast<float>(from_bits<T>(in[i])))) ++i;
  if (i < in.size()) {
    INFO("input bits 0x" << std::hex << in[i] << " gave 0x" << bits_of(out[i]) << " not 0x"
                         << bits_of(static_cast<float>(from_bits<T>(in[i]))));
    FAIL("widening differs from static_cast");
  }
}

// Float bit patterns that stress narrowing: each high half (all signs, exponents, and the 16
// mantissa bits bfloat16 keeps) with low halves at and around the rounding tie, zero and all ones;
// half's own ties and thresholds come from shifted variants; then random patterns.
std::vector<float> narrowing_inputs() {
  std::vector<float> v;
  for (std::uint32_t hi = 0; hi < 65536; ++hi)
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      v.push_back(float_of(hi << 16 | lo));
  // half keeps 10 mantissa bits: ties at bit 12 of the float mantissa, for every exponent.
  for (std::uint32_t sign_exp = 0; sign_exp < 512; ++sign_exp)
    for (std::uint32_t mant :
         {0x000000u, 0x001000u, 0x002000u, 0x003000u, 0x000fffu, 0x001001u, 0x7ff000u, 0x7fffffu, 0x400000u, 0x000001u})
      v.push_back(float_of(sign_exp << 23 | mant));
  for (float f :
       {65504.0f, 65519.0f, 65520.0f, 65536.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f})
    for (float s : {1.0f, -1.0f}) v.push_back(s * f);
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) v.push_back(float_of(static_cast<std::uint32_t>(rng())));
  v.push_back(1.0f);  // an odd total length: the tail path runs too
  return v;
}

template <class T>
void check_narrow(void (*narrow)(const float*, std::uint16_t*, long long)) {
  const auto in = narrowing_inputs();
  std::vector<std::uint16_t> out(in.size());
  narrow(in.data(), out.data(), static_cast<long long>(in.size()));
  std::size_t i = 0;  // the first mismatch, if any
  while (i < in.size() && out[i] == bits_of(static_cast<T>(in[i]))) ++i;
  if (i < in.size()) {
    INFO("input bits 0x" << std::hex << bits_of(in[i]) << " gave 0x" << out[i] << " not 0x"
                         << bits_of(static_cast<T>(in[i])));
    FAIL("narrowing differs from static_cast");
  }
  REQUIRE(in.size() > 400000);
}

// Every conversion set this CPU runs (the widest is the one in use), and the public functions.
std::vector<const cpu::ConversionKernels*> conversion_sets() {
  auto sets = cpu::usable_conversion_kernels();
  REQUIRE(std::string(sets.back()->name) == "scalar");
  if (sets.size() == 1) WARN("SKIPPED: no AVX2 + F16C or AVX-512 here: only the scalar conversions were checked");
  return sets;
}

}  // namespace

TEST_CASE("cpu half and bfloat16 widening is bitwise static_cast for every pattern", "[cpu][conv]") {
  for (const cpu::ConversionKernels* set : conversion_sets()) {
    INFO("conversion set " << set->name);
    check_widen_all<half>(set->half_to_float);
    check_widen_all<bfloat16>(set->bf16_to_float);
  }
  check_widen_all<half>([](const std::uint16_t* in, float* out, long long n) {
    cpu::convert_to_float(reinterpret_cast<const half*>(in), out, n);
  });
  check_widen_all<bfloat16>([](const std::uint16_t* in, float* out, long long n) {
    cpu::convert_to_float(reinterpret_cast<const bfloat16*>(in), out, n);
  });
}

TEST_CASE("cpu float narrowing to half and bfloat16 is bitwise static_cast", "[cpu][conv]") {
  for (const cpu::ConversionKernels* set : conversion_sets()) {
    INFO("conversion set " << set->name);
    check_narrow<half>(set->float_to_half);
    check_narrow<bfloat16>(set->float_to_bf16);
  }
  check_narrow<half>([](const float* in, std::uint16_t* out, long long n) {
    cpu::convert_from_float(in, reinterpret_cast<half*>(out), n);
  });
  check_narrow<bfloat16>([](const float* in, std::uint16_t* out, long long n) {
    cpu::convert_from_float(in, reinterpret_cast<bfloat16*>(out), n);
  });
}

TEST_CASE("cpu conversions of short arrays touch only their elements", "[cpu][conv]") {
  using Widen = void (*)(const std::uint16_t*, float*, long long);
  using Narrow = void (*)(const float*, std::uint16_t*, long long);
  for (const cpu::ConversionKernels* set : conversion_sets()) {
    INFO("conversion set " << set->name);
    for (const auto& [widen, narrow] : {std::pair<Widen, Narrow>{set->half_to_float, set->float_to_half},
                                        std::pair<Widen, Narrow>{set->bf16_to_float, set->float_to_bf16}}) {
      for (long long n : {0, 1, 7, 9, 15, 16, 17, 33}) {
        std::vector<float> in(static_cast<std::size_t>(n) + 1, 0.5f), out(in.size(), -3.0f);
        std::vector<std::uint16_t> mid(in.size(), 0x1234);
        narrow(in.data(), mid.data(), n);
        REQUIRE(mid.back() == 0x1234);
        widen(mid.data(), out.data(), n);
        REQUIRE(out.back() == -3.0f);
        for (long long i = 0; i < n; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == 0.5f);
      }
    }
  }
}
