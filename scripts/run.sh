#!/usr/bin/env bash
# The project's main job: set up, build (Release) and train the example CNN on Fashion-MNIST.
# Extra arguments go to the example, e.g. scripts/run.sh --epochs 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
build="$root/build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target train_cnn
exec "$build/examples/train_cnn" "$@"
