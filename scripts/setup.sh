#!/usr/bin/env bash
# Set up shardproof on a fresh Debian 12 machine: install the dependencies
# (idempotent), build, and run the main job on a bundled example.
#   scripts/setup.sh              install + build + example
#   scripts/setup.sh --no-example install + build
#   scripts/setup.sh --fixtures   also install python3-torch/python3-onnx
#                                 (only needed to regenerate test fixtures)
# Environment: BUILD_DIR (default build), JOBS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

run_example=1
fixtures=0
for arg in "$@"; do
  case "$arg" in
    --no-example) run_example=0 ;;
    --fixtures) fixtures=1 ;;
    *) echo "setup.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

packages=(cmake ninja-build g++ ccache pkg-config
  libz3-dev libboost-graph-dev libonnx-dev libprotobuf-dev protobuf-compiler
  libspdlog-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libbenchmark-dev libopenblas-dev libonnx-testdata graphviz
  clang libclang-rt-14-dev)  # clang: the sanitizer and fuzzing build (scripts/ci_sanitize.sh)
if [ "$fixtures" = 1 ]; then
  packages+=(python3-torch python3-onnx python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
# The CUDA/NCCL backend of the executor builds when nvcc and NCCL are there
# (its GPU tests skip without a GPU); SHARDPROOF_CUDA=OFF (or ON) decides.
cuda_flags=()
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
cuda_root="$(dirname "$(dirname "$nvcc")")"
if [ "${SHARDPROOF_CUDA:-auto}" = ON ] ||
   { [ "${SHARDPROOF_CUDA:-auto}" = auto ] && [ -x "$nvcc" ] && ls "$cuda_root"/lib64/libnccl.so* >/dev/null 2>&1; }; then
  echo "setup: building the CUDA backend with $nvcc (SHARDPROOF_CUDA=OFF to skip)"
  cuda_flags=(-DSHARDPROOF_CUDA=ON "-DCMAKE_CUDA_COMPILER=$nvcc")
else
  cuda_flags=(-DSHARDPROOF_CUDA=OFF)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_flags[@]}"
cmake --build "$build_dir" -j "$jobs"

if [ "$run_example" = 1 ]; then
  exec scripts/example.sh "$build_dir"
fi
