// Verification time and peak memory over the published grid (DESIGN.md,
// "Targets"): GPT-style (TP + sequence parallel) and Llama-style (GQA,
// RMSNorm, RoPE, SwiGLU; TP) transformer stacks at real model sizes, for
// tp x layers, in Megatron's [seq, batch, hidden] layout. CSV on stdout:
//   model,tp,layers,verdict,seconds,cpu_seconds,peak_rss_mb,seq_ops,dist_ops,lemmas_applied,memo_hits,reason
// The sequential graph, the per-rank distributed program and the relation
// file (with comprehensions) are generated as text and parsed. seconds is the
// wall time of verify(), cpu_seconds its user + system CPU time (all threads:
// on a loaded machine the wall time overstates the work). Each cell runs
// verify() in a forked child, so peak RSS is the cell's own; the lemma proof
// cache is warmed once first, in its own child (reported on stderr).
//
// Usage: bench_verify [--models gpt,llama,heads,dp,cp,dptp,ep,ring] [--tp 2,4,6,8] [--layers 1,2,4,8]
// (heads: Llama-style layers with one attention head (and KV head) per TP
//  rank, hidden 64 and ffn 256 per rank, so any TP degree builds: with
//  --blocks mlp an MLP stack;
//  dp: the data-parallel family, --tp giving the DP degrees; see generateDp;
//  dptp: an MLP stack on a [dp, tp = 8] mesh, --tp giving the world size; see generateDpTp;
//  cp: context-parallel attention, --tp giving the CP degrees; see generateCp;
//  ep: an expert-parallel MoE layer, --tp giving the EP degrees; see generateEp)
//                     [--blocks mlp|full] [--time-limit SECONDS]
//                     [--batch N] [--seq N] [--dump DIR] [--no-memo] [--no-fold]
//   --blocks mlp:  each layer is [norm + TP MLP + residual] (GPT: layer norm,
//                  GELU MLP, sequence parallel; Llama: RMSNorm, SwiGLU)
//   --blocks full: each layer is attention + MLP (default)
//   --layout sbh:  activations [seq, batch, hidden] (Megatron's layout; default)
//   --layout sh:   batch 1 folded away: activations [seq, hidden]
//   --rope megatron: Llama RoPE as Megatron-core's unfused
//                  _apply_rotary_pos_emb_bshd computes it (default): the
//                  angles freqs [s, 1, 1, hd] are an input; every q/k call
//                  takes cos(freqs), sin(freqs) and t*cos + rotate_half(t)*sin
//   --rope halves: vLLM's _apply_rotary_emb_torch (neox style): cos/sin of
//                  the half angles [s, 1, 1, hd/2] are inputs shared by all
//                  layers; x1*cos - x2*sin, x2*cos + x1*sin, concatenated
//   --dump DIR:    also write each cell's seq.sp, dist.sp, relations.rel
//   --no-memo:     layer memoization off (every S op saturated), for comparison
//   --no-fold:     rank folding off (rewrite/engine/fold.h): every rank's graph in
//                  the e-graph, for comparison
//   --twin:        each cell's twin instead: its last all_reduce replaced by
//                  identity (or its last reduce_scatter by the rank's own
//                  slice), which must come out refuted
//   --profile N:   print each cell's N slowest S ops (wall time from one S op's
//                  start to the next's) on stderr
//
// Model shapes: GPT hidden 768, 12 heads (head dim 64), ffn 3072; Llama
// hidden 2048, 32 query heads, 8 KV heads (head dim 64), ffn 5632. Batch 1,
// seq 2048 by default (concrete dims). Simplifications, stated: no biases on
// the linear layers, no causal mask, no dropout; RoPE angles (or cos/sin tables) are inputs.
// Heads, KV heads and ffn that do not divide by tp are split unevenly: each
// rank a contiguous block, sizes differing by one unit (GPT tp 8: heads
// 2,2,2,2,1,1,1,1; Llama tp 6 by KV head groups, each KV head with its 4
// query heads: KV heads 2,2,1,1,1,1, ffn 939 x4, 938 x2), each rank's
// program with its own shapes. Sequence parallel needs seq % tp == 0 (equal
// all_gather / reduce_scatter shards): GPT tp 6 runs on the largest such seq
// not above --seq (2046), said in the reason column. Only a cell that cannot
// be built (e.g. fewer heads than ranks) is a "skipped" row with the reason.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <csignal>
#include <tuple>
#include <variant>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ir/text.h"
#include "planner/parallelize.h"
#include "rewrite/relation/relation_text.h"
#include "rewrite/verify/verify.h"

