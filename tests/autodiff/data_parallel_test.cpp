// Data-parallel arithmetic and wiring on one process: which rows each process takes for every
// process count dividing the micro-shards, the errors for the others, variable reuse across
// micro-shard models, and minimize's merged gradients against per-shard gradients folded by hand.
#include <catch2/catch.hpp>

#include <algorithm>

#include <cstring>

#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using dagrad::testing::error_of;

TEST_CASE("every process count dividing the micro-shards covers each row of the batch once, in order",
          "[data_parallel]") {
  for (std::int64_t processes : {1, 2, 4, 8}) {
    std::int64_t next_row = 0;
    for (std::int64_t rank = 0; rank < processes; ++rank) {
      const ShardPlan p = plan_shards(64, 8, processes, rank);
      CHECK(p.shard_rows == 8);
      CHECK(p.local_shards() == 8 / processes);
      CHECK(p.first_shard() == rank * (8 / processes));
      CHECK(p.first_row() == next_row);
      next_row += p.rows();
    }
    CHECK(next_row == 64);
  }
}

TEST_CASE("a process count, rank or batch that does not split is an error naming it", "[data_parallel]") {
  CHECK_THAT(error_of([] { plan_shards(16, 4, 3, 0); }), Contains("3 processes do not divide the 4 micro-shards"));
  CHECK_THAT(error_of([] { plan_shards(16, 4, 0, 0); }), Contains("0 processes"));
  CHECK_THAT(error_of([] { plan_shards(16, 4, 2, 2); }), Contains("rank 2 is outside [0, 2)"));
  CHECK_THAT(error_of([] { plan_shards(16, 4, 2, -1); }), Contains("rank -1"));
  CHECK_THAT(error_of([] { plan_shards(10, 4, 2, 0); }), Contains("batch of 10 rows does not split into 4"));
  CHECK_THAT(error_of([] { plan_shards(16, 0, 1, 0); }), Contains("must be positive, got 0"));
}

TEST_CASE("VariableSet reuse returns the variable it holds and checks the request", "[data_parallel]") {
  Graph g;
  layers::VariableSet vars(1);
  Output w = vars.create_zeros(g, "w", Shape{2, 3});
  CHECK_THAT(error_of([&] { vars.create_zeros(g, "w", Shape{2, 3}); }), Contains("'w' already exists"));
  vars.reuse_variables(true);
  CHECK(vars.create_glorot(g, "w", Shape{2, 3}, 2, 3).node == w.node);
  CHECK(vars.all().size() == 1);
  CHECK_THAT(error_of([&] { vars.create_zeros(g, "w", Shape{3, 2}); }), Contains("reusing 'w'"));
  CHECK_THAT(error_of([&] { vars.create_zeros(g, "w", Shape{2, 3}, DType::Float32, false); }), Contains("reusing 'w'"));
}

namespace {

// A dense classifier of one micro-shard of 2 rows.
Output shard_loss(Graph& g, layers::VariableSet& vars, Output& x, Output& y) {
  x = ops::placeholder(g, DType::Float32, Shape{2, 3}, "x");
  y = ops::placeholder(g, DType::Int32, Shape{2}, "y");
  layers::Layers nn(g, vars);
  return layers::classifier_metrics(g, nn.dense(nn.dense(x, "d1", 4, true), "d2", 3), y).loss;
}

Tensor rows_of(int shard) {
  Tensor t = Tensor::zeros(DType::Float32, Shape{2, 3});
  for (int i = 0; i < 6; ++i) t.data<float>()[i] = static_cast<float>((shard * 7 + i * 3) % 11) / 5.0f - 1.0f;
  return t;
}
Tensor labels_of(int shard) { return Tensor::from_values<std::int32_t>(Shape{2}, {shard % 3, (shard + 1) % 3}); }

}  // namespace

