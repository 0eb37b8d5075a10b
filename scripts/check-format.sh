#!/usr/bin/env bash
# Fails when a tracked C/C++ file is not formatted as .clang-format says (clang-format-14),
# naming each file and line (ctest: format_test). Fix with `git clang-format-14` on your
# staged lines, or `clang-format-14 -i FILE`. Extra arguments: the files to check.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format-14 >/dev/null; then
  echo "check-format: clang-format-14 is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cpp' '*.hpp')
fi
if clang-format-14 --dry-run -Werror "${files[@]}" 2>/tmp/check-format.$$; then
  rm -f /tmp/check-format.$$
  echo "check-format: ${#files[@]} files formatted as .clang-format says"
  exit 0
fi
grep -E '^[^ ].*: error:' /tmp/check-format.$$ | sed 's/: error: .*//' | sort -u | head -50 >&2
echo "check-format: the files above are not formatted (clang-format-14 -i FILE, or git clang-format-14)" >&2
rm -f /tmp/check-format.$$
exit 1
