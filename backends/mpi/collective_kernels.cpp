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
#include <functional>
#include <memory>
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

// One exchange's buffers. Exchanges in flight (a run overlaps its packs' exchanges with the
// nodes after them) each hold one from a pool; a finished exchange returns it, and later calls
// reuse it with its capacity (fresh megabyte vectors each step cost their page faults: a
// millisecond a call). A call that failed or timed out keeps its workspace for ever: MPI may still
// write it (nonblocking calls use their buffers and count arrays until they complete).
template <class T>
struct Workspace {
  std::vector<T> send, received, folded, gathered;
  std::vector<int> begin, length, send_counts, send_offsets, receive_counts, receive_offsets;
};
// Held for each MPI call and for the pools: one thread calls MPI at a time (MPI_THREAD_SERIALIZED).
std::mutex g_serialized;

template <class T>
std::vector<Workspace<T>*>& free_workspaces() {
  static auto& pool = *new std::vector<Workspace<T>*>;  // never freed: see Workspace
  return pool;
}
template <class T>
std::vector<Workspace<T>*>& abandoned_workspaces() {
  static auto& kept = *new std::vector<Workspace<T>*>;  // never freed: see Workspace
  return kept;
}
template <class T>
Workspace<T>* acquire_workspace() {
  auto& pool = free_workspaces<T>();
  if (pool.empty()) return new Workspace<T>;  // owned by the pool from its release on
  Workspace<T>* ws = pool.back();
  pool.pop_back();
  return ws;
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

// One call's exchange of the group's shards, each `size` elements: started by the kernel, then
// advanced by its finish (KernelContext::defer) through MPI's two calls in turn, the fold in
// shard order between them; at the end `write` takes the result (a pointer into the workspace).
template <class T>
class Exchange {
 public:
  using Write = std::function<void(const T*)>;

  // `copy_part(k, first, count, to)` copies elements [first, first + count) of local shard k to
  // `to`. With a group of one there is nothing to exchange: the fold is written at once.
  template <class CopyPartFn>
  Exchange(const KernelContext& c, std::string node, CopyPartFn copy_part, std::int64_t local, std::int64_t size,
           Write write)
      : node_name_(c.node_name()), node_(std::move(node)), local_(local), size_(size), write_(std::move(write)) {
    const World& w = world();
    group_size_ = c.attr<std::int64_t>("group_size");
    if (group_size_ != w.size()) {
      invalid_argument("CollectiveReduceShards: group_size ", group_size_, " but the MPI job has ", w.size(),
                       " processes");
    }
    merge_ = ops::merge_op_from_name(c.attr<std::string>("merge_op"));
    divide_ = c.attr<std::string>("final_op") == "Div";
    const std::lock_guard<std::mutex> lock(g_serialized);
    ws_ = acquire_workspace<T>();
    try {
      start(copy_part);
    } catch (...) {
      if (ws_ != nullptr && request_ == MPI_REQUEST_NULL) free_workspaces<T>().push_back(ws_);  // MPI never saw it
      throw;
    }
  }

  // An exchange dropped before it completed (its wait failed or timed out) leaves its workspace
  // to MPI, which may still write it: kept, and reachable, for the rest of the process.
  ~Exchange() {
    if (ws_ == nullptr) return;
    const std::lock_guard<std::mutex> lock(g_serialized);
    abandoned_workspaces<T>().push_back(ws_);
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Progress: whether the exchange is done (its result written); with `wait`, once it is.
  bool advance(bool wait) {
    const std::lock_guard<std::mutex> lock(g_serialized);
    while (phase_ != Phase::Done) {
      const std::string call = (phase_ == Phase::Scatter ? "MPI_Ialltoallv" : "MPI_Iallgatherv") + node_;
      if (wait) {
        wait_for(request_, call);
      } else {
        require_unbroken("CollectiveReduceShards" + node_);
        int done = 0;
        check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), call);
        if (!done) return false;
      }
      if (phase_ == Phase::Scatter) {
        gather();
      } else {
        finish_locked();
      }
    }
    return true;
  }

 private:
  enum class Phase { Scatter, Gather, Done };
  static MPI_Datatype type() { return mpi_type(dtype_of<T>); }

  // The shards into the send buffer in the owners' order, and the first MPI call posted.
  template <class CopyPartFn>
  void start(CopyPartFn copy_part) {
    const std::int64_t local = local_, size = size_;
    T* gathered = at_least(ws_->gathered, size);
    const std::int64_t send_count = checked_mul(local, size, "CollectiveReduceShards: local shard elements");
    T* send = at_least(ws_->send, send_count);
    if (group_size_ == 1) {  // the fold of the local shards, laid end to end
      for (std::int64_t k = 0; k < local; ++k) copy_part(k, 0, size, send + k * size);
      ops::fold_shards_in_order<T>([&](std::int64_t k) { return send + k * size; }, local, size, merge_, divide_,
                                   gathered);
      finish_locked();
      return;
    }
    mpi_count(send_count, "CollectiveReduceShards");  // every count and offset below is at most this
    // Slice d of the tensors: [begin[d], begin[d] + length[d]).
    auto& begin = zeros(ws_->begin, group_size_);
    auto& length = zeros(ws_->length, group_size_);
    for (std::int64_t d = 0; d < group_size_; ++d) {
      begin[d] = static_cast<int>(d * (size / group_size_) + std::min(d, size % group_size_));
      length[d] = static_cast<int>(size / group_size_ + (d < size % group_size_ ? 1 : 0));
    }
    // To owner d: this process's shards' parts of slice d, shard after shard.
    auto& send_counts = zeros(ws_->send_counts, group_size_);
    auto& send_offsets = zeros(ws_->send_offsets, group_size_);
    for (std::int64_t d = 0, at = 0; d < group_size_; ++d) {
      send_offsets[d] = static_cast<int>(at);
      send_counts[d] = mpi_count(local * length[d], "CollectiveReduceShards");
      for (std::int64_t k = 0; k < local; ++k) {
        copy_part(k, begin[d], length[d], send + at);
        at += length[d];
      }
    }
    // From process q: its shards' parts of my slice, i.e. global shards q * local ... in order.
    mine_ = length[world().rank()];
    const std::int64_t received_count = checked_mul(mine_, checked_mul(local, group_size_), "received elements");
    mpi_count(received_count, "CollectiveReduceShards");
    T* received = at_least(ws_->received, received_count);
    auto& receive_counts = zeros(ws_->receive_counts, group_size_);
    auto& receive_offsets = zeros(ws_->receive_offsets, group_size_);
    for (std::int64_t q = 0; q < group_size_; ++q) {
      receive_counts[q] = static_cast<int>(local * mine_);
      receive_offsets[q] = static_cast<int>(q * local * mine_);
    }
    comm_ = communicator_for(node_name_);
    check(MPI_Ialltoallv(send, send_counts.data(), send_offsets.data(), type(), received, receive_counts.data(),
                         receive_offsets.data(), type(), comm_, &request_),
          "MPI_Ialltoallv" + node_);
    phase_ = Phase::Scatter;
  }

  // My slice folded in shard order, then gathered into every process (into the workspace, not an
  // output: a timed-out call must not leave MPI a tensor's memory).
  void gather() {
    T* folded = at_least(ws_->folded, mine_);
    const T* received = ws_->received.data();
    if (mine_ > 0) {
      ops::fold_shards_in_order<T>([&](std::int64_t k) { return received + k * mine_; }, local_ * group_size_, mine_,
                                   merge_, divide_, folded);
    }
    check(MPI_Iallgatherv(folded, static_cast<int>(mine_), type(), ws_->gathered.data(), ws_->length.data(),
                          ws_->begin.data(), type(), comm_, &request_),
          "MPI_Iallgatherv" + node_);
    phase_ = Phase::Gather;
  }
  void finish_locked() {
    write_(ws_->gathered.data());
    free_workspaces<T>().push_back(ws_);  // only now: MPI is done with it
    ws_ = nullptr;
    phase_ = Phase::Done;
  }

  std::string node_name_, node_;  // the node's name; " (CollectiveReduceShards 'name')" for errors
  std::int64_t local_, size_, group_size_ = 1, mine_ = 0;
  ops::MergeOp merge_{};
  bool divide_ = false;
  Write write_;
  Workspace<T>* ws_ = nullptr;
  MPI_Comm comm_ = MPI_COMM_NULL;  // this node's own (communicator_for)
  MPI_Request request_ = MPI_REQUEST_NULL;
  Phase phase_ = Phase::Done;
};

