// The fold of CollectiveReduceShards, shared by every kernel of the op: micro-shard tensors
// merged one after another in shard order, so the result depends only on the shards' values and
// their order, never on how many processes computed them or how MPI would have reduced them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "dagrad/core/error.hpp"

namespace dagrad::ops {

enum class MergeOp { Add, Mul, Min, Max };

// TF's CollectiveReduce names ("Add", "Mul", "Min", "Max"); the schema allows only these.
inline MergeOp merge_op_from_name(std::string_view name) {
  constexpr struct {
    std::string_view name;
    MergeOp op;
  } kTable[] = {{"Add", MergeOp::Add}, {"Mul", MergeOp::Mul}, {"Min", MergeOp::Min}, {"Max", MergeOp::Max}};
  for (const auto& row : kTable) {
    if (row.name == name) return row.op;
  }
  invalid_argument("CollectiveReduceShards: unknown merge_op '", name, "'; expected Add, Mul, Min or Max");
}

// out[i] = merge(...merge(merge(shard 0[i], shard 1[i]), shard 2[i])..., shard count-1[i]),
// then divided by `count` when `divide` (final_op "Div"). `shard(k)` points at shard k's
// `size` elements. T is float or double: each step rounds once in T, left to right.
template <class T, class ShardFn>
void fold_shards_in_order(ShardFn shard, std::int64_t count, std::int64_t size, MergeOp op, bool divide, T* out) {
  std::copy(shard(0), shard(0) + size, out);
  for (std::int64_t k = 1; k < count; ++k) {
    const T* x = shard(k);
    switch (op) {
      case MergeOp::Add:
        for (std::int64_t i = 0; i < size; ++i) out[i] = out[i] + x[i];
        break;
      case MergeOp::Mul:
        for (std::int64_t i = 0; i < size; ++i) out[i] = out[i] * x[i];
        break;
      case MergeOp::Min:  // a NaN in either operand gives NaN, whatever the order
        for (std::int64_t i = 0; i < size; ++i) out[i] = (x[i] < out[i] || x[i] != x[i]) ? x[i] : out[i];
        break;
      case MergeOp::Max:
        for (std::int64_t i = 0; i < size; ++i) out[i] = (x[i] > out[i] || x[i] != x[i]) ? x[i] : out[i];
        break;
    }
  }
  if (divide) {
    const T n = static_cast<T>(count);
    for (std::int64_t i = 0; i < size; ++i) out[i] = out[i] / n;
  }
}

}  // namespace dagrad::ops
