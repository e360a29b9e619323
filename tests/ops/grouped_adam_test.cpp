// Sessions run minimize's ApplyAdam updates as one _GroupedApplyAdam node (ops/fusions.cpp): the
// same variables, slots and powers bit for bit as the nodes one by one, step after step; an update
// whose output is fetched ends a group; the grouped kernels refuse a variable updated twice; and a
// session refuses any rewrite that would move a node past one that runs between them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/core/rewrite.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

#include "support/hand_adam.hpp"

namespace {

using namespace dagrad;

// Two dense layers (four variables, eight slots) trained with Adam.
struct DenseModel {
  Graph g;
  layers::VariableSet vars{3};
  Output x, labels, loss;
  const Node* step = nullptr;
  const Node* init = nullptr;

  explicit DenseModel(DType dtype = DType::Float32) {
    x = ops::placeholder(g, dtype, Shape{8, 6}, "x");
    labels = ops::placeholder(g, DType::Int32, Shape{8}, "labels");
    layers::Layers nn(g, vars, dtype);
    loss = layers::classifier_metrics(g, nn.dense(nn.dense(x, "d1", 5, true), "d2", 3), labels).loss;
    step = &minimize(g, loss, vars, {.name = "adam", .learning_rate = 0.01});
    init = &vars.initializer(g);
  }

  FeedMap batch(std::uint32_t seed) const {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> values(48);
    for (double& v : values) v = u(rng);
    std::vector<std::int32_t> classes(8);
    for (auto& c : classes) c = static_cast<std::int32_t>(rng() % 3);
    return {{x, Tensor::from_values<double>(Shape{8, 6}, values).cast(x.dtype())},
            {labels, Tensor::from_values<std::int32_t>(Shape{8}, classes)}};
  }
};

std::vector<std::string> ops_of_step(Session& s, const DenseModel& m, std::uint32_t seed,
                                     const std::vector<Output>& fetches = {}) {
  RunStats stats;
  s.run(m.batch(seed), fetches, {m.step}, &stats);
  std::vector<std::string> ops;
  for (const auto& node : stats.profile.nodes) ops.push_back(node.op);
  return ops;
}

long count(const std::vector<std::string>& ops, const std::string& op) {
  return std::count(ops.begin(), ops.end(), op);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("minimize's Adam updates run as one _GroupedApplyAdam pass with the bits of the nodes one by one",
          "[session][fusion][train]") {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype_name(dtype));
    DenseModel m(dtype);
    Session grouped(m.g, {.profile = true});
    Session apart(m.g, {.profile = true, .rewrite = false});
    grouped.run({}, {}, {m.init});
    apart.run({}, {}, {m.init});
    for (std::uint32_t step = 0; step < 3; ++step) {
      const auto ops = ops_of_step(grouped, m, step);
      CHECK(count(ops, "_GroupedApplyAdam") == 1);
      CHECK(count(ops, "ApplyAdam") == 0);
      CHECK(count(ops_of_step(apart, m, step), "ApplyAdam") == 4);
    }
    // Variables, slots and the two powers alike.
    const std::vector<Tensor> a = grouped.run({}, m.vars.all()), b = apart.run({}, m.vars.all());
    REQUIRE(a.size() == 14);
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(m.vars.all()[i].op().name);
      CHECK(same_bits(a[i], b[i]));
    }
  }
}

TEST_CASE("an ApplyAdam node whose output is fetched ends a group: its output is its variable, as before",
          "[session][fusion][train]") {
  DenseModel m;
  std::vector<int> updates;
  for (int id = 0; id < m.g.num_nodes(); ++id)
    if (m.g.node(id).op() == "ApplyAdam") updates.push_back(id);
  REQUIRE(updates.size() == 4);
  // The first update fetched: alone (nothing before it to group); the other three grouped. The
  // second: it ends the group of the first two, the last two form another.
  for (const auto& [fetched, lone, groups] : {std::tuple{0, 1, 1}, std::tuple{1, 0, 2}}) {
    INFO("fetching update " << fetched);
    Session grouped(m.g, {.profile = true});
    Session apart(m.g, {.rewrite = false});
    grouped.run({}, {}, {m.init});
    apart.run({}, {}, {m.init});
    const Output out = m.g.output(updates[static_cast<std::size_t>(fetched)]);
    RunStats stats;
    const Tensor value = grouped.run(m.batch(5), {out}, {m.step}, &stats)[0];
    std::vector<std::string> ops;
    for (const auto& node : stats.profile.nodes) ops.push_back(node.op);
    CHECK(count(ops, "ApplyAdam") == lone);
    CHECK(count(ops, "_GroupedApplyAdam") == groups);
    CHECK(same_bits(value, apart.run(m.batch(5), {out}, {m.step})[0]));
  }
}

