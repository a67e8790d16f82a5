#!/usr/bin/env python3
"""The Llama-3-8B decoder layer of bench_exec --cuda 1 in PyTorch eager, bf16.

Same shapes and formulation: hidden 4096, 32 heads, 8 KV heads, head dim
128, ffn 14336, RMSNorm (eps 1e-5), rotate-half rotary from cos/sin inputs,
GQA by expanding K/V, causal attention unfused (matmul, scale, mask by
where(row >= col), softmax, matmul), SiLU-gated MLP, batch 1. Also the same
layer with torch's scaled_dot_product_attention (is_causal=True), reported
as a separate cell. Times: CUDA events, mean of --iters after --warmup.
TFLOP/s uses the same count as bench_exec (the full T x T score and AV
matmuls, projections, MLP) for both cells. Prints CSV:
  cell,tp,seq,dtype,ranks_per_gpu,ms,tflops,bytes,algbw_gbs,busbw_gbs,host_fallbacks,note
Usage: python3 bench/torch_llama_layer.py [--seq 8192] [--warmup 2] [--iters 5]
"""
import argparse

import torch

H, NH, NKV, HD, F = 4096, 32, 8, 128, 14336


def rms_norm(x, g, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * g


def rope(t, cos, sin):
    t1, t2 = t[..., : HD // 2], t[..., HD // 2 :]
    return t * cos + torch.cat((-t2, t1), dim=-1) * sin


def layer(p, x, cos, sin, causal, sdpa):
    T = x.shape[0]
    n1 = rms_norm(x, p["g1"])
    q = (n1 @ p["wq"]).view(T, NH, HD)
    k = (n1 @ p["wk"]).view(T, NKV, HD)
    v = (n1 @ p["wv"]).view(T, NKV, HD)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    k = k.unsqueeze(2).expand(T, NKV, NH // NKV, HD).reshape(T, NH, HD)
    v = v.unsqueeze(2).expand(T, NKV, NH // NKV, HD).reshape(T, NH, HD)
    qh, kh, vh = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    if sdpa:
        a = torch.nn.functional.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
    else:
        s = (qh @ kh.transpose(1, 2)) * (HD ** -0.5)
        s = torch.where(causal, s, torch.tensor(-1e30, dtype=s.dtype, device=s.device))
        a = torch.softmax(s, dim=-1) @ vh
    a = a.transpose(0, 1).reshape(T, NH * HD)
    r1 = x + a @ p["wo"]
    n2 = rms_norm(r1, p["g2"])
    return r1 + (torch.nn.functional.silu(n2 @ p["wg"]) * (n2 @ p["wu"])) @ p["wd"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    a = ap.parse_args()
    dev, dt, T = "cuda", torch.bfloat16, a.seq
    torch.manual_seed(1)
    shapes = {"g1": (H,), "g2": (H,), "wq": (H, NH * HD), "wk": (H, NKV * HD), "wv": (H, NKV * HD),
              "wo": (NH * HD, H), "wg": (H, F), "wu": (H, F), "wd": (F, H)}
    p = {n: (torch.randn(s, device=dev, dtype=torch.float32) * 0.02).to(dt) for n, s in shapes.items()}
    x = torch.randn(T, H, device=dev, dtype=dt)
    ang = torch.rand(T, 1, HD, device=dev)
    cos, sin = ang.cos().to(dt), ang.sin().to(dt)
    pos = torch.arange(T, device=dev, dtype=torch.float32)
    causal = pos.view(T, 1) >= pos.view(1, T)
    flops = 2 * T * (H * NH * HD + 2 * H * NKV * HD + NH * HD * H + 3 * H * F) + 2 * 2 * NH * T * T * HD
    print("cell,tp,seq,dtype,ranks_per_gpu,ms,tflops,bytes,algbw_gbs,busbw_gbs,host_fallbacks,note")
    for sdpa in (False, True):
        with torch.no_grad():
            for _ in range(a.warmup):
                layer(p, x, cos, sin, causal, sdpa)
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(a.iters):
                layer(p, x, cos, sin, causal, sdpa)
            stop.record()
            torch.cuda.synchronize()
        ms = start.elapsed_time(stop) / a.iters
        cell = "torch_llama3_8b_layer_sdpa" if sdpa else "torch_llama3_8b_layer_unfused"
        note = "sdpa (flash) skips masked blocks: tflops over the unfused count" if sdpa else "torch eager"
        print(f"{cell},1,{T},bf16,1,{ms:.3f},{flops / (ms * 1e9):.1f},,,,none,{note}", flush=True)


if __name__ == "__main__":
    main()
