// Training steps of the tests' small CNN (support/small_cnn.hpp) with its variables on cuda:0:
// the loss of every step follows the CPU's within float32 rounding, falls, and repeats bit for
// bit from run to run (the conv kernels' split-K combines in a fixed order).
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "support/cuda_testing.hpp"
#include "support/small_cnn.hpp"

namespace {

using namespace dagrad;

// A fixed batch of 32 random images in [0, 1) with random labels.
ImageDataset random_batch() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  ImageDataset d;
  d.images = Tensor::empty(DType::Float32, Shape{32, 28, 28, 1});
  d.labels = Tensor::empty(DType::Int32, Shape{32});
  for (std::int64_t i = 0; i < d.images.num_elements(); ++i) d.images.data<float>()[i] = pixel(rng);
  for (std::int64_t i = 0; i < d.labels.num_elements(); ++i) d.labels.data<std::int32_t>()[i] = label(rng);
  return d;
}

// The loss before each of 8 SGD steps on the same batch, on `device`.
std::vector<float> sgd_losses(Device device) {
  testing::SmallCnn m(3, 8, "sgd", 0.05);
  Session s(m.g, {.device = device});
  s.run({}, {}, {m.init});
  const ImageDataset batch = random_batch();
  std::vector<float> losses;
  for (int step = 0; step < 8; ++step) losses.push_back(s.run(m.feed(batch), {m.loss}, {m.step})[0].data<float>()[0]);
  return losses;
}

}  // namespace

TEST_CASE("cuda training steps follow the CPU's, lower the loss and repeat bit for bit", "[cuda][train]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  const std::vector<float> cpu = sgd_losses(Device::cpu());
  const std::vector<float> gpu = sgd_losses(Device::cuda());
  CHECK(sgd_losses(Device::cuda()) == gpu);
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    INFO("step " << i << ": cpu " << cpu[i] << ", cuda " << gpu[i]);
    CHECK(gpu[i] == Approx(cpu[i]).epsilon(1e-4));
  }
  CHECK(gpu.back() < 0.9f * gpu.front());
}
