#!/usr/bin/env bash
# train_cnn_jobs.sh MODE WORKDIR TRAIN_CNN MPIRUN...: `train_cnn --data-parallel` as mpirun jobs on
# Fashion-MNIST's first images (WORKDIR, in the build tree, is emptied first; exit 77: skipped):
#   same     -np 1, 2 and 4 (and 2 with --bytes-per-pack 1) save the same checkpoint bytes and print the same epoch lines (less the
#            timings); only process 0 prints or writes (one epoch line; rank 1's outputs empty)
#   kill     a process of a 2-process job killed with SIGKILL mid-training ends the job, non-zero,
#            within 60 s
#   save     process 0 unable to save (--save under a regular file) ends every process with its
#            error, non-zero, within 60 s
#   resume   epochs on 2, then 1, then 2 processes, each resuming the last, end with the same
#            checkpoint bytes as all epochs on 2; another --shards is refused naming both counts
#   usage    3 processes for 4 micro-shards: usage error (status 2) naming them, printed once
set -u
mode=$1
work=$2
train_cnn=$3
shift 3
mpirun=("$@")
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
# train_cnn's default --data; ctest counts exit 77 as skipped.
data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
  echo "skipped: no Fashion-MNIST in $data (Debian: dataset-fashion-mnist)"
  exit 77
fi
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}
# Fashion-MNIST's training set and the first 100 images of its test set (evaluating on all 10,000
# would take most of the time, more so in the sanitizer build): IDX headers with a count of 100.
mkdir data || exit 1
ln -s "$data"/train-* data/
if ! { printf '\x00\x00\x08\x03\x00\x00\x00\x64\x00\x00\x00\x1c\x00\x00\x00\x1c' &&
  gzip -dcf "$data"/t10k-images-idx3-ubyte* | tail -c +17 | head -c 78400; } > data/t10k-images-idx3-ubyte ||
  ! { printf '\x00\x00\x08\x01\x00\x00\x00\x64' &&
    gzip -dcf "$data"/t10k-labels-idx1-ubyte* | tail -c +9 | head -c 100; } > data/t10k-labels-idx1-ubyte; then
  echo "FAIL: cannot cut the test set's first 100 images from $data"
  exit 1
fi
# A short data-parallel run: 320 images in 10 global batches of 32, 4 micro-shards.
short=(--data data --data-parallel --limit 320 --batch-size 32 --shards 4 --plot "")
# job NP OPTIONS...: the short run as a job of NP processes.
job() {
  local np=$1
  shift
  "${mpirun[@]}" -np "$np" "$train_cnn" "${short[@]}" "$@"
}
# The epoch lines without their timings ("(N images/s, S s)"), which differ from run to run, and
# without the total of epochs ("epoch 2/3:" -> "epoch 2:"), which a resumed run may set otherwise.
epoch_lines() { grep '^epoch ' "$1" | sed 's|^epoch \([0-9]*\)/[0-9]*:|epoch \1:|; s/  (.*$//'; }
# Passes when the job (all of the arguments) ends within 60 s with a non-zero status and, if given,
# MESSAGE (the first argument) on its output.
ends_with_error() {
  local message=$1
  shift
  timeout --kill-after=10 60 "$@" > out.txt 2>&1
  local status=$?
  cat out.txt
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then fail "the job still ran after 60 s"; fi
  if [ "$status" -eq 0 ]; then fail "the job succeeded"; fi
  grep -qF -- "$message" out.txt || fail "the job's output lacks: $message"
  echo "the job ended with status $status"
}

