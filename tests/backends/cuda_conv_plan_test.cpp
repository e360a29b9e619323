// The CUDA conv kernels' host-side choices and index helpers (no device, no CUDA headers):
// FastDivmod, split-K ranges and counts, and plan_conv's kernel and tile choice.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "dagrad/backends/cuda/conv2d_kernels.hpp"
#include "dagrad/backends/cuda/conv_plan.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::cuda;
using i64 = std::int64_t;

ConvGemm filter_gemm(const Shape& input, const Shape& filter, const char* format = "NHWC") {
  ops::Conv2DOptions o{.strides = {1, 1, 1, 1}, .padding = "SAME", .data_format = format};
  const auto attrs = ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(o));
  return make_conv_gemm(ConvKind::BackpropFilter, ops::conv2d_geometry("Conv2D", attrs, input, filter));
}

}  // namespace

TEST_CASE("FastDivmod divides every numerator below 2^31 exactly", "[cuda-host][conv]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> numerator(0, (1u << 31) - 1);
  auto check = [&](std::uint32_t d) {
    const FastDivmod f = make_fast_divmod(d);
    i64 wrong = 0;
    auto one = [&](std::uint32_t n) {
      std::uint32_t q, r;
      divmod(f, n, &q, &r);
      wrong += q != n / d || r != n % d;
    };
    for (std::uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, (1u << 31) - 1, (1u << 31) - 2}) {
      if (n < (1u << 31)) one(n);
    }
    for (std::uint32_t k = 1; k < 64; ++k) {  // around multiples of d
      const std::uint64_t base = std::uint64_t{d} * k * 9973u % (1u << 31);
      const std::uint64_t multiple = base - base % d;
      for (std::uint64_t n = multiple == 0 ? 0 : multiple - 1; n <= multiple + 1 && n < (1u << 31); ++n) one(static_cast<std::uint32_t>(n));
    }
    for (int i = 0; i < 200; ++i) one(numerator(rng));
    INFO("divisor " << d);
    CHECK(wrong == 0);
  };
  for (std::uint32_t d = 1; d <= 1100; ++d) check(d);
  for (std::uint32_t d : {4095u, 4096u, 4097u, 65535u, 65536u, 100003u, (1u << 30) - 1, 1u << 30, (1u << 30) + 1,
                          (1u << 31) - 1}) {
    check(d);
  }
}

TEST_CASE("cuda conv split-K choice fills the GPU and keeps whole slabs", "[cuda-host][conv]") {
  // Backprop-filter shapes: few C tiles, very long k.
  CHECK(choose_splits(4, 16 * 56 * 56, 16, 132) == 64);
  CHECK(choose_splits(1000, 1 << 20, 16, 132) == 1);  // enough tiles already
  CHECK(choose_splits(1, 64, 16, 132) == 1);          // too shallow to split
  for (int splits = 1; splits <= 7; ++splits) {
    i64 covered = 0, previous_end = 0;
    for (int s = 0; s < splits; ++s) {
      i64 b, e;
      split_range(1000, 16, splits, s, &b, &e);
      CHECK(b == previous_end);
      CHECK(b % 16 == 0);
      covered += e - b;
      previous_end = e;
    }
    CHECK(covered == 1000);
  }
}

TEST_CASE("plan_conv: NHWC filter gradients get the FilterNhwc kernel and a tile that fits", "[cuda-host][conv]") {
  const ConvGemm wide = filter_gemm({16, 28, 28, 128}, {3, 3, 128, 128});
  for (ElemType t : {ElemType::Half, ElemType::BFloat16}) {
    const ConvPlan plan = plan_conv(t, wide, 132);
    CHECK(plan.variant == ConvVariant::FilterNhwc);
    CHECK(plan.chunked);
    CHECK(plan.tile.bm == kNhwcTensorLarge.bm);
  }
  CHECK(plan_conv(ElemType::Float32, wide, 132).tile.bm == kNhwcSimtLarge.bm);
  CHECK(plan_conv(ElemType::Float64, wide, 132).tile.bm == kNhwcSimtSmall.bm);  // double: small tile always

  // A first layer: 9 filter rows, channels not a multiple of the 16-byte chunk.
  const ConvGemm first = filter_gemm({32, 28, 28, 1}, {3, 3, 1, 32});
  const ConvPlan p1 = plan_conv(ElemType::Half, first, 132);
  CHECK(p1.variant == ConvVariant::FilterNhwc);
  CHECK_FALSE(p1.chunked);
  CHECK(p1.tile.bm == kNhwcTensorSmall.bm);
  CHECK(p1.splits > 1);  // one C tile: split k to fill the GPU
  CHECK(p1.divisors.out_cols.divisor == 28);
  CHECK(p1.divisors.out_rows.divisor == 28);

  // Many filter rows but channels of 14: element-wise loads, so the small tile.
  const ConvPlan unchunked = plan_conv(ElemType::Float32, filter_gemm({4, 8, 8, 14}, {3, 3, 14, 128}), 132);
  CHECK_FALSE(unchunked.chunked);
  CHECK(unchunked.tile.bm == kNhwcSimtSmall.bm);
  // plan_conv gives NCHW the generic kernel (run_own_conv copies NCHW filter-gradient operands to NHWC first).
  CHECK(plan_conv(ElemType::Float32, filter_gemm({4, 16, 8, 8}, {3, 3, 16, 16}, "NCHW"), 132).variant ==
        ConvVariant::Generic);
}
