#!/usr/bin/env bash
# Checks that every C source of ours is formatted as .clang-format says.
# Fix with: clang-format -i $(git ls-files '*.c' '*.h')
set -euo pipefail
cd "${SC_SRC:-$(dirname "$0")/../..}"
command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 0; }
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build*')
[ -n "$files" ] || exit 0
clang-format --dry-run --Werror $files
echo "format: $(echo "$files" | wc -l) files clean"
