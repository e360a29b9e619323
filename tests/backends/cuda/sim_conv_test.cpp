// The CUDA conv kernels themselves (conv2d_launch.cuh and the kernel headers it includes), run on
// the host by cuda_sim with the plans and launches the backend uses, against the reference conv
// kernels. Integer-valued operands make every sum exact in float, so each dtype's result must
// equal the reference bit for bit; unwritten outputs, misaligned vector or wmma accesses, and
// (under the sanitizer build) any read or write outside the exactly-sized buffers fail the test.
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <vector>

#include "dagrad/backends/cuda/conv2d_kernels.hpp"
#include "dagrad/backends/cuda/conv2d_launch.cuh"
#include "dagrad/core/eager.hpp"
#include "support/conv_cases.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::cuda;
using i64 = std::int64_t;

struct SimLaunch {
  template <class... Params, class... Args>
  void operator()(const char*, void (*kernel)(Params...), dim3 grid, dim3 block, const Args&... args) const {
    cuda_sim::launcher(kernel, grid, block)(args...);
  }
};

// A buffer of exactly the tensor's bytes, so that the sanitizer sees any access past its end.
std::vector<std::byte> exact_copy(const Tensor& t) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(t.nbytes()));
  if (!bytes.empty()) std::memcpy(bytes.data(), t.raw_data(), bytes.size());
  return bytes;
}

// Runs `run` on the simulator, its scratch buffers sized exactly as conv_scratch_bytes says; the
// output starts as all-ones bytes (NaN) so unwritten elements show.
Tensor run_simulated(DType dtype, const ConvRun& run, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  const auto a_bytes = exact_copy(a), b_bytes = exact_copy(b);
  Tensor out = Tensor::empty(dtype, out_shape);
  std::vector<std::byte> out_bytes(static_cast<std::size_t>(out.nbytes()), std::byte{0xff});
  const ElemType type = static_cast<ElemType>(dtype);
  const ConvScratchBytes sizes = conv_scratch_bytes(type, run);
  std::vector<std::byte> a_nhwc(static_cast<std::size_t>(sizes.a)), b_nhwc(static_cast<std::size_t>(sizes.b)),
      c_nhwc(static_cast<std::size_t>(sizes.c)), work(static_cast<std::size_t>(sizes.work));
  auto data = [](std::vector<std::byte>& v) -> void* { return v.empty() ? nullptr : v.data(); };
  const ConvBuffers buffers{a_bytes.data(), b_bytes.data(), out_bytes.data(), data(a_nhwc),
                            data(b_nhwc),   data(c_nhwc),   data(work)};
  launch_conv_run(type, run, buffers, SimLaunch{});
  std::memcpy(out.raw_data(), out_bytes.data(), out_bytes.size());
  return out;
}

struct Tally {
  int runs = 0, split_runs = 0, filter_nhwc_runs = 0, forward_nhwc_runs = 0, input_nhwc_runs = 0, chunked_runs = 0,
      large_tile_runs = 0, staged_runs = 0;
};

// Every conv op of `c` in every float dtype, with the backend's plan for a 132-SM GPU, a forced
// 3-way split, and for the filter gradient also the generic kernel.
void check_case(const testing::ConvCase& c, std::mt19937& rng, Tally& tally) {
  const auto& g = c.geometry;
  const Shape out_shape(g.output_dims());
  const Tensor x64 = testing::random_small_integers(c.input, rng);
  const Tensor f64 = testing::random_small_integers(c.filter, rng);
  const Tensor dy64 = testing::random_small_integers(out_shape, rng);
  const AttrMap attrs = ops::conv2d_attr_map(c.options);
  const EagerOptions reference{.backend = "reference"};
  for (DType dtype : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
    const Tensor x = x64.cast(dtype), f = f64.cast(dtype), dy = dy64.cast(dtype);
    struct Op {
      ConvKind kind;
      const char* name;
      const Tensor *a, *b;
      Shape shape;
    };
    for (const Op& op : {Op{ConvKind::Forward, "Conv2D", &x, &f, out_shape},
                         Op{ConvKind::BackpropInput, "Conv2DBackpropInputV2", &dy, &f, c.input},
                         Op{ConvKind::BackpropFilter, "Conv2DBackpropFilterV2", &x, &dy, c.filter}}) {
      const ConvGemm p = make_conv_gemm(op.kind, g);
      if (p.m == 0 || p.n == 0 || p.k == 0) continue;
      const std::vector<Tensor> inputs =
          op.kind == ConvKind::Forward ? std::vector<Tensor>{x, f} : std::vector<Tensor>{x, f, dy};
      const Tensor expected = run_op(op.name, inputs, attrs, reference)[0];
      const ElemType type = static_cast<ElemType>(dtype);
      std::vector<ConvRun> runs;
      const ConvRun chosen = plan_conv_run(type, p, 132);
      runs.push_back(chosen);
      ConvRun split = chosen;
      split.plan.splits = 3;
      runs.push_back(split);
      if (chosen.plan.variant != ConvVariant::Generic) {  // the generic kernel on the op's own layout
        ConvRun generic{p, {}, {}};
        generic.plan.tile = uses_tensor_cores(type) ? kTensorTile : kSimtTile;
        generic.plan.splits = chosen.plan.splits;
        runs.push_back(generic);
      }
      for (const ConvRun& run : runs) {
        const ConvPlan& plan = run.plan;
        INFO(op.name << " " << dtype_name(dtype) << " " << c.options.data_format << " input " << c.input.to_string()
                     << " filter " << c.filter.to_string() << " variant " << static_cast<int>(plan.variant) << " tile "
                     << plan.tile.bm << " chunked " << plan.chunked << " splits " << plan.splits << " staged "
                     << run.staged.a << run.staged.b << run.staged.c);
        cuda_sim::violations() = 0;
        const Tensor got = run_simulated(dtype, run, *op.a, *op.b, op.shape);
        REQUIRE(cuda_sim::violations() == 0);
        REQUIRE(std::memcmp(got.raw_data(), expected.raw_data(), static_cast<std::size_t>(got.nbytes())) == 0);
        ++tally.runs;
        tally.split_runs += plan.splits > 1;
        tally.filter_nhwc_runs += plan.variant == ConvVariant::FilterNhwc;
        tally.forward_nhwc_runs += plan.variant == ConvVariant::ForwardNhwc;
        tally.input_nhwc_runs += plan.variant == ConvVariant::InputNhwc;
        tally.chunked_runs += plan.chunked;
        tally.staged_runs += run.staged.a;
        tally.large_tile_runs += plan.variant != ConvVariant::Generic &&
                                 (plan.tile.bm == kNhwcTensorLarge.bm || plan.tile.bm == kNhwcSimtLarge.bm);
      }
    }
  }
}

}  // namespace

