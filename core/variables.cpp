// Variable storage: lookups under a lock, and run views that keep handed-out handles alive.
#include "dagrad/core/variables.hpp"

#include <utility>

namespace dagrad {

bool VariableStore::contains(std::string_view name) const {
  const VariableStore& store = owner();
  std::lock_guard lock(store.mutex_);
  return store.values_.count(name) != 0;
}

Tensor& VariableStore::get(std::string_view name) {
  VariableStore& store = owner();
  Tensor value;
  {
    std::lock_guard lock(store.mutex_);
    auto it = store.values_.find(name);
    if (it == store.values_.end() || !it->second.defined()) {
      fail(Code::FailedPrecondition, "Attempting to use uninitialized value ", name);
    }
    if (!owner_) return it->second;
    value = it->second;
  }
  // A view hands out its own copy of the handle: it shares the buffer, so in-place updates reach
  // the variable, and another run's set() cannot free or rewrite it under this run's kernel.
  std::lock_guard lock(mutex_);
  return pinned_.emplace_back(Pin{std::string(name), value, value}).handle;
}

void VariableStore::publish_replaced() {
  std::lock_guard lock(mutex_);
  for (; published_ < pinned_.size(); ++published_) {
    const Pin& pin = pinned_[published_];
    const bool replaced = !pin.handle.shares_buffer_with(pin.given) || pin.handle.dtype() != pin.given.dtype() ||
                          pin.handle.shape() != pin.given.shape();
    if (!replaced || owner_ == nullptr) continue;
    std::lock_guard store_lock(owner_->mutex_);
    auto it = owner_->values_.find(pin.name);
    if (it != owner_->values_.end() && it->second.shares_buffer_with(pin.given)) it->second = pin.handle;
  }
}

Tensor VariableStore::get_or_undefined(std::string_view name) const {
  const VariableStore& store = owner();
  std::lock_guard lock(store.mutex_);
  auto it = store.values_.find(name);
  return it == store.values_.end() ? Tensor() : it->second;
}

void VariableStore::set(std::string name, Tensor value) {
  VariableStore& store = owner();
  Tensor old;
  {
    std::lock_guard lock(store.mutex_);
    Tensor& slot = store.values_[std::move(name)];
    old = std::exchange(slot, std::move(value));
  }
  // The old buffer (if this was its last handle) goes back to the allocator outside the lock.
}

std::vector<std::string> VariableStore::names() const {
  const VariableStore& store = owner();
  std::lock_guard lock(store.mutex_);
  std::vector<std::string> names;
  for (const auto& [name, value] : store.values_) names.push_back(name);
  return names;
}

VariableStore VariableStore::run_view() { return VariableStore(ViewOf{&owner()}); }

std::mutex& VariableStore::update_mutex(std::string_view name) {
  VariableStore& store = owner();
  std::lock_guard lock(store.mutex_);
  auto it = store.update_mutexes_.find(name);
  if (it == store.update_mutexes_.end()) {
    it = store.update_mutexes_.emplace(std::string(name), std::make_unique<std::mutex>()).first;
  }
  return *it->second;
}

}  // namespace dagrad
