// backends/cuda/pooling.cu (MaxPool, AvgPool and their gradients) run on the host simulator
// against the reference kernels, bit for bit, on the device test's random cases.
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/backends/cuda/pool_geometry.hpp"
#include "support/cuda_testing.hpp"
#include "support/pool_cases.hpp"
#include "support/sim_buffers.hpp"

// The kernel file itself, its launchers renamed so that they do not meet the library's.
#define launch_max_pool simulated_launch_max_pool
#define launch_avg_pool simulated_launch_avg_pool
#define launch_max_pool_grad simulated_launch_max_pool_grad
#define launch_max_pool_grad_grad simulated_launch_max_pool_grad_grad
#define launch_avg_pool_grad simulated_launch_avg_pool_grad
#include "dagrad/backends/cuda/pooling.cu"
#undef launch_max_pool
#undef launch_avg_pool
#undef launch_max_pool_grad
#undef launch_max_pool_grad_grad
#undef launch_avg_pool_grad

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

TEST_CASE("cuda pooling kernels on the host simulator equal the reference bit for bit", "[cuda-host]") {
  std::mt19937 rng(51);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const auto drawn = random_pool_case(rng, 2, 9, 3);
    if (!drawn) continue;
    const AttrMap& attrs = drawn->attrs;
    const Shape in_shape = drawn->input;
    const cuda::PoolIndex index = cuda::pool_index_of(ops::pool2d_geometry("MaxPool", attrs, in_shape));
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
      const auto type = static_cast<cuda::ElemType>(t);
      // Values on a coarse grid so that windows hold ties (the first maximum must win).
      Tensor x = Tensor::empty(DType::Float64, in_shape);
      for (i64 i = 0; i < x.num_elements(); ++i) x.data<double>()[i] = static_cast<double>(pick(-4, 4)) / 2;
      x = x.cast(t);
      const Tensor y = run_reference("MaxPool", {x}, attrs)[0];
      const Tensor dy = random_tensor(t, y.shape(), rng), ddx = random_tensor(t, in_shape, rng);
      const auto xb = exact_bytes(x), dyb = exact_bytes(dy), ddxb = exact_bytes(ddx);
      INFO(dtype_name(t) << " " << drawn->describe());
      cuda_sim::violations() = 0;

      auto pooled = output_bytes(t, y.num_elements());
      cuda::simulated_launch_max_pool(type, xb.data(), pooled.data(), index, nullptr);
      CHECK(bitwise_equal(tensor_of(t, y.shape(), pooled), y));

      auto grad = output_bytes(t, x.num_elements());
      std::vector<std::int64_t> argmax(static_cast<std::size_t>(std::max<i64>(y.num_elements(), 1)));
      cuda::simulated_launch_max_pool_grad(type, xb.data(), dyb.data(), grad.data(), argmax.data(), index, nullptr);
      CHECK(bitwise_equal(tensor_of(t, in_shape, grad), run_reference("MaxPoolGrad", {x, y, dy}, attrs)[0]));

      auto grad_grad = output_bytes(t, y.num_elements());
      cuda::simulated_launch_max_pool_grad_grad(type, xb.data(), ddxb.data(), grad_grad.data(), index, nullptr);
      CHECK(bitwise_equal(tensor_of(t, y.shape(), grad_grad), run_reference("MaxPoolGradGrad", {x, y, ddx}, attrs)[0]));

      if (!drawn->explicit_padding) {  // AvgPool has no EXPLICIT padding
        auto avg = output_bytes(t, y.num_elements());
        cuda::simulated_launch_avg_pool(type, xb.data(), avg.data(), index, nullptr);
        CHECK(bitwise_equal(tensor_of(t, y.shape(), avg), run_reference("AvgPool", {x}, attrs)[0]));
        std::vector<std::int32_t> dims(in_shape.dims().begin(), in_shape.dims().end());
        const Tensor orig_shape = Tensor::from_values<std::int32_t>(Shape{4}, dims);
        auto avg_grad = output_bytes(t, x.num_elements());
        cuda::simulated_launch_avg_pool_grad(type, dyb.data(), avg_grad.data(), index, nullptr);
        CHECK(
            bitwise_equal(tensor_of(t, in_shape, avg_grad), run_reference("AvgPoolGrad", {orig_shape, dy}, attrs)[0]));
      }
      CHECK(cuda_sim::violations() == 0);
      ++checked;
    }
  }
  CHECK(checked > 40);
}
#endif  // DAGRAD_CUDA_SIM_TESTS
