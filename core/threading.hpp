// Thread-count control: every CPU kernel runs inside a oneTBB arena of bounded concurrency.
#pragma once

#include <tbb/task_arena.h>

namespace dagrad {

// The arena eager ops run in; 0 threads means all cores.
tbb::task_arena& default_arena();
void set_num_threads(int threads);
int num_threads();

}  // namespace dagrad
