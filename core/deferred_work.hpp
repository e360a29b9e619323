// The deferred work of a session run's nodes (KernelContext::defer), in the order it started:
// polled after every node, so that it progresses while later nodes compute, and finished before
// the first node that reads its outputs, before the run returns, and after an error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/profile.hpp"

namespace dagrad {

class DeferredWork {
 public:
  // With a profile, each wait and the poll that completes a work are recorded as the node's
  // (NodeTiming::deferred); polls that leave it in flight count as the executor's time.
  explicit DeferredWork(RunProfile* profile) : profile_(profile) {}
  void add(const Node& node, std::string backend, KernelContext::Finish finish);
  void poll();            // every work once, without waiting
  void finish(int node);  // node's work, if any in flight, waited for
  void finish_all();      // every work, waited for
  // After an error: the work still in flight is waited for all the same (other processes may take
  // part in it; a kernel keeps its buffers alive where a wait fails), its own errors dropped.
  void finish_after_error() noexcept;

 private:
  struct Entry {
    const Node* node;
    std::string backend;
    KernelContext::Finish finish;
  };
  // Calls finish(wait) on the entries `select` picks, in order; drops those done, and one that
  // throws (its error then names its node).
  void advance(const std::function<bool(const Entry&)>& select, bool wait);

  RunProfile* profile_;
  std::vector<Entry> work_;
};

}  // namespace dagrad
