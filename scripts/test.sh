#!/usr/bin/env bash
# The whole test suite from a clean checkout: install what is missing, build,
# run every test (GPU-labelled tests skip themselves without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-example
build_dir="${BUILD_DIR:-build}"
ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
