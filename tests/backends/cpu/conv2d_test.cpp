// The CPU conv kernels (fast and generic paths) against an independent float64 oracle on random
// shapes, attributes, layouts, groups and dtypes, and bitwise determinism across thread counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/core/shape.hpp"
#include "support/conv_oracle.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::testing;
using ops::Conv2DGeometry;
using i64 = std::int64_t;

// A random valid geometry; `big` makes shapes large enough for many tiles and reduction chunks.
Conv2DGeometry random_geometry(std::mt19937& rng, bool big, bool allow_groups) {
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  for (;;) {
    ops::Conv2DAttrs a;
    a.data_format = pick(0, 1) ? ops::DataFormat::NHWC : ops::DataFormat::NCHW;
    a.padding = std::array{ops::Padding::Same, ops::Padding::Valid, ops::Padding::Explicit}[pick(0, 2)];
    a.stride_rows = pick(1, 3);
    a.stride_cols = pick(1, 3);
    a.dilation_rows = pick(1, 2);
    a.dilation_cols = pick(1, 2);
    if (a.padding == ops::Padding::Explicit) {
      a.pad_top = pick(0, 2), a.pad_bottom = pick(0, 2), a.pad_left = pick(0, 2), a.pad_right = pick(0, 2);
    }
    const i64 groups = allow_groups ? std::array<i64, 4>{1, 2, 3, 1}[pick(0, 3)] : 1;
    const i64 cg = big ? pick(1, 40) : pick(1, 5);
    const i64 kg = big ? pick(1, 80) : pick(1, 6);
    const i64 n = big ? pick(1, 4) : pick(1, 3), h = big ? pick(4, 16) : pick(1, 9), w = big ? pick(4, 16) : pick(1, 9);
    const i64 kh = pick(1, 3), kw = pick(1, 3);
    const i64 c = groups * cg, k = groups * kg;
    const Shape input = a.data_format == ops::DataFormat::NHWC ? Shape{n, h, w, c} : Shape{n, c, h, w};
    try {
      return ops::conv2d_geometry("Conv2D", a, input, Shape{kh, kw, cg, k});
    } catch (const Error&) {
      continue;  // e.g. VALID with a window larger than the input
    }
  }
}

template <class T>
void check_against_oracle(ConvOp op, const Conv2DGeometry& g, std::mt19937& rng) {
  const auto [na, nb] = operand_sizes(op, g);
  const auto a = random_values<T>(rng, na), b = random_values<T>(rng, nb);
  const auto want = oracle(op, g, as_double(a), as_double(b));
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (bool generic : {false, true}) {
    const auto got = as_double(run_cpu<T>(op, g, a, b, generic));
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    INFO("op " << static_cast<int>(op) << " generic " << generic << " N" << g.batch << " H" << g.in_rows << " W"
               << g.in_cols << " C" << g.in_depth << " K" << g.out_depth << " groups " << g.groups << " k"
               << g.filter_rows << "x" << g.filter_cols << " s" << g.stride_rows << "," << g.stride_cols << " d"
               << g.dilation_rows << "," << g.dilation_cols << " pads " << g.pad_top << "," << g.pad_bottom << ","
               << g.pad_left << "," << g.pad_right << " nchw " << (g.data_format == ops::DataFormat::NCHW) << " worst "
               << worst << " scale " << scale);
    REQUIRE(worst <= tolerance<T>() * std::max(scale, 1e-30));
  }
}

// Runs `kernel(out)`, which writes `size` floats, in arenas of 1, 2 and 3 threads: the same bits
// each time.
template <class Kernel>
void require_same_bits_for_1_2_3_threads(i64 size, Kernel kernel) {
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    std::vector<float> got(static_cast<std::size_t>(size));
    tbb::task_arena(threads).execute([&] { kernel(got.data()); });
    if (threads == 1) first = got;
    INFO("threads " << threads);
    REQUIRE(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("cpu conv kernels match the float64 oracle on random small cases", "[cpu][conv]") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 60; ++trial) {
    const auto g = random_geometry(rng, false, true);
    for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter}) {
      check_against_oracle<float>(op, g, rng);
      check_against_oracle<double>(op, g, rng);
      check_against_oracle<half>(op, g, rng);
      check_against_oracle<bfloat16>(op, g, rng);
    }
  }
}

