// The session's memory: a training step after the first takes no fresh block from the system.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

#include "dagrad/core/random.hpp"
#include "support/small_cnn.hpp"

using namespace dagrad;

namespace {

// Values in [-2, 2], away from zero (Reciprocal), in any dtype.
Tensor random_values(DType dtype, const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = 0.25 + 1.75 * rng.uniform();
    t.data<double>()[i] = rng.uniform() < 0.5 ? -v : v;
  }
  return t.cast(dtype);
}

}  // namespace

TEST_CASE("training steps after the first take no fresh memory from the system", "[memory]") {
  constexpr std::int64_t kBatch = 16;
  ImageDataset batch{random_values(DType::Float32, Shape{kBatch, 28, 28, 1}, 7),
                     Tensor::empty(DType::Int32, Shape{kBatch})};
  for (std::int64_t i = 0; i < kBatch; ++i) batch.labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
  for (const char* optimizer : {"sgd", "momentum", "adam"}) {
    INFO(optimizer);
    testing::SmallCnn m(3, 8, optimizer, 0.01);
    for (int threads : {1, 2}) {
      INFO(threads << " threads");
      Session s(m.g, {.threads = threads});
      s.run({}, {}, {m.init});
      for (int step = 0; step < 5; ++step) {
        RunStats stats;
        s.run(m.feed(batch), {m.loss}, {m.step}, &stats);
        INFO("step " << step << ": " << stats.fresh_allocations << " fresh, " << stats.reused_allocations << " reused");
        CHECK(stats.reused_allocations > 0);
        if (step >= 1) CHECK(stats.fresh_allocations == 0);
      }
    }
  }
}
