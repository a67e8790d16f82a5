"""A Llama decoder block (RMSNorm, rotary, grouped-query causal attention,
SwiGLU MLP) in Megatron's tensor parallel layout, run on CPU gloo process
groups and captured per rank with shardproof_capture.

    python3 tools/capture/examples/llama_block.py --world-size 4 --out OUT [--joint]
        [--sizes HIDDEN,HEADS,KV_HEADS,FFN]

writes OUT/seq.py (or seq.fw.py + seq.bw.py with --joint), OUT/dist/ (or
dist/fw/ + dist/bw/) and OUT/mesh.txt, like tp_blocks.py. Q heads are split
over the ranks; KV heads are split too while the world size divides them,
and replicated (rank r holds KV head r // (world / kv_heads)) when it
exceeds them. `--drop-collective` leaves out the attention's all_reduce (a
broken twin); `--drop-backward-collective` (with --joint) the all_reduce of
the input gradient of the MLP's region. `--merged` uses vLLM's layout: one
QKV projection (QKVParallelLinear: rank r holds [q_r | k_r | v_r]) whose
output is split into q, k and v, and one gate_up projection
(MergedColumnParallelLinear: [gate_r | up_r]) whose output is chunked in two.
`--qkv-bias` adds Qwen2's q, k and v biases (merged with --merged, sharded
like their weights).
"""
import functools

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shardproof_capture as spc  # noqa: E402
from tp_blocks import regions  # noqa: E402

HIDDEN, HEADS, KV_HEADS, FFN, BATCH, SEQ, EPS = 32, 8, 4, 64, 2, 6, 1e-5
# --sizes reaches the spawned ranks through the environment (they import
# this module afresh).
if os.environ.get("SP_LLAMA_BLOCK_SIZES"):
    HIDDEN, HEADS, KV_HEADS, FFN = (int(v) for v in os.environ["SP_LLAMA_BLOCK_SIZES"].split(","))
HEAD_DIM = HIDDEN // HEADS


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def rotate_half(t):
    a, b = t[..., : t.shape[-1] // 2], t[..., t.shape[-1] // 2:]
    return torch.cat((-b, a), dim=-1)


def block(x, ln1, wo, ln2, wd, cos, sin, wq=None, wk=None, wv=None, wg=None, wu=None, wqkv=None, wgu=None,
          bq=None, bk=None, bv=None, bqkv=None, qkv_sizes=None, copy_to=None, reduce_from=None, reduce_mlp=None):
    ident = (lambda t: t)  # `is None`, not `or`: Dynamo cannot take the truth of a Function's apply
    copy_to = ident if copy_to is None else copy_to
    reduce_from = ident if reduce_from is None else reduce_from
    reduce_mlp = reduce_from if reduce_mlp is None else reduce_mlp
    b, s, _ = x.shape
    h = copy_to(rms_norm(x, ln1))
    if wqkv is not None:  # vLLM: one projection, its output split
        q, k, v = torch.nn.functional.linear(h, wqkv, bqkv).split(qkv_sizes, dim=-1)
    else:
        q, k, v = (torch.nn.functional.linear(h, w, b) for w, b in ((wq, bq), (wk, bk), (wv, bv)))
    q = q.view(b, s, -1, HEAD_DIM).transpose(1, 2)
    k = k.view(b, s, -1, HEAD_DIM).transpose(1, 2)
    v = v.view(b, s, -1, HEAD_DIM).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    rep = q.shape[1] // k.shape[1]  # query heads per KV head on this rank
    k = k[:, :, None].expand(b, k.shape[1], rep, s, HEAD_DIM).reshape(b, -1, s, HEAD_DIM)
    v = v[:, :, None].expand(b, v.shape[1], rep, s, HEAD_DIM).reshape(b, -1, s, HEAD_DIM)
    mask = torch.full((s, s), float("-inf")).triu(1)
    p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HEAD_DIM) + mask, dim=-1)
    o = (p @ v).transpose(1, 2).reshape(b, s, -1)
    x = x + reduce_from(torch.nn.functional.linear(o, wo))
    h2 = copy_to(rms_norm(x, ln2))
    if wgu is not None:
        gate, up = torch.nn.functional.linear(h2, wgu).chunk(2, dim=-1)
    else:
        gate, up = torch.nn.functional.linear(h2, wg), torch.nn.functional.linear(h2, wu)
    m = torch.nn.functional.silu(gate) * up
    return x + reduce_mlp(torch.nn.functional.linear(m, wd))


