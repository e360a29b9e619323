// backends/cuda/reduce.cu (Sum, Mean) run on the host simulator against the reference kernels,
// with the error bound of the device test (cuda_kernels_test.cpp).
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "dagrad/backends/cuda/launch.hpp"
#include "support/cuda_testing.hpp"
#include "support/sim_buffers.hpp"

// The kernel file itself, its launcher renamed so that it does not meet the library's.
#define launch_reduce simulated_launch_reduce
#include "dagrad/backends/cuda/reduce.cu"
#undef launch_reduce

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

TEST_CASE("cuda Sum and Mean kernels on the host simulator match the reference", "[cuda-host]") {
  std::mt19937 rng(9);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; trial < 16; ++trial) {
    // Small shapes of any rank, then long rows (many elements per thread and per block).
    std::vector<i64> dims(static_cast<std::size_t>(trial < 12 ? pick(1, 4) : 2));
    for (auto& d : dims) d = pick(1, trial < 12 ? 7 : 700);
    if (trial >= 12) dims[0] = pick(1, 3);
    std::vector<i64> axes;
    std::vector<bool> mask(dims.size(), false);
    for (i64 a = 0; a < static_cast<i64>(dims.size()); ++a) {
      if (pick(0, 1) || (trial >= 12 && a == 1)) axes.push_back(a), mask[static_cast<std::size_t>(a)] = true;
    }
    cuda::ReduceIndex index;
    REQUIRE(cuda::make_reduce_index(dims, mask, &index));
    const Tensor axis = Tensor::from_values<std::int64_t>(Shape{static_cast<i64>(axes.size())}, axes);
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
      const Tensor x = random_tensor(t, Shape(dims), rng);
      for (const bool mean : {false, true}) {
        const char* op = mean ? "Mean" : "Sum";
        const Tensor ref = run_op(op, {x, axis}, {{"keep_dims", false}}, {.backend = "reference"})[0];
        const auto in = exact_bytes(x);
        auto out = output_bytes(t, ref.num_elements());
        cuda_sim::violations() = 0;
        cuda::simulated_launch_reduce(static_cast<cuda::ElemType>(t), mean, in.data(), out.data(), index, nullptr);
        REQUIRE(cuda_sim::violations() == 0);
        const Tensor got = tensor_of(t, ref.shape(), out);
        INFO(op << " " << dtype_name(t) << " " << x.shape().to_string());
        ++checked;
        if (!is_floating(t)) {
          CHECK(bitwise_equal(got, ref));
          continue;
        }
        // n terms (|x| <= 2): each thread sums n/256 of them, then an 8-level tree; then rounding to T.
        const double n = static_cast<double>(x.num_elements()) / std::max<i64>(ref.num_elements(), 1);
        const double u = accumulator_roundoff(t);
        const double margin = (n / 256 + 9) * u * 2.0 * n / (mean ? n : 1.0);
        check_close(got, ref, [&](i64, double r) { return rounding_bound(t, r) + margin; });
      }
    }
  }
  CHECK(checked == 16 * 6 * 2);
}
#endif  // DAGRAD_CUDA_SIM_TESTS
