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
// Usage: bench_verify [--models gpt,llama,dp] [--tp 2,4,6,8] [--layers 1,2,4,8]
// (dp: the data-parallel family, --tp giving the DP degrees; see generateDp)
//                     [--blocks mlp|full] [--time-limit SECONDS]
//                     [--batch N] [--seq N] [--dump DIR] [--no-memo]
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
#include "rewrite/relation_text.h"
#include "rewrite/verify.h"

namespace {

struct ModelShape {
  std::string name;
  int64_t hidden, heads, kvHeads, ffn;
  bool llama;  // GQA, RMSNorm, RoPE, SwiGLU, TP only; else GPT: LN, GELU, TP + SP
};

ModelShape gptShape() { return {"gpt", 768, 12, 12, 3072, false}; }
ModelShape llamaShape() { return {"llama", 2048, 32, 8, 5632, true}; }
// The data-parallel family's sizes (generateDp): tokens per rank, hidden, ffn.
constexpr int64_t kDpTokens = 8, kDpHidden = 64, kDpFfn = 256;
ModelShape dpShape() { return {"dp", kDpHidden, 1, 1, kDpFfn, false}; }

// The RoPE form of the Llama stacks (see generate()).
enum class Rope { Megatron, Halves };

struct Cell {
  ModelShape m;
  int tp;
  int layers;
  bool full;
  int64_t batch, seq;
  bool flat = false;  // tokens [seq, hidden] (batch 1 folded away) instead of [seq, batch, hidden]
  Rope rope = Rope::Megatron;
};

struct Texts {
  std::string seq, dist, rel;
};

std::string S(int64_t v) { return std::to_string(v); }

// Contiguous blocks of n units over `parts` ranks, sizes differing by at most
// one unit (the first n % parts ranks hold one more), scaled to `unit`
// elements: rank r holds [off[r], off[r] + size[r]).
struct Blocks {
  std::vector<int64_t> size, off;
};

Blocks blocks(int64_t n, int parts, int64_t unit = 1) {
  Blocks b;
  int64_t at = 0;
  for (int r = 0; r < parts; ++r) {
    int64_t k = (n / parts + (r < n % parts ? 1 : 0)) * unit;
    b.size.push_back(k);
    b.off.push_back(at);
    at += k;
  }
  return b;
}

// How a cell is sharded: per rank, the query head columns (heads * head dim),
// KV head columns and ffn columns it holds; the tokens actually used.
struct Plan {
  int64_t seq = 0;
  std::string note;      // why seq differs from the requested one, else empty
  Blocks heads, kv, ffn;
  bool kvRepl = false;   // Llama tp > KV heads: each KV head held by tp/nkv ranks
};

// The cell's sharding, or why it cannot be built. Heads, KV heads and ffn
// that do not divide by tp are split unevenly (Blocks; Llama by KV head
// groups, each KV head with its query heads). Sequence parallel needs
// seq % tp == 0 (all_gather / reduce_scatter have equal shards): the largest
// such seq not above the requested one is used, and said in `note`.
std::variant<Plan, std::string> planCell(const Cell& c) {
  const auto& m = c.m;
  const int64_t hd = m.hidden / m.heads, tp = c.tp;
  Plan p;
  p.seq = c.seq;
  std::vector<std::string> bad;
  if (!m.llama && c.seq % tp) {
    p.seq = c.seq - c.seq % tp;
    if (p.seq == 0) bad.push_back("seq " + S(c.seq) + " below tp " + S(tp) + " (sequence parallel)");
    p.note = "seq " + S(p.seq) + ": sequence parallel needs seq % tp == 0";
  }
  if (m.ffn < tp) bad.push_back("ffn " + S(m.ffn) + " below tp " + S(tp));
  p.ffn = blocks(m.ffn, c.tp);
  if (!m.llama) {
    if (c.full && m.heads < tp) bad.push_back(S(m.heads) + " heads below tp " + S(tp));
    p.heads = p.kv = blocks(m.heads, c.tp, hd);
  } else if (tp <= m.kvHeads) {
    p.kv = blocks(m.kvHeads, c.tp, hd);
    p.heads = blocks(m.kvHeads, c.tp, hd * (m.heads / m.kvHeads));
  } else {
    // each KV head's query heads shared evenly by the tp / nkv ranks holding it
    p.kvRepl = true;
    if (c.full && (tp % m.kvHeads || (m.heads / m.kvHeads) % (tp / m.kvHeads)))
      bad.push_back("tp " + S(tp) + " above " + S(m.kvHeads) + " KV heads and not splitting each KV head's " +
                    S(m.heads / m.kvHeads) + " query heads evenly");
    p.heads = blocks(m.heads, c.tp, hd);
    p.kv.size.assign(size_t(tp), hd);
  }
  if (bad.empty()) return p;
  std::string r;
  for (size_t i = 0; i < bad.size(); ++i) r += (i ? ", " : "") + bad[i];
  return r;
}

// Runs of consecutive ranks whose keys are equal: {first, last}.
template <typename Key>
std::vector<std::pair<int, int>> runs(int n, Key key) {
  std::vector<std::pair<int, int>> o;
  for (int r = 0; r < n; ++r) {
    if (o.empty() || key(r) != key(o.back().first)) o.push_back({r, r});
    else o.back().second = r;
  }
  return o;
}

// Generates seq graph, dist program and relations for one cell.
// Ranks whose sizes are equal share one `rank a..b` body; the relation file
// gives each run of equal-sized blocks one comprehension line (`for r in tp`
// when all are equal).
Texts generate(const Cell& c, const Plan& pl) {
  const auto& m = c.m;
  const int64_t H = m.hidden, F = m.ffn, nh = m.heads, nkv = m.kvHeads, hd = H / nh;
  const int64_t B = -1, T = pl.seq, tp = c.tp;  // B: the batch marker (see L)
  const bool sp = !m.llama;  // GPT: sequence parallel; tokens sharded on dim 1
  const int64_t Tl = sp ? T / tp : T;
  // Per rank: set for each body below.
  int64_t Hl = 0, Fl = 0, nhl = 0, nkvl = 0;
  const bool kvRepl = pl.kvRepl;
  const int64_t grp = m.llama ? nh / nkv : 1;  // query heads per KV head
  const std::string scale = "dense<f32[], [" + std::to_string(1.0 / std::sqrt(double(hd))) + "]>";
  // A dims list; B marks the batch dim: its size, or dropped in the flat layout.
  auto L = [&](std::initializer_list<int64_t> ds) {
    std::string o = "[";
    for (int64_t d : ds) {
      if (d == B && c.flat) continue;
      o += (o.size() > 1 ? ", " : "") + S(d == B ? c.batch : d);
    }
    return o + "]";
  };
  auto t3 = [&](int64_t t, int64_t h) { return "f32" + L({t, B, h}); };
  auto t4 = [&](int64_t a, int64_t b, int64_t cc, int64_t d) { return "f32" + L({a, b, cc, d}); };
  auto sh4 = [&](int64_t a, int64_t b, int64_t cc, int64_t d) { return L({a, b, cc, d}); };
  // flat: the batch dim is gone, axes after it shift down by one
  auto ax = [&](int a) { return S(c.flat && a > 1 ? a - 1 : a); };
  auto perm = [&](const char* full, const char* flat) { return std::string(c.flat ? flat : full); };

  // Rank r's block of b (runs of equal sizes starting at rank a), `base`
  // columns in: start and end expressions over idx(r,tp).
  auto blockRange = [&](const Blocks& b, int a, int64_t base) {
    int64_t w = b.size[size_t(a)], o = base + b.off[size_t(a)];
    std::string o0 = o ? S(o) + "+" : "";
    std::string lo = a ? "(idx(r,tp)-" + S(a) + ")" : "idx(r,tp)";
    std::string hi = a ? "(idx(r,tp)-" + S(a - 1) + ")" : "(idx(r,tp)+1)";
    return std::pair{o0 + lo + "*" + S(w), o0 + hi + "*" + S(w)};
  };
  auto blockSlice = [&](const std::string& n, int dim, const Blocks& b, int a, int64_t base) {
    auto [lo, hi] = blockRange(b, a, base);
    return "slice(seq." + n + ", dim=" + S(dim) + ", start=" + lo + ", end=" + hi + ")";
  };
  // One "for r in DOMAIN: dist[r].n = " line head per run of equal blocks; fn(a) the rest.
  std::ostringstream rl;
  auto perBlockRun = [&](const std::string& n, const Blocks& b, const std::function<std::string(int)>& fn) {
    auto rs = runs(c.tp, [&](int r) { return b.size[size_t(r)]; });
    for (auto [a, z] : rs) {
      std::string dom = rs.size() == 1 ? "tp" : S(a) + ".." + S(z);
      rl << "for r in " << dom << ": dist[r]." << n << " = " << fn(a) << "\n";
    }
  };

  std::ostringstream seqText, distText, relText;
  distText << "program " << m.name << "_tp" << tp << " {\n  world " << tp << "\n  mesh [tp = " << tp << "]\n";
  auto classes = runs(c.tp, [&](int r) {  // (MLP blocks: heads unused)
    auto at = size_t(c.full ? r : 0);
    return std::tuple{pl.heads.size[at], pl.kv.size[at], pl.ffn.size[size_t(r)]};
  });
  // Each body is written with its ranks' sizes; S and the relation file (which
  // names every rank's block) are kept from the first pass.
  for (auto [first, last] : classes) {
    Hl = pl.heads.size[size_t(first)], Fl = pl.ffn.size[size_t(first)], nhl = Hl / hd;
    nkvl = kvRepl ? 1 : pl.kv.size[size_t(first)] / hd;
    std::ostringstream sq, ds;
    rl.str("");
    sq << "# generated by bench_verify: " << m.name << " " << (c.full ? "full" : "mlp") << ", "
       << c.layers << " layers\ngraph " << m.name << " {\n";
    ds << "  rank " << first << (last > first ? ".." + S(last) : "") << " {\n";
    std::string sI = "  ", dI = "    ";
    sq << sI << "input %x0: " << t3(T, H) << "\n";
    ds << dI << "input %x0: " << t3(Tl, H) << "\n";
    if (sp)
      rl << "for r in tp: dist[r].x0 = slice(seq.x0, dim=0, start=idx(r,tp)*" << Tl
         << ", end=(idx(r,tp)+1)*" << Tl << ")\n";
    else
      rl << "dist[*].x0 = seq.x0\n";
    if (c.full && m.llama && c.rope == Rope::Halves) {
      std::string ty = c.flat ? "f32[" + S(T) + ", 1, " + S(hd / 2) + "]"
                              : "f32[" + S(T) + ", 1, 1, " + S(hd / 2) + "]";
      sq << sI << "input %cos: " << ty << "\n" << sI << "input %sin: " << ty << "\n";
      ds << dI << "input %cos: " << ty << "\n" << dI << "input %sin: " << ty << "\n";
      rl << "dist[*].cos = seq.cos\ndist[*].sin = seq.sin\n";
    }
    if (c.full && m.llama && c.rope == Rope::Megatron) {
      // Megatron's rotary_pos_emb: the angles of every position, emb = cat(freqs, freqs)
      std::string ty = c.flat ? "f32[" + S(T) + ", 1, " + S(hd) + "]" : "f32[" + S(T) + ", 1, 1, " + S(hd) + "]";
      sq << sI << "input %freqs: " << ty << "\n";
      ds << dI << "input %freqs: " << ty << "\n";
      rl << "dist[*].freqs = seq.freqs\n";
    }
    auto shard = [&](const std::string& n, int dim, const Blocks& b) {
      perBlockRun(n, b, [&](int a) { return blockSlice(n, dim, b, a, 0); });
    };
    auto repl = [&](const std::string& n) { rl << "dist[*]." << n << " = seq." << n << "\n"; };
    // Both sides: op line with the given (seq type, dist type).
    auto both = [&](const std::string& lhs, const std::string& sty, const std::string& dty,
                    const std::string& rhs, const std::string& drhs = "") {
      sq << sI << "%" << lhs << ": " << sty << " = " << rhs << "\n";
      ds << dI << "%" << lhs << ": " << dty << " = " << (drhs.empty() ? rhs : drhs) << "\n";
    };
    auto norm = [&](const std::string& p, const std::string& out, const std::string& in, int64_t t) {
      // t: tokens on the dist side
      if (m.llama) {
        sq << sI << "param %" << p << "g: f32[" << H << "]\n";
        ds << dI << "param %" << p << "g: f32[" << H << "]\n";
        repl(p + "g");
        both(out, t3(T, H), t3(t, H), "rms_norm(%" + in + ", %" + p + "g) {epsilon = 1e-5}");
      } else {
        sq << sI << "param %" << p << "g: f32[" << H << "]\n" << sI << "param %" << p << "b: f32[" << H << "]\n";
        ds << dI << "param %" << p << "g: f32[" << H << "]\n" << dI << "param %" << p << "b: f32[" << H << "]\n";
        repl(p + "g");
        repl(p + "b");
        both(out, t3(T, H), t3(t, H), "layer_norm(%" + in + ", %" + p + "g, %" + p + "b)");
      }
    };
    // Dist: tokens of a normed activation gathered (SP) or as is.
    auto gatherIn = [&](const std::string& n) -> std::string {
      if (!sp) return n;
      ds << dI << "%" << n << "_ag: " << t3(T, H) << " = all_gather(%" << n
         << ") {group = \"tp\", dim = 0}\n";
      return n + "_ag";
    };
    // Dist: partial sums out of a row-parallel matmul reduced (SP: scattered).
    auto reduceOut = [&](const std::string& n, const std::string& out) {
      if (sp)
        ds << dI << "%" << out << ": " << t3(Tl, H) << " = reduce_scatter(%" << n
           << ") {group = \"tp\", dim = 0}\n";
      else
        ds << dI << "%" << out << ": " << t3(T, H) << " = all_reduce(%" << n << ") {group = \"tp\"}\n";
    };
    auto param2 = [&](const std::string& n, int64_t r, int64_t cc, int64_t dr, int64_t dc) {
      sq << sI << "param %" << n << ": f32[" << r << ", " << cc << "]\n";
      ds << dI << "param %" << n << ": f32[" << dr << ", " << dc << "]\n";
    };

    std::string x = "x0";
    for (int l = 0; l < c.layers; ++l) {
      std::string p = "l";  // (not "l" + S(l): GCC 12 -Wrestrict false positive)
      p += S(l) + "_";
      std::string y = x;
      if (c.full) {
        // ---- attention ----
        norm(p + "n1", p + "n1", x, Tl);
        std::string din = gatherIn(p + "n1");
        std::string sin_ = p + "n1";
        std::string q, k, v;  // names (same on both sides)
        if (!m.llama) {
          // fused QKV, column parallel: rank shard is [q_r | k_r | v_r]
          param2(p + "wqkv", H, 3 * H, H, 3 * Hl);
          perBlockRun(p + "wqkv", pl.heads, [&](int a) {
            std::string e = "concat(dim=1";
            for (int j = 0; j < 3; ++j) e += ", " + blockSlice(p + "wqkv", 1, pl.heads, a, j * H);
            return e + ")";
          });
          sq << sI << "%" << p << "qkv: " << t3(T, 3 * H) << " = matmul(%" << sin_ << ", %" << p << "wqkv)\n";
          ds << dI << "%" << p << "qkv: " << t3(T, 3 * Hl) << " = matmul(%" << din << ", %" << p << "wqkv)\n";
          sq << sI << "%" << p << "q: " << t3(T, H) << ", %" << p << "k: " << t3(T, H) << ", %" << p
             << "v: " << t3(T, H) << " = split(%" << p << "qkv) {axis = " << ax(2) << ", sizes = [" << H << ", " << H
             << ", " << H << "]}\n";
          ds << dI << "%" << p << "q: " << t3(T, Hl) << ", %" << p << "k: " << t3(T, Hl) << ", %" << p
             << "v: " << t3(T, Hl) << " = split(%" << p << "qkv) {axis = " << ax(2) << ", sizes = [" << Hl << ", "
             << Hl << ", " << Hl << "]}\n";
        } else {
          param2(p + "wq", H, H, H, Hl);
          param2(p + "wk", H, nkv * hd, H, nkvl * hd);
          param2(p + "wv", H, nkv * hd, H, nkvl * hd);
          shard(p + "wq", 1, pl.heads);
          for (const char* w : {"wk", "wv"}) {
            if (kvRepl) {
              int64_t per = tp / nkv;  // ranks per KV head
              rl << "for r in tp: dist[r]." << p << w << " = slice(seq." << p << w
                 << ", dim=1, start=(idx(r,tp)/" << per << ")*" << hd << ", end=(idx(r,tp)/" << per
                 << ")*" << hd << "+" << hd << ")\n";
            } else {
              shard(p + w, 1, pl.kv);
            }
          }
          both(p + "q", t3(T, H), t3(T, Hl), "matmul(%" + sin_ + ", %" + p + "wq)",
               "matmul(%" + din + ", %" + p + "wq)");
          both(p + "k", t3(T, nkv * hd), t3(T, nkvl * hd), "matmul(%" + sin_ + ", %" + p + "wk)",
               "matmul(%" + din + ", %" + p + "wk)");
          both(p + "v", t3(T, nkv * hd), t3(T, nkvl * hd), "matmul(%" + sin_ + ", %" + p + "wv)",
               "matmul(%" + din + ", %" + p + "wv)");
        }
        q = p + "q", k = p + "k", v = p + "v";
        both(q + "4", t4(T, B, nh, hd), t4(T, B, nhl, hd),
             "reshape(%" + q + ") {shape = " + sh4(T, B, nh, hd) + "}",
             "reshape(%" + q + ") {shape = " + sh4(T, B, nhl, hd) + "}");
        int64_t skv = m.llama ? nkv : nh, dkv = m.llama ? nkvl : nhl;
        for (const std::string& n : {k, v}) {
          both(n + "4", t4(T, B, skv, hd), t4(T, B, dkv, hd),
               "reshape(%" + n + ") {shape = " + sh4(T, B, skv, hd) + "}",
               "reshape(%" + n + ") {shape = " + sh4(T, B, dkv, hd) + "}");
        }
        std::string q4 = q + "4", k4 = k + "4", v4 = v + "4";
        if (m.llama) {
          // RoPE (rotate-half) on q and k
          int64_t h2 = hd / 2;
          for (auto [n, sh, dh] : {std::tuple{q, nh, nhl}, std::tuple{k, nkv, nkvl}}) {
            if (c.rope == Rope::Megatron) {
              // megatron/core/models/common/embeddings/rope_utils.py,
              // _apply_rotary_pos_emb_bshd (unfused): per call
              //   cos_ = cos(freqs); sin_ = sin(freqs)
              //   t = t * cos_ + _rotate_half(t) * sin_,  _rotate_half(t) = cat(-t2, t1)
              std::string a = n + "4";
              std::string fty = c.flat ? "f32[" + S(T) + ", 1, " + S(hd) + "]" : "f32[" + S(T) + ", 1, 1, " + S(hd) + "]";
              both(n + "_cos", fty, fty, "cos(%freqs)");
              both(n + "_sin", fty, fty, "sin(%freqs)");
              auto full = [&](bool s) { return t4(T, B, s ? sh : dh, hd); };
              auto half = [&](bool s) { return t4(T, B, s ? sh : dh, h2); };
              both(n + "_c", full(true), full(false), "mul(%" + a + ", %" + n + "_cos)");
              both(n + "_t1", half(true), half(false),
                   "slice(%" + a + ") {starts = [0], ends = [" + S(h2) + "], axes = [" + ax(3) + "]}");
              both(n + "_t2", half(true), half(false),
                   "slice(%" + a + ") {starts = [" + S(h2) + "], ends = [" + S(hd) + "], axes = [" + ax(3) + "]}");
              both(n + "_nt2", half(true), half(false), "neg(%" + n + "_t2)");
              both(n + "_rh", full(true), full(false), "concat(%" + n + "_nt2, %" + n + "_t1) {axis = " + ax(3) + "}");
              both(n + "_s", full(true), full(false), "mul(%" + n + "_rh, %" + n + "_sin)");
              both(n + "_rot", full(true), full(false), "add(%" + n + "_c, %" + n + "_s)");
              continue;
            }
            // vLLM's _apply_rotary_emb_torch (neox style): cos/sin of the half
            // angles, computed once and shared by every layer
            //   o1 = x1 * cos - x2 * sin;  o2 = x2 * cos + x1 * sin;  cat(o1, o2)
            std::string a = n + "4";
            auto ty = [&](bool s) { return t4(T, B, s ? sh : dh, h2); };
            auto line = [&](const std::string& o, const std::string& rhs) { both(o, ty(true), ty(false), rhs); };
            line(n + "_lo", "slice(%" + a + ") {starts = [0], ends = [" + S(h2) + "], axes = [" + ax(3) + "]}");
            line(n + "_hi", "slice(%" + a + ") {starts = [" + S(h2) + "], ends = [" + S(hd) + "], axes = [" + ax(3) + "]}");
            line(n + "_a", "mul(%" + n + "_lo, %cos)");
            line(n + "_b", "mul(%" + n + "_hi, %sin)");
            line(n + "_rlo", "sub(%" + n + "_a, %" + n + "_b)");
            line(n + "_d", "mul(%" + n + "_hi, %cos)");
            line(n + "_e", "mul(%" + n + "_lo, %sin)");
            line(n + "_rhi", "add(%" + n + "_d, %" + n + "_e)");
            both(n + "_rot", t4(T, B, sh, hd), t4(T, B, dh, hd),
                 "concat(%" + n + "_rlo, %" + n + "_rhi) {axis = " + ax(3) + "}");
          }
          q4 = q + "_rot";
          // GQA: each KV head repeated for its query heads
          int64_t dg = kvRepl ? nhl : grp;  // query heads per held KV head, on a rank
          for (const std::string& n : {k, v}) {
            std::string src = n == k ? k + "_rot" : v4;
            std::string s5 = "f32" + L({T, B, nkv, 1, hd});
            std::string d5 = "f32" + L({T, B, nkvl, 1, hd});
            both(n + "5", s5, d5, "unsqueeze(%" + src + ") {axes = [" + ax(3) + "]}");
            std::string se = L({T, B, nkv, grp, hd});
            std::string de = L({T, B, nkvl, dg, hd});
            both(n + "e", "f32" + se, "f32" + de, "expand(%" + n + "5) {shape = " + se + "}",
                 "expand(%" + n + "5) {shape = " + de + "}");
            both(n + "g", t4(T, B, nh, hd), t4(T, B, nhl, hd),
                 "reshape(%" + n + "e) {shape = " + sh4(T, B, nh, hd) + "}",
                 "reshape(%" + n + "e) {shape = " + sh4(T, B, nhl, hd) + "}");
          }
          k4 = k + "g", v4 = v + "g";
        }
        // [T, B, n, hd] -> [B, n, T, hd] (Megatron's [s, b, h] layout)
        both(p + "qh", t4(B, nh, T, hd), t4(B, nhl, T, hd), "transpose(%" + q4 + ") {perm = " + perm("[1, 2, 0, 3]", "[1, 0, 2]") + "}");
        both(p + "kt", t4(B, nh, hd, T), t4(B, nhl, hd, T), "transpose(%" + k4 + ") {perm = " + perm("[1, 2, 3, 0]", "[1, 2, 0]") + "}");
        both(p + "vh", t4(B, nh, T, hd), t4(B, nhl, T, hd), "transpose(%" + v4 + ") {perm = " + perm("[1, 2, 0, 3]", "[1, 0, 2]") + "}");
        both(p + "sc", t4(B, nh, T, T), t4(B, nhl, T, T), "matmul(%" + p + "qh, %" + p + "kt)");
        both(p + "scale", "f32[]", "f32[]", "constant() {value = " + scale + "}");
        both(p + "ss", t4(B, nh, T, T), t4(B, nhl, T, T), "mul(%" + p + "sc, %" + p + "scale)");
        both(p + "pr", t4(B, nh, T, T), t4(B, nhl, T, T), "softmax(%" + p + "ss)");
        both(p + "a", t4(B, nh, T, hd), t4(B, nhl, T, hd), "matmul(%" + p + "pr, %" + p + "vh)");
        both(p + "at", t4(T, B, nh, hd), t4(T, B, nhl, hd), "transpose(%" + p + "a) {perm = " + perm("[2, 0, 1, 3]", "[1, 0, 2]") + "}");
        both(p + "a3", t3(T, H), t3(T, Hl),
             "reshape(%" + p + "at) {shape = " + L({T, B, H}) + "}",
             "reshape(%" + p + "at) {shape = " + L({T, B, Hl}) + "}");
        param2(p + "wo", H, H, Hl, H);
        shard(p + "wo", 0, pl.heads);
        sq << sI << "%" << p << "o: " << t3(T, H) << " = matmul(%" << p << "a3, %" << p << "wo)\n";
        ds << dI << "%" << p << "op: " << t3(T, H) << " = matmul(%" << p << "a3, %" << p << "wo)\n";
        reduceOut(p + "op", p + "o");
        both(p + "r1", t3(T, H), t3(Tl, H), "add(%" + x + ", %" + p + "o)");
        y = p + "r1";
      }
      // ---- MLP ----
      norm(p + "n2", p + "n2", y, Tl);
      std::string din = gatherIn(p + "n2");
      std::string sin_ = p + "n2";
      std::string yo = p + "y";
      if (!m.llama) {
        param2(p + "w1", H, F, H, Fl);
        param2(p + "w2", F, H, Fl, H);
        shard(p + "w1", 1, pl.ffn);
        shard(p + "w2", 0, pl.ffn);
        sq << sI << "%" << p << "h: " << t3(T, F) << " = matmul(%" << sin_ << ", %" << p << "w1)\n";
        ds << dI << "%" << p << "h: " << t3(T, Fl) << " = matmul(%" << din << ", %" << p << "w1)\n";
        both(p + "g", t3(T, F), t3(T, Fl), "gelu(%" + p + "h)");
        sq << sI << "%" << p << "m: " << t3(T, H) << " = matmul(%" << p << "g, %" << p << "w2)\n";
        ds << dI << "%" << p << "mp: " << t3(T, H) << " = matmul(%" << p << "g, %" << p << "w2)\n";
      } else {
        param2(p + "wg", H, F, H, Fl);
        param2(p + "wu", H, F, H, Fl);
        param2(p + "wd", F, H, Fl, H);
        shard(p + "wg", 1, pl.ffn);
        shard(p + "wu", 1, pl.ffn);
        shard(p + "wd", 0, pl.ffn);
        sq << sI << "%" << p << "gate: " << t3(T, F) << " = matmul(%" << sin_ << ", %" << p << "wg)\n";
        ds << dI << "%" << p << "gate: " << t3(T, Fl) << " = matmul(%" << din << ", %" << p << "wg)\n";
        sq << sI << "%" << p << "up: " << t3(T, F) << " = matmul(%" << sin_ << ", %" << p << "wu)\n";
        ds << dI << "%" << p << "up: " << t3(T, Fl) << " = matmul(%" << din << ", %" << p << "wu)\n";
        both(p + "act", t3(T, F), t3(T, Fl), "silu(%" + p + "gate)");
        both(p + "gu", t3(T, F), t3(T, Fl), "mul(%" + p + "act, %" + p + "up)");
        sq << sI << "%" << p << "m: " << t3(T, H) << " = matmul(%" << p << "gu, %" << p << "wd)\n";
        ds << dI << "%" << p << "mp: " << t3(T, H) << " = matmul(%" << p << "gu, %" << p << "wd)\n";
      }
      reduceOut(p + "mp", p + "m");
      both(yo, t3(T, H), t3(Tl, H), "add(%" + y + ", %" + p + "m)");
      x = yo;
    }
    sq << sI << "output %" << x << "\n}\n";
    ds << dI << "output %" << x << "\n  }\n";
    if (sp)
      rl << "expect seq." << x << " = concat(dim=0, for r in tp: dist[r]." << x << ")\n";
    else
      rl << "expect seq." << x << " = dist[0]." << x << "\n";
    if (first == 0) seqText << sq.str(), relText << rl.str();
    distText << ds.str();
  }
  distText << "}\n";
  return {seqText.str(), distText.str(), relText.str()};
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
  t.dist = "program dp_regression_dp" + S(n) + " {\n  world " + S(n) + "\n  mesh [dp = " + S(n) + "]\n  rank 0.." +
           S(n - 1) + " {\n" + leaves(kDpTokens, "    ") + step(kDpTokens, recip(kDpTokens * kDpHidden), "    ") +
           "    %loss: f32[] = all_reduce(%lossl) {group = \"dp\", reduce = \"avg\"}\n"
           "    %dw1: f32[" + S(kDpHidden) + ", " + S(kDpFfn) + "] = all_reduce(%dw1l) {group = \"dp\", reduce = \"avg\"}\n"
           "    %dw2: f32[" + S(kDpFfn) + ", " + S(kDpHidden) + "] = all_reduce(%dw2l) {group = \"dp\", reduce = \"avg\"}\n"
           "    output %loss, %dw1, %dw2\n  }\n}\n";
  const std::string T = S(kDpTokens);
  t.rel = "for r in dp: dist[r].x = slice(seq.x, dim=0, start=idx(r,dp)*" + T + ", end=(idx(r,dp)+1)*" + T + ")\n" +
          "for r in dp: dist[r].t = slice(seq.t, dim=0, start=idx(r,dp)*" + T + ", end=(idx(r,dp)+1)*" + T + ")\n" +
          "dist[*].w1 = seq.w1\ndist[*].w2 = seq.w2\n"
          "expect seq.lossl = dist[0].loss\nexpect seq.dw1l = dist[0].dw1\nexpect seq.dw2l = dist[0].dw2\n";
  return t;
}

// The cell must have a plan (planCell); its note leads the reason.
int runCell(const Cell& c, double timeLimit, bool memo, const std::string& dump, int fd, int profile = 0) {
  const bool dp = c.m.name == "dp";
  const Plan pl = dp ? Plan{} : std::get<Plan>(planCell(c));
  auto t = dp ? generateDp(c.tp) : generate(c, pl);
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
      if (!pl.note.empty()) reason = reason.empty() ? pl.note : pl.note + "; " + reason;
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
               "usage: bench_verify [--models gpt,llama,dp] [--tp 2,4,6,8] [--layers 1,2,4,8]\n"
               "                    [--blocks mlp|full] [--time-limit SECONDS] [--batch N] [--seq N]\n"
               "                    [--layout sbh|sh] [--rope megatron|halves] [--dump DIR]\n"
               "                    [--no-memo] [--profile N]\n");
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
  int profile = 0;
  Rope rope = Rope::Megatron;
  auto ints = [](const std::string& s) {
    std::vector<int> v;
    for (auto& x : splitList(s)) v.push_back(std::atoi(x.c_str()));
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
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
    if (m != "gpt" && m != "llama" && m != "dp") return usage();
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
    auto r = inChild([&](int fd) { return runCell(w, timeLimit, memo, "", fd); }, timeLimit + 120);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "bench_verify: lemma proof cache warmed in a separate child (%s tp 2, 1 layer, seq 16, %s): %.2f s, %s\n",
                 w.m.name.c_str(), full ? "full" : "mlp", s, r.trouble.empty() ? r.out.substr(0, r.out.find(',')).c_str() : r.trouble.c_str());
  }

  std::printf("model,tp,layers,verdict,seconds,cpu_seconds,peak_rss_mb,seq_ops,dist_ops,lemmas_applied,memo_hits,reason\n");
  std::fflush(stdout);
  for (const auto& name : models) {
    for (int tp : tps) {
      for (int nl : layers) {
        Cell c{name == "gpt" ? gptShape() : llamaShape(), tp, nl, full, batch, seq, flat, rope};
        if (name == "dp") {
          c.m = dpShape();
          if (nl != layers.front()) continue;  // one regression step per DP degree
          if (!std::has_single_bit(unsigned(tp))) {
            std::printf("dp,%d,1,skipped,,,,,,,,%s\n", tp, csvQuote("dp degree must be a power of two").c_str());
            continue;
          }
        } else if (auto plan = planCell(c); auto* why = std::get_if<std::string>(&plan)) {
          std::printf("%s,%d,%d,skipped,,,,,,,,%s\n", name.c_str(), tp, nl, csvQuote(*why).c_str());
          std::fflush(stdout);
          continue;
        }
        auto r = inChild([&](int fd) { return runCell(c, timeLimit, memo, dump, fd, profile); }, timeLimit + 120);
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