namespace {

struct ModelShape {
  std::string name;
  int64_t hidden, heads, kvHeads, ffn;
  bool llama;  // GQA, RMSNorm, RoPE, SwiGLU, TP only; else GPT: LN, GELU, TP + SP
};

ModelShape gptShape() { return {"gpt", 768, 12, 12, 3072, false}; }
ModelShape llamaShape() { return {"llama", 2048, 32, 8, 5632, true}; }
// One head per rank at any TP degree (`--models heads`).
ModelShape headsShape(int tp) { return {"heads", 64 * tp, tp, tp, 256 * tp, true}; }
// The data-parallel family's sizes (generateDp): tokens per rank, hidden, ffn.
constexpr int64_t kDpTokens = 8, kDpHidden = 64, kDpFfn = 256;
ModelShape dpShape() { return {"dp", kDpHidden, 1, 1, kDpFfn, false}; }
// The context-parallel family's sizes (generateCp): tokens per rank, heads, head dim.
constexpr int64_t kCpTokens = 8, kCpHeads = 4, kCpHeadDim = 16;
constexpr int64_t kCpHidden() { return kCpHeads * kCpHeadDim; }
ModelShape cpShape() { return {"cp", kCpHeads * kCpHeadDim, kCpHeads, kCpHeads, 0, false}; }
// The expert-parallel family's sizes (generateEp): hidden and expert ffn.
ModelShape epShape() { return {"ep", 64, 1, 1, 64, false}; }
ModelShape ringShape() { return {"ring", 4, 1, 1, 0, false}; }
// The DP x TP family's sizes (generateDpTp): TP degree, tokens per DP rank, hidden, ffn per TP rank.
constexpr int64_t kDpTpTp = 8, kDpTpTokens = 8, kDpTpHidden = 64, kDpTpFfn = 32;
ModelShape dpTpShape() { return {"dptp", kDpTpHidden, 1, 1, kDpTpFfn * kDpTpTp, false}; }

using Rope = sp::planner::RopeForm;

struct Cell {
  ModelShape m;
  int tp;
  int layers;
  bool full;
  int64_t batch, seq;
  bool flat = false;  // tokens [seq, hidden] (batch 1 folded away) instead of [seq, batch, hidden]
  Rope rope = Rope::Megatron;
  bool twin = false;  // --twin: the last sum over ranks made rank-local (twinOf)
};

struct Texts {
  std::string seq, dist, rel;
};

std::string S(int64_t v) { return std::to_string(v); }

// The cell as a parallelize() spec (planner/parallelize.h): GPT cells are
// sequence parallel, on the largest seq not above the requested one that
// divides by tp (said in `note`); Llama cells are TP only.
sp::planner::ProgramSpec specOf(const Cell& c, std::string* note) {
  sp::planner::ProgramSpec s;
  s.name = c.m.name;
  s.hidden = c.m.hidden, s.heads = c.m.heads, s.kvHeads = c.m.kvHeads, s.ffn = c.m.ffn;
  s.llama = c.m.llama;
  s.sequenceParallel = !c.m.llama;
  s.tp = c.tp, s.layers = c.layers, s.attention = c.full;
  s.batch = c.batch, s.seq = c.seq, s.flat = c.flat, s.rope = c.rope;
  if (s.sequenceParallel && c.seq % c.tp && c.seq > c.tp) {
    s.seq = c.seq - c.seq % c.tp;
    if (note) *note = "seq " + S(s.seq) + ": sequence parallel needs seq % tp == 0";
  }
  return s;
}

// The cell's texts, or why it cannot be built ("parallelize: " dropped).
std::variant<Texts, std::string> generate(const Cell& c, std::string* note) {
  auto p = sp::planner::parallelize(specOf(c, note));
  if (!p) {
    std::string m = p.error().message;
    const std::string lead = "parallelize: ";
    return m.rfind(lead, 0) == 0 ? m.substr(lead.size()) : m;
  }
  return Texts{p->seq, p->dist, p->relations};
}

std::string csvQuote(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"') o += '"';
    o += ch;
  }
  return o + "\"";
}

// In the child: builds, parses and verifies; writes the CSV tail
// (verdict,seconds,seq_ops,dist_ops,lemmas,memo_hits,reason) to fd.
// "program NAME {", its world and one-axis mesh of n ranks, and the head of
// their one SPMD body.
std::string spmdHead(const std::string& name, const std::string& axis, int n) {
  return "program " + name + " {\n  world " + S(n) + "\n  mesh [" + axis + " = " + S(n) + "]\n  rank 0.." + S(n - 1) +
         " {\n";
}

// The relation line of a value whose rows (dim 0) are split in blocks of
// `rows` over `axis`.
std::string rowShards(const std::string& value, const std::string& axis, int64_t rows) {
  const std::string L = S(rows), i = "idx(r," + axis + ")";
  return "for r in " + axis + ": dist[r]." + value + " = slice(seq." + value + ", dim=0, start=" + i + "*" + L +
         ", end=(" + i + "+1)*" + L + ")\n";
}

