// Data-parallel training's arithmetic and options: a global batch cut into a fixed number of
// micro-shards whatever the number of processes, and which shards and rows each process takes.
// The shards' gradients are summed in shard order (CollectiveReduceShards), so 1, 2 or 4
// processes training on the same global batches end with the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad {

// Process `rank` of `processes` takes the micro-shards [first_shard, first_shard + local_shards)
// of each global batch, i.e. its rows [first_row, first_row + rows).
struct ShardPlan {
  std::int64_t shards = 1;      // micro-shards per global batch
  std::int64_t processes = 1;   // divides `shards`
  std::int64_t rank = 0;        // in [0, processes)
  std::int64_t shard_rows = 1;  // rows of one micro-shard: global batch / shards

  std::int64_t local_shards() const { return shards / processes; }
  std::int64_t first_shard() const { return rank * local_shards(); }
  std::int64_t rows() const { return local_shards() * shard_rows; }
  std::int64_t first_row() const { return first_shard() * shard_rows; }
};

// Throws InvalidArgument naming the value when `shards` is not positive, `processes` does not
// divide it, `rank` is outside [0, processes) or `shards` does not divide `global_batch`.
ShardPlan plan_shards(std::int64_t global_batch, std::int64_t shards, std::int64_t processes, std::int64_t rank);

// minimize()'s data-parallel mode: the gradients of each micro-shard loss are taken separately
// and merged across the group's processes by CollectiveReduceShards (sum in global shard order,
// divided by the group's shard count), then the optimiser applies them.
struct DataParallel {
  std::int64_t group_size = 1;  // processes taking part
  // This process's micro-shard losses (each the mean over its shard's rows), in shard order:
  // the model built once per local shard over the same variables (VariableSet::reuse_variables).
  std::vector<Output> shard_losses;
  // The gradients are merged in packs (TF's CommunicationOptions.bytes_per_pack): consecutive
  // variables, from the last back, up to this many bytes in one exchange (a larger variable
  // alone); 0 puts them all in one. Each exchange costs a latency, which fusing pays once; but a
  // pack's exchange starts only once all its gradients are formed, and runs while the session
  // forms the others (the last layers' gradients come first), so smaller packs overlap more of
  // the exchanges with the backward pass. The bits are the same whatever the packing.
  std::int64_t bytes_per_pack = 0;
};

}  // namespace dagrad
