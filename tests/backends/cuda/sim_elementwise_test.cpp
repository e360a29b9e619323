// backends/cuda/elementwise.cu (fill, Cast, broadcasting Add/Sub/Mul, Neg, the 4-d permutation,
// AddN) run on the host simulator against the reference kernels, bit for bit, with the special
// values Cast must get right (NaN, infinities, out-of-range and fractional values, -0).
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "dagrad/backends/cuda/launch.hpp"
#include "support/cuda_testing.hpp"
#include "support/sim_buffers.hpp"

// The kernel file itself, its launchers renamed so that they do not meet the library's.
#define launch_fill simulated_launch_fill
#define launch_cast simulated_launch_cast
#define launch_binary simulated_launch_binary
#define launch_neg simulated_launch_neg
#define launch_permute4 simulated_launch_permute4
#define add_n_accumulator_bytes simulated_add_n_accumulator_bytes
#define launch_add_n simulated_launch_add_n
#include "dagrad/backends/cuda/elementwise.cu"
#undef launch_fill
#undef launch_cast
#undef launch_binary
#undef launch_neg
#undef launch_permute4
#undef add_n_accumulator_bytes
#undef launch_add_n

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

namespace {

const DType kNumeric[] = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64};

cuda::ElemType elem_of(DType t) { return static_cast<cuda::ElemType>(t); }

// Values Cast must map exactly as the reference does, then random ones.
Tensor cast_inputs(DType t, std::mt19937& rng) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0,           -0.0,   0.5,   -0.5, 1.5,          -2.5,         65504.0,
                           65520.0,       1e10,   -1e10, 3e38, 1e300,        2147483647.0, 2147483648.0,
                           -2147483649.0, 9.3e18, inf,   -inf, std::nan(""), -std::nan("")};
  std::uniform_real_distribution<double> real(-300.0, 300.0);
  for (int i = 0; i < 40; ++i) v.push_back(real(rng));
  Tensor d = Tensor::from_values<double>(Shape{static_cast<i64>(v.size())}, v);
  return is_floating(t) ? d.cast(t) : random_tensor(t, Shape{64}, rng);
}

}  // namespace

TEST_CASE("cuda Cast and fill kernels on the host simulator equal the reference bit for bit", "[cuda-host]") {
  std::mt19937 rng(41);
  for (DType from :
       {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Bool}) {
    const Tensor x =
        from == DType::Bool ? random_tensor(DType::Int32, Shape{16}, rng).cast(DType::Bool) : cast_inputs(from, rng);
    const auto in = exact_bytes(x);
    for (DType to :
         {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Bool}) {
      auto out = output_bytes(to, x.num_elements());
      cuda::simulated_launch_cast(elem_of(from), in.data(), elem_of(to), out.data(), x.num_elements(), nullptr);
      INFO("Cast " << dtype_name(from) << " -> " << dtype_name(to));
      CHECK(bitwise_equal(tensor_of(to, x.shape(), out), run_reference("Cast", {x}, {{"DstT", to}})[0]));
    }
  }
  for (DType t : kNumeric) {
    auto out = output_bytes(t, 7);
    cuda::simulated_launch_fill(elem_of(t), out.data(), 7, -1.75, nullptr);
    const Tensor want = Tensor::from_values<double>(Shape{7}, std::vector<double>(7, -1.75)).cast(t);
    CHECK(bitwise_equal(tensor_of(t, Shape{7}, out), want));
  }
}

