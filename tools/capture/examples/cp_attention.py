"""Context-parallel causal attention (optionally with tensor parallelism),
run on CPU gloo process groups and captured per rank with shardproof_capture.

    /usr/bin/python3 tools/capture/examples/cp_attention.py --cp 2 --tp 2 --out OUT

Megatron-LM's context parallelism with the all-gather KV exchange (the
`a2a`-free "allgather" CP of Megatron-core and Llama 3): every rank holds
seq / cp consecutive rows of the sequence, [seq, batch, hidden] in
Megatron's layout. Q, K and V are projected locally; K and V are
all-gathered along seq over the cp group, and each rank's causal mask is
its own rows of the full mask (a slice whose start is affine in the cp
rank). With --tp, the projections are column parallel by heads and the
output projection row parallel, its partial sums all-reduced over tp; the
mesh is [cp, tp].

`--drop-collective` (a broken twin) uses each rank's local K and V with
the full mask's diagonal block, i.e. attention within the chunk only
(forgetting the exchange), and `--wrong-mask` keeps the exchange but
masks every rank with the first chunk's rows (the mask's offset not moved
by the rank). Each rank checks its result against the sequential block
before capturing (skipped for the twins).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shardproof_capture as spc  # noqa: E402

HIDDEN, HEADS, SEQ, BATCH = 16, 4, 8, 2


def attention(x, wq, wk, wv, wo, head_dim, rows=None, gather=None, reduce=None):
    """rows(mask): this rank's rows of the [seq, seq] causal mask; gather(t):
    the full sequence of a [s, b, h] tensor; reduce(y): the output
    projection's sum. None: the sequential block."""
    gather = gather or (lambda t: t)
    reduce = reduce or (lambda y: y)
    rows = rows or (lambda m: m)
    s, b, _ = x.shape
    q = torch.matmul(x, wq.t())
    k = gather(torch.matmul(x, wk.t()))
    v = gather(torch.matmul(x, wv.t()))
    heads = q.shape[-1] // head_dim
    sk = k.shape[0]
    q = q.reshape(s, b * heads, head_dim).transpose(0, 1)
    k = k.reshape(sk, b * heads, head_dim).transpose(0, 1)
    v = v.reshape(sk, b * heads, head_dim).transpose(0, 1)
    scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(head_dim))
    full = torch.triu(torch.ones(sk, sk, dtype=torch.bool), diagonal=1)
    p = torch.softmax(scores.masked_fill(rows(full), float("-inf")), dim=-1)
    ctx = torch.bmm(p, v).transpose(0, 1).reshape(s, b, heads * head_dim)
    return reduce(torch.matmul(ctx, wo.t()))


def full_params(hidden, seq, batch):
    g = torch.Generator().manual_seed(11)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.3

    return {"x": r(seq, batch, hidden), "wq": r(hidden, hidden), "wk": r(hidden, hidden),
            "wv": r(hidden, hidden), "wo": r(hidden, hidden)}


def rank_main(rank, world, sizes, cp, tp, out, variant):
    hidden, heads, seq, batch = sizes
    full = full_params(hidden, seq, batch)
    d = hidden // heads
    c, t = rank // tp, rank % tp  # mesh [cp, tp], row-major
    cp_groups = [dist.new_group([i * tp + j for i in range(cp)]) for j in range(tp)]
    tp_groups = [dist.new_group([i * tp + j for j in range(tp)]) for i in range(cp)]
    cpg, tpg = cp_groups[t], tp_groups[c]
    chunk = seq // cp
    local = {}
    for k, v in full.items():
        if k == "x":
            v = v[c * chunk:(c + 1) * chunk]
        elif k in ("wq", "wk", "wv"):
            v = v.chunk(tp, 0)[t]
        elif k == "wo":
            v = v.chunk(tp, 1)[t]
        local[k] = v.contiguous()

    def seq_fn(**kw):
        return attention(head_dim=d, **kw)

    def gather(x):
        return x if variant == "drop" or cp == 1 else spc.all_gather_into_tensor(x, cpg)

    def rows(m):
        if variant == "drop":  # local K, V only: the chunk-size mask, the full mask's diagonal block
            return m
        start = 0 if variant == "mask" else c * chunk
        return m[start:start + chunk]

    def reduce(y):
        return y if tp == 1 else spc.all_reduce(y, tpg)

    def dist_fn(**kw):
        return attention(head_dim=d, rows=rows, gather=gather, reduce=reduce, **kw)

    if variant == "ok":
        with torch.no_grad():
            got, want = dist_fn(**local), seq_fn(**full)[c * chunk:(c + 1) * chunk]
        if not torch.allclose(got, want, atol=1e-4):
            raise SystemExit("rank %d: distributed block differs from sequential by %g"
                             % (rank, (got - want).abs().max()))
    if rank == 0:
        spc.capture_seq(seq_fn, full, os.path.join(out, "seq.py"),
                        header="causal attention, sequential (tools/capture/examples/cp_attention.py)")
    groups = spc.capture_rank(dist_fn, local, os.path.join(out, "dist"), "attention",
                              header="causal attention, cp %d x tp %d, rank %d%s "
                                     "(tools/capture/examples/cp_attention.py)"
                                     % (cp, tp, rank, {"ok": "", "drop": ", no KV exchange",
                                                       "mask": ", mask not offset"}[variant]))
    spc.write_mesh(os.path.join(out, "mesh.txt"), groups, axes=[("cp", cp), ("tp", tp)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cp", type=int, required=True)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--drop-collective", action="store_true")
    ap.add_argument("--wrong-mask", action="store_true")
    ap.add_argument("--sizes", help="HIDDEN,HEADS,SEQ,BATCH (default %d,%d,%d,%d)" % (HIDDEN, HEADS, SEQ, BATCH))
    a = ap.parse_args()
    sizes = tuple(int(v) for v in a.sizes.split(",")) if a.sizes else (HIDDEN, HEADS, SEQ, BATCH)
    hidden, heads, seq, _ = sizes
    if a.cp < 1 or a.tp < 1 or seq % a.cp or heads % a.tp or hidden % heads:
        ap.error("--cp must divide the sequence and --tp the heads")
    variant = "drop" if a.drop_collective else "mask" if a.wrong_mask else "ok"
    spc.launch(a.cp * a.tp, rank_main, sizes, a.cp, a.tp, a.out, variant)


if __name__ == "__main__":
    main()