TEST_CASE("cpu conv float32 fast path stays within 1e-5 of float64 on larger shapes", "[cpu][conv]") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 8; ++trial) {
    auto g = random_geometry(rng, true, trial % 4 == 3);
    for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter})
      check_against_oracle<float>(op, g, rng);
  }
}

// Shapes the random sweep rarely reaches: wide filters over few channels (whole filter rows as
// one segment, edge pixels packed with zeros, or the whole filter on padded strips, for Conv2D
// too), several row and column groups, grouped NHWC, more than 256 filters or channels.
TEST_CASE("cpu conv fast paths match float64 on first-layer, wide-filter and grouped shapes", "[cpu][conv]") {
  struct Case {
    i64 n, h, w, c, k, kh, kw, stride, dilation, groups;
    ops::Padding padding;
  };
  const Case cases[] = {{2, 20, 20, 1, 32, 3, 3, 1, 1, 1, ops::Padding::Same},
                        {1, 23, 21, 3, 70, 7, 7, 2, 1, 1, ops::Padding::Same},
                        {2, 9, 11, 20, 130, 5, 3, 1, 1, 1, ops::Padding::Explicit},
                        {1, 12, 13, 24, 40, 3, 5, 2, 2, 1, ops::Padding::Same},
                        {2, 10, 9, 18, 210, 3, 3, 1, 1, 3, ops::Padding::Same},
                        {1, 8, 8, 8, 8, 3, 3, 1, 1, 8, ops::Padding::Valid},
                        // small-channel filter gradients on padded strips: tails, several column
                        // groups, strides and dilations, a single-row filter
                        {3, 9, 10, 2, 37, 5, 3, 2, 2, 1, ops::Padding::Explicit},
                        {1, 7, 30, 3, 130, 3, 3, 1, 1, 1, ops::Padding::Same},
                        {2, 11, 12, 1, 5, 3, 3, 3, 1, 1, ops::Padding::Same},
                        {4, 5, 5, 1, 1, 1, 1, 1, 1, 1, ops::Padding::Valid},
                        {40, 6, 7, 1, 48, 3, 3, 1, 1, 1, ops::Padding::Same},
                        // more than the 256 columns of one task: filters (Conv2D), channels (input gradient)
                        {1, 6, 7, 20, 300, 3, 3, 1, 1, 1, ops::Padding::Same},
                        {1, 5, 6, 270, 24, 3, 3, 2, 1, 1, ops::Padding::Same}};
  std::mt19937 rng(2024);
  for (const Case& cs : cases) {
    ops::Conv2DAttrs a;
    a.data_format = ops::DataFormat::NHWC;
    a.padding = cs.padding;
    a.stride_rows = a.stride_cols = cs.stride;
    a.dilation_rows = a.dilation_cols = cs.dilation;
    if (cs.padding == ops::Padding::Explicit) a.pad_top = 2, a.pad_bottom = 1, a.pad_left = 3, a.pad_right = 0;
    const auto g =
        ops::conv2d_geometry("Conv2D", a, Shape{cs.n, cs.h, cs.w, cs.c}, Shape{cs.kh, cs.kw, cs.c / cs.groups, cs.k});
    // First layers (C = 1-3, no column dilation) run Conv2D on padded strips too.
    if (cs.groups == 1 && cs.c <= 3 && cs.dilation == 1) REQUIRE(cpu::conv2d_forward_strips_apply(g));
    for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter})
      check_against_oracle<float>(op, g, rng);
    check_against_oracle<bfloat16>(ConvOp::BackpropFilter, g, rng);
    // The strips filter gradient reads NCHW too (x into strips, dy transposed block by block).
    if (cs.groups == 1) {
      a.data_format = ops::DataFormat::NCHW;
      const auto gc = ops::conv2d_geometry("Conv2D", a, Shape{cs.n, cs.c, cs.h, cs.w}, Shape{cs.kh, cs.kw, cs.c, cs.k});
      REQUIRE(cpu::conv2d_filter_strips_apply(gc) == cpu::conv2d_filter_strips_apply(g));
      check_against_oracle<float>(ConvOp::BackpropFilter, gc, rng);
      check_against_oracle<half>(ConvOp::BackpropFilter, gc, rng);
      check_against_oracle<bfloat16>(ConvOp::BackpropFilter, gc, rng);
    }
  }
}

