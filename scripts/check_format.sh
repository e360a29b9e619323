#!/usr/bin/env bash
# Checks that every C++ and CUDA file in git is formatted by .clang-format (Debian's
# clang-format 14). Lists the files that are not and exits 1; `scripts/check_format.sh --fix`
# formats them in place.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.inc')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format for all files; it names each file that differs in its warnings.
if ! report="$(clang-format --dry-run -Werror "${files[@]}" 2>&1)"; then
  echo "check_format: files differ from .clang-format (scripts/check_format.sh --fix):"
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/  \1/p' <<<"$report" | sort -u
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
