// Kernels whose work completes after they return (KernelContext::defer) and ops that start early
// (OpDef::start_early), on a test op: the plan runs such a node right after its inputs; the
// executor polls its work after every node and finishes it before the first node that reads it,
// before the run returns, and after another node's error; eager calls finish it at once; a
// profile counts its waits in the node's time, not as calls. (The data-parallel exchanges that
// need this are checked under mpirun: tests/mpi.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"
#include "support/hand_adam.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using dagrad::testing::error_of;

namespace {

// What the test op's deferred work went through (the registries, and so the op, are process-wide).
struct WorkLog {
  int started = 0, polls = 0, waits = 0, finished = 0;
  bool fail_wait = false;
};
WorkLog& work_log() {
  static WorkLog log;
  return log;
}

// DagradTestLater: y = x, but y holds NaNs until the kernel's deferred work copies x in, on its
// third poll or on a wait.
void later_kernel(KernelContext& c) {
  Tensor x = c.input(0);
  Tensor y = c.allocate_output(0);
  std::fill_n(y.data<float>(), y.num_elements(), std::nanf(""));
  ++work_log().started;
  c.defer([x, y, polls = 0](bool wait) mutable {
    if (wait) {
      ++work_log().waits;
      if (work_log().fail_wait) fail(Code::Internal, "the planted failure of a wait");
    } else {
      ++work_log().polls;
      if (++polls < 3) return false;
    }
    std::copy_n(x.data<float>(), x.num_elements(), y.data<float>());
    ++work_log().finished;
    return true;
  });
}

void register_later_op() {
  static const bool registered = [] {
    op_registry().add(OpDefBuilder("DagradTestLater")
                          .input("x", "T")
                          .output("y", "T")
                          .attr_type("T", {DType::Float32})
                          .shape_fn([](ShapeContext& c) { c.set_output(0, c.input_shape(0)); })
                          .start_early()
                          .doc("y = x, written when the kernel's deferred work finishes (a test op)")
                          .cases([] { return std::vector<OpCase>{{.label = "[3]", .inputs = {uniform({3})}}}; })
                          .build());
    for (const auto& [backend, priority] : {std::pair{"reference", 0}, std::pair{"cpu", 10}}) {
      kernel_registry().add({.op = "DagradTestLater",
                             .device = Device::Kind::CPU,
                             .dtype = DType::Float32,
                             .backend = backend,
                             .priority = priority,
                             .fn = later_kernel});
    }
    gradient_registry().add(
        "DagradTestLater",
        [](Graph&, const Node&, const std::vector<Output>& dy) -> std::vector<std::optional<Output>> {
          return {dy[0]};
        });
    return true;
  }();
  (void)registered;
  work_log() = WorkLog{};
}

Output later(Graph& g, Output x, const char* name) { return g.output(g.add_node("DagradTestLater", {x}, {}, name).id); }

Tensor values() { return Tensor::from_values<float>(Shape{3}, {1.5f, -2.0f, 4.0f}); }

std::vector<std::string> names(const Graph& g, const PlanInfo& plan) {
  std::vector<std::string> out;
  for (int id : plan.order) out.push_back(g.node(id).name);
  return out;
}

}  // namespace

TEST_CASE("an op that starts early runs right after its inputs, and its work ends before it is read",
          "[session][deferred]") {
  register_later_op();
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
  const Output a = ops::neg(g, x, "a");
  const Output b = ops::neg(g, a, "b");
  const Output c = ops::neg(g, b, "c");
  const Output l = later(g, x, "later");  // added after c, run before a
  const Output d = ops::sub(g, l, c, "d");
  Session s(g);
  const FeedMap feeds{{x, values()}};
  CHECK(names(g, s.plan_info(feeds, {d})) == std::vector<std::string>{"later", "a", "b", "c", "d"});
  const std::vector<Tensor> got = s.run(feeds, {l, d});
  for (int i = 0; i < 3; ++i) {
    CHECK(got[0].data<float>()[i] == values().data<float>()[i]);
    CHECK(got[1].data<float>()[i] == 2 * values().data<float>()[i]);  // x - (-x): read after the copy
  }
  // Polled after later, a and b: done on the third poll, before c; no wait needed.
  CHECK(work_log().started == 1);
  CHECK(work_log().polls == 3);
  CHECK(work_log().waits == 0);
  CHECK(work_log().finished == 1);
}

