#!/usr/bin/env bash
# The unit tests of ir/, frontend/ and rewrite/ under AddressSanitizer and
# UndefinedBehaviorSanitizer (-DSP_SANITIZE=ON), in a separate build
# directory: a fast subset, not the end-to-end, corpus or mutation tests.
#   scripts/test_asan.sh [GTEST_FILTER]     default: every test of the three
# Environment: ASAN_BUILD_DIR (default build-asan), JOBS (default: nproc),
# ASAN_OPTIONS / UBSAN_OPTIONS (defaults below: stop at the first report).
set -euo pipefail
cd "$(dirname "$0")/.."

filter="${1:-*}"
build_dir="${ASAN_BUILD_DIR:-build-asan}"
jobs="${JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_SANITIZE=ON \
  -DSHARDPROOF_BENCH=OFF >/dev/null
cmake --build "$build_dir" -j "$jobs" --target ir_tests frontend_tests rewrite_tests

# Leaks are not checked by default: the Z3 and ONNX schema registries live
# until exit on purpose.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export SP_SOURCE_DIR="$PWD"
status=0
for t in ir/ir_tests frontend/frontend_tests rewrite/rewrite_tests; do
  echo "test_asan: $t"
  "$build_dir/$t" --gtest_brief=1 --gtest_filter="$filter" || status=1
done
exit "$status"
