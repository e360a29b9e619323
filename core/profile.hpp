// Per-node timings of session runs (SessionOptions::profile) and their summary: which ops took the
// time, the path each kernel ran and its GFLOP/s, and a Chrome trace (chrome://tracing, Perfetto).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dagrad {

// The process's steady clock in microseconds: the time base of profiles.
inline double steady_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One node's kernel call within a run; times in microseconds from the run's start.
struct NodeTiming {
  int node = -1;
  std::string name;     // the node's
  std::string op;       // its op
  std::string backend;  // its kernel's ("cpu", "reference", "cuda", ...)
  std::string path;     // the path the kernel ran where it has several (the CPU conv ops), else ""
  double start_us = 0, duration_us = 0;
  std::optional<double> flops;  // where the op models its cost
  // A later stretch of the node's deferred work (KernelContext::defer: a wait for an exchange, or
  // the poll that completed it), not a call of its own: counted in the op's time, not its calls.
  bool deferred = false;
};

// The timings of one Session::run. The nodes' intervals lie inside [0, duration_us] in execution
// order, without overlap; the rest of the run is the executor's own work (feeds, fetches, plan).
struct RunProfile {
  double start_us = 0;     // on the process's steady clock: orders runs on one timeline
  double duration_us = 0;  // the whole run
  std::vector<NodeTiming> nodes;
  double kernels_us() const;  // the nodes' sum
};

// The runs of a program added up op by op (a training step each, say), and the first
// `trace_runs` of them kept whole for the trace.
class Profiler {
 public:
  explicit Profiler(std::size_t trace_runs = 50) : trace_runs_(trace_runs) {}

  struct OpTotal {
    std::string op;
    std::int64_t calls = 0;
    double total_us = 0;
    double flops = 0;                           // of the calls whose op models its cost
    double costed_us = 0;                       // the time of those calls
    std::map<std::string, std::int64_t> paths;  // path -> calls, where the kernel reports one
    std::optional<double> gflops() const;
  };

  void add(const RunProfile& run);
  std::int64_t runs() const { return runs_; }
  std::size_t traced_runs() const { return trace_.size(); }  // the runs the trace holds
  double total_us() const { return total_us_; }              // the runs' durations
  double kernels_us() const { return kernels_us_; }          // their nodes'
  std::vector<OpTotal> by_op() const;                        // the largest total first

  // A table of the `top` ops by total time (calls, total, share of all runs, time per call,
  // GFLOP/s, paths) under one line for the runs: their count and time, and the executor's share.
  std::string report(std::size_t top = 15) const;
  // The kept runs as Chrome trace events ("X" events: one per run and one per node, with the
  // node's op, path and GFLOP/s as arguments); dagrad::Error naming the file if it cannot be written.
  void write_chrome_trace(const std::string& path) const;

 private:
  std::size_t trace_runs_;
  std::int64_t runs_ = 0;
  double total_us_ = 0, kernels_us_ = 0;
  std::map<std::string, OpTotal> ops_;
  std::vector<RunProfile> trace_;
};

}  // namespace dagrad
