// The default arena used by eager ops and sessions without their own thread setting.
#include "dagrad/core/threading.hpp"

#include <memory>
#include <mutex>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

std::mutex arena_mutex;
std::unique_ptr<tbb::task_arena>& arena_slot() {
  static std::unique_ptr<tbb::task_arena> arena = std::make_unique<tbb::task_arena>();
  return arena;
}

}  // namespace

tbb::task_arena& default_arena() {
  std::lock_guard lock(arena_mutex);
  return *arena_slot();
}

void set_num_threads(int threads) {
  if (threads < 0) invalid_argument("set_num_threads: threads must be >= 0, got ", threads);
  std::lock_guard lock(arena_mutex);
  arena_slot() = threads == 0 ? std::make_unique<tbb::task_arena>() : std::make_unique<tbb::task_arena>(threads);
}

int num_threads() {
  std::lock_guard lock(arena_mutex);
  return arena_slot()->max_concurrency();
}

}  // namespace dagrad
