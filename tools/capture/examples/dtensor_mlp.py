"""A SwiGLU feed-forward block (torchtitan's FeedForward: w2(silu(w1 x) * w3 x)),
or with `--block attention` causal multi-head attention (wq, wk, wv, wo),
tensor-parallel the way PyTorch itself does it: DTensor and
torch.distributed.tensor.parallel.parallelize_module (ColwiseParallel for w1
and w3, RowwiseParallel for w2), on CPU gloo process groups, captured per
rank with shardproof_capture (torch 2.x: Dynamo + AOTAutograd see through
DTensor and print its collectives as functional ones).

    python3 tools/capture/examples/dtensor_mlp.py --world-size 4 --out OUT [--joint] [--sequence-parallel]

writes OUT/seq.py (or seq.fw.py + seq.bw.py with --joint), OUT/dist/ (or
dist/fw/ + dist/bw/) and OUT/mesh.txt, like tp_blocks.py. The module's
weights are passed as inputs (torch.func.functional_call; DTensors in D,
which AOTAutograd flattens to each rank's local shard), in the same order
in S and D. `--sequence-parallel` adds an RMSNorm before the block and
parallelizes it as torchtitan does: the norm SequenceParallel (tokens
split over the ranks), w1/w3 gathering them (input_layouts=Shard(1)), w2
reduce-scattering its output back to tokens (output_layouts=Shard(1)).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shardproof_capture as spc  # noqa: E402

DIM, HIDDEN, BATCH, SEQ = 16, 48, 2, 8


class Block(torch.nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.norm = torch.nn.RMSNorm(DIM, eps=1e-5) if norm else None
        self.w1 = torch.nn.Linear(DIM, HIDDEN, bias=False)
        self.w2 = torch.nn.Linear(HIDDEN, DIM, bias=False)
        self.w3 = torch.nn.Linear(DIM, HIDDEN, bias=False)

    def forward(self, x):
        h = self.norm(x) if self.norm is not None else x
        return self.w2(torch.nn.functional.silu(self.w1(h)) * self.w3(h))


class Attention(torch.nn.Module):
    """torchtitan's Attention without rotary: causal multi-head attention,
    HEADS heads of DIM / HEADS, the heads split by ColwiseParallel wq/wk/wv
    (each rank viewing its own columns as its heads) and joined by
    RowwiseParallel wo."""

    def __init__(self, norm):
        super().__init__()
        self.norm = torch.nn.RMSNorm(DIM, eps=1e-5) if norm else None
        self.wq = torch.nn.Linear(DIM, DIM, bias=False)
        self.wk = torch.nn.Linear(DIM, DIM, bias=False)
        self.wv = torch.nn.Linear(DIM, DIM, bias=False)
        self.wo = torch.nn.Linear(DIM, DIM, bias=False)

    def forward(self, x):
        h = self.norm(x) if self.norm is not None else x
        b, s, _ = h.shape
        hd = DIM // HEADS

        def heads(t):  # the rank's columns as its heads: [b, s, heads, hd] -> [b, heads, s, hd]
            return t.view(b, s, -1, hd).transpose(1, 2)

        q, k, v = heads(self.wq(h)), heads(self.wk(h)), heads(self.wv(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / hd ** 0.5
        causal = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        p = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        o = torch.matmul(p, v).transpose(1, 2).reshape(b, s, -1)
        return self.wo(o)


HEADS = 4
BLOCK = {"mlp": Block, "attention": Attention}


def model(sp, block="mlp"):
    torch.manual_seed(1234)  # the same full weights on every rank and in S
    m = BLOCK[block](sp)
    with torch.no_grad():
        if m.norm is not None:
            m.norm.weight.copy_(torch.rand(DIM) + 0.5)
    return m


def rank_main(rank, world, out, joint, sp, block="mlp"):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
    g = torch.Generator().manual_seed(7)
    x = torch.randn(BATCH, SEQ, DIM, generator=g)
    seq_model = model(sp, block)
    tp_model = model(sp, block)
    cols, row = (["w1", "w3"], "w2") if block == "mlp" else (["wq", "wk", "wv"], "wo")
    if sp:
        plan = {c: ColwiseParallel(input_layouts=Shard(1)) for c in cols}
        plan.update({"norm": SequenceParallel(), row: RowwiseParallel(output_layouts=Shard(1))})
    else:
        plan = {c: ColwiseParallel() for c in cols}
        plan[row] = RowwiseParallel()
    parallelize_module(tp_model, mesh, plan)
    # (with sequence parallel each rank holds its tokens of x and of y)
    x_local = x.chunk(world, 1)[rank].contiguous() if sp else x
    with torch.no_grad():
        got, want = tp_model(x_local), seq_model(x)
        want_local = want.chunk(world, 1)[rank] if sp else want
        if not torch.allclose(got, want_local, atol=1e-5):
            raise SystemExit("rank %d: DTensor block differs from sequential by %g"
                             % (rank, (got - want_local).abs().max()))
    # The weights as explicit inputs (torch.func.functional_call), in one
    # order in S and D: Dynamo would lift them in the order each graph
    # first uses them, and the positional names (primals_N) would then name
    # different weights in S and D.
    def inputs(m, x):
        d = {"x": x}
        d.update({k.replace(".", "_"): v for k, v in sorted(m.named_parameters())})
        return d

    def block_fn(m):
        keys = {k.replace(".", "_"): k for k, _ in m.named_parameters()}

        def fn(x, **w):
            return torch.func.functional_call(m, {keys[k]: v for k, v in w.items()}, (x,))
        return fn

    seq_in, tp_in = inputs(seq_model, x), inputs(tp_model, x_local)
    grad = list(seq_in.keys()) if joint else None
    header = ("SwiGLU" if block == "mlp" else "attention") + " block, %s (tools/capture/examples/dtensor_mlp.py)"
    if rank == 0:
        spc.capture_seq(block_fn(seq_model), seq_in, os.path.join(out, "seq.py"), grad=grad,
                        header=header % ("sequential" + (", training step" if joint else "")))
    groups = spc.capture_rank(block_fn(tp_model), tp_in, os.path.join(out, "dist"), "block", grad=grad,
                              header=header % ("DTensor TP %d%s, rank %d" % (world, ", sequence parallel" if sp else "",
                                                                             rank)))
    spc.write_mesh(os.path.join(out, "mesh.txt"), groups, axes=[("tp", world)])
    if rank == 0:
        print("captured DTensor %s tp=%d%s -> %s" % (block, world, " (training step)" if joint else "", out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--joint", action="store_true", help="capture a training step")
    ap.add_argument("--sequence-parallel", action="store_true")
    ap.add_argument("--block", choices=["mlp", "attention"], default="mlp")
    a = ap.parse_args()
    if not spc.TORCH2:
        ap.error("DTensor capture needs torch 2.x (this is %s)" % torch.__version__)
    width = HIDDEN if a.block == "mlp" else HEADS
    if a.world_size < 1 or width % a.world_size or (a.sequence_parallel and SEQ % a.world_size):
        ap.error("--world-size must divide the %s's %d %s (and the sequence %d with --sequence-parallel)"
                 % (a.block, width, "ffn columns" if a.block == "mlp" else "heads", SEQ))
    spc.launch(a.world_size, rank_main, a.out, a.joint, a.sequence_parallel, a.block)


if __name__ == "__main__":
    main()