case $mode in
  same)
    for np in 1 2 4; do
      "${mpirun[@]}" --output-filename "outputs$np" -np $np "$train_cnn" "${short[@]}" --epochs 1 --save "ckpt$np" \
        --save-every 3 > "stdout$np.txt" || fail "the job of $np processes failed"
      cat "stdout$np.txt"
    done
    # And on 2 processes with one pack per variable, exchanges overlapping the backward pass.
    "${mpirun[@]}" -np 2 "$train_cnn" "${short[@]}" --epochs 1 --bytes-per-pack 1 --save ckpt2packs --save-every 3 \
      > stdout2packs.txt || fail "the job of 2 processes with --bytes-per-pack 1 failed"
    for np in 2 4 2packs; do
      diff -r ckpt1 "ckpt$np" > /dev/null || fail "the checkpoints of 1 process and of $np differ"
      [ "$(epoch_lines stdout1.txt)" = "$(epoch_lines "stdout$np.txt")" ] \
        || fail "the epoch lines of 1 process and of $np differ"
    done
    [ -f ckpt1/manifest.json ] || fail "no checkpoint written"
    [ "$(grep -c '^epoch ' stdout2.txt)" -eq 1 ] || fail "2 processes printed other than one epoch line"
    # mpirun --output-filename: each rank's own stdout and stderr, where rank 1's must be empty.
    for stream in stdout stderr; do
      file=$(find outputs2 -path "*rank.1/$stream")
      if [ -z "$file" ]; then
        fail "mpirun wrote no $stream file for rank 1"
      elif [ -s "$file" ]; then
        fail "rank 1 wrote to $stream: $(cat "$file")"
      fi
    done
    ;;
  kill)
    # Long enough to be killed mid-training: all 60,000 images, a checkpoint after each step.
    "${mpirun[@]}" -np 2 "$train_cnn" --data data --data-parallel --epochs 1 --plot "" --save ckpt --save-every 1 \
      > out.txt 2>&1 &
    launcher=$!
    for _ in $(seq 600); do
      [ -f ckpt/manifest.json ] && break
      sleep 0.1
    done
    [ -f ckpt/manifest.json ] || fail "no step was saved within 60 s"
    victim=$(pgrep -P "$launcher" -x train_cnn | tail -n 1)
    [ -n "$victim" ] || fail "no train_cnn process under mpirun $launcher"
    [ -n "$victim" ] && kill -9 "$victim"
    for _ in $(seq 60); do
      kill -0 "$launcher" 2> /dev/null || break
      sleep 1
    done
    if kill -0 "$launcher" 2> /dev/null; then
      fail "the job still ran 60 s after process $victim was killed"
      kill -9 "$launcher"
    fi
    wait "$launcher"
    status=$?
    cat out.txt
    [ "$status" -ne 0 ] || fail "the job succeeded although process $victim was killed"
    echo "the job ended with status $status"
    ;;
  save)
    touch file
    ends_with_error "error: rank 0 of 2: checkpoint: cannot create directory 'file'" \
      "${mpirun[@]}" -np 2 "$train_cnn" "${short[@]}" --epochs 1 --save file/ckpt --save-every 1
    ;;
  resume)
    # 3 epochs on 2 processes, against one epoch on 2, the next on 1 (what process 0 restores)
    # and the last on 2 again (process 1 gets its variables and training state from process 0).
    job 2 --epochs 3 --save whole > whole.txt || fail "the uninterrupted job failed"
    job 2 --epochs 1 --save parts > /dev/null || fail "the first epoch's job failed"
    job 1 --epochs 2 --resume parts --save parts > parts2.txt || fail "the job resumed on 1 process failed"
    job 2 --epochs 3 --resume parts --save parts > parts3.txt || fail "the job resumed on 2 processes failed"
    cat whole.txt parts2.txt parts3.txt
    grep -q "resumed from parts at step 10" parts2.txt || fail "the resumed job did not say where it resumed"
    diff -r whole parts > /dev/null || fail "the resumed checkpoint differs from the uninterrupted one"
    [ "$(epoch_lines whole.txt | tail -n 2)" = "$(epoch_lines parts2.txt; epoch_lines parts3.txt)" ] \
      || fail "the resumed jobs' epoch lines differ from the uninterrupted job's"
    ends_with_error "was trained with --data-parallel --shards 4 but this run has --data-parallel --shards 2" \
      "${mpirun[@]}" -np 1 "$train_cnn" --data data --data-parallel --limit 320 --batch-size 32 --shards 2 --plot "" --epochs 3 \
      --resume parts
    ;;
  usage)
    "${mpirun[@]}" -np 3 "$train_cnn" --data-parallel --shards 4 > out.txt 2>&1
    status=$?
    cat out.txt
    [ "$status" -eq 2 ] || fail "3 processes for 4 micro-shards exited $status, not 2"
    message="error: data parallel: 3 processes do not divide the 4 micro-shards of a batch"
    [ "$(grep -cF "$message" out.txt)" -eq 1 ] || fail "not one line: $message"
    ;;
  *)
    echo "usage: train_cnn_jobs.sh same|kill|save|resume|usage WORKDIR TRAIN_CNN MPIRUN..."
    exit 2
    ;;
esac
[ "$failed" -eq 0 ] && echo "ok: $mode"
exit "$failed"
