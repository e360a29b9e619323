// backends/cuda/unary.cu (Relu, ReluGrad, Reciprocal with its integer zero flag, BiasAdd) and
// gather.cu (Transpose, BroadcastTo) run on the host simulator against the reference kernels,
// bit for bit.
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "dagrad/backends/cuda/launch_ops.hpp"
#include "support/cuda_testing.hpp"
#include "support/sim_buffers.hpp"

// The kernel files themselves, their launchers renamed so that they do not meet the library's.
#define launch_relu simulated_launch_relu
#define launch_relu_grad simulated_launch_relu_grad
#define launch_reciprocal simulated_launch_reciprocal
#define launch_bias_add simulated_launch_bias_add
#include "dagrad/backends/cuda/unary.cu"
#undef launch_relu
#undef launch_relu_grad
#undef launch_reciprocal
#undef launch_bias_add
#define kThreads gather_threads  // each kernel file names its block size kThreads
#define launch_gather simulated_launch_gather
#include "dagrad/backends/cuda/gather.cu"
#undef launch_gather
#undef kThreads

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

TEST_CASE("cuda Relu, ReluGrad, Reciprocal and BiasAdd kernels on the host simulator equal the reference",
          "[cuda-host]") {
  std::mt19937 rng(61);
  for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
    const auto type = static_cast<cuda::ElemType>(t);
    const Tensor x = random_tensor(t, Shape{3, 5, 7}, rng), g = random_tensor(t, Shape{3, 5, 7}, rng);
    const auto xb = exact_bytes(x), gb = exact_bytes(g);
    const i64 n = x.num_elements();
    INFO(dtype_name(t));
    auto relu = output_bytes(t, n), relu_grad = output_bytes(t, n), reciprocal = output_bytes(t, n);
    cuda::simulated_launch_relu(type, xb.data(), relu.data(), n, nullptr);
    cuda::simulated_launch_relu_grad(type, gb.data(), xb.data(), relu_grad.data(), n, nullptr);
    cuda::simulated_launch_reciprocal(type, xb.data(), reciprocal.data(), n, nullptr, nullptr);
    CHECK(bitwise_equal(tensor_of(t, x.shape(), relu), run_reference("Relu", {x}, {})[0]));
    CHECK(bitwise_equal(tensor_of(t, x.shape(), relu_grad), run_reference("ReluGrad", {g, x}, {})[0]));
    CHECK(bitwise_equal(tensor_of(t, x.shape(), reciprocal), run_reference("Reciprocal", {x}, {})[0]));
    for (const char* format : {"NHWC", "NCHW"}) {
      const Tensor v = random_tensor(t, Shape{2, 3, 4, 5}, rng);
      const bool nchw = std::string(format) == "NCHW";
      const i64 channels = nchw ? 3 : 5, inner = nchw ? 20 : 1;
      const Tensor bias = random_tensor(t, Shape{channels}, rng);
      const auto vb = exact_bytes(v), bb = exact_bytes(bias);
      auto out = output_bytes(t, v.num_elements());
      cuda::simulated_launch_bias_add(type, vb.data(), bb.data(), out.data(), v.num_elements(), channels, inner,
                                      nullptr);
      CHECK(bitwise_equal(tensor_of(t, v.shape(), out),
                          run_reference("BiasAdd", {v, bias}, {{"data_format", std::string(format)}})[0]));
    }
  }
  for (DType t : {DType::Int32, DType::Int64}) {  // integer 1/x, and the flag for 1/0
    const Tensor x = Tensor::from_values<std::int64_t>(Shape{6}, {1, -1, 2, 7, -3, 1}).cast(t);
    const auto xb = exact_bytes(x);
    auto out = output_bytes(t, 6);
    int flag = 0;
    cuda::simulated_launch_reciprocal(static_cast<cuda::ElemType>(t), xb.data(), out.data(), 6, &flag, nullptr);
    CHECK(flag == 0);
    CHECK(bitwise_equal(tensor_of(t, x.shape(), out), run_reference("Reciprocal", {x}, {})[0]));
    const Tensor z = Tensor::from_values<std::int64_t>(Shape{3}, {4, 0, 1}).cast(t);
    const auto zb = exact_bytes(z);
    auto zout = output_bytes(t, 3);
    cuda::simulated_launch_reciprocal(static_cast<cuda::ElemType>(t), zb.data(), zout.data(), 3, &flag, nullptr);
    CHECK(flag == 1);
  }
}

TEST_CASE("cuda gather kernel on the host simulator equals Transpose and BroadcastTo", "[cuda-host]") {
  std::mt19937 rng(62);
  for (DType t : {DType::Half, DType::Float64, DType::Int32, DType::Bool}) {
    const Tensor x = random_tensor(t == DType::Bool ? DType::Int32 : t, Shape{2, 3, 4}, rng).cast(t);
    const auto xb = exact_bytes(x);
    INFO(dtype_name(t));
    for (const std::vector<i64>& perm :
         {std::vector<i64>{2, 0, 1}, std::vector<i64>{1, 2, 0}, std::vector<i64>{0, 1, 2}}) {
      cuda::GatherIndex index;
      REQUIRE(cuda::make_transpose_gather({2, 3, 4}, perm, &index));
      const Tensor ref = run_reference("Transpose", {x, Tensor::from_values<std::int64_t>(Shape{3}, perm)}, {})[0];
      auto out = output_bytes(t, x.num_elements());
      cuda::simulated_launch_gather(static_cast<cuda::ElemType>(t), xb.data(), out.data(), index, nullptr);
      CHECK(bitwise_equal(tensor_of(t, ref.shape(), out), ref));
    }
    const Tensor row = random_tensor(t == DType::Bool ? DType::Int32 : t, Shape{3, 1}, rng).cast(t);
    const auto rb = exact_bytes(row);
    cuda::GatherIndex index;
    REQUIRE(cuda::make_broadcast_gather({2, 3, 4}, {3, 1}, &index));
    const Tensor ref =
        run_reference("BroadcastTo", {row, Tensor::from_values<std::int64_t>(Shape{3}, {2, 3, 4})}, {})[0];
    auto out = output_bytes(t, 24);
    cuda::simulated_launch_gather(static_cast<cuda::ElemType>(t), rb.data(), out.data(), index, nullptr);
    CHECK(bitwise_equal(tensor_of(t, ref.shape(), out), ref));
  }
}
#endif  // DAGRAD_CUDA_SIM_TESTS
