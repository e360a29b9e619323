#!/usr/bin/env bash
# Checks the include direction of DESIGN.md: core <- ops <- {autodiff, backends}, and no backend
# includes another. Prints each include that breaks it (file:line) and exits 1; exits 0 when clean.
# Usage: scripts/check_layers.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# layer folder -> the dagrad/ folders its files may include
declare -A allowed=(
  [core]="core"
  [ops]="core ops"
  [autodiff]="core ops autodiff"
  [backends/reference]="core ops backends/reference"
  [backends/cpu]="core ops backends/cpu"
  [backends/cuda]="core ops backends/cuda"
)

status=0
for layer in "${!allowed[@]}"; do
  pattern="$(sed 's/ /|/g' <<<"${allowed[$layer]}")"
  # Every include of a dagrad header from this layer, then those outside the allowed folders.
  violations="$(grep -rnE '^\s*#\s*include\s*[<"]dagrad/' "$layer" --include='*.cpp' --include='*.hpp' \
    --include='*.cu' --include='*.cuh' --include='*.inc' |
    grep -vE "#\s*include\s*[<\"]dagrad/($pattern)/" || true)"
  if [ -n "$violations" ]; then
    echo "check_layers: $layer may include only dagrad/{${allowed[$layer]// /,}}/:"
    sed 's/^/  /' <<<"$violations"
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "check_layers: include direction ok (core <- ops <- autodiff, backends)"
exit "$status"