TEST_CASE("cuda Add, Sub, Mul, Neg and AddN kernels on the host simulator equal the reference", "[cuda-host]") {
  std::mt19937 rng(42);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<i64> dims(static_cast<std::size_t>(pick(0, 4)));
    for (auto& d : dims) d = pick(1, 6);
    std::vector<i64> ydims = dims;
    for (auto& d : ydims) d = pick(0, 2) == 0 ? 1 : d;
    for (DType t : kNumeric) {
      const Tensor x = random_tensor(t, Shape(dims), rng), y = random_tensor(t, Shape(ydims), rng);
      const auto xb = exact_bytes(x), yb = exact_bytes(y);
      cuda::BroadcastIndex index;
      REQUIRE(cuda::make_broadcast_index(dims, dims, ydims, &index));
      const std::pair<const char*, cuda::BinaryOp> ops[] = {
          {"Add", cuda::BinaryOp::Add}, {"Sub", cuda::BinaryOp::Sub}, {"Mul", cuda::BinaryOp::Mul}};
      for (const auto& [name, op] : ops) {
        auto out = output_bytes(t, x.num_elements());
        cuda::simulated_launch_binary(op, elem_of(t), xb.data(), yb.data(), out.data(), index, nullptr);
        INFO(name << " " << dtype_name(t) << " " << x.shape().to_string() << " " << y.shape().to_string());
        CHECK(bitwise_equal(tensor_of(t, x.shape(), out), run_reference(name, {x, y}, {})[0]));
      }
      auto neg = output_bytes(t, x.num_elements());
      cuda::simulated_launch_neg(elem_of(t), xb.data(), neg.data(), x.num_elements(), nullptr);
      CHECK(bitwise_equal(tensor_of(t, x.shape(), neg), run_reference("Neg", {x}, {})[0]));

      // One AddN chunk (the glue chains chunks of kAddNChunk through the accumulator).
      std::vector<Tensor> terms;
      std::vector<std::vector<std::byte>> term_bytes;
      for (int k = pick(1, cuda::kAddNChunk); k > 0; --k) {
        terms.push_back(random_tensor(t, Shape(dims), rng));
        term_bytes.push_back(exact_bytes(terms.back()));
      }
      cuda::AddNChunk chunk;
      chunk.count = static_cast<int>(terms.size());
      for (int k = 0; k < chunk.count; ++k) chunk.inputs[k] = term_bytes[static_cast<std::size_t>(k)].data();
      auto sum = output_bytes(t, x.num_elements());
      chunk.out = sum.data();
      cuda::simulated_launch_add_n(elem_of(t), chunk, x.num_elements(), nullptr);
      const Tensor ref = run_reference("AddN", terms, {})[0];
      INFO("AddN of " << terms.size() << " " << dtype_name(t));
      if (!is_floating(t)) {
        CHECK(bitwise_equal(tensor_of(t, x.shape(), sum), ref));
      } else {  // sequential accumulation of k terms (|term| <= 2), then one rounding to T
        const double k = static_cast<double>(terms.size());
        const double margin = k * 2.0 * k * accumulator_roundoff(t);
        check_close(tensor_of(t, x.shape(), sum), ref, [&](i64, double r) { return rounding_bound(t, r) + margin; });
      }
    }
  }
}

TEST_CASE("cuda 4-d permutation kernel on the host simulator equals Transpose", "[cuda-host]") {
  std::mt19937 rng(43);
  const std::int64_t dims[4] = {2, 3, 4, 5};
  const int perms[][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 2, 3}};
  for (DType t : {DType::Half, DType::Float32, DType::Float64}) {
    const Tensor x = random_tensor(t, Shape{2, 3, 4, 5}, rng);
    const auto in = exact_bytes(x);
    for (const auto& perm : perms) {
      const Tensor perm_t = Tensor::from_values<std::int32_t>(Shape{4}, {perm[0], perm[1], perm[2], perm[3]});
      const Tensor ref = run_reference("Transpose", {x, perm_t}, {})[0];
      auto out = output_bytes(t, x.num_elements());
      cuda::simulated_launch_permute4(elem_of(t), in.data(), out.data(), dims, perm, nullptr);
      INFO(dtype_name(t) << " perm " << perm[0] << perm[1] << perm[2] << perm[3]);
      CHECK(bitwise_equal(tensor_of(t, ref.shape(), out), ref));
    }
  }
}
#endif  // DAGRAD_CUDA_SIM_TESTS
