#!/bin/sh
# expect_job_fails.sh SECONDS MESSAGE COMMAND...: passes when COMMAND (an mpirun job in which one
# process fails) ends within SECONDS with a non-zero status and MESSAGE on its output; a job that
# hangs (timeout's 124) or succeeds fails the test.
limit=$1
message=$2
shift 2
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
  *"$message"*) echo "ok: the job ended with status $status" ;;
  *) echo "FAIL: the job's output lacks the failing process's error: $message"; exit 1 ;;
esac