// The whole call: `input(i)` points at input i's elements in host memory (shard i / K, tensor
// i % K), read before this returns; `write(values)` stores the outputs from host memory, the
// elements of output t at values + offset[t]. Returns the exchange, done or in flight.
template <class T, class InputFn>
std::shared_ptr<Exchange<T>> start_collective(KernelContext& c, InputFn input,
                                              std::function<void(const std::vector<std::int64_t>&, const T*)> write) {
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
  return std::make_shared<Exchange<T>>(c, node, copy_part, local, size,
                                       [offset, write = std::move(write)](const T* values) { write(offset, values); });
}

// The exchange overlaps the nodes that run after this one (CollectiveReduceShards starts early):
// its outputs are allocated now and written when it completes.
template <class T>
void collective_reduce_shards(KernelContext& c) {
  std::vector<Tensor> outputs;
  for (int t = 0; t < c.num_outputs(); ++t) outputs.push_back(c.allocate_output(t));
  auto exchange = start_collective<T>(
      c, [&](int i) { return c.input(i).template data<T>(); },
      [outputs](const std::vector<std::int64_t>& offset, const T* values) mutable {
        for (std::size_t t = 0; t < outputs.size(); ++t)
          std::copy(values + offset[t], values + offset[t + 1], outputs[t].template data<T>());
      });
  c.defer([exchange](bool wait) { return exchange->advance(wait); });
}

// Shards on a device (CUDA) are staged through host memory, where the exchange and the fold in
// shard order run: MPI needs host buffers unless it is CUDA-aware, and the fold's order is
// what makes the result the same bits at any process count. Finished before the kernel returns.
template <class T>
void collective_reduce_shards_staged(KernelContext& c) {
  std::vector<Tensor> on_host;
  for (int i = 0; i < c.num_inputs(); ++i) on_host.push_back(c.input(i).to(Device::cpu()));
  std::vector<Tensor> outputs;
  for (int t = 0; t < c.num_outputs(); ++t) outputs.push_back(c.allocate_output(t));
  start_collective<T>(
      c, [&](int i) { return on_host[static_cast<std::size_t>(i)].template data<T>(); },
      [&outputs](const std::vector<std::int64_t>& offset, const T* values) {
        for (std::size_t t = 0; t < outputs.size(); ++t) {
          Tensor& out = outputs[t];
          if (out.nbytes() > 0)
            device_runtime(out.device())
                .copy(out.raw_data(), out.device(), values + offset[t], Device::cpu(), out.nbytes());
        }
      })
      ->advance(true);
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
