// A device session copies each Const to its device once: checked without a GPU through a fake
// device runtime (host memory posing as cuda:0) and a few kernels for it under their own backend.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include <dagrad/dagrad.hpp>

#include "dagrad/core/kernel_registry.hpp"
#include "support/fake_device.hpp"

namespace {

using namespace dagrad;

constexpr const char* kFake = "fake-device";

// Slow as a real device copy: threads sharing a session meet inside a Const's first upload.
// Never destroyed before the tensors it allocated: a function-local static outlives the tests.
testing::FakeDeviceRuntime& fake_runtime() {
  static testing::FakeDeviceRuntime runtime(std::chrono::milliseconds(1));
  return runtime;
}

// The fake as the CUDA runtime for one test.
struct FakeCudaScope : testing::FakeCudaScope {
  FakeCudaScope() : testing::FakeCudaScope(fake_runtime()) {}
};

// What a kernel expects, checked without Catch2's assertions, which are not thread-safe: threads
// share a session in the last test. The exception fails the run, and so the test.
void expect(bool ok, const char* what) {
  if (!ok) throw std::logic_error(what);
}

// Float32 kernels on the fake device for the ops the test graph uses; the fake's memory is host
// memory, so they read raw pointers. Registered once, under a backend no real session asks for.
void register_fake_kernels() {
  static const bool done = [] {
    const auto cuda = Device::Kind::CUDA;
    KernelRegistry& r = kernel_registry();
    for (DType dtype : {DType::Float32, DType::Int64}) {  // Int64: the reshape's shape
      r.add({"Const", cuda, dtype, kFake, -100,
             [](KernelContext& c) { c.set_output(0, c.attr<Tensor>("value").to(c.device())); }});
    }
    r.add({"Placeholder", cuda, DType::Float32, kFake, -100,
           [](KernelContext& c) { invalid_argument("unfed placeholder ", c.node_name()); }});
    r.add({"AddV2", cuda, DType::Float32, kFake, -100, [](KernelContext& c) {
             const auto* x = static_cast<const float*>(c.input(0).raw_data());
             const auto* y = static_cast<const float*>(c.input(1).raw_data());
             Tensor& out = c.allocate_output(0);
             expect(c.input(0).shape() == c.input(1).shape(), "AddV2: same shapes");
             expect(!c.input(0).device().is_cpu(), "inputs reach the kernel on the device");
             expect(!c.input(1).device().is_cpu(), "inputs reach the kernel on the device");
             auto* z = static_cast<float*>(out.raw_data());
             for (std::int64_t i = 0; i < out.num_elements(); ++i) z[i] = x[i] + y[i];
           }});
    r.add({"Reshape", cuda, DType::Float32, kFake, -100, [](KernelContext& c) {
             expect(c.input(1).device().is_cpu(), "the shape is read on the host");
             c.set_output(0, c.input(0).reshaped(c.output_shape(0)));
           }});
    return true;
  }();
  (void)done;
}

struct ConstGraph {
  Graph g;
  Output x, w, b, y;
  ConstGraph() {
    x = ops::placeholder(g, DType::Float32, Shape{2, 3}, "x");
    w = ops::constant(g, Tensor::from_values<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}), "w");
    b = ops::constant(g, Tensor::from_values<float>(Shape{6}, {0.5f, 0.25f, 0, -1, -2, 8}), "b");
    // The reshape's shape is a third Const, read through a host-memory input: never uploaded.
    y = ops::add(g, ops::reshape(g, ops::add(g, x, w), {6}), b, "y");
  }
};

std::vector<float> values_of(const Tensor& t) {
  REQUIRE(t.device().is_cpu());
  return {t.data<float>(), t.data<float>() + t.num_elements()};
}

}  // namespace

TEST_CASE("a device session copies each Const to its device on first use only", "[session]") {
  register_fake_kernels();
  FakeCudaScope scope;
  ConstGraph c;
  const FeedMap feeds{{c.x, Tensor::from_values<float>(Shape{2, 3}, {10, 20, 30, 40, 50, 60})}};
  Session cpu(c.g);
  const std::vector<float> expected = values_of(cpu.run(feeds, c.y));
  const std::int64_t held_before = fake_runtime().allocator(0).stats().bytes_in_use;
  {
    Session s(c.g, {.device = Device::cuda(), .backend = kFake});
    const std::vector<Tensor> first = s.run(feeds, {c.y, c.w});
    CHECK(s.last_run_stats().const_uploads == 2);          // w and b; the reshape's shape stays on the host
    CHECK(s.last_run_stats().host_to_device_copies == 3);  // the feed, w and b
    CHECK(values_of(first[0]) == expected);
    CHECK(values_of(first[1]) == std::vector<float>{1, 2, 3, 4, 5, 6});  // a fetched Const needs no copy
    // The cache holds the two device copies between runs (24 bytes each).
    CHECK(fake_runtime().allocator(0).stats().bytes_in_use - held_before == 48);

    for (int run = 0; run < 2; ++run) {
      const Tensor again = s.run(feeds, c.y);
      CHECK(s.last_run_stats().const_uploads == 0);
      CHECK(s.last_run_stats().host_to_device_copies == 1);  // the feed alone
      CHECK(values_of(again) == expected);
    }
    // Another set of fetches compiles another plan; the Consts are already on the device.
    s.run(feeds, {c.y, c.x});
    CHECK(s.last_run_stats().const_uploads == 0);

    // The cache belongs to the session: a second one copies for itself.
    Session other(c.g, {.device = Device::cuda(), .backend = kFake});
    CHECK(values_of(other.run(feeds, c.y)) == expected);
    CHECK(other.last_run_stats().const_uploads == 2);
  }
  CHECK(fake_runtime().allocator(0).stats().bytes_in_use == held_before);  // freed with the sessions
}

TEST_CASE("a CPU session copies nothing and hands out a Const's own value", "[session]") {
  ConstGraph c;
  Session s(c.g);
  const FeedMap feeds{{c.x, Tensor::zeros(DType::Float32, Shape{2, 3})}};
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> out = s.run(feeds, {c.y, c.w});
    CHECK(s.last_run_stats().const_uploads == 0);
    CHECK(s.last_run_stats().host_to_device_copies == 0);
    CHECK(out[1].shares_buffer_with(get_attr<Tensor>(c.g.node(c.w.node).attrs, "value")));
  }
}

TEST_CASE("threads sharing a device session copy each Const once between them", "[session][threads]") {
  register_fake_kernels();
  FakeCudaScope scope;
  ConstGraph c;
  const FeedMap feeds{{c.x, Tensor::from_values<float>(Shape{2, 3}, {10, 20, 30, 40, 50, 60})}};
  Session cpu(c.g);
  const std::vector<float> expected = values_of(cpu.run(feeds, c.y));
  Session s(c.g, {.device = Device::cuda(), .backend = kFake});
  constexpr int kThreads = 4;
  std::vector<Tensor> results(kThreads);
  std::vector<RunStats> stats(kThreads);
  std::vector<std::exception_ptr> errors(kThreads);
  std::latch start(kThreads);  // released together: all of them meet the Consts' first use
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        results[t] = s.run(feeds, {c.y}, {}, &stats[t]).front();
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  int uploads = 0;
  for (std::size_t t = 0; t < kThreads; ++t) {
    if (errors[t]) std::rethrow_exception(errors[t]);
    CHECK(values_of(results[t]) == expected);
    uploads += static_cast<int>(stats[t].const_uploads);
  }
  CHECK(uploads == 2);  // w and b, once for the session, whichever thread came first
}
