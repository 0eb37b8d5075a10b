#!/usr/bin/env bash
# Fails on a dead relative link, #anchor or backticked repository path in README.md,
# CONTRIBUTING.md, docs/*.md and bench/results/*.md (ctest: docs_links_test).
# Extra arguments go to check-links.py (e.g. the files to check).
set -euo pipefail
exec python3 "$(dirname "$0")/check-links.py" "$@"
