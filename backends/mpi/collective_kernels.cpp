// The "mpi" kernel of CollectiveReduceShards, a reduce-scatter and an all-gather in which MPI
// only moves bytes: of N processes, process r owns the r-th of N near-equal slices of the
// tensor; every process sends each owner its L local shards' part of that slice (MPI_Alltoallv),
// the owner folds the group's N * L shards for its slice in global shard order
// (ops/shard_reduction.hpp), and the folded slices are gathered into every process
// (MPI_Allgatherv). MPI's own reductions are not used: their order is the implementation's and
// changes with N. Each process sends (L + 1) * n * (N - 1) / N of the tensor's n elements, a ring
// all-reduce's 2n(N - 1)/N at one shard per process, and holds about 2 * L * n in buffers.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "dagrad/backends/mpi/communicator.hpp"
#include "dagrad/backends/mpi/world.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/memory_limit.hpp"
#include "dagrad/ops/shard_reduction.hpp"

namespace dagrad::mpi {
namespace {

constexpr int kPriority = 20;  // above the reference kernel (which serves a group of one only)

// The buffers of the last call, kept: fresh megabyte vectors each step cost their page faults
// (a millisecond a call). One collective runs at a time in a process (MPI_THREAD_SERIALIZED),
// which the lock enforces for sessions run from several threads too.
template <class T>
struct Workspace {
  std::vector<T> send, received, folded;
};
std::mutex g_serialized;

// Grows `v` to at least `n` elements; its contents are overwritten by the caller.
template <class T>
T* at_least(std::vector<T>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

template <class T>
void collective_reduce_shards(KernelContext& c) {
  const World& w = world();
  const auto group_size = c.attr<std::int64_t>("group_size");
  if (group_size != w.size()) {
    invalid_argument("CollectiveReduceShards: group_size ", group_size, " but the MPI job has ", w.size(),
                     " processes");
  }
  Tensor& out = c.allocate_output(0);
  const std::int64_t size = out.num_elements();
  const std::int64_t local = c.num_inputs();
  const ops::MergeOp merge = ops::merge_op_from_name(c.attr<std::string>("merge_op"));
  const bool divide = c.attr<std::string>("final_op") == "Div";
  if (group_size == 1) {  // nothing to exchange: the fold of the local shards
    ops::fold_shards_in_order<T>([&](std::int64_t k) { return c.input(static_cast<int>(k)).template data<T>(); }, local,
                                 size, merge, divide, out.data<T>());
    return;
  }
  const std::int64_t send_count = checked_mul(local, size, "CollectiveReduceShards: local shard elements");
  mpi_count(send_count, "CollectiveReduceShards");  // every count and offset below is at most this
  const std::size_t bytes = checked_bytes(checked_mul(send_count, 2, "CollectiveReduceShards workspace"), sizeof(T),
                                          "CollectiveReduceShards workspace");
  if (bytes > static_cast<std::size_t>(memory_limit())) {
    fail(Code::ResourceExhausted, "CollectiveReduceShards: a workspace of ", bytes,
         " bytes exceeds the memory limit of ", memory_limit());
  }
  // Slice d of the output: [begin[d], begin[d] + length[d]).
  std::vector<int> begin(static_cast<std::size_t>(group_size)), length(begin.size());
  for (std::int64_t d = 0; d < group_size; ++d) {
    const std::int64_t first = d * (size / group_size) + std::min(d, size % group_size);
    begin[d] = static_cast<int>(first);
    length[d] = static_cast<int>(size / group_size + (d < size % group_size ? 1 : 0));
  }
  const std::lock_guard<std::mutex> lock(g_serialized);
  static Workspace<T> workspace;
  // To owner d: this process's shards' parts of slice d, shard after shard.
  T* send = at_least(workspace.send, send_count);
  std::vector<int> send_counts(begin.size()), send_offsets(begin.size());
  for (std::int64_t d = 0, at = 0; d < group_size; ++d) {
    send_offsets[d] = static_cast<int>(at);
    send_counts[d] = mpi_count(local * length[d], "CollectiveReduceShards");
    for (std::int64_t k = 0; k < local; ++k) {
      const T* shard = c.input(static_cast<int>(k)).template data<T>() + begin[d];
      at = std::copy(shard, shard + length[d], send + at) - send;
    }
  }
  // From process q: its shards' parts of my slice, i.e. global shards q * local ... in order.
  const int rank = w.rank();
  const std::int64_t mine = length[rank];
  const std::int64_t received_count = checked_mul(mine, checked_mul(local, group_size), "received elements");
  mpi_count(received_count, "CollectiveReduceShards");
  T* received = at_least(workspace.received, received_count);
  std::vector<int> receive_counts(begin.size()), receive_offsets(begin.size());
  for (std::int64_t q = 0; q < group_size; ++q) {
    receive_counts[q] = static_cast<int>(local * mine);
    receive_offsets[q] = static_cast<int>(q * local * mine);
  }
  const MPI_Datatype type = mpi_type(c.input(0).dtype());
  const std::string node = " (CollectiveReduceShards '" + std::string(c.node_name()) + "')";
  check(MPI_Alltoallv(send, send_counts.data(), send_offsets.data(), type, received, receive_counts.data(),
                      receive_offsets.data(), type, communicator()),
        "MPI_Alltoallv" + node);
  T* folded = at_least(workspace.folded, mine);
  if (mine > 0) {
    ops::fold_shards_in_order<T>([&](std::int64_t k) { return received + k * mine; }, local * group_size, mine, merge,
                                 divide, folded);
  }
  check(MPI_Allgatherv(folded, static_cast<int>(mine), type, out.data<T>(), length.data(), begin.data(), type,
                       communicator()),
        "MPI_Allgatherv" + node);
}

}  // namespace

void register_kernels() {
  KernelRegistry& r = kernel_registry();
  r.add({.op = "CollectiveReduceShards",
         .device = Device::Kind::CPU,
         .dtype = DType::Float32,
         .backend = "mpi",
         .priority = kPriority,
         .fn = collective_reduce_shards<float>});
  r.add({.op = "CollectiveReduceShards",
         .device = Device::Kind::CPU,
         .dtype = DType::Float64,
         .backend = "mpi",
         .priority = kPriority,
         .fn = collective_reduce_shards<double>});
}

}  // namespace dagrad::mpi
