// The AMX-BF16 conv paths (filter gradient, Conv2D, input gradient) against the float64 reference
// kernel, on the tiles where the CPU has them and on emulated tiles everywhere, so their packing and
// blocking are checked on any CPU; and the tile emulation itself.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include <dagrad/dagrad.hpp>

#include "support/conv_bf16_cases.hpp"

using namespace dagrad;
using namespace dagrad::bf16_conv_test;

TEST_CASE("cpu AMX conv paths on emulated tiles match the float64 reference", "[cpu][conv][amx]") {
  std::mt19937 rng(41);
  for (Op op : {Op::FilterAmxEmulated, Op::ForwardAmxEmulated, Op::InputAmxEmulated}) {
    for (int trial = 0; trial < 16; ++trial) check_case(op, random_case(rng, false), rng);
    for (int trial = 0; trial < 2; ++trial) check_case(op, random_case(rng, true), rng);
    for (const Case& cs : edge_cases()) check_case(op, cs, rng);
    check_thread_invariance(op, random_case(rng, true), rng);
  }
}

TEST_CASE("cpu AMX tile batch emulation: pair order, operand order, denormals", "[cpu][amx]") {
  const auto bits = [](float v) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16); };
  const auto word = [&](float even, float odd) { return std::uint32_t{bits(even)} | std::uint32_t{bits(odd)} << 16; };
  const auto run = [](const std::vector<std::uint16_t>& a, const std::vector<std::uint32_t>& b, float c) {
    const cpu::AmxOperands operands[2] = {{a.data(), 32, b.data()}, {a.data() + 32, 32, b.data() + 16}};
    cpu::amx_emulated_kernels().batch(1, 1, operands, 2, 1, &c, 1);
    return c;
  };
  std::vector<std::uint16_t> a(64, 0);
  std::vector<std::uint32_t> b(32, 0);
  // 1 + 2^24 (the even product) rounds the 1 away (ties to even) before the odd product cancels
  // the 2^24: the order of the two products is part of the arithmetic.
  a[0] = a[1] = bits(0x1p24f);
  b[0] = word(1.0f, -1.0f);
  CHECK(run(a, b, 1.0f) == 0.0f);
  // Operand pairs in order: pair 0 of the second operand (2^24 * -1) comes after the first's.
  b[0] = word(1.0f, 0.0f);
  a[32] = bits(0x1p24f);
  b[16] = word(-1.0f, 0.0f);
  CHECK(run(a, b, 1.0f) == 0.0f);
  // A denormal bfloat16 reads as zero; a denormal sum is flushed.
  std::fill(a.begin(), a.end(), 0);
  std::fill(b.begin(), b.end(), 0);
  a[0] = bits(0x1p-130f);
  b[0] = word(1.0f, 0.0f);
  CHECK(run(a, b, 0.0f) == 0.0f);
  a[0] = bits(0x1p-100f);
  b[0] = word(0x1p-30f, 0.0f);
  CHECK(run(a, b, 0.0f) == 0.0f);
  a[0] = bits(0.5f);
  CHECK(run(a, b, 0.0f) == 0x1p-31f);  // and a normal one is not
}

TEST_CASE("cpu AMX conv paths on the tiles match the float64 reference", "[cpu][conv][amx]") {
  if (skip_without_amx()) return;
  std::mt19937 rng(43);
  for (Op op : {Op::FilterAmx, Op::ForwardAmx, Op::InputAmx}) {
    for (int trial = 0; trial < 30; ++trial) check_case(op, random_case(rng, trial % 5 == 0), rng);
    for (const Case& cs : edge_cases()) check_case(op, cs, rng);
    check_thread_invariance(op, random_case(rng, true), rng);
  }
}
