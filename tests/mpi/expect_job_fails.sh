#!/bin/sh
# expect_job_fails.sh SECONDS COMMAND...: passes when COMMAND (an mpirun job in which one process
# throws) ends within SECONDS with a non-zero status and the thrown error on its output; a job
# that hangs (timeout's 124) or succeeds fails the test.
limit=$1
shift
out=$(timeout --kill-after=10 "$limit" "$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "FAIL: the job still ran after ${limit}s (a failed process must end every process)"
  exit 1
fi
if [ "$status" -eq 0 ]; then
  echo "FAIL: the job succeeded although one process failed"
  exit 1
fi
case $out in
  *"error: planted failure on this rank"*) echo "ok: the job ended with status $status" ;;
  *) echo "FAIL: the failing process's error is not in the job's output"; exit 1 ;;
esac
