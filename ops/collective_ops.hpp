// CollectiveReduceShards: the all-reduce of data-parallel training, over micro-shards in a fixed
// order (schema in collective_ops.cpp; kernels: the reference's for a group of one, backends/mpi
// across processes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad::ops {

struct CollectiveReduceShardsAttrs {
  std::int64_t group_size = 1;   // processes taking part (TF's group_size)
  std::string merge_op = "Add";  // TF's names: Add, Mul, Min, Max
  std::string final_op = "Id";   // Id, or Div: divided by the number of shards of the whole group
  std::string_view name = {};
};

// `shards`: this process's micro-shard tensors (one shape and dtype), in shard order. Every process
// of the group gets merge_op over all group_size * shards.size() of them, in the global shard order.
Output collective_reduce_shards(Graph& g, std::vector<Output> shards, const CollectiveReduceShardsAttrs& attrs = {});

// Several tensors in one exchange: `shards[k]` holds shard k's tensors (the same count and
// shapes in every shard); returns each tensor merged over the group's shards, as above.
std::vector<Output> collective_reduce_shards(Graph& g, const std::vector<std::vector<Output>>& shards,
                                             const CollectiveReduceShardsAttrs& attrs = {});

}  // namespace dagrad::ops
