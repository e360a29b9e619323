#!/usr/bin/env bash
# Runs the shell blocks of README.md as a reader would type them, against a built tree:
#   scripts/check_readme.sh BUILD_DIR [README]
# Each ```sh block runs as one bash script (errexit, pipefail: a failing command fails its block)
# in a scratch directory where build/ and build-release/ are BUILD_DIR and every top-level entry
# of the source tree (scripts/, tests/, ...) is a link to the real one, so files the commands
# write land in the scratch directory. A block this check must not run says why on the line
# before it:
#   <!-- readme-check: skip: REASON -->
# Prints one line per block (ran, seconds, or skipped and why) and exits 1 if any block failed.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/check_readme.sh BUILD_DIR [README]" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
readme="${2:-$root/README.md}"
[ -f "$readme" ] || { echo "error: no such file: $readme" >&2; exit 1; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
blocks="$scratch/.blocks"
mkdir "$blocks"
for entry in "$root"/*; do
  name="$(basename "$entry")"
  case "$name" in build | build-*) continue ;; esac
  ln -s "$entry" "$scratch/$name"
done
ln -s "$build" "$scratch/build"
ln -s "$build" "$scratch/build-release"

# Writes block N to $blocks/N.sh, with its README line in $blocks/N.line and a skip reason in
# $blocks/N.skip.
awk -v dir="$blocks" '
  /^```sh[[:space:]]*$/ && !inside {
    inside = 1; n++; file = dir "/" n ".sh"
    print NR > (dir "/" n ".line")
    if (match(previous, /<!-- readme-check: skip: .* -->/)) {
      reason = substr(previous, RSTART + 25, RLENGTH - 29)
      print reason > (dir "/" n ".skip")
    }
    printf "" > file
    next
  }
  /^```/ && inside { inside = 0; close(file); next }
  inside { print > file; next }
  /[^[:space:]]/ { previous = $0 }
' "$readme"

failed=0
count=0
for script in $(ls "$blocks"/*.sh 2>/dev/null | sort -V); do
  n="$(basename "$script" .sh)"
  line="$(cat "$blocks/$n.line")"
  count=$((count + 1))
  if [ -f "$blocks/$n.skip" ]; then
    echo "$(basename "$readme"):$line: skipped: $(cat "$blocks/$n.skip")"
    continue
  fi
  start=$SECONDS
  if (cd "$scratch" && timeout 900 bash -eo pipefail "$script") > "$blocks/$n.log" 2>&1; then
    echo "$(basename "$readme"):$line: ran ($((SECONDS - start)) s)"
  else
    status=$?
    failed=1
    echo "$(basename "$readme"):$line: FAILED (exit $status after $((SECONDS - start)) s); the block:"
    sed 's/^/    /' "$script"
    echo "  its last output:"
    tail -n 30 "$blocks/$n.log" | sed 's/^/    /'
  fi
done
[ "$count" -gt 0 ] || { echo "error: $readme has no \`\`\`sh blocks" >&2; exit 1; }
exit "$failed"
