// Threads: one session run by several threads at once (a conv graph, variables, use_locking
// updates, kernels writing over their inputs), set_num_threads toggled under running work, and
// the registries' first use from many threads. Each gives exactly the single-threaded results;
// scripts/tsan.sh runs them under ThreadSanitizer, where a race fails them even when the values
// happen to come out right.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <exception>
#include <latch>
#include <thread>
#include <vector>

#include <tbb/global_control.h>

#include <dagrad/dagrad.hpp>

#include "dagrad/core/random.hpp"

using namespace dagrad;

namespace {

#ifdef DAGRAD_TSAN_PROGRAM
// Debian's oneTBB is not built with ThreadSanitizer, which therefore cannot see the scheduler hand
// a task to another thread and reports races in every parallel kernel. The TSan program
// (scripts/tsan.sh) runs TBB without worker threads and with arenas wider than the test's thread
// count: each thread's work stays on that thread, and what TSan reports is dagrad's own doing.
constexpr int kArenaBase = 16;
const tbb::global_control no_tbb_workers(tbb::global_control::max_allowed_parallelism, 1);
const bool wide_default_arena = (set_num_threads(kArenaBase), true);
#else
constexpr int kArenaBase = 0;  // the arenas toggled below: all cores, 1 and 2 threads
#endif

// Runs body(t) for t in [0, count) on as many threads, released together so that they collide on
// whatever they first touch; rethrows the first exception. Catch2's assertions are not
// thread-safe: bodies record what they saw and the test checks it afterwards.
template <class F>
void on_threads(int count, F body) {
  std::latch start(count);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(DType::Float32, shape);
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(2 * rng.uniform() - 1);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const ops::Conv2DOptions kSame{.strides = {1, 1, 1, 1}, .padding = "SAME"};

// x -> Conv2D (3x3, Const filter) -> BiasAdd -> Relu = y, and s = sum(y).
struct ConvGraph {
  Graph g;
  Output x, y, s;
  ConvGraph() {
    x = ops::placeholder(g, DType::Float32, Shape{-1, 9, 9, 4}, "x");
    Output w = ops::constant(g, random_tensor(Shape{3, 3, 4, 8}, 1), "w");
    Output b = ops::constant(g, random_tensor(Shape{8}, 2), "b");
    y = ops::relu(g, ops::bias_add(g, ops::conv2d(g, x, w, kSame), b), "y");
    s = ops::reduce_sum_all(g, y, "s");
  }
};

}  // namespace

// Run first by scripts/tsan.sh in a process of its own, where it is the registries' first use.
TEST_CASE("the registries' first use from many threads at once", "[threads]") {
  constexpr int kThreads = 4;
  std::vector<Tensor> results(kThreads);
  std::vector<std::size_t> kernel_counts(kThreads);
  on_threads(kThreads, [&](int t) {
    kernel_counts[static_cast<std::size_t>(t)] = kernel_registry().list("Conv2D").size();
    // A graph and its gradient: op, kernel and gradient registries all at once.
    Graph g;
    Output x = ops::constant(g, random_tensor(Shape{1, 5, 5, 2}, 3), "x");
    Output w = ops::constant(g, random_tensor(Shape{3, 3, 2, 2}, 4), "w");
    Output y = ops::reduce_sum_all(g, ops::conv2d(g, x, w, kSame));
    Output dw = gradients(g, {y}, {w}).front();
    Session s(g);
    results[static_cast<std::size_t>(t)] = s.run({}, dw);
  });
  for (int t = 1; t < kThreads; ++t) {
    CHECK(kernel_counts[static_cast<std::size_t>(t)] == kernel_counts[0]);
    CHECK(same_bits(results[static_cast<std::size_t>(t)], results[0]));
  }
  CHECK(kernel_counts[0] > 0);
}

TEST_CASE("threads running one session at once get the single-threaded results", "[threads]") {
  constexpr int kThreads = 4;
  constexpr int kRuns = 6;
  ConvGraph c;
  std::vector<Tensor> inputs;
  std::vector<std::vector<Tensor>> expected;
  Session alone(c.g);
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_tensor(Shape{2, 9, 9, 4}, 100 + static_cast<std::uint64_t>(t)));
    expected.push_back(alone.run({{c.x, inputs.back()}}, {c.y, c.s}));
  }
  const int nodes_per_run = alone.last_run_stats().nodes_run;

  Session shared(c.g);  // fresh: the threads compile its two plans while they collide
  std::vector<int> mismatches(kThreads, 0);
  std::vector<RunStats> stats(kThreads);
  on_threads(kThreads, [&](int t) {
    const auto i = static_cast<std::size_t>(t);
    const FeedMap feeds{{c.x, inputs[i]}};
    for (int run = 0; run < kRuns; ++run) {
      if (run % 2 == 0) {
        const std::vector<Tensor> out = shared.run(feeds, {c.y, c.s}, {}, &stats[i]);
        mismatches[i] += !same_bits(out[0], expected[i][0]) + !same_bits(out[1], expected[i][1]);
      } else {
        mismatches[i] += !same_bits(shared.run(feeds, c.s), expected[i][1]);
      }
      mismatches[i] += shared.last_run_stats().nodes_run != nodes_per_run;  // any run's: all alike
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(mismatches[static_cast<std::size_t>(t)] == 0);
    CHECK(stats[static_cast<std::size_t>(t)].nodes_run == nodes_per_run);  // its own run's, not a sum
  }
}

TEST_CASE("threads reading a variable while another assigns it get the single-threaded results", "[threads]") {
  constexpr int kReaders = 3;
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{1, 6, 6, 2}, "x");
  Output w = ops::variable(g, Shape{3, 3, 2, 4}, DType::Float32, "w");
  const Tensor initial = random_tensor(Shape{3, 3, 2, 4}, 5);
  Output init = ops::assign(g, w, ops::constant(g, initial), true, "init");
  Output y = ops::conv2d(g, x, w, kSame);
  Session s(g);
  s.run({}, init);
  const FeedMap feeds{{x, random_tensor(Shape{1, 6, 6, 2}, 6)}};
  const Tensor expected = s.run(feeds, y);
  const Tensor copies[2] = {initial.clone(), initial.clone()};
  std::vector<int> mismatches(kReaders + 1, 0);
  on_threads(kReaders + 1, [&](int t) {
    if (t == 0) {
      // The same value again and again, in other buffers: by Assign runs and by restoring it
      // directly, as a checkpoint restore does.
      for (int i = 0; i < 200; ++i) {
        if (i % 20 == 0) s.run({}, init);
        s.variables().set("w", copies[i % 2]);
      }
      return;
    }
    for (int run = 0; run < 30; ++run) mismatches[static_cast<std::size_t>(t)] += !same_bits(s.run(feeds, y), expected);
  });
  CHECK(mismatches == std::vector<int>(kReaders + 1, 0));
}

