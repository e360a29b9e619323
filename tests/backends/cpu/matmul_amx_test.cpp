// bfloat16 MatMul on AMX tiles: on emulated tiles (any CPU) against a float64 product within the
// bound of float32 accumulation and one bfloat16 rounding, across the 32-row, 32-column and
// 32-deep blocks and their tails; the same bits for any thread count; and, where the CPU has
// AMX-BF16, the tiles themselves and the MatMul kernel's use of them in every transpose combination.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <tbb/task_arena.h>

#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/matmul_amx.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;
using u16 = std::uint16_t;

std::vector<u16> random_bits(std::mt19937& rng, i64 count) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<u16> v(static_cast<std::size_t>(count));
  for (auto& e : v) e = std::bit_cast<u16>(static_cast<bfloat16>(u(rng)));
  return v;
}
double value(u16 bits) { return static_cast<float>(std::bit_cast<bfloat16>(bits)); }

std::vector<u16> product(const std::vector<u16>& a, const std::vector<u16>& b, i64 m, i64 k, i64 n,
                         const cpu::AmxKernels& tiles) {
  std::vector<u16> c(static_cast<std::size_t>(m * n), 0x7fc0);  // NaN: must be overwritten
  cpu::matmul_bf16_amx(a.data(), b.data(), c.data(), m, k, n, tiles);
  return c;
}

// Products of bfloat16 are exact in float32; k float32 sums add at most k * 2^-24 * sum|products|,
// the rounding to bfloat16 at most 2^-8 of the result.
void check_product(const std::vector<u16>& a, const std::vector<u16>& b, const std::vector<u16>& c, i64 m, i64 k,
                   i64 n) {
  double worst = 0;
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (i64 p = 0; p < k; ++p) {
        const double t = value(a[static_cast<std::size_t>(i * k + p)]) * value(b[static_cast<std::size_t>(p * n + j)]);
        exact += t;
        magnitude += std::abs(t);
      }
      const double acc = static_cast<double>(k) * 0x1p-24 * magnitude * 1.01;
      const double bound = 0x1p-8 * (std::abs(exact) + acc) + acc;
      const double err = std::abs(value(c[static_cast<std::size_t>(i * n + j)]) - exact);
      worst = std::max(worst, bound > 0 ? err / bound : err);
    }
  INFO("m " << m << " k " << k << " n " << n << " worst error / bound " << worst);
  REQUIRE(worst <= 1.0);
}

struct Size {
  i64 m, k, n;
};
constexpr Size kSizes[] = {{1, 16, 16}, {5, 31, 17}, {32, 32, 32}, {33, 33, 40}, {70, 100, 130}, {64, 64, 16}};

}  // namespace

TEST_CASE("cpu AMX MatMul on emulated tiles matches a float64 product", "[cpu][amx]") {
  std::mt19937 rng(3);
  for (const Size& s : kSizes) {
    const auto a = random_bits(rng, s.m * s.k), b = random_bits(rng, s.k * s.n);
    const auto c = product(a, b, s.m, s.k, s.n, cpu::amx_emulated_kernels());
    check_product(a, b, c, s.m, s.k, s.n);
    std::vector<u16> three;
    tbb::task_arena(3).execute([&] { three = product(a, b, s.m, s.k, s.n, cpu::amx_emulated_kernels()); });
    REQUIRE(three == c);
  }
}

TEST_CASE("cpu AMX MatMul on the tiles matches a float64 product and is what MatMul runs", "[cpu][amx]") {
  const cpu::AmxKernels* tiles = cpu::amx_kernels();
  if (!tiles) {
    WARN(
        "SKIPPED: this CPU has no AMX-BF16 (or the OS did not grant tile data); MatMul runs on emulated tiles only "
        "in the test above");
    return;
  }
  std::mt19937 rng(5);
  for (const Size& s : kSizes) {
    const auto a = random_bits(rng, s.m * s.k), b = random_bits(rng, s.k * s.n);
    const auto c = product(a, b, s.m, s.k, s.n, *tiles);
    check_product(a, b, c, s.m, s.k, s.n);
    // The MatMul kernel, transposes included, gives these bits.
    const auto tensor = [](const std::vector<u16>& bits, i64 rows, i64 cols, bool transpose) {
      Tensor t = Tensor::empty(DType::BFloat16, Shape{rows, cols});
      for (std::size_t i = 0; i < bits.size(); ++i) t.data<bfloat16>()[i] = std::bit_cast<bfloat16>(bits[i]);
      return transpose ? run_op("Transpose", {t, Tensor::from_values<std::int32_t>(Shape{2}, {1, 0})})[0] : t;
    };
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const Tensor got = run_op("MatMul", {tensor(a, s.m, s.k, ta), tensor(b, s.k, s.n, tb)},
                                  {{"transpose_a", ta}, {"transpose_b", tb}})[0];
        REQUIRE(std::memcmp(got.data<bfloat16>(), c.data(), c.size() * sizeof(u16)) == 0);
      }
  }
}