// The data-parallel family (`--models dp`, the cell's tp field is the DP
// degree N): a two-matrix regression training step by hand, x [N*8, 64] ->
// x W1 [64, 256] -> W2 [256, 64], mean squared error, weight gradients;
// each rank holds 8 tokens, computes its local loss and gradients and
// all-reduces them with avg over dp (the gradient all_reduce of data
// parallel training). N must be a power of two: the means' divisors are
// then exact reciprocals.
Texts generateDp(int n) {
  auto step = [](int64_t tokens, const std::string& k, const std::string& indent) {
    const std::string T = S(tokens), H = S(kDpHidden), F = S(kDpFfn);
    return indent + "%h1: f32[" + T + ", " + F + "] = matmul(%x, %w1)\n" +
           indent + "%pred: f32[" + T + ", " + H + "] = matmul(%h1, %w2)\n" +
           indent + "%e: f32[" + T + ", " + H + "] = sub(%pred, %t)\n" +
           indent + "%e2: f32[" + T + ", " + H + "] = mul(%e, %e)\n" +
           indent + "%lossl: f32[] = reduce_mean(%e2) {keepdims = 0}\n" +
           indent + "%k: f32[] = constant() {value = dense<f32[], [" + k + "]>}\n" +
           indent + "%de: f32[" + T + ", " + H + "] = mul(%e, %k)\n" +
           indent + "%h1t: f32[" + F + ", " + T + "] = transpose(%h1) {perm = [1, 0]}\n" +
           indent + "%dw2l: f32[" + F + ", " + H + "] = matmul(%h1t, %de)\n" +
           indent + "%w2t: f32[" + H + ", " + F + "] = transpose(%w2) {perm = [1, 0]}\n" +
           indent + "%dh1: f32[" + T + ", " + F + "] = matmul(%de, %w2t)\n" +
           indent + "%xt: f32[" + H + ", " + T + "] = transpose(%x) {perm = [1, 0]}\n" +
           indent + "%dw1l: f32[" + H + ", " + F + "] = matmul(%xt, %dh1)\n";
  };
  auto leaves = [](int64_t tokens, const std::string& indent) {
    const std::string T = S(tokens), H = S(kDpHidden), F = S(kDpFfn);
    return indent + "input %x: f32[" + T + ", " + H + "]\n" + indent + "input %t: f32[" + T + ", " + H + "]\n" +
           indent + "param %w1: f32[" + H + ", " + F + "]\n" + indent + "param %w2: f32[" + F + ", " + H + "]\n";
  };
  auto recip = [](int64_t d) {  // 2 / d, exact for a power of two
    std::ostringstream o;
    o.precision(17);
    o << 2.0 / double(d);
    return o.str();
  };
  const int64_t all = int64_t(n) * kDpTokens;
  Texts t;
  t.seq = "graph dp_regression {\n" + leaves(all, "  ") + step(all, recip(all * kDpHidden), "  ") +
          "  output %lossl, %dw1l, %dw2l\n}\n";
  t.dist = spmdHead("dp_regression_dp" + S(n), "dp", n) + leaves(kDpTokens, "    ") + step(kDpTokens, recip(kDpTokens * kDpHidden), "    ") +
           "    %loss: f32[] = all_reduce(%lossl) {group = \"dp\", reduce = \"avg\"}\n"
           "    %dw1: f32[" + S(kDpHidden) + ", " + S(kDpFfn) + "] = all_reduce(%dw1l) {group = \"dp\", reduce = \"avg\"}\n"
           "    %dw2: f32[" + S(kDpFfn) + ", " + S(kDpHidden) + "] = all_reduce(%dw2l) {group = \"dp\", reduce = \"avg\"}\n"
           "    output %loss, %dw1, %dw2\n  }\n}\n";
  t.rel = rowShards("x", "dp", kDpTokens) + rowShards("t", "dp", kDpTokens) +
          "dist[*].w1 = seq.w1\ndist[*].w2 = seq.w2\n"
          "expect seq.lossl = dist[0].loss\nexpect seq.dw1l = dist[0].dw1\nexpect seq.dw2l = dist[0].dw2\n";
  return t;
}

// The DP x TP family (`--models dptp`, the cell's tp field is the world
// size N, a multiple of 8): an MLP stack of `layers` GELU layers on a
// [dp = N/8, tp = 8] mesh, the batch split over dp (8 tokens a rank), each
// layer's hidden columns over tp with its row-parallel sum an all_reduce
// over tp, and the output gathered over dp (two groups: rank folding over
// both, rewrite/engine/fold.h).
Texts generateDpTp(int n, int layers) {
  const int64_t tp = kDpTpTp, dp = n / tp, b = kDpTpTokens, B = b * dp, H = kDpTpHidden, f = kDpTpFfn, F = f * tp;
  auto t2 = [](int64_t a, int64_t c) { return "f32[" + S(a) + ", " + S(c) + "]"; };
  Texts t;
  t.seq = "graph mlp_stack {\n  input %x0: " + t2(B, H) + "\n";
  t.dist = "program mlp_stack_dp" + S(dp) + "_tp" + S(tp) + " {\n  world " + S(n) + "\n  mesh [dp = " + S(dp) +
           ", tp = " + S(tp) + "]\n  rank 0.." + S(n - 1) + " {\n    input %x0: " + t2(b, H) + "\n";
  const std::string all = "for r in 0.." + S(n - 1) + ": ";
  t.rel = all + "dist[r].x0 = slice(seq.x0, dim=0, start=idx(r,dp)*" + S(b) + ", end=(idx(r,dp)+1)*" + S(b) + ")\n";
  for (int l = 0; l < layers; ++l) {
    const std::string L = S(l), N = S(l + 1);
    t.seq += "  param %w1_" + L + ": " + t2(H, F) + "\n  param %w2_" + L + ": " + t2(F, H) + "\n  %h" + L + ": " + t2(B, F) +
             " = matmul(%x" + L + ", %w1_" + L + ")\n  %g" + L + ": " + t2(B, F) + " = gelu(%h" + L + ")\n  %x" + N +
             ": " + t2(B, H) + " = matmul(%g" + L + ", %w2_" + L + ")\n";
    t.dist += "    param %w1_" + L + ": " + t2(H, f) + "\n    param %w2_" + L + ": " + t2(f, H) + "\n    %h" + L + ": " +
              t2(b, f) + " = matmul(%x" + L + ", %w1_" + L + ")\n    %g" + L + ": " + t2(b, f) + " = gelu(%h" + L +
              ")\n    %p" + L + ": " + t2(b, H) + " = matmul(%g" + L + ", %w2_" + L + ")\n    %x" + N + ": " + t2(b, H) +
              " = all_reduce(%p" + L + ") {group = \"tp\"}\n";
    t.rel += all + "dist[r].w1_" + L + " = slice(seq.w1_" + L + ", dim=1, start=idx(r,tp)*" + S(f) +
             ", end=(idx(r,tp)+1)*" + S(f) + ")\n" + all + "dist[r].w2_" + L + " = slice(seq.w2_" + L +
             ", dim=0, start=idx(r,tp)*" + S(f) + ", end=(idx(r,tp)+1)*" + S(f) + ")\n";
  }
  const std::string last = "x" + S(layers);
  t.seq += "  output %" + last + "\n}\n";
  t.dist += "    %y: " + t2(B, H) + " = all_gather(%" + last + ") {group = \"dp\", dim = 0}\n    output %y\n  }\n}\n";
  t.rel += "expect seq." + last + " = dist[0].y\n";
  return t;
}

