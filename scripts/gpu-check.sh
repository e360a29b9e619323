#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds dagrad (Release, CUDA on), runs the [cuda] tests, the op
# case table on CUDA (`dagrad check --device cuda`) and the conv benchmark (dagrad vs cuDNN, NHWC
# and NCHW), and prints a summary. Aims at < 8 minutes.
# Usage: scripts/gpu-check.sh [build-dir]   (JOBS=N: build parallelism; CUDA_ARCHS=90: architectures)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-gpu}"
jobs="${JOBS:-$(nproc)}"
log="$build/gpu-check.log"
start=$(date +%s)
mkdir -p "$build"
: > "$log"

step() { printf '\n== %s (%ds)\n' "$1" $(( $(date +%s) - start )) | tee -a "$log"; }

step "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log" || true

step "configure + build (Release, CUDA on for this GPU's architecture, -j$jobs)"
# `native`: device code for the GPU present only, a third of the default build's nvcc work.
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDAGRAD_CUDA=ON -DDAGRAD_BUILD_EXAMPLES=OFF \
     -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-native}" >>"$log" 2>&1; then
  echo "configure FAILED (see $log)"; tail -30 "$log"; exit 1
fi
grep -q "CUDA backend ON" "$log" || { echo "CUDA backend not enabled: no nvcc found"; exit 1; }
if ! cmake --build "$build" -j "$jobs" --target dagrad_tests dagrad_cli dagrad_cuda_conv_bench >>"$log" 2>&1; then
  echo "build FAILED (see $log)"; grep -E "error" "$log" | head -30; exit 1
fi

step "[cuda] and [cuda-host] tests"
tests_status=0
timeout 240 "$build/tests/dagrad_tests" "[cuda],[cuda-host]" 2>&1 | tee "$build/cuda-tests.txt" | tail -40
tests_status=${PIPESTATUS[0]}

step "the op case table on CUDA (dagrad check --device cuda)"
timeout 180 "$build/tools/dagrad" check --device cuda 2>&1 | tee "$build/cuda-check.txt" | grep -E "FAIL|passed" | tail -30
check_status=${PIPESTATUS[0]}
[ "$check_status" -eq 0 ] || tests_status=$check_status

step "Conv2DBackpropFilterV2 benchmark: dagrad vs cuDNN, NHWC"
bench_status=0
timeout 200 "$build/dagrad_cuda_conv_bench" 10 nhwc 2>&1 | tee "$build/cuda-bench.txt"
bench_status=${PIPESTATUS[0]}

# NCHW runs on NHWC copies (plan_conv_run); fewer iterations keep the script under 8 minutes.
step "the same benchmark, NCHW"
timeout 120 "$build/dagrad_cuda_conv_bench" 3 nchw 2>&1 | tee "$build/cuda-bench-nchw.txt"
nchw_status=${PIPESTATUS[0]}
[ "$nchw_status" -eq 0 ] || bench_status=$nchw_status

step "summary"
echo "tests:     $( [ "$tests_status" -eq 0 ] && echo passed || echo "FAILED (exit $tests_status)" )" \
  "$(grep -E '^(All tests passed|test cases:)' "$build/cuda-tests.txt" | tail -1)"
echo "op cases:  $(tail -1 "$build/cuda-check.txt")"
echo "skipped:   $(grep -c 'SKIPPED' "$build/cuda-tests.txt") warnings saying SKIPPED (must be 0 on a GPU machine)"
echo "benchmark: $( [ "$bench_status" -eq 0 ] && echo ok || echo "FAILED (exit $bench_status)" )"
sed -n '/^summary/,$p' "$build/cuda-bench.txt" "$build/cuda-bench-nchw.txt"
echo "total:     $(( $(date +%s) - start ))s; full log: $log"
[ "$tests_status" -eq 0 ] && [ "$bench_status" -eq 0 ]