TEST_CASE("data-parallel minimize merges each shard's own gradient in shard order, divided by the shards",
          "[data_parallel]") {
  constexpr int kShards = 4;
  // The gradients packed into one collective (the default), one per variable, or packs of up to
  // 60 bytes (d1's kernel of 48, d1's bias of 16, d2's kernel and bias of 48 + 12): the same bits.
  const auto [bytes_per_pack, collectives] = GENERATE(table<std::int64_t, int>({{0, 1}, {1, 4}, {60, 3}}));
  INFO("bytes_per_pack " << bytes_per_pack);
  // The data-parallel graph: one model per micro-shard over shared variables.
  Graph g;
  layers::VariableSet vars(3);
  vars.reuse_variables(true);
  std::vector<Output> xs(kShards), ys(kShards), losses;
  for (int k = 0; k < kShards; ++k) losses.push_back(shard_loss(g, vars, xs[k], ys[k]));
  minimize(g, ops::add_n(g, losses), vars,
           {.name = "sgd",
            .data_parallel = DataParallel{.group_size = 1, .shard_losses = losses, .bytes_per_pack = bytes_per_pack}});
  int reduce_nodes = 0;
  for (int id = 0; id < g.num_nodes(); ++id) reduce_nodes += g.node(id).op() == "CollectiveReduceShards";
  CHECK(reduce_nodes == collectives);
  const Node& init = vars.initializer(g);
  Session s(g);
  s.run({}, {}, {&init});
  FeedMap feeds;
  for (int k = 0; k < kShards; ++k) {
    feeds[xs[k]] = rows_of(k);
    feeds[ys[k]] = labels_of(k);
  }
  std::vector<Output> merged;  // what each variable's update applies
  for (const Output& v : vars.trainable()) {
    const Node* update = g.find(v.op().name + "/ApplyGradientDescent");
    REQUIRE(update != nullptr);
    REQUIRE(update->inputs.at(2).op().op() == "CollectiveReduceShards");
    merged.push_back(update->inputs.at(2));
  }
  // Packs from the last variables back, each run as soon as its gradients exist (it starts
  // early), in pack order: with several, the first is planned among the gradient nodes.
  const PlanInfo plan = s.plan_info(feeds, merged);
  std::vector<std::size_t> packs;
  std::size_t last_gradient = 0;
  for (std::size_t i = 0; i < plan.order.size(); ++i) {
    const Node& n = g.node(plan.order[i]);
    if (n.op() == "CollectiveReduceShards") packs.push_back(i);
    if (n.name.rfind("gradients", 0) == 0) last_gradient = i;
  }
  REQUIRE(static_cast<int>(packs.size()) == collectives);
  CHECK(std::is_sorted(packs.begin(), packs.end()));
  for (int p = 0; p < collectives; ++p)
    CHECK(g.node(plan.order[packs[p]]).name == "data_parallel/pack_" + std::to_string(p));
  if (collectives > 1) CHECK(packs.front() < last_gradient);
  CHECK(g.find("data_parallel/pack_0")->inputs.back().op().name.find("d2") != std::string::npos);  // the last layer's
  const std::vector<Tensor> got = s.run(feeds, merged);

  // The same model alone, its gradients taken per shard and folded here.
  Graph g1;
  layers::VariableSet vars1(3);
  Output x, y;
  const Output loss = shard_loss(g1, vars1, x, y);
  const std::vector<Output> grads = gradients(g1, {loss}, vars1.trainable());
  const Node& init1 = vars1.initializer(g1);
  Session s1(g1);
  s1.run({}, {}, {&init1});
  std::vector<std::vector<Tensor>> per_shard;
  for (int k = 0; k < kShards; ++k) per_shard.push_back(s1.run({{x, rows_of(k)}, {y, labels_of(k)}}, grads));
  for (std::size_t v = 0; v < grads.size(); ++v) {
    Tensor want = per_shard[0][v].clone();
    float* w = want.data<float>();
    for (int k = 1; k < kShards; ++k) {
      for (std::int64_t i = 0; i < want.num_elements(); ++i) w[i] = w[i] + per_shard[k][v].data<float>()[i];
    }
    for (std::int64_t i = 0; i < want.num_elements(); ++i) w[i] = w[i] / kShards;
    INFO(vars.trainable()[v].op().name);
    REQUIRE(got[v].shape() == want.shape());
    CHECK(std::memcmp(got[v].raw_data(), want.raw_data(), want.nbytes()) == 0);
    // Not vacuous: the shards' gradients differ, so mixing them up would show.
    CHECK(std::memcmp(per_shard[0][v].raw_data(), per_shard[1][v].raw_data(), want.nbytes()) != 0);
  }
}