def full_params(bias=False):
    g = torch.Generator().manual_seed(4321)

    def r(*shape, scale=0.3):
        return torch.randn(*shape, generator=g) * scale

    pos = torch.arange(SEQ, dtype=torch.float32)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
    ang = torch.cat((pos * inv, pos * inv), dim=-1)
    out = {"x": r(BATCH, SEQ, HIDDEN, scale=1.0), "ln1": 1 + r(HIDDEN, scale=0.1),
            "wq": r(HEADS * HEAD_DIM, HIDDEN), "wk": r(KV_HEADS * HEAD_DIM, HIDDEN),
            "wv": r(KV_HEADS * HEAD_DIM, HIDDEN), "wo": r(HIDDEN, HEADS * HEAD_DIM),
            "ln2": 1 + r(HIDDEN, scale=0.1), "wg": r(FFN, HIDDEN), "wu": r(FFN, HIDDEN), "wd": r(HIDDEN, FFN),
            "cos": torch.cos(ang), "sin": torch.sin(ang)}
    if bias:
        out.update({"bq": r(HEADS * HEAD_DIM), "bk": r(KV_HEADS * HEAD_DIM), "bv": r(KV_HEADS * HEAD_DIM)})
    return out


def shard(params, rank, world):
    out = dict(params)
    for k in ("wq", "wg", "wu"):
        out[k] = params[k].chunk(world, 0)[rank].contiguous()
    for k in ("wo", "wd"):
        out[k] = params[k].chunk(world, 1)[rank].contiguous()
    if world <= KV_HEADS:
        kv = lambda w: w.chunk(world, 0)[rank].contiguous()  # noqa: E731
    else:  # each KV head held by world / KV_HEADS ranks
        kv = lambda w: w.chunk(KV_HEADS, 0)[rank // (world // KV_HEADS)].contiguous()  # noqa: E731
    out["wk"], out["wv"] = kv(params["wk"]), kv(params["wv"])
    if "bq" in params:
        out["bq"] = params["bq"].chunk(world, 0)[rank].contiguous()
        out["bk"], out["bv"] = kv(params["bk"]), kv(params["bv"])
    return out


def merged(params):
    """vLLM's merged projections: [q | k | v] and [gate | up] (of a rank's
    shards, on a rank), and the split sizes of the QKV output."""
    out = {k: v for k, v in params.items() if k not in ("wq", "wk", "wv", "wg", "wu", "bq", "bk", "bv")}
    out["wqkv"] = torch.cat((params["wq"], params["wk"], params["wv"]), 0).contiguous()
    if "bq" in params:
        out["bqkv"] = torch.cat((params["bq"], params["bk"], params["bv"]), 0).contiguous()
    out["wgu"] = torch.cat((params["wg"], params["wu"]), 0).contiguous()
    sizes = [params["wq"].shape[0], params["wk"].shape[0], params["wv"].shape[0]]
    return out, sizes


def rank_main(rank, world, out, drop, joint, drop_bwd, merge=False, bias=False):
    full = full_params(bias)
    tp = dist.new_group(list(range(world)))
    local = shard(full, rank, world)
    seq_fn = block
    dist_block = block
    if merge:
        full, full_sizes = merged(full)
        local, local_sizes = merged(local)
        seq_fn = functools.partial(block, qkv_sizes=full_sizes)
        dist_block = functools.partial(block, qkv_sizes=local_sizes)
    copy_to, reduce_from = regions(tp, False, drop_bwd)
    _, reduce_attn = regions(tp, drop, False)
    # The twin drops the attention's forward all_reduce or the backward
    # all_reduce of every copy_to region.

    def dist_fn(**kw):
        return dist_block(copy_to=copy_to, reduce_from=reduce_attn, reduce_mlp=reduce_from, **kw)

    if not drop and not drop_bwd:
        with torch.no_grad():
            got, want = dist_fn(**local), seq_fn(**full)
        if not torch.allclose(got, want, atol=1e-4):
            raise SystemExit("rank %d: distributed block differs from sequential by %g" % (rank, (got - want).abs().max()))
    grad = [k for k in full if k not in ("cos", "sin")] if joint else None
    what = ", ".join(w for w, on in (("training step", joint), ("attention all_reduce dropped", drop),
                                     ("backward all_reduce dropped", drop_bwd)) if on)
    if rank == 0:
        spc.capture_seq(seq_fn, full, os.path.join(out, "seq.py"), grad=grad,
                        header="llama block, sequential%s%s (tools/capture/examples/llama_block.py)"
                        % (", training step" if joint else "", ", vLLM merged projections" if merge else ""))
    groups = spc.capture_rank(dist_fn, local, os.path.join(out, "dist"), "llama", grad=grad,
                              header="llama block, TP %d, rank %d%s%s (tools/capture/examples/llama_block.py)"
                              % (world, rank, ", " + what if what else "", ", vLLM merged projections" if merge else ""))
    spc.write_mesh(os.path.join(out, "mesh.txt"), groups, axes=[("tp", world)])
    if rank == 0:
        print("captured llama block tp=%d%s -> %s" % (world, " (" + what + ")" if what else "", out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--drop-collective", action="store_true")
    ap.add_argument("--joint", action="store_true", help="capture a training step (torch 2.x)")
    ap.add_argument("--drop-backward-collective", action="store_true")
    ap.add_argument("--merged", action="store_true", help="vLLM's merged QKV and gate_up projections")
    ap.add_argument("--qkv-bias", action="store_true", help="Qwen2's q, k and v biases")
    ap.add_argument("--sizes", help="HIDDEN,HEADS,KV_HEADS,FFN (default %d,%d,%d,%d)" % (HIDDEN, HEADS, KV_HEADS, FFN))
    a = ap.parse_args()
    if a.sizes:
        try:
            sizes = [int(v) for v in a.sizes.split(",")]
        except ValueError:
            sizes = []
        if len(sizes) != 4 or min(sizes) < 1 or sizes[0] % sizes[1] or (sizes[0] // sizes[1]) % 2 or sizes[1] % sizes[2]:
            ap.error("--sizes must be four positive integers HIDDEN,HEADS,KV_HEADS,FFN: HEADS dividing HIDDEN into an "
                     "even head size, KV_HEADS dividing HEADS")
        os.environ["SP_LLAMA_BLOCK_SIZES"] = a.sizes
        globals().update(HIDDEN=sizes[0], HEADS=sizes[1], KV_HEADS=sizes[2], FFN=sizes[3])
    w = a.world_size
    if w < 1 or HEADS % w or FFN % w or (w > KV_HEADS and w % KV_HEADS) or (w <= KV_HEADS and KV_HEADS % w):
        ap.error("--world-size must divide %d heads and %d ffn, and divide or be a multiple of %d KV heads"
                 % (HEADS, FFN, KV_HEADS))
    if a.drop_backward_collective and not a.joint:
        ap.error("--drop-backward-collective needs --joint")
    spc.launch(w, rank_main, a.out, a.drop_collective, a.joint, a.drop_backward_collective, a.merged, a.qkv_bias)


if __name__ == "__main__":
    main()