TEST_CASE("threads whose kernels write over their own values leave shared feeds and variables alone", "[threads]") {
  constexpr int kThreads = 4;
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{64, 64}, "x");
  Output v = ops::variable(g, Shape{64, 64}, DType::Float32, "v");
  const Tensor initial = random_tensor(Shape{64, 64}, 9);
  Output init = ops::assign(g, v, ops::constant(g, initial), true, "init");
  // Neg's result is each run's own: Add, Relu and ReluGrad write over it; x and v are shared.
  Output y = ops::relu_grad(g, ops::relu(g, ops::add(g, ops::neg(g, x), v)), ops::identity(g, v));
  Output z = ops::relu(g, ops::identity(g, x));
  Session s(g);
  s.run({}, init);
  const Tensor xv = random_tensor(Shape{64, 64}, 10);
  const Tensor x_copy = xv.clone();
  const std::vector<Tensor> expected = s.run({{x, xv}}, {y, z});
  std::vector<int> mismatches(kThreads, 0);
  on_threads(kThreads, [&](int t) {
    for (int run = 0; run < 20; ++run) {
      const std::vector<Tensor> out = s.run({{x, xv}}, {y, z});
      mismatches[static_cast<std::size_t>(t)] += !same_bits(out[0], expected[0]) + !same_bits(out[1], expected[1]);
    }
  });
  CHECK(mismatches == std::vector<int>(kThreads, 0));
  CHECK(same_bits(xv, x_copy));
  CHECK(same_bits(s.variables().get_or_undefined("v"), initial));
}

