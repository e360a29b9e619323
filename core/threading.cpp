// The default arena used by eager ops and sessions without their own thread setting.
#include "dagrad/core/threading.hpp"

#include <mutex>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

// Initialised at once, so that threads sharing an arena never race on its lazy initialisation.
std::shared_ptr<tbb::task_arena> make_arena(int threads) {
  auto arena = threads == 0 ? std::make_shared<tbb::task_arena>() : std::make_shared<tbb::task_arena>(threads);
  arena->initialize();
  return arena;
}

struct DefaultArena {
  std::mutex mutex;
  std::shared_ptr<tbb::task_arena> arena = make_arena(0);
};

DefaultArena& current() {
  // Never destroyed: eager ops may run from other static destructors at exit.
  static auto* state = new DefaultArena();
  return *state;
}

}  // namespace

ArenaHandle default_arena() {
  DefaultArena& state = current();
  std::lock_guard lock(state.mutex);
  return ArenaHandle(state.arena);
}

void set_num_threads(int threads) {
  if (threads < 0) invalid_argument("set_num_threads: threads must be >= 0, got ", threads);
  auto arena = make_arena(threads);  // outside the lock: users of the old arena keep running
  DefaultArena& state = current();
  std::shared_ptr<tbb::task_arena> old;
  {
    std::lock_guard lock(state.mutex);
    old = std::exchange(state.arena, std::move(arena));
  }
  // `old` is released here, outside the lock; the last handle still using it destroys it.
}

int num_threads() { return default_arena().max_concurrency(); }

}  // namespace dagrad