TEST_CASE("deferred work is waited for by its first reader, and by the run's end where nothing reads it",
          "[session][deferred]") {
  register_later_op();
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
  const Output read_at_once = ops::neg(g, later(g, x, "first"), "read_at_once");
  const Output unread = later(g, x, "second");
  Session s(g);
  const std::vector<Tensor> got = s.run({{x, values()}}, {read_at_once, unread});
  for (int i = 0; i < 3; ++i) {
    CHECK(got[0].data<float>()[i] == -values().data<float>()[i]);
    CHECK(got[1].data<float>()[i] == values().data<float>()[i]);
  }
  CHECK(work_log().started == 2);
  CHECK(work_log().waits == 2);  // read_at_once's, and the run's end for second's
  CHECK(work_log().finished == 2);
}

TEST_CASE("an eager call finishes deferred work before it returns", "[session][deferred]") {
  register_later_op();
  const Tensor y = run_op("DagradTestLater", {values()}, {})[0];
  for (int i = 0; i < 3; ++i) CHECK(y.data<float>()[i] == values().data<float>()[i]);
  CHECK(work_log().waits == 1);
  CHECK(work_log().finished == 1);
}

TEST_CASE("deferred work in flight is finished after another node's error, and its own error names its node",
          "[session][deferred]") {
  register_later_op();
  {
    Graph g;
    const Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
    const Output unfed = ops::placeholder(g, DType::Float32, Shape{3}, "unfed");
    later(g, x, "in_flight");
    const Output fails = ops::add(g, unfed, x, "fails");
    Session s(g);
    const std::string error = error_of([&] { s.run({{x, values()}}, {fails, g.output(g.find("in_flight")->id)}); });
    CHECK_THAT(error, Contains("unfed"));
    CHECK(work_log().finished == 1);  // not left running past the run
  }
  work_log() = WorkLog{};
  work_log().fail_wait = true;
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
  const Output read = ops::neg(g, later(g, x, "waited_for"), "read");
  Session s(g);
  CHECK_THAT(error_of([&] {
               s.run({{x, values()}}, {read});
             }),
             Contains("the planted failure of a wait") && Contains("waited_for"));
}

TEST_CASE("a profile counts deferred work's waits in its node's time, not as calls", "[session][deferred][profile]") {
  register_later_op();
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
  const Output read = ops::neg(g, later(g, x, "later"), "read");
  Session s(g, {.profile = true});
  RunStats stats;
  s.run({{x, values()}}, {read}, {}, &stats);
  int kernel_calls = 0, deferred = 0;
  for (const NodeTiming& n : stats.profile.nodes) {
    if (n.name != "later") continue;
    (n.deferred ? deferred : kernel_calls) += 1;
    CHECK(n.duration_us >= 0);
  }
  CHECK(kernel_calls == 1);
  CHECK(deferred == 1);  // the wait before read
  Profiler profiler;
  profiler.add(stats.profile);
  const auto ops = profiler.by_op();
  const auto it = std::find_if(ops.begin(), ops.end(), [](const auto& t) { return t.op == "DagradTestLater"; });
  REQUIRE(it != ops.end());
  CHECK(it->calls == 1);
}

TEST_CASE("an early node that waits on an update a rewrite moved runs after the fused node", "[session][deferred]") {
  register_later_op();
  Graph g;
  testing::HandAdam adam(g, values());
  const Output w1 = adam.variable("w1"), m1 = adam.variable("m1"), v1 = adam.variable("v1");
  const Output w2 = adam.variable("w2"), m2 = adam.variable("m2"), v2 = adam.variable("v2");
  const Node& init = adam.vars.initializer(g);
  const Node& u1 = adam.update(w1, m1, v1, "u1");
  const Node& u2 = adam.update(w2, m2, v2, "u2");  // the two run as one _GroupedApplyAdam in u2's place
  const Node& early = g.add_node("DagradTestLater", {adam.grad}, {}, "later", {u1.id});
  const Node& step = ops::group(g, {&u1, &u2}, "step");
  Session s(g);
  s.run({}, {}, {&init});
  const std::vector<std::string> order = names(g, s.plan_info({}, {g.output(early.id)}, {&step}));
  const auto at = [&](const char* name) { return std::find(order.begin(), order.end(), name) - order.begin(); };
  CHECK(at("u1") == static_cast<long>(order.size()));  // moved: does not run in its own place
  CHECK(at("later") == at("u2") + 1);                  // waits for u1's update, done by the fused node
  s.run({}, {g.output(early.id)}, {&step});
}
