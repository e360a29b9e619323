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

ConvGemm conv_gemm(ConvKind kind, const Shape& input, const Shape& filter, const char* format = "NHWC") {
  ops::Conv2DOptions o{.strides = {1, 1, 1, 1}, .padding = "SAME", .data_format = format};
  const auto attrs = ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(o));
  return make_conv_gemm(kind, ops::conv2d_geometry("Conv2D", attrs, input, filter));
}

ConvGemm filter_gemm(const Shape& input, const Shape& filter, const char* format = "NHWC") {
  return conv_gemm(ConvKind::BackpropFilter, input, filter, format);
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
      for (std::uint64_t n = multiple == 0 ? 0 : multiple - 1; n <= multiple + 1 && n < (1u << 31); ++n)
        one(static_cast<std::uint32_t>(n));
    }
    for (int i = 0; i < 200; ++i) one(numerator(rng));
    INFO("divisor " << d);
    CHECK(wrong == 0);
  };
  for (std::uint32_t d = 1; d <= 1100; ++d) check(d);
  for (std::uint32_t d :
       {4095u, 4096u, 4097u, 65535u, 65536u, 100003u, (1u << 30) - 1, 1u << 30, (1u << 30) + 1, (1u << 31) - 1}) {
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
  // plan_conv gives NCHW the generic kernel (plan_conv_run stages NCHW operands in NHWC first).
  CHECK(plan_conv(ElemType::Float32, filter_gemm({4, 16, 8, 8}, {3, 3, 16, 16}, "NCHW"), 132).variant ==
        ConvVariant::Generic);
}

TEST_CASE("plan_conv_run: NCHW convs run on NHWC copies, with scratch sized to the copies", "[cuda-host][conv]") {
  const Shape x{4, 16, 9, 7}, f{3, 3, 16, 24};  // NCHW input: 4 images of 16 x 9 x 7; output 24 channels, SAME
  const i64 x_bytes = 4 * 16 * 9 * 7 * 2, y_bytes = 4 * 24 * 9 * 7 * 2;
  struct Expect {
    ConvKind kind;
    ConvVariant variant;
    NhwcStaging staged;
    i64 a, b, c;
  };
  for (const Expect& e :
       {Expect{ConvKind::Forward, ConvVariant::ForwardNhwc, {true, false, true}, x_bytes, 0, y_bytes},
        Expect{ConvKind::BackpropInput, ConvVariant::InputNhwc, {true, false, true}, y_bytes, 0, x_bytes},
        Expect{ConvKind::BackpropFilter, ConvVariant::FilterNhwc, {true, true, false}, x_bytes, y_bytes, 0}}) {
    INFO("kind " << static_cast<int>(e.kind));
    const ConvGemm nchw = conv_gemm(e.kind, x, f, "NCHW");
    const ConvRun run = plan_conv_run(ElemType::Half, nchw, 132, false, false);
    CHECK_FALSE(run.gemm.nchw);
    CHECK(run.gemm.m == nchw.m);
    CHECK(run.gemm.k == nchw.k);
    CHECK(run.gemm.xs[3] == 1);  // channels innermost in the copies
    CHECK(run.plan.variant == e.variant);
    CHECK(run.staged.a == e.staged.a);
    CHECK(run.staged.b == e.staged.b);
    CHECK(run.staged.c == e.staged.c);
    // Channels of 16 and 24 are whole 16-byte chunks of half: only the filter gradient's B (dy) is
    // a copy, so only its alignment is known; the filter operand's alignment (false here) is not.
    CHECK(run.plan.chunked == (e.kind == ConvKind::BackpropFilter));
    const ConvScratchBytes bytes = conv_scratch_bytes(ElemType::Half, run);
    CHECK(bytes.a == e.a);
    CHECK(bytes.b == e.b);
    CHECK(bytes.c == e.c);
    CHECK(bytes.work == (run.plan.splits > 1 ? run.plan.splits * run.gemm.groups * run.gemm.m * run.gemm.n * 4 : 0));
    CHECK(conv_grid_fits(run.gemm, run.plan));

    // NHWC: nothing staged, no copies.
    const ConvRun direct = plan_conv_run(ElemType::Half, conv_gemm(e.kind, {4, 9, 7, 16}, f), 132);
    CHECK_FALSE(direct.staged.a);
    CHECK_FALSE(direct.staged.b);
    CHECK_FALSE(direct.staged.c);
    CHECK(direct.plan.chunked);
    const ConvScratchBytes none = conv_scratch_bytes(ElemType::Half, direct);
    CHECK(none.a + none.b + none.c == 0);
  }
  // Past the NHWC kernels' 32-bit indices (k = 70000 * 180 * 180 > 2^31): the generic kernel on
  // the op's own layout, nothing staged.
  const ConvRun huge =
      plan_conv_run(ElemType::Half, conv_gemm(ConvKind::BackpropFilter, {70000, 16, 180, 180}, f, "NCHW"), 132);
  CHECK(huge.gemm.nchw);
  CHECK(huge.gemm.k > (i64{1} << 31));
  CHECK(huge.plan.variant == ConvVariant::Generic);
  CHECK_FALSE((huge.staged.a || huge.staged.b || huge.staged.c));
  const ConvScratchBytes huge_bytes = conv_scratch_bytes(ElemType::Half, huge);
  CHECK(huge_bytes.a + huge_bytes.b + huge_bytes.c == 0);
}

TEST_CASE("plan_conv keeps groups * splits within the grid, and conv_grid_fits says when a grid cannot",
          "[cuda-host][conv]") {
  // 40000 groups of one channel and a deep k on a (hypothetical) 100000-SM GPU: choose_splits
  // wants 5 splits, but 2 * 40000 blocks already exceed the grid's z.
  ConvGemm depthwise = filter_gemm({64, 32, 32, 40000}, {3, 3, 1, 40000});
  CHECK(choose_splits(depthwise.groups, depthwise.k, kNhwcSimtSmall.bk, 100000) > 1);
  const ConvPlan plan = plan_conv(ElemType::Float32, depthwise, 100000);
  CHECK(plan.splits == 1);
  CHECK(conv_grid_fits(depthwise, plan));
  depthwise.groups = 70000;
  CHECK_FALSE(conv_grid_fits(depthwise, plan));
  ConvGemm wide = filter_gemm({1, 4, 4, 8}, {1, 1, 8, 8});
  wide.n = std::int64_t{65536} * plan.tile.bn;
  CHECK_FALSE(conv_grid_fits(wide, plan));
}