TEST_CASE("_GroupedApplyAdam refuses a variable updated by two of its updates", "[train]") {
  Graph g;
  testing::HandAdam adam(g, Tensor::full(DType::Float32, Shape{3}, 0.25));
  const Output w = adam.variable("w"), m = adam.variable("m"), v = adam.variable("v");
  const Output m2 = adam.variable("m2"), v2 = adam.variable("v2");
  const Node& init = adam.vars.initializer(g);
  std::vector<Output> inputs{w, w, m, m2, v, v2};  // w in both updates
  inputs.insert(inputs.end(), adam.scalars.begin(), adam.scalars.end());
  inputs.insert(inputs.end(), {adam.grad, adam.grad});
  const Node& grouped = g.add_node("_GroupedApplyAdam", inputs, {{"N", std::int64_t{2}}}, "grouped");
  for (const char* backend : {"cpu", "reference"}) {
    INFO(backend);
    Session session(g, {.backend = backend});
    session.run({}, {}, {&init});
    CHECK_THROWS_WITH(session.run({}, {g.output(grouped.id)}),
                      Catch::Contains("_GroupedApplyAdam: variable 'w' is updated by both update 0 and 1"));
  }
}

namespace {

// A rewrite that moves the ApplyAdam named "test_first" to the one named "test_last" whatever runs
// between them (the session must refuse it where a node of the plan does).
void register_reckless_rewrite() {
  static const bool registered = [] {
    rewrite_registry().add("test_move_across", [](const Node& last, const PlanView& plan) -> std::optional<Fusion> {
      if (last.name != "test_last" || last.op() != "ApplyAdam") return std::nullopt;
      const Node* first = plan.graph().find("test_first");
      if (first == nullptr || first->op() != "ApplyAdam") return std::nullopt;
      Fusion fusion{"_GroupedApplyAdam", {}, last.attrs, {}, {first->id}};
      fusion.attrs["N"] = std::int64_t{2};
      for (std::size_t slot : {0u, 1u, 2u})
        fusion.inputs.insert(fusion.inputs.end(), {first->inputs[slot], last.inputs[slot]});
      fusion.inputs.insert(fusion.inputs.end(), last.inputs.begin() + 3, last.inputs.begin() + 9);
      fusion.inputs.insert(fusion.inputs.end(), {first->inputs[9], last.inputs[9]});
      return fusion;
    });
    return true;
  }();
  (void)registered;
}

}  // namespace

TEST_CASE("a rewrite may not move a node past one that runs between them", "[session][fusion]") {
  register_reckless_rewrite();
  Graph g;
  testing::HandAdam adam(g, Tensor::full(DType::Float32, Shape{3}, 0.25));
  const Output w1 = adam.variable("w1"), m1 = adam.variable("m1"), v1 = adam.variable("v1");
  const Output w2 = adam.variable("w2"), m2 = adam.variable("m2"), v2 = adam.variable("v2");
  const Node& init = adam.vars.initializer(g);
  const Node& first = adam.update(w1, m1, v1, "test_first");
  // Runs after the first update (node order) and reads w1: moving the update past it would change
  // what it reads.
  const Node& read = g.add_node("Identity", {w1}, {}, "read");
  const Node& last = adam.update(w2, m2, v2, "test_last", {read.id});
  const Node& step = ops::group(g, {&first, &last}, "step");
  Session fused(g, {.profile = true});
  Session apart(g, {.rewrite = false});
  fused.run({}, {}, {&init});
  apart.run({}, {}, {&init});
  RunStats stats;
  const Tensor seen = fused.run({}, {g.output(read.id)}, {&step}, &stats)[0];
  std::vector<std::string> ops;
  for (const auto& node : stats.profile.nodes) ops.push_back(node.op);
  CHECK(count(ops, "ApplyAdam") == 2);
  CHECK(count(ops, "_GroupedApplyAdam") == 0);
  CHECK(same_bits(seen, apart.run({}, {g.output(read.id)}, {&step})[0]));
}