// The context-parallel family (`--models cp`, the cell's tp field is the CP
// degree N): causal multi-head attention over N*8 tokens (hidden 64, 4
// heads of 16); rank r holds tokens [8r, 8r + 8) and their rows of the
// causal mask, projects its q, k, v, all-gathers K and V over cp (Megatron's
// all-gather context parallel), attends its queries to every key and
// projects the output. Any N.
Texts generateCp(int n) {
  const int64_t H = kCpHidden(), nh = kCpHeads, hd = kCpHeadDim, Tl = kCpTokens, T = Tl * n;
  auto t2 = [](int64_t a, int64_t b) { return "f32[" + S(a) + ", " + S(b) + "]"; };
  auto t3 = [](int64_t a, int64_t b, int64_t c) { return "f32[" + S(a) + ", " + S(b) + ", " + S(c) + "]"; };
  // The attention of `tq` query tokens to `tk` keys: q4, k4, v4 are [t, nh, hd].
  auto attend = [&](const std::string& in, int64_t tq, int64_t tk, const std::string& kIn, const std::string& vIn) {
    return in + "%qh: " + t3(nh, tq, hd) + " = transpose(%q4) {perm = [1, 0, 2]}\n" +
           in + "%kt: " + t3(nh, hd, tk) + " = transpose(%" + kIn + ") {perm = [1, 2, 0]}\n" +
           in + "%vh: " + t3(nh, tk, hd) + " = transpose(%" + vIn + ") {perm = [1, 0, 2]}\n" +
           in + "%sc: " + t3(nh, tq, tk) + " = matmul(%qh, %kt)\n" +
           in + "%scale: f32[] = constant() {value = dense<f32[], [0.25]>}\n" +
           in + "%ss: " + t3(nh, tq, tk) + " = mul(%sc, %scale)\n" +
           in + "%sm: " + t3(nh, tq, tk) + " = add(%ss, %mask)\n" +
           in + "%pr: " + t3(nh, tq, tk) + " = softmax(%sm)\n" +
           in + "%a: " + t3(nh, tq, hd) + " = matmul(%pr, %vh)\n" +
           in + "%at: " + t3(tq, nh, hd) + " = transpose(%a) {perm = [1, 0, 2]}\n" +
           in + "%a2: " + t2(tq, H) + " = reshape(%at) {shape = [" + S(tq) + ", " + S(H) + "]}\n" +
           in + "%o: " + t2(tq, H) + " = matmul(%a2, %wo)\n";
  };
  auto proj = [&](const std::string& in, int64_t t) {
    std::string o;
    for (const char* w : {"q", "k", "v"})
      o += in + "%" + w + ": " + t2(t, H) + " = matmul(%x, %w" + w + ")\n" + in + "%" + w + "4: " + t3(t, nh, hd) +
           " = reshape(%" + w + ") {shape = [" + S(t) + ", " + S(nh) + ", " + S(hd) + "]}\n";
    return o;
  };
  auto params = [&](const std::string& in) {
    std::string o;
    for (const char* w : {"wq", "wk", "wv", "wo"}) o += in + "param %" + w + ": " + t2(H, H) + "\n";
    return o;
  };
  Texts t;
  t.seq = "graph cp_attention {\n  input %x: " + t2(T, H) + "\n  input %mask: " + t2(T, T) + "\n" + params("  ") +
          proj("  ", T) + attend("  ", T, T, "k4", "v4") + "  output %o\n}\n";
  t.dist = spmdHead("cp_attention_cp" + S(n), "cp", n) + "    input %x: " + t2(Tl, H) + "\n    input %mask: " + t2(Tl, T) + "\n" + params("    ") +
           proj("    ", Tl) + "    %kall: " + t3(T, nh, hd) + " = all_gather(%k4) {group = \"cp\", dim = 0}\n" +
           "    %vall: " + t3(T, nh, hd) + " = all_gather(%v4) {group = \"cp\", dim = 0}\n" +
           attend("    ", Tl, T, "kall", "vall") + "    output %o\n  }\n}\n";
  t.rel = rowShards("x", "cp", Tl) + rowShards("mask", "cp", Tl) +
          "dist[*].wq = seq.wq\ndist[*].wk = seq.wk\ndist[*].wv = seq.wv\ndist[*].wo = seq.wo\n"
          "expect seq.o = concat(dim=0, for r in cp: dist[r].o)\n";
  return t;
}

