// A CUDA session keeps its Consts on the device: the second run of a graph copies only its feed,
// and its results are those of the first run and of a CPU session, bit for bit.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "support/cuda_testing.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::testing;

}  // namespace

TEST_CASE("a cuda session copies each Const to the device once", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(17);
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{4, 6}, "x");
  const Output w = ops::constant(g, random_tensor(DType::Float32, Shape{4, 6}, rng), "w");
  const Output b = ops::constant(g, random_tensor(DType::Float32, Shape{24}, rng), "b");
  // Element-wise only, so CPU and GPU round alike; the reshape's shape Const is read on the host.
  const Output y = ops::add(g, ops::reshape(g, ops::mul(g, x, w), {24}), b, "y");
  const FeedMap feeds{{x, random_tensor(DType::Float32, Shape{4, 6}, rng)}};

  Session cpu(g);
  const Tensor expected = cpu.run(feeds, y);
  Session gpu(g, {.device = Device::cuda()});
  const Tensor first = gpu.run(feeds, y);
  CHECK(gpu.last_run_stats().const_uploads == 2);  // w and b
  CHECK(gpu.last_run_stats().host_to_device_copies == 3);
  for (int run = 0; run < 3; ++run) {
    const Tensor again = gpu.run(feeds, y);
    CHECK(gpu.last_run_stats().const_uploads == 0);
    CHECK(gpu.last_run_stats().host_to_device_copies == 1);  // the feed alone
    CHECK(bitwise_equal(again, first));
  }
  CHECK(bitwise_equal(first, expected));
}