TEST_CASE("cpu conv kernels give the same bits for 1, 2 and 3 threads", "[cpu][conv]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    const auto g = random_geometry(rng, true, trial % 3 == 2);
    for (ConvOp op : {ConvOp::Forward, ConvOp::BackpropInput, ConvOp::BackpropFilter}) {
      const auto [na, nb] = operand_sizes(op, g);
      const auto a = random_values<float>(rng, na), b = random_values<float>(rng, nb);
      const auto ah = random_values<bfloat16>(rng, na), bh = random_values<bfloat16>(rng, nb);
      std::vector<float> first;
      std::vector<bfloat16> first_h;
      for (int threads : {1, 2, 3}) {
        tbb::task_arena arena(threads);
        std::vector<float> got;
        std::vector<bfloat16> got_h, got_g;
        arena.execute([&] {
          got = run_cpu<float>(op, g, a, b, false);
          got_h = run_cpu<bfloat16>(op, g, ah, bh, false);
        });
        if (threads == 1) {
          first = got;
          first_h = got_h;
          continue;
        }
        REQUIRE(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
        REQUIRE(std::memcmp(got_h.data(), first_h.data(), got_h.size() * sizeof(bfloat16)) == 0);
      }
    }
  }
}

// col2im splits each image into bands of input rows by the thread count; a band's edge rows get
// terms from output rows computed in the band above too. The bits must not move with the bands.
TEST_CASE("cpu col2im input gradient gives the same bits for 1, 2 and 3 threads", "[cpu][conv]") {
  std::mt19937 rng(31);
  struct Case {
    i64 n, h, w, c, k, kh, kw, stride, dilation;
  };
  for (const Case& cs :
       {Case{1, 37, 30, 3, 20, 7, 7, 2, 1}, Case{3, 21, 9, 1, 33, 3, 3, 1, 2}, Case{1, 16, 15, 5, 8, 5, 3, 3, 1}})
    for (const bool nchw : {false, true}) {
      ops::Conv2DAttrs a;
      a.padding = ops::Padding::Same;
      a.stride_rows = a.stride_cols = cs.stride;
      a.dilation_rows = a.dilation_cols = cs.dilation;
      a.data_format = nchw ? ops::DataFormat::NCHW : ops::DataFormat::NHWC;
      const Shape input = nchw ? Shape{cs.n, cs.c, cs.h, cs.w} : Shape{cs.n, cs.h, cs.w, cs.c};
      const auto g = ops::conv2d_geometry("Conv2D", a, input, Shape{cs.kh, cs.kw, cs.c, cs.k});
      REQUIRE((nchw ? cpu::conv2d_input_col2im_nchw_applies(g) : cpu::conv2d_input_col2im_applies(g)));
      check_against_oracle<float>(ConvOp::BackpropInput, g, rng);
      const auto f = random_values<float>(rng, filt_size(g)), dy = random_values<float>(rng, out_size(g));
      INFO((nchw ? "NCHW" : "NHWC"));
      require_same_bits_for_1_2_3_threads(in_size(g), [&](float* dx) {
        (nchw ? cpu::conv2d_backprop_input_col2im_nchw : cpu::conv2d_backprop_input_col2im)(g, f.data(), dy.data(), dx);
      });
    }
}

