#!/usr/bin/env bash
# The main job on the bundled examples: verify a tensor-parallel MLP against
# its sequential model (verified), then its buggy twin with the all-reduce
# removed (refuted, with a witness), then generate Llama 3 8B's Megatron
# program for a TP 8 x PP 4 layout and verify it. Usage: scripts/example.sh
# [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}/tools/shardproof"

echo "== shardproof verify examples/mlp.sp examples/mlp_tp2.sp (expect: verified)"
"$bin" verify --seq examples/mlp.sp --dist examples/mlp_tp2.sp --relation examples/mlp_tp2.rel
code=$?
if [ "$code" != 0 ]; then
  echo "example: expected verified (exit 0), got exit $code" >&2
  exit 1
fi

echo
echo "== shardproof verify examples/mlp.sp examples/mlp_tp2_missing_allreduce.sp (expect: refuted)"
"$bin" verify --seq examples/mlp.sp --dist examples/mlp_tp2_missing_allreduce.sp --relation examples/mlp_tp2.rel
code=$?
if [ "$code" != 1 ]; then
  echo "example: expected refuted (exit 1), got exit $code" >&2
  exit 1
fi

out="${1:-build}/example-llama3-8b-tp8-pp4"
echo
echo "== shardproof parallelize --model planner/configs/llama3-8b.json --plan tp=8,pp=4 --verify (expect: verified)"
"$bin" parallelize --model planner/configs/llama3-8b.json --plan tp=8,pp=4 --seq 512 --layers 8 --out "$out" --verify
code=$?
if [ "$code" != 0 ]; then
  echo "example: expected verified (exit 0), got exit $code" >&2
  exit 1
fi
echo
echo "example: all three verdicts as expected"
