// The micro-kernel set the CPU gets (microkernels.hpp) is whole: its table is filled by aggregate
// initialisation in isa/conv_microkernels.inc, where a member left out is silently null.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "dagrad/backends/cpu/microkernels.hpp"

TEST_CASE("the chosen micro-kernel set has every kernel", "[cpu][isa]") {
  const dagrad::cpu::MicroKernels& mk = dagrad::cpu::micro_kernels();
  CHECK(mk.vector_width > 0);
  CHECK(mk.tile_rows > 0);
  CHECK(mk.rows != nullptr);
  CHECK(mk.rows_t != nullptr);
  CHECK(mk.pixels != nullptr);
  CHECK(mk.grid != nullptr);
  CHECK(mk.grid_max_rows != nullptr);
  CHECK(mk.slide != nullptr);
  CHECK(mk.transform != nullptr);
  CHECK(mk.winograd_input != nullptr);
  CHECK(mk.winograd_output != nullptr);
  CHECK(mk.winograd_dy != nullptr);
  CHECK(mk.epilogue != nullptr);
  // A member added to MicroKernels changes the size: this assertion then asks for its check above.
  static_assert(sizeof(dagrad::cpu::MicroKernels) == 2 * sizeof(int) + 11 * sizeof(void*));
}

// slide is grid with offsets 0, 1, 2, ... and sx = 1, summed in grid's order: the same bits, on
// every tile height, window length and column count it takes (columns past whole vectors too).
TEST_CASE("the slide kernel gives the grid kernel's bits", "[cpu][isa]") {
  const dagrad::cpu::MicroKernels& mk = dagrad::cpu::micro_kernels();
  const long long rs = 40, nrows = 4;
  std::vector<float> x(static_cast<std::size_t>(nrows * rs));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 257) / 64.0f - 2.0f;
  const long long offsets[dagrad::cpu::kMaxRows] = {0, 1, 2, 3, 4, 5, 6, 7};
  int ran = 0;
  for (long long len : {3, 5, 7}) {
    for (long long n : {1LL, 3LL, 16LL, 21LL, 32LL, 40LL, 64LL, 70LL}) {
      std::vector<float> y(static_cast<std::size_t>(nrows * len * n));
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 104729) % 251) / 50.0f - 2.5f;
      for (int mr = 1; mr <= dagrad::cpu::kMaxRows; ++mr) {
        for (bool accumulate : {false, true}) {
          std::vector<float> want(static_cast<std::size_t>(mr * n), 0.5f), got = want;
          INFO("len " << len << ", n " << n << ", mr " << mr << ", accumulate " << accumulate);
          if (!mk.slide(mr, mr, n, len, x.data(), rs, nrows, y.data(), n, got.data(), n, accumulate)) continue;
          // grid one vector of columns at a time, which every tile height up to kMaxRows fits.
          for (long long col = 0; col < n; col += mk.vector_width) {
            const long long cols = std::min<long long>(mk.vector_width, n - col);
            mk.grid(mr, cols, x.data(), offsets, 1, rs, len, nrows, y.data() + col, n, want.data() + col, n,
                    accumulate);
          }
          CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
          ++ran;
        }
      }
    }
  }
  CHECK(ran >= 3 * 8 * 2);  // every length, on tiles of one row at least
  CHECK_FALSE(mk.slide(2, 2, 16, 4, x.data(), rs, nrows, x.data(), 16, x.data(), 16, false));  // no 4-value windows
}

// A run of pixels in one call: equal_tiles' tiles, each as its own one-tile call gives it.
TEST_CASE("the slide kernel on a run of pixels gives its tiles' bits", "[cpu][isa]") {
  const dagrad::cpu::MicroKernels& mk = dagrad::cpu::micro_kernels();
  const long long rs = 40, nrows = 3, n = 40;
  std::vector<float> x(static_cast<std::size_t>(nrows * rs));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 257) / 64.0f - 2.0f;
  int ran = 0;
  for (long long len : {3, 5, 7}) {
    std::vector<float> y(static_cast<std::size_t>(nrows * len * n));
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 104729) % 251) / 50.0f - 2.5f;
    for (long long pixels : {1LL, 7LL, 13LL, 28LL, rs - len + 1}) {
      for (int max_rows : {1, 3, 7, dagrad::cpu::kMaxRows}) {
        INFO("len " << len << ", pixels " << pixels << ", max_rows " << max_rows);
        std::vector<float> want(static_cast<std::size_t>(pixels * n), 0.25f), got = want;
        if (!mk.slide(pixels, max_rows, n, len, x.data(), rs, nrows, y.data(), n, got.data(), n, true)) continue;
        const long long tiles = (pixels + max_rows - 1) / max_rows;
        for (long long t = 0; t < tiles; ++t) {
          const long long first = pixels * t / tiles, count = pixels * (t + 1) / tiles - first;
          REQUIRE(mk.slide(count, static_cast<int>(count), n, len, x.data() + first, rs, nrows, y.data(), n,
                           want.data() + first * n, n, true));
        }
        CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
        ++ran;
      }
    }
  }
  CHECK(ran >= 3 * 5 * 2);  // every length and run, on tiles of one and three rows at least
}
