#!/usr/bin/env bash
# Runs every DESIGN.md §11 benchmark (see bench/README.md); arguments go to bench/run_all.py,
# e.g. `bench/run_all.sh --write-docs` to refresh docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python bench/run_all.py "$@"