// The ring-attention family (`--models ring`, the cell's tp field is the CP
// degree N): rank r holds query, key and value rows [2r, 2r + 2) of one
// head (dim 4); at step s it attends its queries to the key block it holds
// (rank r - s's), sends that block on to rank r + 1 and receives the next
// from r - 1 (send/recv), and merges the blocks' online-softmax states in
// arrival order (ring-flash-attn's order), dividing last. Checked per rank
// (each rank holds every block: the cost grows with N^2). With --twin the
// last merge rescales the new block with its own stale maximum.
Texts generateRing(int n, bool twin) {
  const int64_t L = 2, D = 4, T = L * n;
  auto t3 = [](int64_t a, int64_t b, int64_t c) { return "f32[" + S(a) + ", " + S(b) + ", " + S(c) + "]"; };
  const std::string blk = t3(1, L, D), row = t3(1, L, 1), sq = t3(1, L, L);
  Texts t;
  t.seq = "graph attention {\n  input %q: " + t3(1, T, D) + "\n  input %k: " + t3(1, T, D) + "\n  input %v: " + t3(1, T, D) +
          "\n  %kt: " + t3(1, D, T) + " = transpose(%k) {perm = [0, 2, 1]}\n  %s: " + t3(1, T, T) +
          " = matmul(%q, %kt)\n  %c: f32[] = constant() {value = dense<f32[], [0.25]>}\n  %ss: " + t3(1, T, T) +
          " = mul(%s, %c)\n  %p: " + t3(1, T, T) + " = softmax(%ss)\n  %o: " + t3(1, T, D) +
          " = matmul(%p, %v)\n  output %o\n}\n";
  t.dist = "program ring_attention_cp" + S(n) + " {\n  world " + S(n) + "\n  mesh [cp = " + S(n) + "]\n";
  for (int r = 0; r < n; ++r) {
    std::string b = "  rank " + S(r) + " {\n    input %q: " + blk + "\n    input %k0: " + blk + "\n    input %v0: " + blk +
                    "\n    %c: f32[] = constant() {value = dense<f32[], [0.25]>}\n";
    const std::string next = S((r + 1) % n), prev = S((r + n - 1) % n);
    for (int s = 0; s < n; ++s) {
      const std::string j = S(s);
      if (s + 1 < n) {
        b += "    send(%k" + j + ") {peer = " + next + ", tag = " + S(2 * s) + "}\n    send(%v" + j + ") {peer = " + next +
             ", tag = " + S(2 * s + 1) + "}\n";
        for (const char* kv : {"k", "v"})
          b += "    %" + std::string(kv) + S(s + 1) + ": " + blk + " = recv() {peer = " + prev + ", tag = " +
               S(2 * s + (kv[0] == 'v')) + ", dtype = f32, shape = [1, " + S(L) + ", " + S(D) + "]}\n";
      }
      b += "    %kt" + j + ": " + t3(1, D, L) + " = transpose(%k" + j + ") {perm = [0, 2, 1]}\n    %s" + j + ": " + sq +
           " = matmul(%q, %kt" + j + ")\n    %ss" + j + ": " + sq + " = mul(%s" + j + ", %c)\n    %m" + j + ": " + row +
           " = reduce_max(%ss" + j + ") {axes = [2]}\n    %d" + j + ": " + sq + " = sub(%ss" + j + ", %m" + j +
           ")\n    %e" + j + ": " + sq + " = exp(%d" + j + ")\n    %l" + j + ": " + row + " = reduce_sum(%e" + j +
           ") {axes = [2]}\n    %o" + j + ": " + blk + " = matmul(%e" + j + ", %v" + j + ")\n";
    }
    std::string M = "m0", O = "o0", Lr = "l0";
    for (int s = 1; s < n; ++s) {
      const std::string j = S(s);
      const std::string stale = twin && s == n - 1 ? M : "m" + j;  // the bug: the running max in the new block's rescale
      b += "    %M" + j + ": " + row + " = max(%" + M + ", %m" + j + ")\n    %da" + j + ": " + row + " = sub(%" + M + ", %M" +
           j + ")\n    %fa" + j + ": " + row + " = exp(%da" + j + ")\n    %db" + j + ": " + row + " = sub(%" + stale +
           ", %M" + j + ")\n    %fb" + j + ": " + row + " = exp(%db" + j + ")\n    %Oa" + j + ": " + blk + " = mul(%" + O +
           ", %fa" + j + ")\n    %Ob" + j + ": " + blk + " = mul(%o" + j + ", %fb" + j + ")\n    %O" + j + ": " + blk +
           " = add(%Oa" + j + ", %Ob" + j + ")\n    %La" + j + ": " + row + " = mul(%" + Lr + ", %fa" + j + ")\n    %Lb" +
           j + ": " + row + " = mul(%l" + j + ", %fb" + j + ")\n    %L" + j + ": " + row + " = add(%La" + j + ", %Lb" + j +
           ")\n";
      M = "M" + j, O = "O" + j, Lr = "L" + j;
    }
    t.dist += b + "    %o: " + blk + " = div(%" + O + ", %" + Lr + ")\n    output %o\n  }\n";
  }
  t.dist += "}\n";
  for (const auto& [d, sv] : {std::pair<const char*, const char*>{"q", "q"}, {"k0", "k"}, {"v0", "v"}})
    t.rel += "for r in cp: dist[r]." + std::string(d) + " = slice(seq." + sv + ", dim=1, start=idx(r,cp)*" + S(L) +
             ", end=(idx(r,cp)+1)*" + S(L) + ")\n";
  t.rel += "expect seq.o = concat(dim=1, for r in cp: dist[r].o)\n";
  return t;
}

