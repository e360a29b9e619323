#!/usr/bin/env bash
# Builds and runs the whole test suite on a fresh Debian 12 machine:
#   0. the include direction of DESIGN.md (scripts/check_layers.sh) and .clang-format,
#   1. AddressSanitizer + UndefinedBehaviorSanitizer, built with clang and libFuzzer coverage
#      (CUDA off: the GPU tests skip here anyway): the test suite, then every fuzz target for a
#      bounded time (scripts/fuzz.sh),
#   2. ThreadSanitizer: concurrent sessions and set_num_threads (scripts/tsan.sh),
#   3. the embedding checks: install, then build and run examples/consumer against the install
#      (through find_package, and through pkg-config's dagrad.pc; its MPI program under mpirun where
#      dagrad::mpi is installed) and examples/custom_op (an op
#      from outside, also loaded by the installed CLI); configure examples/consumer through
#      add_subdirectory as well,
#   4. Release with every backend that can be built (CUDA compiles and links without a GPU), the
#      CLI, examples and benchmarks: the whole op case table (`dagrad check`, under each ISA cap)
#      on GCC's -O3 kernels, static linking and allocation failure; the Catch2 programs (unit, CLI
#      and example tests) ran in stage 1 (`--quick` builds and runs them here instead).
# Stages 1 and 4 also run the MPI jobs of tests/mpi (`mpirun --allow-run-as-root --oversubscribe
# -np 1/2/4`: bitwise identical weights, a failing process ending the job); stage 1 without
# LeakSanitizer for them, as Open MPI leaks in its unloaded components (tests/mpi/CMakeLists.txt).
# Builds use Ninja: with two cores, it starts a target's objects while its dependencies link.
# Any sanitizer report fails the run (cmake/dagradSanitizerDefaults.cpp).
# Usage: scripts/test.sh [--quick]   (--quick: the Release configuration only)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
jobs="$(nproc)"
quick=0
[ "${1:-}" = "--quick" ] && quick=1

section() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; }

run_ctest() {
  (cd "$1" && ctest --output-on-failure --timeout 1500 -j "$jobs")
}

# Configures build dir $1 with Ninja and the CMake arguments after it; a build dir made by another
# generator or compiler ($CXX) cannot be switched, so it is made anew.
configure() {
  local dir="$1"
  shift
  if [ -f "$dir/CMakeCache.txt" ] && { ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt" ||
    { [ -n "${CXX:-}" ] && ! grep -q "^CMAKE_CXX_COMPILER:.*${CXX}" "$dir/CMakeCache.txt"; }; }; then
    rm -rf "$dir"
  fi
  cmake -G Ninja -S "$root" -B "$dir" "$@" >/dev/null
}

section "include direction and formatting"
"$root/scripts/check_layers.sh"
"$root/scripts/check_format.sh"

if [ "$quick" = 0 ]; then
  section "sanitizer build (clang, with libFuzzer coverage)"
  asan="$root/build-asan"
  # libFuzzer needs clang. -O1 with line tables only: sanitizer reports keep file:line, the build
  # stays quick on 2 cores. The fuzz targets link against this same library, so fuzzing costs
  # only their own objects.
  CC=clang CXX=clang++ configure "$asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DDAGRAD_SANITIZE=ON -DDAGRAD_FUZZ=ON -DDAGRAD_CUDA=OFF -DDAGRAD_BUILD_BENCH=OFF
  cmake --build "$asan" -j "$jobs"
  section "sanitizer tests"
  run_ctest "$asan"
  section "fuzzing (a minute in all)"
  "$root/scripts/fuzz.sh" "$asan" 60
  section "thread sanitizer"
  "$root/scripts/tsan.sh" "$root/build-tsan"
fi

section "release build"
release="$root/build-release"
# --quick: every test and the default CUDA architectures (-U undoes a full run's cached choice).
release_options=(-DDAGRAD_UNIT_TESTS=ON -UCMAKE_CUDA_ARCHITECTURES)
if [ "$quick" = 0 ]; then
  # The sanitizer build has run the Catch2 programs already, and compiling the device code for one
  # architecture proves it compiles (the default builds three).
  release_options=(-DDAGRAD_UNIT_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90-real)
fi
configure "$release" -DCMAKE_BUILD_TYPE=Release "${release_options[@]}"
cmake --build "$release" -j "$jobs"

if [ "$quick" = 0 ]; then
  section "install and build examples/consumer against the installed package"
  prefix="$release/install"
  rm -rf "$prefix"
  cmake --install "$release" --prefix "$prefix" >/dev/null
  # Every dagrad header an installed header includes is installed too.
  missing="$(grep -rhoE '#include "dagrad/[^"]+"' "$prefix/include/dagrad" | sed 's/#include "\(.*\)"/\1/' | sort -u |
    while read -r header; do [ -f "$prefix/include/$header" ] || echo "$header"; done)"
  if [ -n "$missing" ]; then
    echo "install: installed headers include headers that are not installed: $missing" >&2
    exit 1
  fi
  consumer="$release/consumer"
  cmake -S "$root/examples/consumer" -B "$consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$consumer" -j "$jobs"
  "$consumer/consumer"
  # An install with the MPI part (dagrad::mpi) builds consumer_mpi against it: run as a job of two.
  if [ -f "$prefix/include/dagrad/backends/mpi/world.hpp" ]; then
    mpirun --allow-run-as-root --oversubscribe -np 2 "$consumer/consumer_mpi"
  fi
  section "build examples/consumer/main.cpp with pkg-config against the installed package"
  pc_file="$(find "$prefix" -name dagrad.pc)"
  PKG_CONFIG_PATH="$(dirname "$pc_file")" pkg-config --exists --print-errors 'dagrad >= 0.1'
  # shellcheck disable=SC2046  # the flags are words
  c++ -std=c++20 -O1 "$root/examples/consumer/main.cpp" -o "$consumer/consumer-pkgconfig" \
    $(PKG_CONFIG_PATH="$(dirname "$pc_file")" pkg-config --cflags --libs dagrad)
  "$consumer/consumer-pkgconfig"
  section "build examples/custom_op against the installed package; check its ops with the installed CLI"
  custom_op="$release/custom_op"
  cmake -S "$root/examples/custom_op" -B "$custom_op" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$custom_op" -j "$jobs"
  "$custom_op/custom_op"
  "$prefix/bin/dagrad" --load-ops "$custom_op/libswish_ops.so" check Swish Sigmoid --full
  section "configure examples/consumer with dagrad as a subdirectory"
  cmake -S "$root/examples/consumer" -B "$release/consumer-subdir" -DDAGRAD_SOURCE_DIR="$root" \
    -DDAGRAD_CUDA=OFF >/dev/null
  echo "consumer-subdir: configured"
fi

section "release tests"
run_ctest "$release"
