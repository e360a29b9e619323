#!/usr/bin/env bash
# Runs every libFuzzer target of a DAGRAD_FUZZ build (tests/fuzz/) for a bounded time under ASan +
# UBSan: first each saved crash (tests/fuzz/regressions/<target>/) once, then fuzzing from a copy of
# the seed corpus (the repository is never written). Prints executions/s and coverage per target;
# exits 1 on any crash, sanitizer report, leak, timeout or out-of-memory, naming the input's file.
# Usage: scripts/fuzz.sh BUILD_DIR [TOTAL_SECONDS (default 60 of fuzzing, shared evenly by the targets,
#        which run side by side, one per core)]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:?usage: scripts/fuzz.sh BUILD_DIR [TOTAL_SECONDS]}" && pwd)"
total="${2:-60}"
targets=(fuzz_npy fuzz_idx fuzz_checkpoint fuzz_attrs fuzz_ops fuzz_graph)
per_target=$(( total / ${#targets[@]} ))
[ "$per_target" -ge 1 ] || per_target=1

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:allocator_may_return_null=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# Per input: 5 s, 2 GB; crashes and slow inputs land in the build tree, never in the sources.
limits=(-timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=2048)
artifacts="$build/fuzz-artifacts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The file-based targets make scratch folders that a fuzzer stopped by -max_total_time cannot
# remove: keep them inside $work.
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"

# Prints the last lines of a libFuzzer log and where the failing input was written.
report_failure() {
  local name="$1" log="$2"
  echo "--- $name: last lines of its log ($log)"
  tail -n 40 "$log"
  grep -E "Test unit written to|Running: " "$log" | tail -n 1 | sed "s|^|--- $name: failing input: |"
}

# "NAME VALUE" from libFuzzer's -print_final_stats lines, e.g. stat::average_exec_per_sec.
final_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -n 1; }

# One target: its saved crashes, then timed fuzzing; leaves its table row (and "failed" when it
# failed) in $work/NAME/.
fuzz_target() {
  local name="$1" fuzzer="$build/tests/fuzz/$1" log="$artifacts/$1/fuzz.log"
  mkdir -p "$artifacts/$name" "$work/$name/corpus"

  # 1. The saved crashes, each executed once (files given to a fuzzer are run, not fuzzed).
  local regressions=("$root/tests/fuzz/regressions/$name"/*)
  if [ -e "${regressions[0]}" ] && ! "$fuzzer" "${limits[@]}" "${regressions[@]}" >"$log" 2>&1; then
    printf '%-16s %-8s\n' "$name" "REGRESSED" >"$work/$name/row"
    touch "$work/$name/failed"
    return
  fi

  # 2. Timed fuzzing from a copy of the seeds (new inputs go to the copy).
  [ -d "$root/tests/fuzz/corpus/$name" ] && cp "$root/tests/fuzz/corpus/$name"/* "$work/$name/corpus/"
  local dict=()
  [ -f "$root/tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
  "$fuzzer" "${limits[@]}" "${dict[@]}" -max_total_time="$per_target" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name/" "$work/$name/corpus" >"$log" 2>&1
  local status=$?
  local coverage cov ft corpus result=ok
  coverage="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)"
  cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$coverage")"
  ft="$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$coverage")"
  corpus="$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$coverage")"
  [ "$status" -eq 0 ] || { result=FAILED; touch "$work/$name/failed"; }
  printf '%-16s %-8s %10s %8s %7s %7s %7s %8s\n' "$name" "$result" \
    "$(final_stat number_of_executed_units "$log")" "$(final_stat average_exec_per_sec "$log")" \
    "${cov:--}" "${ft:--}" "${corpus:--}" "$(final_stat peak_rss_mb "$log")" >"$work/$name/row"
}

for name in "${targets[@]}"; do
  if [ ! -x "$build/tests/fuzz/$name" ]; then
    echo "fuzz: $build/tests/fuzz/$name is missing (configure with CXX=clang++ -DDAGRAD_SANITIZE=ON -DDAGRAD_FUZZ=ON)" >&2
    exit 1
  fi
done
# One target per core at a time: the same fuzzing time per target, in less wall time.
for name in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  fuzz_target "$name" &
done
wait

failed=0
printf '%-16s %-8s %10s %8s %7s %7s %7s %8s\n' target status executions exec/s cov ft corpus rss_mb
for name in "${targets[@]}"; do
  if [ ! -e "$work/$name/row" ]; then
    printf '%-16s %-8s\n' "$name" "NO RESULT"
    failed=1
    continue
  fi
  cat "$work/$name/row"
  if [ -e "$work/$name/failed" ]; then
    report_failure "$name" "$artifacts/$name/fuzz.log"
    failed=1
  fi
done
[ "$failed" -eq 0 ] || echo "fuzz: FAILED (logs and inputs under $artifacts)" >&2
exit "$failed"
