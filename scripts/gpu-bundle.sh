#!/usr/bin/env bash
# Packs what the GPU machine needs to run the CUDA tests and benchmarks of a
# SHARDPROOF_CUDA build, which it cannot build itself (none of our Debian
# libraries there): the binaries, stripped, and every shared library they
# load that is not glibc, libstdc++/libgcc or CUDA (driver, cuBLAS, NCCL:
# the GPU machine has its own; run.sh finds them), plus run.sh.
#   scripts/gpu-bundle.sh BUILD_DIR OUTDIR
# OUTDIR/{bin,lib,run.sh}; the bundle must stay under 60 MiB: shardproof
# (verifier, Z3) is left out when it would not fit, and the script says so.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: scripts/gpu-bundle.sh BUILD_DIR OUTDIR" >&2
  exit 3
fi
build=$1 out=$2
limit=$((60 * 1024 * 1024))
for b in cuda_ref/cuda_exec_tests cuda_ref/cuda_dist_driver bench/bench_exec; do
  [[ -x $build/$b ]] || { echo "error: $build/$b is missing (configure with -DSHARDPROOF_CUDA=ON and build it)" >&2; exit 3; }
done
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"

# Libraries the GPU machine provides: the C runtime, the C++ runtime, CUDA.
provided='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia)[.-]'

copy_bin() {  # copy_bin BINARY: the binary stripped, its libraries to lib/
  local bin=$1
  cp "$bin" "$out/bin/"
  strip --strip-unneeded "$out/bin/$(basename "$bin")"
  ldd "$bin" | awk '/=>/ {print $1, $3}' | while read -r name path; do
    [[ $name =~ $provided ]] && continue
    if [[ $path == "not" || ! -e $path ]]; then
      echo "error: $(basename "$bin") needs $name, which is not found here" >&2
      exit 3
    fi
    [[ -e $out/lib/$name ]] && continue
    cp -L "$path" "$out/lib/$name"
    strip --strip-unneeded "$out/lib/$name" 2>/dev/null || true
  done
}

copy_bin "$build/cuda_ref/cuda_exec_tests"
copy_bin "$build/cuda_ref/cuda_dist_driver"
copy_bin "$build/bench/bench_exec"

# The tests read the programs of tests/verify and examples/ from SP_SOURCE_DIR.
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/src/tests" "$out/src"
cp -r "$src/tests/verify" "$out/src/tests/"
cp -r "$src/examples" "$out/src/"
cp "$src/bench/torch_llama_layer.py" "$out/"

size() { du -sb "$out" | cut -f1; }
if [[ -x $build/tools/shardproof ]]; then
  before=$(size)
  saved=$(mktemp -d)
  cp -r "$out/lib/." "$saved/"
  copy_bin "$build/tools/shardproof"
  if (($(size) > limit)); then
    rm -f "$out/bin/shardproof"
    rm -rf "$out/lib" && mkdir -p "$out/lib" && cp -r "$saved/." "$out/lib/"
    echo "note: shardproof (with Z3 and its libraries) would make the bundle $(( $(size) / 1048576 )) MiB+; left out" >&2
  fi
  rm -rf "$saved"
  : "$before"
fi

cat >"$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the CUDA tests (the gtest binary directly, no ctest), then the
# benchmarks (bench_exec --cuda 1, then PyTorch's layer if torch imports).
# CUDA libraries (cuBLAS, NCCL) come from this machine: CUDA_HOME/lib64, or
# the nvidia-* wheels PyTorch installs.
#   ./run.sh [--tests-only | --bench-only] [bench_exec args...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda_libs=${CUDA_HOME:-/usr/local/cuda}/lib64
for d in $(python3 - <<'PY' 2>/dev/null
import glob, os, site
for p in site.getsitepackages():
    for lib in glob.glob(os.path.join(p, "nvidia", "*", "lib")):
        print(lib)
PY
); do cuda_libs="$cuda_libs:$d"; done
export LD_LIBRARY_PATH="$here/lib:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SP_SOURCE_DIR="$here/src" SP_DIST_DRIVER="$here/bin/cuda_dist_driver"
mode=all
case "${1:-}" in --tests-only) mode=tests; shift ;; --bench-only) mode=bench; shift ;; esac
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
rc=0
if [[ $mode != bench ]]; then
  echo "== cuda_exec_tests"
  (cd "$here/bin" && ./cuda_exec_tests --gtest_color=no) || rc=1
fi
if [[ $mode != tests ]]; then
  echo "== bench_exec --cuda 1 $*"
  "$here/bin/bench_exec" --cuda 1 "$@" || rc=1
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== torch_llama_layer.py"
    python3 "$here/torch_llama_layer.py" || rc=1
  else
    echo "== torch_llama_layer.py skipped: no torch with CUDA"
  fi
fi
exit $rc
EOF
chmod +x "$out/run.sh"
total=$(size)
echo "bundle: $out, $((total / 1048576)) MiB ($total bytes)"
ls -la "$out/bin" "$out/lib" | sed 's/^/  /'
if ((total > limit)); then
  echo "error: the bundle is over 60 MiB" >&2
  exit 1
fi
