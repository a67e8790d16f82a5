#!/usr/bin/env bash
# CI's sanitizer job (issue 18), run by .ci/run after the test suite: one
# clang build with AddressSanitizer + UndefinedBehaviorSanitizer (-DSP_FUZZ=ON
# puts both on every target) of the IR unit tests and the parser fuzzers;
# the unit tests run under the sanitizers, then each fuzzer for SECONDS
# (default 20) from the repository's seed files (scripts/fuzz.sh). Exits 1
# on any sanitizer report, failed test or fuzzer crash.
#   scripts/ci_sanitize.sh [SECONDS]
# Environment: SANITIZE_BUILD_DIR (default build-sanitize), JOBS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
build_dir="${SANITIZE_BUILD_DIR:-build-sanitize}"
jobs="${JOBS:-$(nproc)}"
targets=(text_ir relations rules npy decomp plan)

if ! command -v clang++ >/dev/null; then
  echo "ci_sanitize: clang++ not found (scripts/setup.sh --sanitize installs clang and its runtimes)" >&2
  exit 1
fi
start=$(date +%s)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DSP_FUZZ=ON -DSHARDPROOF_TESTS=ON -DSHARDPROOF_BENCH=OFF -DSHARDPROOF_CUDA=OFF >/dev/null
cmake --build "$build_dir" -j "$jobs" --target ir_tests $(printf 'fuzz_%s ' "${targets[@]}")
echo "ci_sanitize: built in $(( $(date +%s) - start )) s"

# Leaks are not checked: the ONNX schema registry lives until exit on purpose.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export SP_SOURCE_DIR="$PWD"
echo "ci_sanitize: ir unit tests under ASan + UBSan"
"$build_dir/ir/ir_tests" --gtest_brief=1

FUZZ_BUILD_DIR="$build_dir" scripts/fuzz.sh "$seconds" "${targets[@]}"
echo "ci_sanitize: done in $(( $(date +%s) - start )) s"