// The NCHW im2col Conv2D splits each plane into blocks at fixed places: the same bits for any
// thread count, also where a block ends inside an output row (a plane of more than one block).
TEST_CASE("cpu NCHW im2col Conv2D gives the same bits for 1, 2 and 3 threads", "[cpu][conv]") {
  std::mt19937 rng(41);
  for (const auto [n, h, w, c, k, kh, kw, stride_rows] :
       {std::array<i64, 8>{2, 30, 29, 1, 20, 5, 5, 1}, {1, 9, 300, 3, 40, 7, 7, 2}, {3, 8, 9, 15, 7, 3, 2, 3}}) {
    ops::Conv2DAttrs a;
    a.data_format = ops::DataFormat::NCHW;
    a.padding = ops::Padding::Same;
    a.stride_rows = stride_rows;
    const auto g = ops::conv2d_geometry("Conv2D", a, Shape{n, c, h, w}, Shape{kh, kw, c, k});
    REQUIRE(cpu::conv2d_forward_im2col_nchw_applies(g));
    check_against_oracle<float>(ConvOp::Forward, g, rng);
    const auto x = random_values<float>(rng, in_size(g)), f = random_values<float>(rng, filt_size(g));
    INFO("C " << c);
    require_same_bits_for_1_2_3_threads(out_size(g),
                                        [&](float* y) { cpu::conv2d_forward_im2col_nchw(g, x.data(), f.data(), y); });
  }
}

// The NCHW pointwise filter gradient sums the batch's pixels in fixed chunks, on either side
// transposed (pages apart on 1024 pixels: prefetched): the bits must not move with the threads.
TEST_CASE("cpu NCHW pointwise filter gradient gives the same bits for 1, 2 and 3 threads", "[cpu][conv]") {
  std::mt19937 rng(37);
  for (const auto [n, h, w, c, k] : {std::array<i64, 5>{2, 33, 32, 16, 20}, {3, 5, 7, 40, 9}, {1, 4, 6, 3, 17}}) {
    ops::Conv2DAttrs a;
    a.data_format = ops::DataFormat::NCHW;
    const auto g = ops::conv2d_geometry("Conv2D", a, Shape{n, c, h, w}, Shape{1, 1, c, k});
    REQUIRE(cpu::conv2d_filter_nchw_pointwise_applies(g));
    check_against_oracle<float>(ConvOp::BackpropFilter, g, rng);
    const auto x = random_values<float>(rng, in_size(g)), dy = random_values<float>(rng, out_size(g));
    INFO("C " << c << " K " << k);
    require_same_bits_for_1_2_3_threads(
        filt_size(g), [&](float* df) { cpu::conv2d_backprop_filter_nchw_pointwise(g, x.data(), dy.data(), df); });
  }
}

// Strips Conv2D zeroes each output row first and adds to it where y outgrows half the last-level
// cache (no test shape does): the same bits as writing the rows from zero, every value written.
TEST_CASE("cpu strips Conv2D gives the same bits with its output rows zeroed first or written", "[cpu][conv]") {
  std::mt19937 rng(43);
  struct Case {
    i64 n, h, w, c, k, kh, kw, stride;
  };
  // One channel at stride 1 runs the slide kernel (with columns past whole vectors: 20 and 37).
  for (const Case& cs :
       {Case{1, 23, 21, 3, 70, 7, 7, 2}, Case{2, 20, 20, 1, 32, 3, 3, 1}, Case{2, 9, 13, 2, 37, 5, 3, 3},
        Case{3, 5, 1, 1, 150, 3, 1, 1}, Case{2, 11, 13, 1, 20, 5, 5, 1}, Case{1, 12, 17, 1, 37, 7, 7, 1}}) {
    ops::Conv2DAttrs a;
    a.padding = ops::Padding::Same;
    a.stride_rows = a.stride_cols = cs.stride;
    const auto g = ops::conv2d_geometry("Conv2D", a, Shape{cs.n, cs.h, cs.w, cs.c}, Shape{cs.kh, cs.kw, cs.c, cs.k});
    if (!cpu::conv2d_forward_strips_apply(g)) {  // C >= 2 under DAGRAD_MAX_CPU_ISA=portable: 4 lanes
      REQUIRE(cs.c > 1);
      continue;
    }
    check_against_oracle<float>(ConvOp::Forward, g, rng);
    const auto x = random_values<float>(rng, in_size(g)), f = random_values<float>(rng, filt_size(g));
    std::vector<float> written(static_cast<std::size_t>(out_size(g)), std::nanf("")), added = written;
    cpu::conv2d_forward_strips_with(g, x.data(), f.data(), written.data(), false);
    cpu::conv2d_forward_strips_with(g, x.data(), f.data(), added.data(), true);
    REQUIRE(std::none_of(written.begin(), written.end(), [](float v) { return std::isnan(v); }));
    REQUIRE(std::memcmp(written.data(), added.data(), written.size() * sizeof(float)) == 0);
  }
}

