// The "mpi" kernel of CollectiveReduceShards, a reduce-scatter and an all-gather in which MPI
// only moves bytes: of N processes, process r owns the r-th of N near-equal slices of the
// tensor; every process sends each owner its L local shards' part of that slice (MPI_Alltoallv),
// the owner folds the group's N * L shards for its slice in global shard order
// (ops/shard_reduction.hpp), and the folded slices are gathered into every process
// (MPI_Allgatherv). MPI's own reductions are not used: their order is the implementation's and
// changes with N. Each process sends (L + 1) * n * (N - 1) / N of the tensor's n elements, a ring
// all-reduce's 2n(N - 1)/N at one shard per process, and holds at most (2L + 2) * n in buffers.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "dagrad/backends/mpi/communicator.hpp"
#include "dagrad/backends/mpi/world.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/device.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/memory_limit.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/shard_reduction.hpp"

namespace dagrad::mpi {
namespace {

constexpr int kPriority = 20;  // above the reference kernel (which serves a group of one only)

// The buffers of the last call, kept: fresh megabyte vectors each step cost their page faults
// (a millisecond a call), and a call that timed out may still be written by MPI (nonblocking
// calls use their buffers and count arrays until they complete), so they are never freed. One
// collective runs at a time in a process (MPI_THREAD_SERIALIZED), which the lock enforces for
// sessions run from several threads too.
template <class T>
struct Workspace {
  std::vector<T> send, received, folded, gathered;
  std::vector<int> begin, length, send_counts, send_offsets, receive_counts, receive_offsets;
};
std::mutex g_serialized;

// Grows `v` to at least `n` elements; its contents are overwritten by the caller.
template <class T>
T* at_least(std::vector<T>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

// The op's result on the host: `shard(k)` points at local shard k's `size` elements (host
// memory), `out` at `size` elements.
template <class T, class ShardFn>
void reduce_on_host(const KernelContext& c, ShardFn shard, std::int64_t local, std::int64_t size, T* out) {
  const World& w = world();
  const auto group_size = c.attr<std::int64_t>("group_size");
  if (group_size != w.size()) {
    invalid_argument("CollectiveReduceShards: group_size ", group_size, " but the MPI job has ", w.size(),
                     " processes");
  }
  const ops::MergeOp merge = ops::merge_op_from_name(c.attr<std::string>("merge_op"));
  const bool divide = c.attr<std::string>("final_op") == "Div";
  if (group_size == 1) {  // nothing to exchange: the fold of the local shards
    ops::fold_shards_in_order<T>(shard, local, size, merge, divide, out);
    return;
  }
  const std::int64_t send_count = checked_mul(local, size, "CollectiveReduceShards: local shard elements");
  mpi_count(send_count, "CollectiveReduceShards");  // every count and offset below is at most this
  // send and received (about L * n each), folded and gathered (at most n each)
  const std::int64_t workspace_count = checked_mul(checked_add(send_count, size, "CollectiveReduceShards workspace"), 2,
                                                   "CollectiveReduceShards workspace");
  const std::size_t bytes = checked_bytes(workspace_count, sizeof(T), "CollectiveReduceShards workspace");
  if (bytes > static_cast<std::size_t>(memory_limit())) {
    fail(Code::ResourceExhausted, "CollectiveReduceShards: a workspace of ", bytes,
         " bytes exceeds the memory limit of ", memory_limit());
  }
  const std::string node = " (CollectiveReduceShards '" + std::string(c.node_name()) + "')";
  require_unbroken("CollectiveReduceShards" + node);
  const std::lock_guard<std::mutex> lock(g_serialized);
  static auto& workspace = *new Workspace<T>;  // never freed: see Workspace
  // Slice d of the output: [begin[d], begin[d] + length[d]).
  auto& begin = workspace.begin;
  auto& length = workspace.length;
  begin.assign(static_cast<std::size_t>(group_size), 0);
  length.assign(begin.size(), 0);
  for (std::int64_t d = 0; d < group_size; ++d) {
    const std::int64_t first = d * (size / group_size) + std::min(d, size % group_size);
    begin[d] = static_cast<int>(first);
    length[d] = static_cast<int>(size / group_size + (d < size % group_size ? 1 : 0));
  }
  // To owner d: this process's shards' parts of slice d, shard after shard.
  T* send = at_least(workspace.send, send_count);
  auto& send_counts = workspace.send_counts;
  auto& send_offsets = workspace.send_offsets;
  send_counts.assign(begin.size(), 0);
  send_offsets.assign(begin.size(), 0);
  for (std::int64_t d = 0, at = 0; d < group_size; ++d) {
    send_offsets[d] = static_cast<int>(at);
    send_counts[d] = mpi_count(local * length[d], "CollectiveReduceShards");
    for (std::int64_t k = 0; k < local; ++k) {
      const T* part = shard(k) + begin[d];
      at = std::copy(part, part + length[d], send + at) - send;
    }
  }
  // From process q: its shards' parts of my slice, i.e. global shards q * local ... in order.
  const int rank = w.rank();
  const std::int64_t mine = length[rank];
  const std::int64_t received_count = checked_mul(mine, checked_mul(local, group_size), "received elements");
  mpi_count(received_count, "CollectiveReduceShards");
  T* received = at_least(workspace.received, received_count);
  auto& receive_counts = workspace.receive_counts;
  auto& receive_offsets = workspace.receive_offsets;
  receive_counts.assign(begin.size(), 0);
  receive_offsets.assign(begin.size(), 0);
  for (std::int64_t q = 0; q < group_size; ++q) {
    receive_counts[q] = static_cast<int>(local * mine);
    receive_offsets[q] = static_cast<int>(q * local * mine);
  }
  const MPI_Datatype type = mpi_type(dtype_of<T>);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ialltoallv(send, send_counts.data(), send_offsets.data(), type, received, receive_counts.data(),
                       receive_offsets.data(), type, communicator(), &request),
        "MPI_Ialltoallv" + node);
  wait_for(request, "MPI_Ialltoallv" + node);
  T* folded = at_least(workspace.folded, mine);
  if (mine > 0) {
    ops::fold_shards_in_order<T>([&](std::int64_t k) { return received + k * mine; }, local * group_size, mine, merge,
                                 divide, folded);
  }
  // Gathered into the workspace, not the output: a timed-out call must not leave MPI a tensor's memory.
  T* gathered = at_least(workspace.gathered, size);
  check(MPI_Iallgatherv(folded, static_cast<int>(mine), type, gathered, length.data(), begin.data(), type,
                        communicator(), &request),
        "MPI_Iallgatherv" + node);
  wait_for(request, "MPI_Iallgatherv" + node);
  std::copy(gathered, gathered + size, out);
}

template <class T>
void collective_reduce_shards(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  reduce_on_host<T>(
      c, [&](std::int64_t k) { return c.input(static_cast<int>(k)).template data<T>(); }, c.num_inputs(),
      out.num_elements(), out.data<T>());
}

// Shards on a device (CUDA) are staged through host memory, where the exchange and the fold in
// shard order run: MPI needs host buffers unless it is CUDA-aware, and the fold's order is
// what makes the result the same bits at any process count.
template <class T>
void collective_reduce_shards_staged(KernelContext& c) {
  std::vector<Tensor> shards;
  for (int k = 0; k < c.num_inputs(); ++k) shards.push_back(c.input(k).to(Device::cpu()));
  Tensor folded = Tensor::empty(c.output_dtype(0), c.output_shape(0));
  reduce_on_host<T>(
      c, [&](std::int64_t k) { return shards[static_cast<std::size_t>(k)].template data<T>(); }, c.num_inputs(),
      folded.num_elements(), folded.data<T>());
  Tensor& out = c.allocate_output(0);
  if (folded.nbytes() > 0) {
    device_runtime(out.device()).copy(out.raw_data(), out.device(), folded.raw_data(), Device::cpu(), folded.nbytes());
  }
}

}  // namespace

void register_kernels() {
  struct Row {
    Device::Kind device;
    DType dtype;
    KernelFn fn;
  };
  const Row rows[] = {{Device::Kind::CPU, DType::Float32, collective_reduce_shards<float>},
                      {Device::Kind::CPU, DType::Float64, collective_reduce_shards<double>},
                      {Device::Kind::CUDA, DType::Float32, collective_reduce_shards_staged<float>},
                      {Device::Kind::CUDA, DType::Float64, collective_reduce_shards_staged<double>}};
  for (const Row& row : rows) {
    kernel_registry().add({.op = "CollectiveReduceShards",
                           .device = row.device,
                           .dtype = row.dtype,
                           .backend = "mpi",
                           .priority = kPriority,
                           .fn = row.fn});
  }
}

}  // namespace dagrad::mpi
