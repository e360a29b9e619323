// backends/cuda/compare.cu (Equal, ArgMax: the per-thread and the per-block kernels) run on the
// host simulator against the reference kernels, bit for bit.
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "dagrad/backends/cuda/launch_ops.hpp"
#include "support/cuda_testing.hpp"
#include "support/sim_buffers.hpp"

// The kernel file itself, its launchers renamed so that they do not meet the library's.
#define launch_equal simulated_launch_equal
#define launch_arg_max simulated_launch_arg_max
#include "dagrad/backends/cuda/compare.cu"
#undef launch_equal
#undef launch_arg_max

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

TEST_CASE("cuda ArgMax kernels on the host simulator equal the reference, NaN rule included", "[cuda-host]") {
  std::mt19937 rng(21);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int block_cases = 0;
  for (int trial = 0; trial < 14; ++trial) {
    // Short axes take one thread per output; axes of 512 or more a block per output.
    const std::vector<i64> dims = {pick(1, 3), trial < 8 ? pick(1, 20) : pick(512, 1300), pick(1, 3)};
    const int axis = 1;
    block_cases += dims[1] >= 512;
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
      Tensor x = random_tensor(t, Shape(dims), rng);
      if (is_floating(t) && trial % 3 == 0) {  // NaN first in some rows, elsewhere in others
        Tensor d = x.cast(DType::Float64);
        for (i64 i = 0; i < d.num_elements(); i += pick(1, 40)) d.data<double>()[i] = std::nan("");
        x = d.cast(t);
      }
      for (DType out_type : {DType::Int32, DType::Int64}) {
        const Tensor axis_t = Tensor::from_values<std::int32_t>(Shape{}, {axis});
        const Tensor ref = run_op("ArgMax", {x, axis_t}, {{"output_type", out_type}}, {.backend = "reference"})[0];
        const auto in = exact_bytes(x);
        auto out = output_bytes(out_type, ref.num_elements());
        cuda_sim::violations() = 0;
        cuda::simulated_launch_arg_max(static_cast<cuda::ElemType>(t), static_cast<cuda::ElemType>(out_type), in.data(),
                                       out.data(), cuda::split_at_axis(dims, axis), nullptr);
        REQUIRE(cuda_sim::violations() == 0);
        INFO(dtype_name(t) << " " << x.shape().to_string());
        CHECK(bitwise_equal(tensor_of(out_type, ref.shape(), out), ref));
      }
    }
  }
  CHECK(block_cases >= 4);
}

TEST_CASE("cuda Equal kernel on the host simulator equals the reference with broadcasting", "[cuda-host]") {
  std::mt19937 rng(22);
  for (DType t : {DType::Half, DType::Float32, DType::Int64, DType::Bool}) {
    const Tensor x = random_tensor(t == DType::Bool ? DType::Int32 : t, Shape{3, 1, 4}, rng).cast(t);
    const Tensor y = random_tensor(t == DType::Bool ? DType::Int32 : t, Shape{5, 1}, rng).cast(t);
    const Tensor ref = run_op("Equal", {x, x.cast(DType::Float64).cast(t)}, {}, {.backend = "reference"})[0];
    cuda::BroadcastIndex same;
    REQUIRE(cuda::make_broadcast_index({3, 1, 4}, {3, 1, 4}, {3, 1, 4}, &same));
    const auto xb = exact_bytes(x);
    auto out = output_bytes(DType::Bool, ref.num_elements());
    cuda::simulated_launch_equal(static_cast<cuda::ElemType>(t), xb.data(), xb.data(),
                                 reinterpret_cast<bool*>(out.data()), same, nullptr);
    CHECK(bitwise_equal(tensor_of(DType::Bool, ref.shape(), out), ref));
    const Tensor ref_b = run_op("Equal", {x, y}, {}, {.backend = "reference"})[0];
    cuda::BroadcastIndex index;
    REQUIRE(cuda::make_broadcast_index({3, 5, 4}, {3, 1, 4}, {5, 1}, &index));
    const auto yb = exact_bytes(y);
    auto out_b = output_bytes(DType::Bool, ref_b.num_elements());
    cuda::simulated_launch_equal(static_cast<cuda::ElemType>(t), xb.data(), yb.data(),
                                 reinterpret_cast<bool*>(out_b.data()), index, nullptr);
    INFO(dtype_name(t));
    CHECK(bitwise_equal(tensor_of(DType::Bool, ref_b.shape(), out_b), ref_b));
  }
}
#endif  // DAGRAD_CUDA_SIM_TESTS
