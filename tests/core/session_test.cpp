// Session plans and runs: buffers freed after their last reader, deep graphs, feeds,
// placeholders, variables and control dependencies.
#include <catch2/catch.hpp>

#include <algorithm>

#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using dagrad::testing::error_of;

TEST_CASE("a buffer is released after its last reader", "[session]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{4}, "x");
  Output a = ops::neg(g, x, "a");
  Output b = ops::neg(g, a, "b");
  Output c = ops::add(g, a, b, "c");  // a's last reader is c, not b
  Output d = ops::neg(g, c, "d");
  Session s(g);
  const FeedMap feeds{{x, Tensor::zeros(DType::Float32, Shape{4})}};
  PlanInfo plan = s.plan_info(feeds, {d});
  std::vector<std::string> order;
  for (int id : plan.order) order.push_back(g.node(id).name);
  CHECK(order == std::vector<std::string>{"a", "b", "c", "d"});  // the fed placeholder does not run
  auto released = [&](std::size_t step) {
    std::vector<std::string> names;
    for (const Output& o : plan.released_after[step]) names.push_back(o.name());
    std::sort(names.begin(), names.end());
    return names;
  };
  CHECK(released(0).empty());
  CHECK(released(1).empty());
  CHECK(released(2) == std::vector<std::string>{"a:0", "b:0"});
  CHECK(released(3) == std::vector<std::string>{"c:0"});  // the fetched d:0 is never released
}

TEST_CASE("a long chain over a large tensor keeps about two buffers alive", "[session]") {
  constexpr std::int64_t n = 1 << 18;  // 1 MiB of float32
  constexpr int depth = 40;
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{n}, "x");
  Output y = x;
  for (int i = 0; i < depth; ++i) y = ops::neg(g, y);
  Session s(g, {.backend = "reference"});
  Tensor xv = Tensor::full(DType::Float32, Shape{n}, 1.5);
  // Whatever else the process holds (the fed tensor included) is in use before the run starts.
  const std::int64_t before = host_allocator().stats().bytes_in_use;
  Tensor out = s.run({{x, xv}}, y);
  CHECK(out.data<float>()[n - 1] == 1.5f);  // an even number of negations
  const std::int64_t bytes = n * 4;
  // During the run, one step's input and output at a time; without releases it would be 40.
  const std::int64_t extra = s.last_run_stats().peak_bytes_in_use - before;
  INFO("peak bytes in use above the start: " << extra << ", tensor bytes: " << bytes);
  CHECK(extra <= 2 * bytes + 64 * 1024);
  CHECK(extra >= 2 * bytes);
  PlanInfo plan = s.plan_info({{x, xv}}, {y});
  REQUIRE(plan.order.size() == depth);
  for (std::size_t step = 1; step < plan.order.size(); ++step) {
    REQUIRE(plan.released_after[step].size() == 1);
    CHECK(plan.released_after[step][0].node == plan.order[step - 1]);
  }
}

TEST_CASE("a 100,000-node chain builds and runs without recursion", "[session]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{}, "x");
  Output y = x;
  for (int i = 0; i < 100000; ++i) y = ops::neg(g, y);
  Output z = ops::neg(g, y);
  Session s(g);
  Tensor out = s.run({{x, Tensor::scalar(2.f)}}, z);
  CHECK(out.data<float>()[0] == -2.f);
  CHECK(s.last_run_stats().nodes_run == 100001);
}

TEST_CASE("feeds are checked against the placeholder's dtype and shape", "[session]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{-1, 3}, "x");
  Output y = ops::neg(g, x, "y");
  Session s(g);
  CHECK_THAT(error_of([&] {
               s.run({{x, Tensor::zeros(DType::Float64, Shape{2, 3})}}, y);
             }),
             Equals("Cannot feed value of dtype double for Tensor 'x:0', which has dtype float"));
  CHECK_THAT(error_of([&] {
               s.run({{x, Tensor::zeros(DType::Float32, Shape{2, 4})}}, y);
             }),
             Equals("Cannot feed value of shape [2,4] for Tensor 'x:0', which has shape [?,3]"));
  CHECK_THAT(error_of([&] { s.run({}, y); }),
             Equals("You must feed a value for placeholder tensor 'x' with dtype float and shape [?,3] (node 'x')"));
  Tensor ok = s.run({{x, Tensor::full(DType::Float32, Shape{5, 3}, 2.0)}}, y);
  CHECK(ok.shape() == Shape{5, 3});
  CHECK(ok.data<float>()[14] == -2.f);
  // Feeding an intermediate output cuts the graph there.
  CHECK(s.run({{y, Tensor::full(DType::Float32, Shape{1, 3}, 7.0)}}, y).data<float>()[0] == 7.f);
}

