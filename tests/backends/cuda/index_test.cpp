// The CUDA kernels' index and tiling arithmetic, run on the host: the element-wise/reduction
// offset maps, and the implicit-GEMM conv kernels' loop nests (slab loads, micro-tiles, split-K,
// combine) emulated block by block and compared exactly with the reference conv kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

#include "dagrad/backends/cuda/conv_index.hpp"
#include "dagrad/backends/cuda/elementwise_index.hpp"
#include "dagrad/core/eager.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "support/index_math.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::cuda;
using i64 = std::int64_t;

using testing::product;
using testing::ravel;
using testing::unravel;

}  // namespace

TEST_CASE("cuda broadcast offsets match numpy broadcasting", "[cuda-host]") {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = pick(0, 10);  // beyond kMaxRank: merging of like axes must bring it down
    std::vector<i64> out(static_cast<std::size_t>(rank));
    for (auto& d : out) d = pick(1, 3);
    std::vector<i64> x = out, y = out;
    for (int a = 0; a < rank; ++a) {
      if (pick(0, 3) == 0)
        x[static_cast<std::size_t>(a)] = 1;
      else if (pick(0, 3) == 0)
        y[static_cast<std::size_t>(a)] = 1;
    }
    if (pick(0, 1) == 1) x.erase(x.begin(), x.begin() + pick(0, rank));  // fewer axes: numpy aligns right
    BroadcastIndex b;
    if (!make_broadcast_index(out, x, y, &b)) continue;  // a genuinely high-rank pattern
    REQUIRE(b.count == product(out));
    for (i64 i = 0; i < b.count; ++i) {
      i64 xo, yo;
      broadcast_offsets(b, i, &xo, &yo);
      const auto idx = unravel(i, out);
      std::vector<i64> xi(x.size()), yi(y.size());
      for (std::size_t a = 0; a < x.size(); ++a) xi[a] = x[a] == 1 ? 0 : idx[a + out.size() - x.size()];
      for (std::size_t a = 0; a < y.size(); ++a) yi[a] = y[a] == 1 ? 0 : idx[a];
      REQUIRE(xo == ravel(xi, x));
      REQUIRE(yo == ravel(yi, y));
    }
  }
}

TEST_CASE("cuda reduction offsets visit each input element once per output", "[cuda-host]") {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = pick(0, 9);
    std::vector<i64> in(static_cast<std::size_t>(rank));
    std::vector<bool> mask(static_cast<std::size_t>(rank));
    for (int a = 0; a < rank; ++a) {
      in[static_cast<std::size_t>(a)] = pick(0, 10) == 0 ? 0 : pick(1, 3);
      mask[static_cast<std::size_t>(a)] = pick(0, 1) == 1;
    }
    ReduceIndex r;
    if (!make_reduce_index(in, mask, &r)) continue;
    // The expected owner (output index) of each input element, from the definition.
    std::vector<i64> kept;
    for (int a = 0; a < rank; ++a) {
      if (!mask[static_cast<std::size_t>(a)]) kept.push_back(in[static_cast<std::size_t>(a)]);
    }
    REQUIRE(r.out_count == product(kept));
    REQUIRE(r.out_count * r.reduced_count == product(in));
    std::vector<int> seen(static_cast<std::size_t>(product(in)), 0);
    for (i64 o = 0; o < r.out_count; ++o) {
      const i64 base = reduce_base(r, o);
      for (i64 j = 0; j < r.reduced_count; ++j) {
        const i64 off = base + reduce_offset(r, j);
        REQUIRE(off >= 0);
        REQUIRE(off < product(in));
        ++seen[static_cast<std::size_t>(off)];
        const auto idx = unravel(off, in);
        std::vector<i64> kept_idx;
        for (int a = 0; a < rank; ++a) {
          if (!mask[static_cast<std::size_t>(a)]) kept_idx.push_back(idx[static_cast<std::size_t>(a)]);
        }
        REQUIRE(ravel(kept_idx, kept) == o);
      }
    }
    for (int s : seen) REQUIRE(s == 1);
  }
}

TEST_CASE("cuda 4-d permutation maps every output to its source", "[cuda-host]") {
  const i64 dims[4] = {2, 3, 4, 5};
  const std::vector<i64> in(dims, dims + 4);
  std::array<int, 4> perm{0, 1, 2, 3};
  do {
    const Permute4 p = make_permute4(dims, perm.data());
    const std::vector<i64> out(p.out_dims, p.out_dims + 4);
    for (i64 i = 0; i < p.count; ++i) {
      const auto oi = unravel(i, out);
      std::vector<i64> ii(4);
      for (int a = 0; a < 4; ++a)
        ii[static_cast<std::size_t>(perm[static_cast<std::size_t>(a)])] = oi[static_cast<std::size_t>(a)];
      REQUIRE(unravel_offset(p.out_dims, p.src_stride, 4, i) == ravel(ii, in));
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}
