#!/usr/bin/env python3
"""Random layouts of random small models through `shardproof parallelize --verify`.

Each case draws a model (Llama-style GQA, GPT-2, Mixtral or Qwen2-MoE, with
random hidden size, heads, KV heads, ffn, vocab, layers, experts) and a
layout (tp, cp, pp, dp, ep; micro-batches, load-balanced chunks, sequence
parallel off, batch 2, MLP-only blocks, training step), writes the config,
and runs `shardproof parallelize ... --verify`. Correct programs generated
this way must verify: an `inconclusive` row is a rule that does not
generalize yet (`refused` rows are layouts parallelize rejects, with its
reason). Heads divide tp, and KV heads divide tp or tp divides them (what
Megatron-LM and vLLM accept).

Prints CSV: id,model,hidden,heads,kv_heads,layers,experts,plan,flags,verdict,seconds,peak_rss_mb,reason

  bench/sweep_parallelize.py [--binary build/tools/shardproof] [--seed 0] [--count 40]
                             [--timeout 120] [--keep DIR]
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time


def model_config(rng, kind):
    hd = rng.choice([8, 16, 32])
    heads = rng.choice([4, 6, 8, 12, 16])
    kv = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
    h = heads * hd
    ffn = rng.choice([2, 3, 4]) * h
    vocab = rng.choice([96, 128, 250, 384])
    layers = rng.choice([1, 2, 3, 4])
    if kind == "gpt2":
        return ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": h, "n_head": heads,
                 "n_layer": layers, "vocab_size": vocab, "n_positions": 4096, "n_inner": ffn,
                 "layer_norm_epsilon": 1e-5}, h, heads, heads, layers, 0)
    c = {"model_type": kind, "hidden_size": h, "num_attention_heads": heads, "num_key_value_heads": kv,
         "intermediate_size": ffn, "num_hidden_layers": layers, "vocab_size": vocab,
         "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
         "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    experts = 0
    if kind == "mixtral":
        experts = rng.choice([2, 4, 8])
        c.update(num_local_experts=experts, num_experts_per_tok=2, architectures=["MixtralForCausalLM"])
    elif kind == "qwen2_moe":
        experts = rng.choice([4, 8])
        c.update(num_experts=experts, num_experts_per_tok=2, moe_intermediate_size=h,
                 shared_expert_intermediate_size=2 * h, architectures=["Qwen2MoeForCausalLM"])
    else:
        c["architectures"] = ["LlamaForCausalLM"]
    return c, h, heads, kv, layers, experts


def layout(rng, heads, kv, layers, experts):
    tp = rng.choice([d for d in [1, 2, 3, 4, 6, 8] if heads % d == 0 and (kv % d == 0 or d % kv == 0)])
    cp = rng.choice([1, 1, 2, 3, 4])
    pp = rng.choice([d for d in [1, 1, 2, 3, 4] if layers % d == 0])
    ep = rng.choice([d for d in [1, 2, 4] if experts % d == 0]) if experts else 1
    dp = rng.choice([1, 1, 2]) * ep
    plan = f"tp={tp},cp={cp},pp={pp},dp={dp}" + (f",ep={ep}" if ep > 1 else "")
    # seq: whole load-balanced halves per cp rank, each a multiple of tp (sequence parallel)
    flags = ["--seq", str(2 * cp * tp * rng.choice([1, 2, 3])), "--layers", str(layers)]
    # (the backward with tp above the KV heads is refused, as Megatron does:
    # not drawn, so every row is a layout parallelize builds)
    if rng.random() < 0.5 and tp <= kv:
        flags.append("--backward")
    mb = rng.choice([1, 1, 2, 3, 4])
    if pp > 1 and rng.random() < 0.8:
        mb = max(mb, pp)
    if mb > 1:
        flags += ["--micro-batches", str(mb)]
    if cp > 1 and rng.random() < 0.5:
        flags += ["--cp-chunks", "balanced"]
    if tp > 1 and rng.random() < 0.3:
        flags += ["--sequence-parallel", "off"]
    if rng.random() < 0.2:
        flags += ["--batch", "2"]
    if rng.random() < 0.2:
        flags += ["--blocks", "mlp"]
    return plan, flags


def run(cmd, timeout):
    """(returncode or None on timeout, output, seconds, peak RSS of this child in MB)."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode < 0:
        return None, out, time.time() - t0, 0.0
    return p.returncode, out, time.time() - t0, usage.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/tools/shardproof")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--keep", help="keep each case's config and program under DIR/<id>")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit(f"sweep_parallelize: no shardproof binary at {a.binary} (--binary)")
    rng = random.Random(a.seed)
    w = csv.writer(sys.stdout)
    w.writerow(["id", "model", "hidden", "heads", "kv_heads", "layers", "experts", "plan", "flags", "verdict",
                "seconds", "peak_rss_mb", "reason"])
    root = a.keep or tempfile.mkdtemp(prefix="sweep_parallelize.")
    for i in range(a.count):
        kind = rng.choice(["llama", "llama", "gpt2", "mixtral", "qwen2_moe"])
        cfg, h, heads, kv, layers, experts = model_config(rng, kind)
        plan, flags = layout(rng, heads, kv, layers, experts)
        d = os.path.join(root, str(i))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        cmd = [a.binary, "parallelize", "--model", os.path.join(d, "config.json"), "--plan", plan,
               "--out", os.path.join(d, "out"), "--verify"] + flags
        rc, out, secs, rss = run(cmd, a.timeout)
        lines = out.splitlines()
        verdict = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("verdict:")), "")
        reason = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("reason:")), "")
        if rc is None:
            verdict, reason = "timeout", f"over {a.timeout:g} s"
        elif rc == 3:
            verdict = "refused"
            reason = next((l for l in lines if "error" in l), out.strip()[-200:])
        w.writerow([i, kind, h, heads, kv, layers, experts, plan, " ".join(flags), verdict or f"rc {rc}",
                    f"{secs:.2f}", f"{rss:.0f}", reason[:300]])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
