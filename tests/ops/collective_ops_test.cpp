// CollectiveReduceShards in a group of one process (the reference kernel; tests/mpi runs groups
// of several): the fold order, Div, the shape check, and a group that needs MPI.
#include <catch2/catch.hpp>

#include <cstring>

#include <dagrad/dagrad.hpp>
#include <dagrad/ops/collective_ops.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using dagrad::testing::error_of;

namespace {

Tensor reduce(const std::vector<float>& shard_values, const std::string& merge, const std::string& final_op) {
  std::vector<Tensor> shards;
  for (float v : shard_values) shards.push_back(Tensor::from_values<float>(Shape{1}, {v}));
  return run_op("CollectiveReduceShards", shards,
                {{"group_size", std::int64_t{1}}, {"merge_op", merge}, {"final_op", final_op}})
      .front();
}

}  // namespace

TEST_CASE("CollectiveReduceShards folds the shards left to right in float", "[ops][collective]") {
  // (1e8 + 1) - 1e8 is 0 in float (1e8 + 1 rounds to 1e8); any other order gives 1.
  CHECK(reduce({1e8f, 1.0f, -1e8f}, "Add", "Id").data<float>()[0] == 0.0f);
  CHECK(reduce({1e8f, -1e8f, 1.0f}, "Add", "Id").data<float>()[0] == 1.0f);
  // Div divides the sum by the number of shards.
  CHECK(reduce({1.0f, 2.0f, 3.0f, 6.0f}, "Add", "Div").data<float>()[0] == 3.0f);
  CHECK(reduce({2.0f, -3.0f, 4.0f}, "Mul", "Id").data<float>()[0] == -24.0f);
  CHECK(reduce({2.0f, -3.0f, 4.0f}, "Min", "Id").data<float>()[0] == -3.0f);
  CHECK(reduce({2.0f, -3.0f, 4.0f}, "Max", "Id").data<float>()[0] == 4.0f);
  CHECK(std::isnan(reduce({2.0f, std::nanf(""), 4.0f}, "Max", "Id").data<float>()[0]));
}

TEST_CASE("CollectiveReduceShards refuses shards of different shapes and groups it cannot reach", "[ops][collective]") {
  Graph g;
  Output a = ops::placeholder(g, DType::Float32, Shape{2, 3}, "a");
  Output b = ops::placeholder(g, DType::Float32, Shape{3, 2}, "b");
  CHECK_THAT(error_of([&] {
               ops::collective_reduce_shards(g, {a, b});
             }),
             Contains("tensor 0 of shard 1 has shape [3,2] but [2,3] in shard 0"));
  CHECK_THAT(error_of([&] { ops::collective_reduce_shards(g, {a}, {.group_size = 0}); }), Contains("group_size"));
  CHECK_THAT(error_of([&] { ops::collective_reduce_shards(g, {a}, {.merge_op = "Sum"}); }), Contains("Sum"));
  // Without a dagrad::mpi::World only the reference kernel exists, and it serves a group of one.
  const Tensor x = Tensor::zeros(DType::Float32, Shape{2});
  CHECK_THAT(error_of([&] {
               run_op("CollectiveReduceShards", {x}, {{"group_size", std::int64_t{2}}});
             }),
             Contains("group_size 2 needs the MPI backend"));
}

TEST_CASE("CollectiveReduceShards fuses tensors: each the bits of its own collective", "[ops][collective]") {
  // Two shards of three tensors (a matrix, a vector, a scalar), as minimize fuses gradients.
  std::vector<std::vector<Tensor>> shards;
  for (int k = 0; k < 2; ++k) {
    shards.push_back({Tensor::from_values<float>(Shape{2, 2}, {1e8f * (k ? -1 : 1), 1.0f + k, 3.5f, -2.0f * k}),
                      Tensor::from_values<float>(Shape{3}, {0.25f, 1e-8f * k, 7.0f}),
                      Tensor::from_values<float>(Shape{}, {3.0f + k})});
  }
  std::vector<Tensor> inputs;
  for (const auto& shard : shards) inputs.insert(inputs.end(), shard.begin(), shard.end());
  const AttrMap attrs{{"group_size", std::int64_t{1}}, {"final_op", std::string("Div")}};
  AttrMap fused_attrs = attrs;
  fused_attrs["num_tensors"] = std::int64_t{3};
  const std::vector<Tensor> fused = run_op("CollectiveReduceShards", inputs, fused_attrs);
  REQUIRE(fused.size() == 3);
  for (std::size_t t = 0; t < 3; ++t) {
    const Tensor alone = run_op("CollectiveReduceShards", {shards[0][t], shards[1][t]}, attrs).front();
    CHECK(fused[t].shape() == shards[0][t].shape());
    CHECK(std::memcmp(fused[t].raw_data(), alone.raw_data(), alone.nbytes()) == 0);
  }
  // The graph builder takes the shards as lists and gives one output per tensor.
  Graph g;
  std::vector<std::vector<Output>> outputs(2);
  for (int k = 0; k < 2; ++k) {
    for (const Tensor& t : shards[k]) outputs[k].push_back(ops::constant(g, t));
  }
  const std::vector<Output> merged = ops::collective_reduce_shards(g, outputs, {.final_op = "Div"});
  REQUIRE(merged.size() == 3);
  const std::vector<Tensor> ran = Session(g).run({}, merged);
  for (std::size_t t = 0; t < 3; ++t)
    CHECK(std::memcmp(ran[t].raw_data(), fused[t].raw_data(), fused[t].nbytes()) == 0);
}

TEST_CASE("CollectiveReduceShards refuses shards that do not split into its tensors", "[ops][collective]") {
  const Tensor x = Tensor::zeros(DType::Float32, Shape{2});
  const auto run = [&](std::vector<Tensor> inputs, std::int64_t tensors) {
    return error_of([&] {
      run_op("CollectiveReduceShards", std::move(inputs), {{"group_size", std::int64_t{1}}, {"num_tensors", tensors}});
    });
  };
  CHECK_THAT(run({x, x, x}, 2), Contains("3 inputs do not make whole shards of num_tensors=2 tensors"));
  CHECK_THAT(run({x}, 0), Contains("num_tensors"));
  CHECK_THAT(run({x}, std::int64_t{1} << 40), Contains("a list has 0 to 65536"));
  Graph g;
  Output a = ops::placeholder(g, DType::Float32, Shape{2}, "a");
  CHECK_THAT(error_of([&] {
               ops::collective_reduce_shards(g, std::vector<std::vector<Output>>{{a, a}, {a}});
             }),
             Contains("a shard has 1 tensors, the first 2"));
}
