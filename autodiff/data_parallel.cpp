// plan_shards: which micro-shards and rows of a global batch each process takes.
#include "dagrad/autodiff/data_parallel.hpp"

#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad {

ShardPlan plan_shards(std::int64_t global_batch, std::int64_t shards, std::int64_t processes, std::int64_t rank) {
  if (shards < 1) invalid_argument("data parallel: the number of micro-shards must be positive, got ", shards);
  if (processes < 1 || shards % processes != 0) {
    invalid_argument("data parallel: ", processes, " processes do not divide the ", shards,
                     " micro-shards of a batch; use a process count that divides ", shards);
  }
  if (rank < 0 || rank >= processes) {
    invalid_argument("data parallel: rank ", rank, " is outside [0, ", processes, ")");
  }
  if (global_batch < 1 || global_batch % shards != 0) {
    invalid_argument("data parallel: the global batch of ", global_batch, " rows does not split into ", shards,
                     " micro-shards of equal size");
  }
  ShardPlan plan{.shards = shards, .processes = processes, .rank = rank, .shard_rows = global_batch / shards};
  checked_mul(plan.first_shard(), plan.shard_rows, "first row");  // within global_batch, but say so
  return plan;
}

}  // namespace dagrad
