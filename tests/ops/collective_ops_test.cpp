// CollectiveReduceShards in a group of one process (the reference kernel; tests/mpi runs groups
// of several): the fold order, Div, the shape check, and a group that needs MPI.
#include <catch2/catch.hpp>

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
             Contains("every shard must have one shape; input 0 has [2,3] and input 1 has [3,2]"));
  CHECK_THAT(error_of([&] { ops::collective_reduce_shards(g, {a}, {.group_size = 0}); }), Contains("group_size"));
  CHECK_THAT(error_of([&] { ops::collective_reduce_shards(g, {a}, {.merge_op = "Sum"}); }), Contains("Sum"));
  // Without a dagrad::mpi::World only the reference kernel exists, and it serves a group of one.
  const Tensor x = Tensor::zeros(DType::Float32, Shape{2});
  CHECK_THAT(error_of([&] {
               run_op("CollectiveReduceShards", {x}, {{"group_size", std::int64_t{2}}});
             }),
             Contains("group_size 2 needs the MPI backend"));
}
