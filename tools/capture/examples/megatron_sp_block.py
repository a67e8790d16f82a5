"""A transformer block in Megatron-LM's layout, [seq, batch, hidden], with
sequence parallelism, run on CPU gloo process groups and captured per rank
with shardproof_capture.

    /usr/bin/python3 tools/capture/examples/megatron_sp_block.py --world-size 4 --out OUT

The block: RMSNorm, a fused QKV projection with Megatron's per-head row
order [heads, (q, k, v), head_dim], attention over [seq, batch*heads,
head_dim] with `baddbmm` and a causal `masked_fill` (core_attention in
Megatron's dot_product_attention.py), the output projection, a residual, and
a SwiGLU MLP. With `--sequence-parallel` (the default) each rank holds its
seq / world rows of the residual stream: an all_gather along seq before each
column-parallel projection and a reduce_scatter along seq after each
row-parallel one (Megatron's gather_from / reduce_scatter_to sequence-parallel
region); with `--no-sequence-parallel`, all_reduces on a replicated stream.

`--drop-collective` (a broken twin) replaces the attention's reduce_scatter
by each rank's own rows of its partial sums, `torch.split(y, rows)[rank]`
(Megatron's scatter idiom without the reduce), or drops the all_reduce.
Each rank checks its result against the sequential block before capturing
(skipped for the twin).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shardproof_capture as spc  # noqa: E402

HIDDEN, HEADS, FFN, SEQ, BATCH = 16, 4, 24, 8, 2


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def block(x, ln1, wqkv, wo, ln2, wg, wu, wd, head_dim, gather=None, reduce=None, check=False):
    """gather(h): gather_from_sequence_parallel_region; reduce(y, attention):
    reduce(_scatter_to_sequence_parallel)_region, attention=True for the
    attention's. None: the sequential block."""
    gather = gather or (lambda h: h)
    reduce = reduce or (lambda y, attention: y)
    h = gather(rms_norm(x, ln1))
    s, b, _ = h.shape
    qkv = torch.matmul(h, wqkv.t())
    heads = qkv.shape[-1] // (3 * head_dim)
    q, k, v = torch.split(qkv.view(s, b, heads, 3 * head_dim), [head_dim] * 3, dim=-1)
    q = q.reshape(s, b * heads, head_dim).transpose(0, 1)
    k = k.reshape(s, b * heads, head_dim).transpose(0, 1)
    v = v.reshape(s, b * heads, head_dim).transpose(0, 1)
    if check:  # torch 1.13's CPU baddbmm with beta=0 now and then returns NaNs
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(head_dim)
    else:
        scores = torch.baddbmm(torch.zeros(b * heads, s, s), q, k.transpose(1, 2),
                               beta=0.0, alpha=1.0 / math.sqrt(head_dim))
    causal = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    p = torch.softmax(scores.masked_fill(causal, -10000.0), dim=-1)
    ctx = torch.bmm(p, v).transpose(0, 1).reshape(s, b, heads * head_dim)
    x = x + reduce(torch.matmul(ctx, wo.t()), True)
    h = gather(rms_norm(x, ln2))
    a = torch.nn.functional.silu(torch.matmul(h, wg.t())) * torch.matmul(h, wu.t())
    return x + reduce(torch.matmul(a, wd.t()), False)


def full_params(hidden, heads, ffn, seq, batch):
    g = torch.Generator().manual_seed(7)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.3

    d = hidden // heads
    # Megatron's fused QKV rows: [heads, (q, k, v), head_dim]
    wqkv = r(3, heads, d, hidden).transpose(0, 1).reshape(3 * hidden, hidden).contiguous()
    return {"x": r(seq, batch, hidden), "ln1": 1 + r(hidden), "wqkv": wqkv, "wo": r(hidden, hidden),
            "ln2": 1 + r(hidden), "wg": r(ffn, hidden), "wu": r(ffn, hidden), "wd": r(hidden, ffn)}


SPLIT = {"wqkv": 0, "wo": 1, "wg": 0, "wu": 0, "wd": 1}


def shard(params, rank, world, sp):
    out = {}
    for k, v in params.items():
        if k in SPLIT:
            out[k] = v.chunk(world, SPLIT[k])[rank].contiguous()
        elif k == "x" and sp:
            out[k] = v.chunk(world, 0)[rank].contiguous()
        else:
            out[k] = v
    return out


def rank_main(rank, world, sizes, out, sp, drop):
    hidden, heads, ffn, seq, batch = sizes
    full = full_params(*sizes)
    tp = dist.new_group(list(range(world)))
    local = shard(full, rank, world, sp)
    d = hidden // heads

    def seq_fn(check=False, **kw):
        return block(head_dim=d, check=check, **kw)

    def gather(h):
        return spc.all_gather_into_tensor(h, tp) if sp else h

    def reduce(y, attention):
        if drop and attention:  # the twin: its own rows of the partial sums, or nothing
            return torch.split(y, y.shape[0] // world, dim=0)[rank] if sp else y
        return spc.reduce_scatter_tensor(y, tp) if sp else spc.all_reduce(y, tp)

    def dist_fn(check=False, **kw):
        return block(head_dim=d, gather=gather, reduce=reduce, check=check, **kw)

    if not drop:
        with torch.no_grad():
            got, want = dist_fn(check=True, **local), seq_fn(check=True, **full)
        if sp:
            want = want.chunk(world, 0)[rank]
        if not torch.allclose(got, want, atol=1e-4):
            raise SystemExit("rank %d: distributed block differs from sequential by %g"
                             % (rank, (got - want).abs().max()))
    what = "sequence parallel" if sp else "tensor parallel"
    if rank == 0:
        spc.capture_seq(seq_fn, full, os.path.join(out, "seq.py"),
                        header="Megatron-layout block, sequential (tools/capture/examples/megatron_sp_block.py)")
    groups = spc.capture_rank(dist_fn, local, os.path.join(out, "dist"), "block",
                              header="Megatron-layout block, %s %d, rank %d%s "
                                     "(tools/capture/examples/megatron_sp_block.py)"
                                     % (what, world, rank, ", attention reduce dropped" if drop else ""))
    spc.write_mesh(os.path.join(out, "mesh.txt"), groups, axes=[("tp", world)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--drop-collective", action="store_true")
    ap.add_argument("--sizes", help="HIDDEN,HEADS,FFN,SEQ,BATCH (default %d,%d,%d,%d,%d)"
                    % (HIDDEN, HEADS, FFN, SEQ, BATCH))
    a = ap.parse_args()
    sizes = tuple(int(v) for v in a.sizes.split(",")) if a.sizes else (HIDDEN, HEADS, FFN, SEQ, BATCH)
    hidden, heads, ffn, seq, _ = sizes
    w = a.world_size
    if w < 1 or heads % w or ffn % w or hidden % heads or (a.sequence_parallel and seq % w):
        ap.error("--world-size must divide the heads and ffn (and seq with sequence parallel)")
    spc.launch(w, rank_main, sizes, a.out, a.sequence_parallel, a.drop_collective)


if __name__ == "__main__":
    main()
