// The exit protocol of dagrad's programs (the CLI, the examples, the benchmarks), for users'
// programs too: 0 success, 1 one "error: ..." line, 2 a usage error (the program's own parser).
#pragma once

#include <functional>

namespace dagrad {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Runs `body` and returns its status. Nothing escapes: an exception becomes "error: <what>" on
// stderr and status 1. Output that did not reach standard output (a full disk, a closed pipe)
// turns success into status 1 with "error: cannot write to standard output: <reason>".
int run_main(const std::function<int()>& body) noexcept;

}  // namespace dagrad
