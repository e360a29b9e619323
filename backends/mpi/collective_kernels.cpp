// The "mpi" kernels of CollectiveReduceShards, a reduce-scatter and an all-gather in which MPI
// only moves bytes. Each process gives L local shards of K tensors (the gradients fused into one
// collective), laid end to end into n elements per shard. Of N processes, process r owns the r-th
// of N near-equal slices of those n elements; every process sends each owner its L shards' part
// of that slice (MPI_Ialltoallv), the owner folds the group's N * L shards for its slice in global
// shard order (ops/shard_reduction.hpp), and the folded slices are gathered into every process
// (MPI_Iallgatherv). MPI's own reductions are not used: their order is the implementation's and
// changes with N. Each process sends (L + 1) * n * (N - 1) / N elements, a ring all-reduce's
// 2n(N - 1)/N at one shard per process, and holds at most (2L + 2) * n in buffers. On a CUDA
// device the shards are staged through host memory.
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

template <class T>
Workspace<T>& workspace() {
  static auto& kept = *new Workspace<T>;  // never freed: see Workspace
  return kept;
}

// Grows `v` to at least `n` elements; its contents are overwritten by the caller.
template <class T>
T* at_least(std::vector<T>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

// Sets `v` to `n` zeros (a count array MPI reads until the call completes).
std::vector<int>& zeros(std::vector<int>& v, std::int64_t n) {
  v.assign(static_cast<std::size_t>(n), 0);
  return v;
}

// The fold of the group's shards, each `size` elements (`copy_part(k, first, count, to)` copies
// elements [first, first + count) of local shard k to `to`): a pointer into `ws` valid until the
// next call. `node` names the call's node in MPI errors.
template <class T, class CopyPartFn>
const T* reduce_on_host(const KernelContext& c, const std::string& node, Workspace<T>& ws, CopyPartFn copy_part,
                        std::int64_t local, std::int64_t size) {
  const World& w = world();
  const auto group_size = c.attr<std::int64_t>("group_size");
  if (group_size != w.size()) {
    invalid_argument("CollectiveReduceShards: group_size ", group_size, " but the MPI job has ", w.size(),
                     " processes");
  }
  const ops::MergeOp merge = ops::merge_op_from_name(c.attr<std::string>("merge_op"));
  const bool divide = c.attr<std::string>("final_op") == "Div";
  T* gathered = at_least(ws.gathered, size);
  const std::int64_t send_count = checked_mul(local, size, "CollectiveReduceShards: local shard elements");
  T* send = at_least(ws.send, send_count);
  if (group_size == 1) {  // nothing to exchange: the fold of the local shards, laid end to end
    for (std::int64_t k = 0; k < local; ++k) copy_part(k, 0, size, send + k * size);
    ops::fold_shards_in_order<T>([&](std::int64_t k) { return send + k * size; }, local, size, merge, divide, gathered);
    return gathered;
  }
  mpi_count(send_count, "CollectiveReduceShards");  // every count and offset below is at most this
  // Slice d of the tensors: [begin[d], begin[d] + length[d]).
  auto& begin = zeros(ws.begin, group_size);
  auto& length = zeros(ws.length, group_size);
  for (std::int64_t d = 0; d < group_size; ++d) {
    begin[d] = static_cast<int>(d * (size / group_size) + std::min(d, size % group_size));
    length[d] = static_cast<int>(size / group_size + (d < size % group_size ? 1 : 0));
  }
  // To owner d: this process's shards' parts of slice d, shard after shard.
  auto& send_counts = zeros(ws.send_counts, group_size);
  auto& send_offsets = zeros(ws.send_offsets, group_size);
  for (std::int64_t d = 0, at = 0; d < group_size; ++d) {
    send_offsets[d] = static_cast<int>(at);
    send_counts[d] = mpi_count(local * length[d], "CollectiveReduceShards");
    for (std::int64_t k = 0; k < local; ++k) {
      copy_part(k, begin[d], length[d], send + at);
      at += length[d];
    }
  }
  // From process q: its shards' parts of my slice, i.e. global shards q * local ... in order.
  const std::int64_t mine = length[w.rank()];
  const std::int64_t received_count = checked_mul(mine, checked_mul(local, group_size), "received elements");
  mpi_count(received_count, "CollectiveReduceShards");
  T* received = at_least(ws.received, received_count);
  auto& receive_counts = zeros(ws.receive_counts, group_size);
  auto& receive_offsets = zeros(ws.receive_offsets, group_size);
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
  T* folded = at_least(ws.folded, mine);
  if (mine > 0) {
    ops::fold_shards_in_order<T>([&](std::int64_t k) { return received + k * mine; }, local * group_size, mine, merge,
                                 divide, folded);
  }
  // Gathered into the workspace, not an output: a timed-out call must not leave MPI a tensor's memory.
  check(MPI_Iallgatherv(folded, static_cast<int>(mine), type, gathered, length.data(), begin.data(), type,
                        communicator(), &request),
        "MPI_Iallgatherv" + node);
  wait_for(request, "MPI_Iallgatherv" + node);
  return gathered;
}

// The whole call: `input(i)` points at input i's elements in host memory (shard i / K, tensor
// i % K); `write(t, values)` stores output t from host memory.
template <class T, class InputFn, class WriteFn>
void collective(KernelContext& c, InputFn input, WriteFn write) {
  const std::string node = " (CollectiveReduceShards '" + std::string(c.node_name()) + "')";
  require_unbroken("CollectiveReduceShards" + node);
  const int tensors = c.num_outputs();
  const std::int64_t local = c.num_inputs() / tensors;
  // Output t's elements at [offset[t], offset[t + 1]) of a shard's n = offset[tensors].
  std::vector<std::int64_t> offset(static_cast<std::size_t>(tensors) + 1, 0);
  for (int t = 0; t < tensors; ++t) {
    offset[t + 1] = checked_add(offset[t], c.output_shape(t).num_elements(), "CollectiveReduceShards elements");
  }
  const std::int64_t size = offset[tensors];
  const std::int64_t shard_elements = checked_mul(local, size, "CollectiveReduceShards: local shard elements");
  // send, received (about L * n each), folded and gathered (at most n each)
  const std::int64_t workspace_count = checked_mul(
      checked_add(shard_elements, size, "CollectiveReduceShards workspace"), 2, "CollectiveReduceShards workspace");
  const std::size_t bytes = checked_bytes(workspace_count, sizeof(T), "CollectiveReduceShards workspace");
  if (bytes > static_cast<std::size_t>(memory_limit())) {
    fail(Code::ResourceExhausted, "CollectiveReduceShards: a workspace of ", bytes,
         " bytes exceeds the memory limit of ", memory_limit());
  }
  // Elements [first, first + count) of shard k's tensors laid end to end, copied to `to` straight
  // from the inputs (the tensors are never packed on their own).
  const auto copy_part = [&](std::int64_t k, std::int64_t first, std::int64_t count, T* to) {
    auto t = std::upper_bound(offset.begin(), offset.end(), first) - offset.begin() - 1;
    for (; count > 0; ++t) {  // tensor t holds element `first` (empty tensors are passed over)
      const std::int64_t n = std::min(count, offset[t + 1] - first);
      const T* from = input(static_cast<int>(k * tensors + t)) + (first - offset[t]);
      to = std::copy(from, from + n, to);
      first += n;
      count -= n;
    }
  };
  const std::lock_guard<std::mutex> lock(g_serialized);
  const T* result = reduce_on_host<T>(c, node, workspace<T>(), copy_part, local, size);
  for (int t = 0; t < tensors; ++t) write(t, result + offset[t]);
}

template <class T>
void collective_reduce_shards(KernelContext& c) {
  collective<T>(
      c, [&](int i) { return c.input(i).template data<T>(); },
      [&](int t, const T* values) {
        Tensor& out = c.allocate_output(t);
        std::copy(values, values + out.num_elements(), out.data<T>());
      });
}

// Shards on a device (CUDA) are staged through host memory, where the exchange and the fold in
// shard order run: MPI needs host buffers unless it is CUDA-aware, and the fold's order is
// what makes the result the same bits at any process count.
template <class T>
void collective_reduce_shards_staged(KernelContext& c) {
  std::vector<Tensor> on_host;
  for (int i = 0; i < c.num_inputs(); ++i) on_host.push_back(c.input(i).to(Device::cpu()));
  collective<T>(
      c, [&](int i) { return on_host[static_cast<std::size_t>(i)].template data<T>(); },
      [&](int t, const T* values) {
        Tensor& out = c.allocate_output(t);
        if (out.nbytes() > 0)
          device_runtime(out.device()).copy(out.raw_data(), out.device(), values, Device::cpu(), out.nbytes());
      });
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
