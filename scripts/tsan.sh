#!/usr/bin/env bash
# ThreadSanitizer check of concurrent Session::run, set_num_threads and the registries' first use:
# builds the library and the small dagrad_threads_tests program (the [threads] and [session] tests)
# with -fsanitize=thread and runs them; the first race report fails the script.
# Usage: scripts/tsan.sh [build-dir]    (default: build-tsan)
# Cost from scratch: about 3 minutes on 2 cores (building the library is most of it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-tsan}"
# -O0 with line tables: reports keep file:line, and the build is the stage's cost (unoptimised it
# took 3 m 08 s in all against 3 m 43 s at -O1; the tests run a few seconds longer). Only what the
# tests need: no CLI, examples, benchmarks or CUDA.
# Ninja, as scripts/test.sh builds; a build dir made by another generator is made anew.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
  -DDAGRAD_TSAN=ON -DDAGRAD_CUDA=OFF -DDAGRAD_BUILD_TOOLS=OFF -DDAGRAD_BUILD_EXAMPLES=OFF \
  -DDAGRAD_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target dagrad_threads_tests
# halt_on_error: the first report ends the program with TSan's exit code (66), failing the script.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
tests="$build/tests/dagrad_threads_tests"
# A process of its own, where it really is the registries' first use.
"$tests" "the registries' first use*"
# The 100,000-node chain is left to the ASan suite: under TSan it alone takes 20 s.
"$tests" "[threads],[session]~*recursion"
