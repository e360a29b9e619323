// DeferredWork: the session run's bookkeeping of kernels' deferred work.
#include "dagrad/core/deferred_work.hpp"

#include "dagrad/core/error.hpp"

namespace dagrad {

void DeferredWork::add(const Node& node, std::string backend, KernelContext::Finish finish) {
  work_.push_back({&node, std::move(backend), std::move(finish)});
}

void DeferredWork::poll() {
  advance([](const Entry&) { return true; }, false);
}

void DeferredWork::finish(int node) {
  if (!work_.empty()) advance([node](const Entry& e) { return e.node->id == node; }, true);
}

void DeferredWork::finish_all() {
  advance([](const Entry&) { return true; }, true);
}

void DeferredWork::finish_after_error() noexcept {
  for (Entry& e : work_) {
    try {
      e.finish(true);
    } catch (...) {
    }
  }
  work_.clear();
}

void DeferredWork::advance(const std::function<bool(const Entry&)>& select, bool wait) {
  for (std::size_t i = 0; i < work_.size();) {
    if (!select(work_[i])) {
      ++i;
      continue;
    }
    Entry& e = work_[i];
    const double begin = profile_ ? steady_us() : 0.0;
    bool done = true;
    try {
      done = e.finish(wait);
    } catch (const Error& error) {
      const std::string name = e.node->name;
      work_.erase(work_.begin() + static_cast<std::ptrdiff_t>(i));
      throw Error(error.code(), with_node_name(error.what(), name));
    }
    if (profile_ && (wait || done)) {
      const double end = steady_us();
      profile_->nodes.push_back({.node = e.node->id,
                                 .name = e.node->name,
                                 .op = e.node->op(),
                                 .backend = e.backend,
                                 .start_us = begin - profile_->start_us,
                                 .duration_us = end - begin,
                                 .deferred = true});
    }
    if (done)
      work_.erase(work_.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ++i;
  }
}

}  // namespace dagrad
