#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (clang, ASan+UBSan) in a separate
# build directory and runs each for SECONDS (default 60), seeded from the
# test files of the repository (and fuzz/seeds/<target>/). Prints, per
# target, the inputs executed and whether it crashed; exits 1 on any crash.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    targets: text_ir relations rules fx decomp npy onnx plan
# Environment: FUZZ_BUILD_DIR (default build-fuzz), JOBS (build, default:
# nproc), CXX_FUZZ (default clang++). A crashing input is kept as
# $FUZZ_BUILD_DIR/crashes/<target>-crash-*; rerun it with
#   $FUZZ_BUILD_DIR/fuzz/fuzz_<target> FILE
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(text_ir relations rules fx decomp npy onnx plan)
build_dir="${FUZZ_BUILD_DIR:-build-fuzz}"
jobs="${JOBS:-$(nproc)}"

if ! command -v "${CXX_FUZZ:-clang++}" >/dev/null; then
  echo "fuzz.sh: ${CXX_FUZZ:-clang++} not found (apt-get install clang)" >&2
  exit 2
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" -DSP_FUZZ=ON \
  -DSHARDPROOF_TESTS=OFF -DSHARDPROOF_BENCH=OFF >/dev/null
cmake --build "$build_dir" -j "$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

# Seed files of each target: test data of its format.
seed_globs() {
  case "$1" in
    text_ir) echo 'examples/*.sp tests/verify/*/*.sp tests/golden/text/*.sp tests/golden/text/errors/*.sp tests/data/trust/*.sp rewrite/testdata/verify/*.sp' ;;
    relations) echo 'examples/*.rel tests/verify/*/*.rel tests/fixtures/*/*.rel tests/data/trust/*.rel rewrite/testdata/*.rel rewrite/testdata/verify/*.rel' ;;
    rules) echo 'rewrite/lemmas/*.rules rewrite/testdata/*.rules' ;;
    fx) echo 'tests/data/fx/*.py' ;;
    decomp) echo 'frontend/decomp/*.decomp tests/data/decomp/*.decomp' ;;
    npy) echo 'tests/data/npy/*.npy tests/fixtures/onnx/*.npy' ;;
    plan) echo 'codegen/testdata/*.plan' ;;
    onnx) echo 'tests/data/onnx_bad/*.onnx tests/fixtures/onnx/*.onnx tests/fixtures/onnx_tp/*/*.onnx tests/fixtures/onnx_gqa/*/*.onnx' ;;
    *) echo "fuzz.sh: unknown target '$1'" >&2; exit 2 ;;
  esac
}

crashed=0
summary=()
for t in "${targets[@]}"; do
  seeds="$build_dir/seeds/$t"
  corpus="$build_dir/corpus/$t"
  rm -rf "$seeds"
  mkdir -p "$seeds" "$corpus" "$build_dir/crashes" "$build_dir/logs"
  shopt -s nullglob
  for f in $(seed_globs "$t") fuzz/seeds/"$t"/*; do
    [ -f "$f" ] && cp "$f" "$seeds/$(echo "$f" | tr '/' '_')"
  done
  shopt -u nullglob
  log="$build_dir/logs/$t.log"
  echo "fuzz: $t for ${seconds}s ($(ls "$seeds" | wc -l) seed files)"
  rc=0
  "$build_dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$build_dir/crashes/$t-" \
    "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$rc" != 0 ]; then
    crashed=1
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    summary+=("$t: CRASH after ${execs:-?} inputs (exit $rc): ${artifact:-see $log}")
    grep -m3 -E 'ERROR|runtime error|internal error|property violated|deadly signal' "$log" | sed 's/^/    /' || true
  else
    summary+=("$t: ${execs:-?} inputs in ${seconds}s, no crash")
  fi
done
echo
printf '%s\n' "${summary[@]}"
exit "$crashed"
