// Variable storage held by a session: name -> tensor, updated in place by stateful ops.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/tensor.hpp"

namespace dagrad {

// Safe to use from concurrent runs of one session (as TF's resource variables): every lookup and
// store is under a lock, so the name -> handle map never tears. The values themselves follow TF:
// updates with use_locking=false (the default of the Apply* ops) write the shared buffer without
// a lock, so two runs updating one variable at once may lose updates, and a run reading a
// variable while another updates it may see a mix. Steps with use_locking=true (Assign's default)
// hold the variable's update lock, which Session takes for them.
class VariableStore {
 public:
  VariableStore() = default;
  VariableStore(const VariableStore&) = delete;
  VariableStore& operator=(const VariableStore&) = delete;

  bool contains(std::string_view name) const;
  // The stored tensor; throws FailedPrecondition "Attempting to use uninitialized value NAME".
  // In a run's view (what kernels see) the handle stays valid until the run ends, whatever
  // other runs assign meanwhile; on the session's own store, until the variable is next set.
  Tensor& get(std::string_view name);
  // Undefined tensor when the variable has no value yet. A snapshot: safe at any time.
  Tensor get_or_undefined(std::string_view name) const;
  void set(std::string name, Tensor value);
  std::vector<std::string> names() const;

  // The store a single run hands its kernels: the same variables, with handles kept for the run.
  VariableStore run_view();
  // In a run's view, after each step: a handle the kernel replaced through get()'s reference (a
  // variable moved to the kernel's device) is stored, unless another run has set it meanwhile.
  void publish_replaced();
  // The lock that use_locking updates of the variable hold; one per name, created on first use.
  std::mutex& update_mutex(std::string_view name);

 private:
  struct ViewOf {
    VariableStore* owner;
  };
  explicit VariableStore(ViewOf view) : owner_(view.owner) {}
  VariableStore& owner() { return owner_ ? *owner_ : *this; }
  const VariableStore& owner() const { return owner_ ? *owner_ : *this; }

  // A view's copy of a handle that get() gave out: `handle` is what the kernel holds, `given`
  // what the store held then.
  struct Pin {
    std::string name;
    Tensor given;
    Tensor handle;
  };

  VariableStore* owner_ = nullptr;  // set in a run's view: the session's store
  mutable std::mutex mutex_;        // guards values_ and update_mutexes_ (or the pins, in a view)
  std::map<std::string, Tensor, std::less<>> values_;
  std::map<std::string, std::unique_ptr<std::mutex>, std::less<>> update_mutexes_;
  std::deque<Pin> pinned_;     // deque: references to its elements stay valid as it grows
  std::size_t published_ = 0;  // pins already looked at by publish_replaced
};

}  // namespace dagrad
