// Session: binds a graph to a device, compiles a plan per set of feeds/fetches/targets, and
// runs it, handing each intermediate value to its last reader, whose kernel may reuse its buffer.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <tbb/task_arena.h>

#include "dagrad/core/graph.hpp"
#include "dagrad/core/log.hpp"
#include "dagrad/core/profile.hpp"
#include "dagrad/core/variables.hpp"

namespace dagrad {

struct KernelDef;

struct SessionOptions {
  Device device = Device::cpu();
  int threads = 0;      // 0: the default arena (all cores unless set_num_threads says otherwise)
  std::string backend;  // "": the fastest kernel per op; "reference": the oracle kernels
  // "": each kernel picks its path; else the path every node with a table of paths must take
  // (the CPU conv ops: `cpu::conv2d_paths`). Unknown or not applying to a call: InvalidArgument.
  std::string kernel_path;
  // Time each node's kernel and note the path it ran, into RunStats::profile (see profile.hpp;
  // Profiler adds runs up). Device sessions then wait for each node's work, so the times are the
  // device's, at the cost of overlap between nodes.
  bool profile = false;
  // Apply the registered graph rewrites (core/rewrite.hpp: fusions that keep every result's bits)
  // when compiling a plan; false runs every node as built.
  bool rewrite = true;
  // Diagnostics (core/log.hpp); unset: the DAGRAD_LOG_LEVEL environment variable's level (off when
  // it is unset). At Info, the first run of each plan writes one line per kernel node: its name,
  // op, device, dtype, the kernel's backend and the path the kernel ran (where it has a table of paths).
  std::optional<LogLevel> log_level;
  LogSink log_sink;  // receives those lines; empty: standard error
};

using FeedMap = std::map<Output, Tensor>;

// What one run did. The memory and copy counts are process-wide: runs that overlap it (of any
// session, and eager ops) count in them too.
struct RunStats {
  int nodes_run = 0;
  // The host allocator's peak while the run lasted; exact when no other run overlaps it, else the
  // peak since the oldest of the overlapping runs began.
  std::int64_t peak_bytes_in_use = 0;
  // Host allocator blocks taken from the system, and served from its cache, while the run lasted.
  // Once a plan has run with the same shapes, a run takes no fresh ones: its sizes are cached.
  std::int64_t fresh_allocations = 0;
  std::int64_t reused_allocations = 0;
  // Host -> device copies made while the run lasted (transfer_stats(), so process-wide), and of
  // them the Const values this session copied to its device: only on a Const's first use.
  std::int64_t host_to_device_copies = 0;
  std::int64_t const_uploads = 0;
  RunProfile profile;  // with SessionOptions::profile: the run's node timings, else empty
};

// The compiled schedule, exposed for tests and tools.
struct PlanInfo {
  std::vector<int> order;  // node ids in execution order
  // Per step: the values it frees, those it reads last (handed to its kernel, which may reuse
  // their buffers) and then its outputs that nothing reads.
  std::vector<std::vector<Output>> released_after;
};

// Thread safety: several threads may call run() (and plan_info) on one session at once, as with
// TF's Session::Run. Each run has its own values and statistics; the plan cache, the device
// constants and the variable store are shared under locks, and runs of cached plans proceed in
// parallel. Variables follow TF's rules for concurrent updates (see VariableStore). The graph must
// not grow while runs are in progress.
class Session {
 public:
  explicit Session(const Graph& graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs what `fetches` and `targets` need; returns the fetched values on the host. `stats`, if
  // given, receives this run's statistics (what last_run_stats() cannot promise under threads).
  std::vector<Tensor> run(const FeedMap& feeds, const std::vector<Output>& fetches,
                          const std::vector<const Node*>& targets = {}, RunStats* stats = nullptr);
  Tensor run(const FeedMap& feeds, Output fetch) { return run(feeds, std::vector<Output>{fetch}).front(); }

  VariableStore& variables() { return variables_; }
  const SessionOptions& options() const { return options_; }
  // The statistics of the run that completed last (failed runs leave them unchanged).
  RunStats last_run_stats() const;
  PlanInfo plan_info(const FeedMap& feeds, const std::vector<Output>& fetches,
                     const std::vector<const Node*>& targets = {});

 private:
  struct Plan;
  const Plan& plan_for(const FeedMap& feeds, const std::vector<Output>& fetches,
                       const std::vector<const Node*>& targets);
  std::unique_ptr<Plan> compile(const FeedMap& feeds, const std::vector<Output>& fetches,
                                const std::vector<const Node*>& targets) const;
  std::vector<Tensor> execute(const Plan& plan, const FeedMap& feeds, const std::vector<Output>& fetches,
                              VariableStore& variables, RunStats& stats);
  const Tensor& device_const(const Node& node, const KernelDef& kernel, RunStats& stats);

  const Graph* graph_;
  SessionOptions options_;
  VariableStore variables_;
  std::mutex plans_mutex_;  // guards plans_; a Plan never changes once cached
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  std::unique_ptr<tbb::task_arena> arena_;
  mutable std::mutex stats_mutex_;
  RunStats stats_;          // the last completed run's
  void* stream_ = nullptr;  // the device runtime's queue for this session (CUDA), else null
  // Device sessions: each Const node's value on the device (by node id), copied on first use.
  // A Const never changes, so a training step copies only its feeds and fetches.
  std::mutex device_consts_mutex_;  // held while a copy is made: each Const is copied once
  std::map<int, Tensor> device_consts_;
};

}  // namespace dagrad