TEST_CASE("cuda conv kernels run on the host simulator equal the reference bit for bit", "[cuda-host][conv]") {
  std::mt19937 rng(2024);
  Tally tally;
  for (int trial = 0; trial < 30; ++trial) check_case(testing::random_conv_case(rng), rng, tally);
  CHECK(tally.runs > 300);
  CHECK(tally.split_runs > 100);
  CHECK(tally.filter_nhwc_runs > 20);
  CHECK(tally.forward_nhwc_runs > 20);
  CHECK(tally.input_nhwc_runs > 20);
  CHECK(tally.staged_runs > 20);
}

TEST_CASE("cuda NHWC conv kernels on the simulator: 16-byte chunks and large tiles", "[cuda-host][conv]") {
  std::mt19937 rng(99);
  Tally tally;
  // Channels per group in multiples of 8 (a 16-byte chunk of half), enough of them for large tiles.
  const testing::ConvCaseLimits chunked{
      .channel_multiple = 8, .max_in_channels = 24, .max_out_channels = 136, .max_groups = 2};
  for (int trial = 0; trial < 12; ++trial) check_case(testing::random_conv_case(rng, chunked), rng, tally);
  CHECK(tally.chunked_runs > 20);
  CHECK(tally.large_tile_runs > 0);
  CHECK(tally.staged_runs > 0);  // NCHW cases, whose NHWC copies are chunked too
}

TEST_CASE("cuda batched transpose on the simulator: NCHW <-> NHWC of every element width", "[cuda-host][conv]") {
  std::mt19937 rng(5);
  auto check = [&]<class Word>(const BatchedTranspose& t, unsigned blocks) {
    INFO("width " << sizeof(Word) << " batch " << t.batch << " rows " << t.rows << " cols " << t.cols << " blocks "
                  << blocks);
    const std::size_t count = static_cast<std::size_t>(t.batch * t.rows * t.cols);
    std::vector<Word> in(count), out(count, Word(~Word(0)));
    for (Word& w : in) w = static_cast<Word>(rng());
    cuda_sim::violations() = 0;
    if (blocks == 0) {
      SimLaunch launch;
      launch_transpose(sizeof(Word), in.data(), out.data(), t, launch);
    } else {  // fewer blocks than tiles: each block walks several
      cuda_sim::launcher(transpose_kernel<Word>, dim3(blocks), dim3(kTransposeTile, kTransposeRowsPerPass))(
          static_cast<const Word*>(in.data()), out.data(), t);
    }
    REQUIRE(cuda_sim::violations() == 0);
    i64 wrong = 0;
    for (i64 b = 0; b < t.batch; ++b) {
      for (i64 r = 0; r < t.rows; ++r) {
        for (i64 c = 0; c < t.cols; ++c) {
          wrong += out[static_cast<std::size_t>((b * t.cols + c) * t.rows + r)] !=
                   in[static_cast<std::size_t>((b * t.rows + r) * t.cols + c)];
        }
      }
    }
    CHECK(wrong == 0);
  };
  for (const BatchedTranspose& t : {nchw_to_nhwc(3, 5, 70), nhwc_to_nchw(2, 33, 31), nchw_to_nhwc(1, 64, 64),
                                    nchw_to_nhwc(2, 1, 1), nhwc_to_nchw(1, 3, 100)}) {
    for (unsigned blocks : {0u, 3u}) {
      check.operator()<std::uint16_t>(t, blocks);
      check.operator()<std::uint32_t>(t, blocks);
      check.operator()<std::uint64_t>(t, blocks);
    }
  }
}
#else
#include <catch2/catch.hpp>

TEST_CASE("cuda conv kernels run on the host simulator", "[cuda-host][conv]") {
  WARN("SKIPPED: the CUDA toolkit's headers were not found, so the CUDA kernel simulator tests were not built");
}
#endif  // DAGRAD_CUDA_SIM_TESTS
