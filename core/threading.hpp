// Thread-count control: every CPU kernel runs inside a oneTBB arena of bounded concurrency.
#pragma once

#include <memory>
#include <utility>

#include <tbb/task_arena.h>

namespace dagrad {

// One use of the default arena. It shares ownership of the arena, so set_num_threads may swap in
// a new arena while work still runs in this one: an arena is destroyed when its last user lets go.
class ArenaHandle {
 public:
  explicit ArenaHandle(std::shared_ptr<tbb::task_arena> arena) : arena_(std::move(arena)) {}
  template <class F>
  decltype(auto) execute(F&& work) const {
    return arena_->execute(std::forward<F>(work));
  }
  int max_concurrency() const { return arena_->max_concurrency(); }

 private:
  std::shared_ptr<tbb::task_arena> arena_;
};

// The arena of eager ops and of sessions without a thread count of their own; all cores unless
// set_num_threads says otherwise. Take it per use, `default_arena().execute(work)`, not once.
ArenaHandle default_arena();
// Safe while other threads run ops and sessions: work already running finishes in its old arena,
// work started afterwards gets the new one. 0 threads means all cores.
void set_num_threads(int threads);
int num_threads();

}  // namespace dagrad