TEST_CASE("variables: assign, read back, and the uninitialised error", "[session]") {
  Graph g;
  Output v = ops::variable(g, Shape{2}, DType::Float32, "v");
  Output read = ops::neg(g, v, "read");
  Output init = ops::assign(g, v, ops::constant(g, Tensor::from_values<float>(Shape{2}, {1.f, -4.f})), true, "init");
  Session s(g);
  try {
    s.run({}, read);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::FailedPrecondition);
    CHECK_THAT(e.what(), Contains("Attempting to use uninitialized value v"));
  }
  const Node& group = ops::group(g, {&init.op()}, "init_all");
  s.run({}, {}, {&group});  // the control dependency runs the assignment
  Tensor r = s.run({}, read);
  CHECK(r.data<float>()[0] == -1.f);
  CHECK(r.data<float>()[1] == 4.f);
  CHECK(s.variables().contains("v"));
  // Values persist across runs and an Assign replaces them.
  Output twice = ops::assign(g, v, ops::mul(g, v, ops::scalar(g, 2.0, DType::Float32)));
  s.run({}, twice);
  CHECK(s.run({}, v).data<float>()[1] == -8.f);
  CHECK_THAT(error_of([&] { ops::assign(g, v, ops::constant(g, Tensor::zeros(DType::Float32, Shape{3}))); }),
             Contains("Shapes of ref and value must match: [2] vs. [3]"));
}

TEST_CASE("control dependencies order side effects before a NoOp", "[session]") {
  Graph g;
  Output a = ops::variable(g, Shape{}, DType::Int32, "a");
  Output b = ops::variable(g, Shape{}, DType::Int32, "b");
  Output set_a = ops::assign(g, a, ops::constant(g, Tensor::scalar<std::int32_t>(3)));
  Output set_b = ops::assign(g, b, ops::constant(g, Tensor::scalar<std::int32_t>(5)));
  const Node& both = ops::group(g, {&set_a.op(), &set_b.op()});
  Session s(g);
  PlanInfo plan = s.plan_info({}, {}, {&both});
  CHECK(plan.order.back() == both.id);
  CHECK(std::count(plan.order.begin(), plan.order.end(), set_a.node) == 1);
  CHECK(std::count(plan.order.begin(), plan.order.end(), set_b.node) == 1);
  s.run({}, {}, {&both});
  auto values = s.run({}, {a, b});
  CHECK(values[0].data<std::int32_t>()[0] == 3);
  CHECK(values[1].data<std::int32_t>()[0] == 5);
}

TEST_CASE("a control edge from a fed placeholder waits for the feed, not for the placeholder to run", "[session]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2}, "x");
  Output c = ops::constant(g, Tensor::from_values<float>(Shape{2}, {1, 2}));
  // y reads only c, but must run after x: a control edge, as a graph loaded from a file may hold.
  const Node& y = g.add_node("Identity", {c}, {}, "y", {x.node});
  Session s(g);
  Tensor got = s.run({{x, Tensor::from_values<float>(Shape{2}, {5, 6})}}, g.output(y.id));
  CHECK(got.data<float>()[1] == 2.0f);
  PlanInfo plan = s.plan_info({{x, Tensor::from_values<float>(Shape{2}, {5, 6})}}, {g.output(y.id)});
  CHECK(std::count(plan.order.begin(), plan.order.end(), x.node) == 0);
  // Unfed, the placeholder runs for its control edge and says it wants a value.
  CHECK_THAT(error_of([&] { s.run({}, g.output(y.id)); }), Contains("x"));
  // A stateful node reached by a control edge still runs even when its output is fed.
  Output v = ops::variable(g, Shape{}, DType::Int32, "v");
  Output set_v = ops::assign(g, v, ops::constant(g, Tensor::scalar<std::int32_t>(4)));
  const Node& z = g.add_node("Identity", {c}, {}, "z", {set_v.node});
  s.run({{set_v, Tensor::scalar<std::int32_t>(9)}}, g.output(z.id));
  CHECK(s.run({}, v).data<std::int32_t>()[0] == 4);
}
