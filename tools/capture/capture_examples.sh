#!/usr/bin/env bash
# Captures the example TP blocks (tools/capture/examples/tp_blocks.py) in
# every variant this torch supports, into OUT/<block>_tp<N>[_variant]/.
# Forward captures run on any torch; training steps (--joint) need torch 2.x.
#   tools/capture/capture_examples.sh OUT [PYTHON]
set -euo pipefail
out=${1:?usage: capture_examples.sh OUT [PYTHON]}
py=${2:-python3}
here="$(cd "$(dirname "$0")" && pwd)"
joint=$("$py" -c 'import torch; print(int(torch.__version__.split(".")[0]) >= 2)')
for block in mlp attention; do
  for n in 2 4; do
    "$py" "$here/examples/tp_blocks.py" --block $block --world-size $n --out "$out/${block}_tp$n"
    "$py" "$here/examples/tp_blocks.py" --block $block --world-size $n --out "$out/${block}_tp${n}_twin" --drop-collective
    if [ "$joint" = True ]; then
      "$py" "$here/examples/tp_blocks.py" --block $block --world-size $n --out "$out/${block}_tp${n}_joint" --joint
      "$py" "$here/examples/tp_blocks.py" --block $block --world-size $n --out "$out/${block}_tp${n}_joint_twin" \
        --joint --drop-backward-collective
    fi
  done
done