// half and bfloat16 on the strips paths (Conv2D, filter gradient) widen without a float32 copy of
// the output; the result must be the float32 strips path on the widened tensors, rounded once, bit
// for bit. (bfloat16 filter gradients, and Conv2D windows of 48 values or more, widen only on CPUs
// without AVX-512 BF16; with it, cpu_conv2d_bf16_test.cpp checks their pair forms. With AMX,
// bfloat16 Conv2D of 16 channels or more runs on tiles; first layers have fewer.)
template <class T>
void check_strips_widening(ConvOp op, const Conv2DGeometry& g, std::mt19937& rng) {
  const auto [na, nb] = operand_sizes(op, g);
  const auto a = random_values<T>(rng, na), b = random_values<T>(rng, nb);
  std::vector<float> af(a.size()), bf(b.size());
  std::transform(a.begin(), a.end(), af.begin(), [](T v) { return static_cast<float>(v); });
  std::transform(b.begin(), b.end(), bf.begin(), [](T v) { return static_cast<float>(v); });
  std::vector<float> out(static_cast<std::size_t>(op == ConvOp::Forward ? out_size(g) : filt_size(g)));
  if (op == ConvOp::Forward)
    cpu::conv2d_forward_strips<float>(g, af.data(), bf.data(), out.data());
  else
    cpu::conv2d_backprop_filter_strips<float>(g, af.data(), bf.data(), out.data());
  std::vector<T> want(out.size());
  std::transform(out.begin(), out.end(), want.begin(), [](float v) { return static_cast<T>(v); });
  const std::vector<T> got = run_cpu<T>(op, g, a, b, false);  // the dispatch
  REQUIRE(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0);
}

TEST_CASE("cpu strips Conv2D in half and bfloat16 is the float32 one rounded once", "[cpu][conv]") {
  std::mt19937 rng(37);
  for (const Shape& input : {Shape{3, 28, 28, 1}, Shape{2, 17, 23, 3}, Shape{4, 9, 30, 2}}) {
    ops::Conv2DAttrs a;
    a.padding = ops::Padding::Same;
    a.stride_rows = a.stride_cols = input[0] == 2 ? 2 : 1;
    const auto g = ops::conv2d_geometry("Conv2D", a, input, Shape{input[0] == 2 ? 7 : 3, 3, input[3], 40});
    // Strips take C below half a vector: C = 1 everywhere, 2 and 3 from AVX2 on.
    if (input[3] > 1 && !cpu::conv2d_forward_strips_apply(g)) continue;
    REQUIRE(cpu::conv2d_forward_strips_apply(g));
    check_strips_widening<half>(ConvOp::Forward, g, rng);
    if (!cpu::conv2d_bf16_native_available() || g.filter_rows * g.filter_cols * g.in_depth < 48)
      check_strips_widening<bfloat16>(ConvOp::Forward, g, rng);
  }
}

TEST_CASE("cpu strips filter gradient in half and bfloat16 is the float32 one rounded once", "[cpu][conv]") {
  std::mt19937 rng(31);
  for (const Shape& input : {Shape{3, 28, 28, 1}, Shape{2, 17, 23, 3}, Shape{40, 6, 7, 2}}) {
    ops::Conv2DAttrs a;
    a.padding = ops::Padding::Same;
    a.stride_rows = a.stride_cols = input[0] == 2 ? 2 : 1;
    const auto g = ops::conv2d_geometry("Conv2D", a, input, Shape{3, 3, input[3], 48});
    REQUIRE(cpu::conv2d_filter_strips_apply(g));
    check_strips_widening<half>(ConvOp::BackpropFilter, g, rng);
    if (!cpu::conv2d_bf16_native_available()) check_strips_widening<bfloat16>(ConvOp::BackpropFilter, g, rng);
  }
}
