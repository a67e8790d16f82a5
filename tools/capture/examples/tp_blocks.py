"""A hand-written tensor-parallel MLP and attention block, run on CPU gloo
process groups and captured per rank with shardproof_capture.

    /usr/bin/python3 tools/capture/examples/tp_blocks.py --block mlp --world-size 2 --out OUT

writes OUT/seq.py (the sequential block), OUT/dist/<block>.r<N>.py (one
graph per rank) and OUT/mesh.txt. `--drop-collective` leaves out the block's
all_reduce (a broken twin). Before capturing, each rank runs the block and
checks it against the sequential block (skipped for the twin).

`--joint` (torch 2.x) captures a training step instead: AOTAutograd's forward
and backward graphs (OUT/seq.fw.py, OUT/seq.bw.py, OUT/dist/fw/, OUT/dist/bw/),
with Megatron's conjugate regions: the input enters through `copy_to_region`
(identity forward, all_reduce of the gradient backward) and the output leaves
through `reduce_from_region` (all_reduce forward, identity backward).
`--drop-backward-collective` leaves out the backward all_reduce (the twin a
forward-only check cannot see).
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shardproof_capture as spc  # noqa: E402

HIDDEN, FFN, HEADS, BATCH, SEQ = 16, 48, 4, 2, 3
HEAD_DIM = HIDDEN // HEADS


def mlp(x, w1, b1, w2, b2, group=None, reduce=None):
    h = torch.nn.functional.gelu(torch.nn.functional.linear(x, w1, b1), approximate="tanh")
    y = torch.nn.functional.linear(h, w2)
    if reduce is not None:
        y = reduce(y, group)
    return y + b2


def attention(x, wq, bq, wk, bk, wv, bv, wo, bo, group=None, reduce=None):
    b, s, _ = x.shape

    def heads(t):  # [b, s, h*d] -> [b, h, s, d]
        return t.reshape(b, s, -1, HEAD_DIM).transpose(1, 2)

    q = heads(torch.nn.functional.linear(x, wq, bq))
    k = heads(torch.nn.functional.linear(x, wk, bk))
    v = heads(torch.nn.functional.linear(x, wv, bv))
    p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HEAD_DIM), dim=-1)
    o = torch.matmul(p, v).transpose(1, 2).reshape(b, s, -1)
    y = torch.nn.functional.linear(o, wo)
    if reduce is not None:
        y = reduce(y, group)
    return y + bo


def full_params(block):
    g = torch.Generator().manual_seed(1234)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.5

    x = r(BATCH, SEQ, HIDDEN)
    if block == "mlp":
        return {"x": x, "w1": r(FFN, HIDDEN), "b1": r(FFN), "w2": r(HIDDEN, FFN), "b2": r(HIDDEN)}
    return {"x": x, "wq": r(HIDDEN, HIDDEN), "bq": r(HIDDEN), "wk": r(HIDDEN, HIDDEN), "bk": r(HIDDEN),
            "wv": r(HIDDEN, HIDDEN), "bv": r(HIDDEN), "wo": r(HIDDEN, HIDDEN), "bo": r(HIDDEN)}


# Megatron layout: column parallel (dim 0) in, row parallel (dim 1) out.
SPLIT = {"w1": 0, "b1": 0, "w2": 1, "wq": 0, "bq": 0, "wk": 0, "bk": 0, "wv": 0, "bv": 0, "wo": 1}


def shard(params, rank, world):
    out = {}
    for k, v in params.items():
        out[k] = v.chunk(world, SPLIT[k])[rank].contiguous() if k in SPLIT else v
    return out


def regions(group, drop_fwd, drop_bwd):
    """Megatron's copy_to / reduce_from tensor-parallel regions as autograd
    functions over `group` (mpu/mappings.py)."""

    class CopyToRegion(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g if drop_bwd else spc.all_reduce(g, group)

    class ReduceFromRegion(torch.autograd.Function):
        @staticmethod
        def forward(ctx, y):
            return y.view_as(y) if drop_fwd else spc.all_reduce(y, group)

        @staticmethod
        def backward(ctx, g):
            return g

    return CopyToRegion.apply, ReduceFromRegion.apply


def rank_main(rank, world, block, out, drop, joint=False, drop_bwd=False):
    fn = mlp if block == "mlp" else attention
    full = full_params(block)
    tp = dist.new_group(list(range(world)))  # a group of its own, not WORLD's id
    local = shard(full, rank, world)
    grad = list(full.keys()) if joint else None
    if joint:
        copy_to, reduce_from = regions(tp, drop, drop_bwd)

        def dist_fn(x, **kw):
            return fn(copy_to(x), group=tp, reduce=lambda t, g: reduce_from(t), **kw)
    else:
        reduce = None if drop else (lambda t, g: spc.all_reduce(t, g))

        def dist_fn(**kw):
            return fn(group=tp, reduce=reduce, **kw)

    if not drop:  # the real distributed run equals the sequential block
        with torch.no_grad():
            got, want = dist_fn(**local), fn(**full)
        if not torch.allclose(got, want, atol=1e-5):
            raise SystemExit("rank %d: distributed %s differs from sequential by %g"
                             % (rank, block, (got - want).abs().max()))
    what = ", ".join(w for w, on in (("training step", joint), ("all_reduce dropped", drop),
                                     ("backward all_reduce dropped", drop_bwd)) if on)
    if rank == 0:
        spc.capture_seq(fn, full, os.path.join(out, "seq.py"), grad=grad,
                        header="%s block, sequential%s (tools/capture/examples/tp_blocks.py)"
                        % (block, ", training step" if joint else ""))
    t0 = time.time()
    groups = spc.capture_rank(dist_fn, local, os.path.join(out, "dist"), block, grad=grad,
                              header="%s block, TP %d, rank %d%s (tools/capture/examples/tp_blocks.py)"
                              % (block, world, rank, ", " + what if what else ""))
    spc.write_mesh(os.path.join(out, "mesh.txt"), groups, axes=[("tp", world)])
    if rank == 0:
        print("captured %s tp=%d in %.2f s -> %s" % (block, world, time.time() - t0, out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--block", choices=["mlp", "attention"], required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--drop-collective", action="store_true")
    ap.add_argument("--joint", action="store_true", help="capture a training step (torch 2.x)")
    ap.add_argument("--drop-backward-collective", action="store_true",
                    help="with --joint: leave out the all_reduce of the input gradient")
    a = ap.parse_args()
    if a.drop_backward_collective and not a.joint:
        ap.error("--drop-backward-collective needs --joint")
    if a.world_size < 1 or (a.block == "attention" and HEADS % a.world_size) or (a.block == "mlp" and FFN % a.world_size):
        ap.error("--world-size must divide the %s's %s" % (a.block, "%d heads" % HEADS if a.block == "attention" else "%d ffn" % FFN))
    spc.launch(a.world_size, rank_main, a.block, a.out, a.drop_collective, a.joint,
               a.drop_backward_collective)


if __name__ == "__main__":
    main()