// The expert-parallel family (`--models ep`, the cell's tp field is the EP
// degree N): a hash-routed MoE layer with 2 local experts a rank (E = 2N,
// capacity 4, hidden 64, expert ffn 64). S routes token block b's tokens
// for expert e ([N, E, 4, 64] -> [E, N*4, 64]) to one batched matmul over
// the stacked expert weights, applies gelu and routes back; rank r holds
// token block r and experts 2r, 2r+1, dispatches with an all_to_all along
// the dim it splits, regroups expert-major, and combines with the inverse
// all_to_all. Any N. With --twin the combine is left out.
Texts generateEp(int n, bool twin) {
  const int64_t el = 2, c = 4, m = 64, f = 64, e = n * el, bt = e * c;
  auto sh = [](std::initializer_list<int64_t> d) {
    std::string o = "[";
    for (int64_t v : d) o += (o.size() > 1 ? ", " : "") + S(v);
    return o + "]";
  };
  auto ty = [&](std::initializer_list<int64_t> d) { return "f32" + sh(d); };
  auto reshape = [&](const std::string& in, const std::string& name, const std::string& src,
                     std::initializer_list<int64_t> d) {
    return in + "%" + name + ": " + ty(d) + " = reshape(%" + src + ") {shape = " + sh(d) + "}\n";
  };
  Texts t;
  t.seq = "graph moe {\n  input %x: " + ty({n * bt, m}) + "\n  param %we: " + ty({e, m, f}) + "\n" +
          reshape("  ", "x4", "x", {n, e, c, m}) + "  %xe: " + ty({e, n, c, m}) +
          " = transpose(%x4) {perm = [1, 0, 2, 3]}\n" + reshape("  ", "xr", "xe", {e, n * c, m}) + "  %he: " +
          ty({e, n * c, f}) + " = matmul(%xr, %we)\n  %ht: " + ty({e, n * c, f}) + " = gelu(%he)\n" +
          reshape("  ", "h4", "ht", {e, n, c, f}) + "  %hb: " + ty({n, e, c, f}) +
          " = transpose(%h4) {perm = [1, 0, 2, 3]}\n" + reshape("  ", "y", "hb", {n * bt, f}) + "  output %y\n}\n";
  t.dist = spmdHead("moe_ep" + S(n), "ep", n) + "    input %x: " + ty({bt, m}) + "\n    param %we: " + ty({el, m, f}) +
           "\n" + reshape("    ", "xd", "x", {n, el * c, m}) + "    %xa: " + ty({n, el * c, m}) +
           " = all_to_all(%xd) {group = \"ep\"}\n" + reshape("    ", "xg", "xa", {n, el, c, m}) + "    %xt: " +
           ty({el, n, c, m}) + " = transpose(%xg) {perm = [1, 0, 2, 3]}\n" +
           reshape("    ", "xl", "xt", {el, n * c, m}) + "    %he: " + ty({el, n * c, f}) + " = matmul(%xl, %we)\n" +
           "    %ht: " + ty({el, n * c, f}) + " = gelu(%he)\n" + reshape("    ", "hg", "ht", {el, n, c, f}) +
           "    %hb: " + ty({n, el, c, f}) + " = transpose(%hg) {perm = [1, 0, 2, 3]}\n" +
           reshape("    ", "hd", "hb", {n, el * c, f}) + "    %ya: " + ty({n, el * c, f}) + " = " +
           (twin ? "identity(%hd)" : "all_to_all(%hd) {group = \"ep\"}") + "\n" + reshape("    ", "y", "ya", {bt, f}) +
           "    output %y\n  }\n}\n";
  t.rel = rowShards("x", "ep", bt) + "for r in ep: dist[r].we = slice(seq.we, dim=0, start=idx(r,ep)*" + S(el) +
          ", end=(idx(r,ep)+1)*" + S(el) + ")\nexpect seq.y = concat(dim=0, for r in ep: dist[r].y)\n";
  return t;
}

// The cell's twin (--twin): its last all_reduce replaced by identity, or,
// when its last sum over ranks is a reduce_scatter, by the rank's own slice
// of its partial sums, in every rank body that computes it (a program
// written as several rank bodies changes alike in each: no deadlock); a
// wrong program that type-checks, to be refuted. Empty when the cell has
// neither.
std::string twinOf(const std::string& dist) {
  size_t ar = dist.rfind("= all_reduce(%"), rs = dist.rfind("= reduce_scatter(%");
  size_t at = ar != std::string::npos && (rs == std::string::npos || ar > rs) ? ar : rs;
  if (at == std::string::npos) return "";
  const bool reduce = at == ar;
  auto lineAt = [&](size_t pos) {
    size_t lineStart = dist.rfind('\n', pos) + 1, lineEnd = dist.find('\n', pos);
    return std::make_pair(lineStart, lineEnd);
  };
  auto defined = [](const std::string& line) {  // "%x" of "    %x: f32[..] = op(...)"
    size_t pct = line.find('%'), colon = line.find(':', pct);
    return pct == std::string::npos || colon == std::string::npos ? std::string() : line.substr(pct, colon - pct);
  };
  auto [s0, e0] = lineAt(at);
  const std::string name = defined(dist.substr(s0, e0 - s0));
  const std::string op = reduce ? "= all_reduce(%" : "= reduce_scatter(%";
  std::string out;
  size_t from = 0;
  for (size_t pos = dist.find(op); pos != std::string::npos; pos = dist.find(op, pos + 1)) {
    auto [lineStart, lineEnd] = lineAt(pos);
    std::string line = dist.substr(lineStart, lineEnd - lineStart);
    if (defined(line) != name) continue;
    size_t open = line.find("(%"), close = line.find(')', open);
    std::string operand = line.substr(open + 1, close - open - 1);
    std::string head = line.substr(0, line.find("= ") + 2);
    std::string repl;
    if (reduce) {
      repl = head + "identity(" + operand + ")";
    } else {
      size_t lb = line.find('['), comma = line.find_first_of(",]", lb);
      repl = head + "slice(" + operand + ") {starts = [0], ends = [" + line.substr(lb + 1, comma - lb - 1) +
             "], axes = [0]}";
    }
    out += dist.substr(from, lineStart - from) + repl;
    from = lineEnd;
  }
  return out + dist.substr(from);
}

