// backends/cuda/softmax.cu (Softmax, LogSoftmax and the two cross-entropy losses) run on the host
// simulator against the reference kernels, with the error bounds of the device test
// (cuda_nn_ops_test.cpp).
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
#define launch_softmax simulated_launch_softmax
#define launch_softmax_xent simulated_launch_softmax_xent
#define launch_sparse_softmax_xent simulated_launch_sparse_softmax_xent
#include "dagrad/backends/cuda/softmax.cu"
#undef launch_softmax
#undef launch_softmax_xent
#undef launch_sparse_softmax_xent

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

TEST_CASE("cuda softmax kernels on the host simulator match the reference", "[cuda-host]") {
  std::mt19937 rng(33);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 6; ++trial) {
    const i64 rows = pick(1, 4), classes = trial < 4 ? pick(1, 40) : pick(300, 700);
    for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
      const auto type = static_cast<cuda::ElemType>(t);
      const double u = accumulator_roundoff(t);
      const double log_classes = std::log(static_cast<double>(classes));
      INFO(dtype_name(t) << " rows " << rows << " classes " << classes);
      // A softmax value's relative error (and a log-softmax value's absolute error) comes from
      // the shifted logit |x - max| <= 4 and log(sum), each a few roundings of the accumulator.
      const double arg_err = 16 * u * (5 + log_classes) + u * static_cast<double>(classes) / 64;
      const Tensor x = random_tensor(t, Shape{rows, classes}, rng);
      const auto xb = exact_bytes(x);
      cuda_sim::violations() = 0;
      for (const bool log : {false, true}) {
        auto out = output_bytes(t, x.num_elements());
        cuda::simulated_launch_softmax(type, log, xb.data(), out.data(), rows, classes, nullptr);
        const Tensor ref = run_reference(log ? "LogSoftmax" : "Softmax", {x}, {})[0];
        check_close(tensor_of(t, x.shape(), out), ref,
                    [&](i64, double r) { return rounding_bound(t, r) + (log ? arg_err : arg_err * std::fabs(r)); });
      }

      // Dense labels in [-2, 2]: the loss sums classes terms |label| (log_sum - s) <= 2 (5 + log C).
      const Tensor labels = random_tensor(t, Shape{rows, classes}, rng);
      const auto lb = exact_bytes(labels);
      auto loss = output_bytes(t, rows), backprop = output_bytes(t, x.num_elements());
      cuda::simulated_launch_softmax_xent(type, xb.data(), lb.data(), loss.data(), backprop.data(), rows, classes,
                                          nullptr);
      const auto ref = run_reference("SoftmaxCrossEntropyWithLogits", {x, labels}, {});
      const double loss_err = 2 * static_cast<double>(classes) * (5 + log_classes) *
                              (arg_err + u * (static_cast<double>(classes) / 256 + 9));
      check_close(tensor_of(t, Shape{rows}, loss), ref[0],
                  [&](i64, double r) { return rounding_bound(t, r) + loss_err; });
      check_close(tensor_of(t, x.shape(), backprop), ref[1],
                  [&](i64, double r) { return rounding_bound(t, r) + 2 * arg_err + 2 * u; });

      for (DType label_type : {DType::Int32, DType::Int64}) {
        Tensor sparse = Tensor::empty(DType::Int64, Shape{rows});
        for (i64 r = 0; r < rows; ++r) sparse.data<std::int64_t>()[r] = pick(0, static_cast<int>(classes) - 1);
        sparse = sparse.cast(label_type);
        const auto sb = exact_bytes(sparse);
        auto sloss = output_bytes(t, rows), sback = output_bytes(t, x.num_elements());
        cuda::simulated_launch_sparse_softmax_xent(type, static_cast<cuda::ElemType>(label_type), xb.data(), sb.data(),
                                                   sloss.data(), sback.data(), rows, classes, nullptr);
        const auto sref = run_reference("SparseSoftmaxCrossEntropyWithLogits", {x, sparse}, {});
        check_close(tensor_of(t, Shape{rows}, sloss), sref[0],
                    [&](i64, double r) { return rounding_bound(t, r) + arg_err; });
        check_close(tensor_of(t, x.shape(), sback), sref[1],
                    [&](i64, double r) { return rounding_bound(t, r) + 2 * arg_err + 2 * u; });
      }
      CHECK(cuda_sim::violations() == 0);
    }
  }
}
#endif  // DAGRAD_CUDA_SIM_TESTS
