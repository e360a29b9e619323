#!/usr/bin/env bash
# The project's main job: set up, build (Release) and train the example CNN on Fashion-MNIST.
# Builds the dagrad CLI and the example programs too (build/tools/dagrad, build/examples/,
# the custom-op example's module and program included), the
# programs the README's commands use. Extra arguments go to train_cnn: scripts/run.sh --epochs 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
build="$root/build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target train_cnn dagrad_cli dagrad_demo gradcheck_example \
  custom_op swish_ops
exec "$build/examples/train_cnn" "$@"