// The cell must be buildable (generate); its note leads the reason.
int runCell(const Cell& c, double timeLimit, bool memo, bool fold, const std::string& dump, int fd, int profile = 0) {
  std::string note;
  auto t = c.m.name == "dp"     ? generateDp(c.tp)
           : c.m.name == "cp"   ? generateCp(c.tp)
           : c.m.name == "ep"   ? generateEp(c.tp, c.twin)
           : c.m.name == "ring" ? generateRing(c.tp, c.twin)
           : c.m.name == "dptp" ? generateDpTp(c.tp, c.layers)
                              : std::get<Texts>(generate(c, &note));
  if (c.twin && c.m.name != "ep" && c.m.name != "ring") t.dist = twinOf(t.dist);
  if (!dump.empty()) {
    std::string dir = dump + "/" + c.m.name + (c.full ? "-full" : "-mlp") + "-tp" + S(c.tp) + "-l" + S(c.layers);
    mkdir(dump.c_str(), 0755);
    mkdir(dir.c_str(), 0755);
    std::ofstream(dir + "/seq.sp") << t.seq;
    std::ofstream(dir + "/dist.sp") << t.dist;
    std::ofstream(dir + "/relations.rel") << t.rel;
  }
  std::string line;
  auto fail = [&](const std::string& what, const sp::Error& e) {
    line = "error,0,0,0,0,0,0," + csvQuote(what + ": " + e.str());
  };
  auto seq = sp::ir::parseGraph(t.seq, "seq.sp");
  auto dist = seq ? sp::ir::parseProgram(t.dist, "dist.sp") : sp::Result<sp::ir::Program>(seq.error());
  auto rel = dist ? sp::rewrite::parseRelations(t.rel, "relations.rel")
                  : sp::Result<sp::rewrite::RelationFile>(dist.error());
  if (!seq) fail("seq.sp", seq.error());
  else if (!dist) fail("dist.sp", dist.error());
  else if (!rel) fail("relations.rel", rel.error());
  else {
    sp::rewrite::VerifyOptions opts;
    opts.timeLimitSeconds = timeLimit;
    opts.memoize = memo;
    opts.fold = fold;
    std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> marks;
    if (profile > 0)
      opts.progress = [&](size_t, size_t, const std::string& op) {
        marks.emplace_back(op, std::chrono::steady_clock::now());
      };
    auto cpuNow = [] {
      struct rusage u {};
      getrusage(RUSAGE_SELF, &u);
      return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    };
    double cpu0 = cpuNow();
    auto t0 = std::chrono::steady_clock::now();
    auto rep = sp::rewrite::verify(*seq, *dist, *rel, opts);
    auto t1 = std::chrono::steady_clock::now();
    double cpu = cpuNow() - cpu0;
    double secs = std::chrono::duration<double>(t1 - t0).count();
    if (profile > 0) {
      std::vector<std::pair<double, std::string>> spans;
      for (size_t i = 0; i < marks.size(); ++i)
        spans.emplace_back(std::chrono::duration<double>((i + 1 < marks.size() ? marks[i + 1].second : t1) -
                                                         marks[i].second).count(),
                           marks[i].first);
      std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      double before = marks.empty() ? secs : std::chrono::duration<double>(marks[0].second - t0).count();
      std::fprintf(stderr, "profile %s tp %d layers %d: %.3f s before the first S op;", c.m.name.c_str(), c.tp,
                   c.layers, before);
      for (size_t i = 0; i < spans.size() && int(i) < profile; ++i)
        std::fprintf(stderr, " %s %.3f", spans[i].second.c_str(), spans[i].first);
      std::fprintf(stderr, "\n");
    }
    if (!rep) {
      fail("verify", rep.error());
    } else {
      std::string reason = rep->reason;
      if (rep->failure) {
        const auto& f = *rep->failure;
        std::string at = f.seqOp.empty() ? "" : "at " + f.seqOp + ": ";
        reason = reason.empty() ? at + f.message : reason + " (" + at + f.message + ")";
      }
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s,%.3f,%.3f,%lld,%lld,%lld,%lld,",
                    std::string(sp::rewrite::verdictName(rep->verdict)).c_str(), secs, cpu,
                    static_cast<long long>(rep->stats.seqOps), static_cast<long long>(rep->stats.distOps),
                    static_cast<long long>(rep->stats.lemmasApplied),
                    static_cast<long long>(rep->stats.memoHits));
      if (!note.empty()) reason = reason.empty() ? note : note + "; " + reason;
      line = std::string(buf) + csvQuote(reason);
    }
  }
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n <= 0) return 4;
    off += size_t(n);
  }
  return 0;
}

struct ChildResult {
  std::string out;
  double rssMb = 0;
  std::string trouble;  // crashed / killed
};

