// The session's memory: a kernel may write its output over an input that it reads last and that
// no one else holds (KernelContext::forward_input_or_allocate_output); a training step after the
// first takes no fresh block from the system.
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

TEST_CASE("a kernel writes over an input only when no other tensor holds its buffer", "[memory]") {
  const AttrMap attrs;
  auto context = [&](std::vector<Tensor> inputs, DType dtype, Shape shape) {
    return KernelContext("Op", "node", attrs, Device::cpu(), std::move(inputs), {dtype}, {std::move(shape)});
  };
  const Shape shape{4, 5};
  SECTION("handed over: the output is the input's buffer") {
    Tensor in = Tensor::zeros(DType::Float32, shape);
    const void* data = in.raw_data();
    KernelContext c = context({std::move(in)}, DType::Float32, shape);
    CHECK(c.forward_input_or_allocate_output({0}, 0).raw_data() == data);
    CHECK(c.outputs()[0].shares_buffer_with(c.input(0)));
  }
  SECTION("the first candidate that can be reused") {
    const Tensor held = Tensor::zeros(DType::Float32, shape);
    Tensor free = Tensor::zeros(DType::Float32, shape);
    const void* data = free.raw_data();
    KernelContext c = context({held, std::move(free)}, DType::Float32, shape);
    CHECK(c.forward_input_or_allocate_output({0, 1}, 0).raw_data() == data);
  }
  SECTION("held elsewhere, another shape or dtype: a fresh output") {
    const Tensor held = Tensor::zeros(DType::Float32, shape);
    KernelContext shared = context({held}, DType::Float32, shape);
    CHECK_FALSE(shared.forward_input_or_allocate_output({0}, 0).shares_buffer_with(held));
    KernelContext twice = context({Tensor::zeros(DType::Float32, shape)}, DType::Float32, shape);
    const Tensor alias = twice.input(0);  // e.g. Mul(x, x): the kernel holds it twice
    CHECK_FALSE(twice.forward_input_or_allocate_output({0}, 0).shares_buffer_with(alias));
    KernelContext reshaped = context({Tensor::zeros(DType::Float32, shape)}, DType::Float32, Shape{20});
    CHECK(reshaped.forward_input_or_allocate_output({0}, 0).shape() == Shape{20});
    CHECK_FALSE(reshaped.outputs()[0].shares_buffer_with(reshaped.input(0)));
    KernelContext cast = context({Tensor::zeros(DType::Int32, shape)}, DType::Float32, shape);
    CHECK(cast.forward_input_or_allocate_output({0}, 0).dtype() == DType::Float32);
    CHECK_FALSE(cast.outputs()[0].shares_buffer_with(cast.input(0)));
  }
}

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
