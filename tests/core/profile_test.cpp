// SessionOptions::profile and Profiler: one timing per kernel node in plan order, inside the run and
// without overlap; the conv kernels' paths (forced ones too) and the ops' modelled costs; totals
// that add up over runs; the report and the Chrome trace (kept runs only), and a trace file that
// cannot be written is an error naming it.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include <dagrad/backends/cpu/conv2d/paths.hpp>
#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;

namespace {

// input [2,9,9,3] -> Conv2D 3x3 SAME (8 filters) -> BiasAdd -> Relu -> reshape [2, 648] -> MatMul [648, 5].
struct Net {
  Graph g;
  Output x, y;
  explicit Net() {
    x = ops::placeholder(g, DType::Float32, Shape{2, 9, 9, 3}, "x");
    const Output f = ops::constant(g, Tensor::full(DType::Float32, Shape{3, 3, 3, 8}, 0.25), "f");
    const Output b = ops::constant(g, Tensor::full(DType::Float32, Shape{8}, 0.5), "b");
    const Output w = ops::constant(g, Tensor::full(DType::Float32, Shape{648, 5}, 0.125), "w");
    const Output conv = ops::conv2d(g, x, f, {.strides = {1, 1, 1, 1}, .padding = "SAME", .name = "conv"});
    const Output h = ops::relu(g, ops::bias_add(g, conv, b, "NHWC", "bias"), "relu");
    y = ops::mat_mul(g, ops::reshape(g, h, {2, 648}, "flat"), w, false, false, "dense");
  }
  FeedMap feeds() const { return {{x, Tensor::full(DType::Float32, Shape{2, 9, 9, 3}, 1.0)}}; }
};

const NodeTiming& timing_of(const RunProfile& run, const std::string& name) {
  for (const NodeTiming& n : run.nodes)
    if (n.name == name) return n;
  FAIL("no timing for node " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a profiled run times every kernel node in plan order, inside the run, without overlap", "[profile]") {
  Net net;
  Session session(net.g, {.profile = true, .rewrite = false});  // the graph's own nodes (fusions_test: fused ones)
  RunStats stats;
  session.run(net.feeds(), {net.y}, {}, &stats);
  const RunProfile& run = stats.profile;
  const PlanInfo plan = session.plan_info(net.feeds(), {net.y});
  REQUIRE(run.nodes.size() == plan.order.size());
  CHECK(static_cast<int>(run.nodes.size()) == stats.nodes_run);
  double end = 0;
  for (std::size_t i = 0; i < run.nodes.size(); ++i) {
    const NodeTiming& n = run.nodes[i];
    INFO(n.name);
    CHECK(n.node == plan.order[i]);
    CHECK(n.name == net.g.node(n.node).name);
    CHECK(n.op == net.g.node(n.node).op());
    CHECK(n.start_us >= end);  // after the previous node's end
    CHECK(n.duration_us >= 0);
    end = n.start_us + n.duration_us;
  }
  CHECK(end <= run.duration_us);
  CHECK(run.kernels_us() <= run.duration_us);
  CHECK(run.start_us > 0);
  CHECK(session.last_run_stats().profile.nodes.size() == run.nodes.size());
  // Costs where the op models one: Conv2D 2 * 2*9*9*8 outputs * 27 taps, MatMul 2 * 2 * 648 * 5,
  // Relu one per element; Reshape models none.
  CHECK(timing_of(run, "conv").flops == 2.0 * (2 * 9 * 9 * 8) * 27);
  CHECK(timing_of(run, "dense").flops == 2.0 * 2 * 648 * 5);
  CHECK(timing_of(run, "relu").flops == 2.0 * 9 * 9 * 8);
  CHECK(!timing_of(run, "flat").flops);
  // The conv kernel reports its path: the first that applies; the others report none.
  const NodeTiming& conv = timing_of(run, "conv");
  CHECK(conv.backend == "cpu");
  const ops::Conv2DGeometry geometry = ops::conv2d_geometry(
      "Conv2D", ops::parse_conv2d_attrs("Conv2D", net.g.node(conv.node).attrs), Shape{2, 9, 9, 3}, Shape{3, 3, 3, 8});
  CHECK(conv.path == cpu::conv2d_paths("Conv2D", geometry, DType::Float32).front());
  CHECK(timing_of(run, "relu").path.empty());
}

TEST_CASE("a run without profiling records no timings; a forced path shows in the profile", "[profile]") {
  Net net;
  Session plain(net.g);
  RunStats stats;
  plain.run(net.feeds(), {net.y}, {}, &stats);
  CHECK(stats.profile.nodes.empty());
  CHECK(stats.profile.duration_us == 0);
  Session forced(net.g, {.kernel_path = "generic", .profile = true, .rewrite = false});
  forced.run(net.feeds(), {net.y}, {}, &stats);
  CHECK(timing_of(stats.profile, "conv").path == "generic");
}

TEST_CASE("Profiler adds runs up op by op, reports them and writes the kept runs as a Chrome trace", "[profile]") {
  Net net;
  Session session(net.g, {.profile = true, .rewrite = false});
  Profiler profiler(2);  // keeps the first two runs for the trace
  double total = 0, kernels = 0;
  std::size_t nodes = 0;
  for (int i = 0; i < 3; ++i) {
    RunStats stats;
    session.run(net.feeds(), {net.y}, {}, &stats);
    profiler.add(stats.profile);
    total += stats.profile.duration_us;
    kernels += stats.profile.kernels_us();
    nodes = stats.profile.nodes.size();
  }
  CHECK(profiler.runs() == 3);
  CHECK(profiler.total_us() == Approx(total));
  CHECK(profiler.kernels_us() == Approx(kernels));
  const std::vector<Profiler::OpTotal> ops = profiler.by_op();
  double sum = 0;
  std::int64_t calls = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) CHECK(ops[i - 1].total_us >= ops[i].total_us);
    sum += ops[i].total_us;
    calls += ops[i].calls;
  }
  CHECK(sum == Approx(kernels));
  CHECK(calls == static_cast<std::int64_t>(3 * nodes));
  const auto conv = std::find_if(ops.begin(), ops.end(), [](const auto& t) { return t.op == "Conv2D"; });
  REQUIRE(conv != ops.end());
  CHECK(conv->calls == 3);
  CHECK(conv->flops == 3 * 2.0 * (2 * 9 * 9 * 8) * 27);
  REQUIRE(conv->paths.size() == 1);
  CHECK(conv->paths.begin()->second == 3);
  const std::string report = profiler.report(3);
  CHECK_THAT(report, Contains("profile: 3 runs") && Contains("GFLOP/s") && Contains(ops[0].op) &&
                         Contains("(" + std::to_string(ops.size() - 3) + " more ops)"));

  testing::TempDir dir("profile");
  const std::string file = (dir.path / "trace.json").string();
  profiler.write_chrome_trace(file);
  std::ifstream in(file);
  const nlohmann::json trace = nlohmann::json::parse(in);
  const auto& events = trace.at("traceEvents");
  REQUIRE(events.size() == 2 * (1 + nodes));  // two kept runs: one event each, and one per node
  double last_run_end = 0;
  for (const auto& e : events) {
    CHECK(e.at("ph") == "X");
    CHECK(e.at("ts").get<double>() >= 0);
    CHECK(e.at("dur").get<double>() >= 0);
    if (e.at("cat") == "run") {
      CHECK(e.at("ts").get<double>() >= last_run_end);
      last_run_end = e.at("ts").get<double>() + e.at("dur").get<double>();
    } else {
      CHECK(e.at("ts").get<double>() + e.at("dur").get<double>() <= last_run_end + 1e-6);  // inside its run
      CHECK(e.at("args").at("op") == e.at("cat"));
    }
  }
  CHECK_THAT(testing::error_of([&] { profiler.write_chrome_trace((dir.path / "no" / "trace.json").string()); }),
             Contains((dir.path / "no").string()));
}