// Forks fn(fd); kills the child after `hardLimit` seconds.
template <typename Fn>
ChildResult inChild(Fn fn, double hardLimit) {
  ChildResult r;
  int fds[2];
  if (pipe(fds) != 0) {
    r.trouble = "pipe failed";
    return r;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    // As the CLI: running out of memory is an inconclusive cell, not a kill.
    sp::rewrite::limitSearchMemory();
    _exit(fn(fds[1]));
  }
  close(fds[1]);
  auto t0 = std::chrono::steady_clock::now();
  int wstatus = 0;
  struct rusage ru {};
  bool killed = false;
  // Reader thread so a large write never blocks the child.
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) r.out.append(buf, size_t(n));
  });
  for (;;) {
    pid_t w = wait4(pid, &wstatus, WNOHANG, &ru);
    if (w == pid) break;
    if (!killed && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > hardLimit) {
      kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reader.join();
  close(fds[0]);
  r.rssMb = double(ru.ru_maxrss) / 1024.0;
  if (killed) r.trouble = "killed after " + S(int64_t(hardLimit)) + " s (time limit not honoured)";
  else if (WIFSIGNALED(wstatus)) r.trouble = "crashed: signal " + S(WTERMSIG(wstatus));
  else if (WEXITSTATUS(wstatus) != 0) r.trouble = "child exit " + S(WEXITSTATUS(wstatus));
  return r;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_verify [--models gpt,llama,heads,dp,cp,dptp,ep,ring] [--tp 2,4,6,8] [--layers 1,2,4,8]\n"
               "                    [--blocks mlp|full] [--time-limit SECONDS] [--batch N] [--seq N]\n"
               "                    [--layout sbh|sh] [--rope megatron|halves] [--dump DIR]\n"
               "                    [--no-memo] [--no-fold] [--twin] [--profile N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models = {"gpt", "llama"};
  std::vector<int> tps = {2, 4, 6, 8}, layers = {1, 2, 4, 8};
  bool full = true;
  double timeLimit = 60;
  int64_t batch = 1, seq = 2048;
  std::string dump;
  bool flat = false;
  bool memo = true;
  bool fold = true;
  bool twin = false;
  int profile = 0;
  Rope rope = Rope::Megatron;
  auto ints = [](const std::string& s) {
    std::vector<int> v;
    for (auto& x : splitList(s)) v.push_back(std::atoi(x.c_str()));
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--twin") {
      twin = true;
      continue;
    }
    if (a == "--no-fold") {
      fold = false;
      continue;
    }
    if (a == "--no-memo") {
      memo = false;
      continue;
    }
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--models") models = splitList(v);
    else if (a == "--tp") tps = ints(v);
    else if (a == "--layers") layers = ints(v);
    else if (a == "--blocks") {
      if (v != "mlp" && v != "full") return usage();
      full = v == "full";
    } else if (a == "--time-limit") timeLimit = std::atof(v.c_str());
    else if (a == "--batch") batch = std::atoll(v.c_str());
    else if (a == "--seq") seq = std::atoll(v.c_str());
    else if (a == "--dump") dump = v;
    else if (a == "--profile") profile = std::atoi(v.c_str());
    else if (a == "--rope") {
      if (v != "megatron" && v != "halves") return usage();
      rope = v == "megatron" ? Rope::Megatron : Rope::Halves;
    } else if (a == "--layout") {
      if (v != "sbh" && v != "sh") return usage();
      flat = v == "sh";
    }
    else return usage();
  }
  for (auto& m : models)
    if (m != "gpt" && m != "llama" && m != "heads" && m != "dp" && m != "cp" && m != "dptp" && m != "ep" && m != "ring")
      return usage();
  for (int t : tps)
    if (t < 1) return usage();
  for (int l : layers)
    if (l < 1) return usage();
  if (batch < 1 || seq < 1 || (flat && batch != 1)) return usage();

  // Warm the lemma proof cache once, in its own child: a small cell of the
  // first model (tp 2, 1 layer, tiny seq), so later cells read proven lemmas.
  {
    Cell w{models.empty() || models[0] == "gpt" ? gptShape() : llamaShape(), 2, 1, full, 1, 16, flat, rope};
    auto t0 = std::chrono::steady_clock::now();
    auto r = inChild([&](int fd) { return runCell(w, timeLimit, memo, fold, "", fd); }, timeLimit + 120);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "bench_verify: lemma proof cache warmed in a separate child (%s tp 2, 1 layer, seq 16, %s): %.2f s, %s\n",
                 w.m.name.c_str(), full ? "full" : "mlp", s, r.trouble.empty() ? r.out.substr(0, r.out.find(',')).c_str() : r.trouble.c_str());
  }

  std::printf("model,tp,layers,verdict,seconds,cpu_seconds,peak_rss_mb,seq_ops,dist_ops,lemmas_applied,memo_hits,reason\n");
  std::fflush(stdout);
  for (const auto& name : models) {
    for (int tp : tps) {
      for (int nl : layers) {
        Cell c{name == "gpt" ? gptShape() : name == "heads" ? headsShape(tp) : llamaShape(), tp, nl, full, batch, seq, flat, rope};
        c.twin = twin;
        if (name == "cp") {
          c.m = cpShape();
          if (nl != layers.front()) continue;  // one attention per CP degree
        } else if (name == "ep") {
          c.m = epShape();
          if (nl != layers.front()) continue;  // one MoE layer per EP degree
        } else if (name == "ring") {
          c.m = ringShape();
          if (nl != layers.front()) continue;  // one attention per CP degree
        } else if (name == "dptp") {
          c.m = dpTpShape();
          if (tp % kDpTpTp != 0 || tp < 2 * kDpTpTp) {
            std::printf("dptp,%d,%d,skipped,,,,,,,,%s\n", tp, nl,
                        csvQuote("world size must be a multiple of 8, at least 16 (dp = N/8, tp = 8)").c_str());
            continue;
          }
        } else if (name == "dp") {
          c.m = dpShape();
          if (nl != layers.front()) continue;  // one regression step per DP degree
          if (!std::has_single_bit(unsigned(tp))) {
            std::printf("dp,%d,1,skipped,,,,,,,,%s\n", tp, csvQuote("dp degree must be a power of two").c_str());
            continue;
          }
        }
        if (name == "cp" && twin) {
          std::printf("cp,%d,1,skipped,,,,,,,,%s\n", tp, csvQuote("--twin: no sum over ranks to drop").c_str());
          continue;
        }
        if (name != "cp" && name != "dp" && name != "dptp" && name != "ep" && name != "ring")
          if (auto gen = generate(c, nullptr); auto* why = std::get_if<std::string>(&gen)) {
            std::printf("%s,%d,%d,skipped,,,,,,,,%s\n", name.c_str(), tp, nl, csvQuote(*why).c_str());
            std::fflush(stdout);
            continue;
          }
        auto r = inChild([&](int fd) { return runCell(c, timeLimit, memo, fold, dump, fd, profile); }, timeLimit + 120);
        if (!r.trouble.empty() || r.out.empty()) {
          std::printf("%s,%d,%d,error,,,%.1f,,,,,%s\n", name.c_str(), tp, nl, r.rssMb,
                      csvQuote(r.trouble.empty() ? "no result from child" : r.trouble).c_str());
        } else {
          // out: verdict,seconds,cpu,seq_ops,dist_ops,lemmas,memo,reason -> insert rss after cpu
          size_t c1 = r.out.find(','), c2 = r.out.find(',', c1 + 1);
          c2 = r.out.find(',', c2 + 1);
          std::printf("%s,%d,%d,%s,%.1f,%s\n", name.c_str(), tp, nl, r.out.substr(0, c2).c_str(), r.rssMb,
                      r.out.substr(c2 + 1).c_str());
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