TEST_CASE("use_locking updates of one variable from several threads lose nothing", "[threads]") {
  constexpr int kThreads = 4;
  constexpr int kSteps = 25;
  Graph g;
  Output v = ops::variable(g, Shape{64}, DType::Float32, "v");
  Output init = ops::assign(g, v, ops::constant(g, Tensor::zeros(DType::Float32, Shape{64})));
  const Node& step = g.add_node(
      "ApplyGradientDescent",
      {v, ops::scalar(g, 1.0, DType::Float32), ops::constant(g, Tensor::full(DType::Float32, Shape{64}, 1.0))},
      {{"use_locking", true}}, "step");
  Session s(g);
  s.run({}, init);
  on_threads(kThreads, [&](int) {
    for (int i = 0; i < kSteps; ++i) s.run({}, {}, {&step});
  });
  const Tensor value = s.variables().get_or_undefined("v");
  std::vector<float> lost;
  for (std::int64_t i = 0; i < 64; ++i) {
    if (value.data<float>()[i] != -kThreads * kSteps) lost.push_back(value.data<float>()[i]);
  }
  CHECK(lost.empty());  // small integers: every step is exact, none overwrote another
}

TEST_CASE("an Assign racing unlocked updates never tears the variable", "[threads]") {
  constexpr int kSteps = 20;
  constexpr std::int64_t kSize = 1 << 16;  // large: the Assign lands while the update still runs
  Graph g;
  Output v = ops::variable(g, Shape{kSize}, DType::Float32, "v");
  Output reset = ops::assign(g, v, ops::constant(g, Tensor::zeros(DType::Float32, Shape{kSize})), true, "reset");
  // TF's default use_locking=false: the update takes no lock, so it may write into the buffer
  // that the Assign is replacing. That buffer must stay alive until the update is done.
  Output update = ops::apply_gradient_descent(g, v, ops::scalar(g, 1.0, DType::Float32),
                                              ops::constant(g, Tensor::full(DType::Float32, Shape{kSize}, 1.0)));
  Session s(g);
  s.run({}, reset);
  on_threads(2, [&](int t) {
    for (int i = 0; i < kSteps; ++i) s.run({}, {}, {&(t == 0 ? reset : update).op()});
  });
  const Tensor value = s.variables().get_or_undefined("v");
  const float first = value.data<float>()[0];
  CHECK(first <= 0);
  CHECK(first >= -kSteps);
  std::int64_t torn = 0;  // elements unlike the first: every step must have reached all or none
  for (std::int64_t i = 1; i < kSize; ++i) torn += value.data<float>()[i] != first;
  CHECK(torn == 0);
}

TEST_CASE("set_num_threads while other threads run eager ops and sessions", "[threads]") {
  ConvGraph c;
  const Tensor input = random_tensor(Shape{2, 9, 9, 4}, 7);
  const Tensor filter = random_tensor(Shape{3, 3, 4, 8}, 8);
  const Tensor eager_expected = raw_ops::Conv2D(input, filter, kSame);
  Session session(c.g);  // no thread count of its own: it runs in the default arena
  Session own(c.g, {.threads = 2});
  const Tensor session_expected = session.run({{c.x, input}}, c.y);
  std::atomic<bool> stop{false};
  std::vector<int> runs(4, 0);
  std::vector<int> mismatches(4, 0);
  on_threads(4, [&](int t) {
    const auto i = static_cast<std::size_t>(t);
    if (t == 0) {
      for (int k = 0; k < 60; ++k) {
        set_num_threads(kArenaBase + k % 3);
        mismatches[i] += num_threads() < 1;
        ++runs[i];
      }
      stop = true;
      return;
    }
    do {  // each kernel's result is bitwise the same whatever the thread count
      if (t == 1) mismatches[i] += !same_bits(raw_ops::Conv2D(input, filter, kSame), eager_expected);
      if (t == 2) mismatches[i] += !same_bits(session.run({{c.x, input}}, c.y), session_expected);
      if (t == 3) mismatches[i] += !same_bits(own.run({{c.x, input}}, c.y), session_expected);
      ++runs[i];
    } while (!stop);
  });
  CHECK(mismatches == std::vector<int>(4, 0));
  CHECK(runs[1] > 0);
  set_num_threads(kArenaBase + 1);
  CHECK(num_threads() == kArenaBase + 1);
  set_num_threads(kArenaBase);
}
