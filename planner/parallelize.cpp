// Megatron-LM tensor-parallel transformer stacks as text IR (parallelize.h).
// Moved here from bench_verify, which now generates its cells through it.
#include "planner/parallelize.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <variant>

#include "ir/autodiff.h"
#include "ir/program_edit.h"
#include "ir/text.h"

namespace sp::planner {

namespace {

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
  Blocks heads, kv, ffn;
  bool kvRepl = false;   // Llama tp > KV heads: each KV head held by tp/nkv ranks
};

// The cell's sharding, or why it cannot be built. Heads, KV heads and ffn
// that do not divide by tp are split unevenly (Blocks; Llama by KV head
// groups, each KV head with its query heads). Sequence parallel needs
// seq % tp == 0 (all_gather / reduce_scatter have equal shards): the largest
// such seq not above the requested one is used, and said in `note`.
std::variant<Plan, std::string> planCell(const ProgramSpec& c) {
  const ProgramSpec& m = c;
  const int64_t hd = m.hidden / m.heads, tp = c.tp;
  Plan p;
  p.seq = c.seq;
  std::vector<std::string> bad;
  if (c.cp < 1 || c.seq % (c.cpBalanced && c.cp > 1 ? 2 * c.cp : c.cp))
    bad.push_back("seq " + S(c.seq) + " not divisible by " + (c.cpBalanced && c.cp > 1 ? "2 x " : "") + "cp " + S(c.cp) +
                  (c.cpBalanced && c.cp > 1 ? " (load-balanced context parallel: two equal halves per rank)"
                                            : " (context parallel: each rank holds an equal chunk of the tokens)"));
  else if (c.sequenceParallel && (c.seq / c.cp) % tp)
    bad.push_back((c.cp > 1 ? "a context-parallel chunk of " + S(c.seq / c.cp) + " tokens" : "seq " + S(c.seq)) +
                  " not divisible by tp " + S(tp) + " (sequence parallel: all_gather and reduce_scatter need equal shards)");
  if (!m.mla() && m.hidden % m.heads) bad.push_back("hidden " + S(m.hidden) + " not divisible by " + S(m.heads) + " heads");
  if (m.llama && !m.mla() && (m.kvHeads < 1 || m.heads % m.kvHeads))
    bad.push_back(S(m.heads) + " query heads not a multiple of " + S(m.kvHeads) + " KV heads");
  if (m.ffn < tp) bad.push_back("ffn " + S(m.ffn) + " below tp " + S(tp));
  if (c.ep < 1 || c.dp % c.ep) bad.push_back("ep " + S(c.ep) + " does not divide dp " + S(c.dp) + " (expert parallel groups are made of data-parallel replicas)");
  if (c.ep > 1 && c.experts < 1) bad.push_back("ep " + S(c.ep) + " without experts");
  if (c.experts > 0) {
    if (!m.llama) bad.push_back("experts in a GPT (GELU) model");
    if (c.topK < 1 || c.topK > c.experts) bad.push_back("top-k " + S(c.topK) + " not in 1.." + S(c.experts));
    if (c.ep >= 1 && c.experts % c.ep) bad.push_back(S(c.experts) + " experts not divisible by ep " + S(c.ep));
    if (c.moeFfn < 1 || c.moeFfn % tp) bad.push_back("expert ffn " + S(c.moeFfn) + " not divisible by tp " + S(tp));
    if (c.sharedFfn < 0 || (c.sharedFfn > 0 && c.sharedFfn < tp)) bad.push_back("shared expert ffn " + S(c.sharedFfn) + " below tp " + S(tp));
    if (c.denseLayers < 0) bad.push_back("negative dense layers");
  }
  p.ffn = blocks(m.ffn, c.tp);
  if (m.mla()) {
    // whole heads per rank (Megatron's MLA), the blocks in value columns
    if (!m.llama) bad.push_back("multi-head latent attention in a GPT (GELU) model");
    if (m.qLoraRank < 0 || m.qkNope < 1 || m.qkRope < 2 || m.qkRope % 2 || m.vHeadDim < 1)
      bad.push_back("MLA dims: q_lora_rank " + S(m.qLoraRank) + ", qk_nope " + S(m.qkNope) + ", qk_rope " +
                    S(m.qkRope) + " (even), v_head_dim " + S(m.vHeadDim));
    if (c.attention && m.heads % tp) bad.push_back(S(m.heads) + " heads not divisible by tp " + S(tp) + " (MLA)");
    p.heads = p.kv = blocks(m.heads, c.tp, m.vHeadDim);
  } else if (!m.llama) {
    if (c.attention && m.heads < tp) bad.push_back(S(m.heads) + " heads below tp " + S(tp));
    p.heads = p.kv = blocks(m.heads, c.tp, hd);
  } else if (tp <= m.kvHeads) {
    p.kv = blocks(m.kvHeads, c.tp, hd);
    p.heads = blocks(m.kvHeads, c.tp, hd * (m.heads / m.kvHeads));
  } else {
    // each KV head's query heads shared evenly by the tp / nkv ranks holding it
    p.kvRepl = true;
    if (c.attention && (tp % m.kvHeads || (m.heads / m.kvHeads) % (tp / m.kvHeads)))
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

// The first layer of each pipeline stage (and the layer count last): an
// even split, else Megatron's lighter first and last stages (the embedding
// and the loss each taking a layer slot: Llama 3 405B's 126 layers on 16
// stages are 7, 8 x 14, 7), one layer fewer on the first, the last, the
// second, ... stage until the count fits. Empty when no stage may be empty.
std::vector<int> stageSplit(int layers, int pp) {
  int base = (layers + pp - 1) / pp, deficit = base * pp - layers;
  std::vector<int> count(size_t(pp), base);
  for (int k = 0; deficit > 0 && k < pp; ++k, --deficit) count[size_t(k % 2 ? pp - 1 - k / 2 : k / 2)] -= 1;
  std::vector<int> first{0};
  for (int n : count) {
    if (n < 1) return {};
    first.push_back(first.back() + n);
  }
  return first;
}

// What the backward needs from the generator: each D leaf's mesh axes of
// variation (autodiff.h), and the relations of the tangents and gradients.
struct Generated {
  ParallelProgram text;
  std::map<std::string, std::vector<std::string>> varies;
  std::string backwardRelations;  // tangent inputs and gradient expect lines
};

// Generates seq graph, dist program and relations for one cell.
// Ranks whose sizes are equal share one `rank a..b` body; the relation file
// gives each run of equal-sized blocks one comprehension line (`for r in tp`
// when all are equal).
Generated generate(const ProgramSpec& c, const Plan& pl) {
  const ProgramSpec& m = c;
  const int64_t H = m.hidden, F = m.ffn, nh = m.heads, nkv = m.kvHeads, hd = H / nh;
  // Per head: query/key dim dk, value dim dv, RoPE dim rd (MLA: nope + rope,
  // v_head_dim, rope; else hd each); Ha the attention's output width.
  const bool mla = m.mla();
  const int64_t dk = mla ? m.qkNope + m.qkRope : hd, dv = mla ? m.vHeadDim : hd, rd = mla ? m.qkRope : hd;
  const int64_t Ha = nh * dv;
  // B and T mark the batch and token dims (see L): S's sizes, or D's (a
  // replica's batch; a context-parallel rank's chunk of the tokens, Tc).
  // Tn is the whole sequence, which D's gathered keys and values span.
  const int64_t B = -1, T = -2, Tn = pl.seq, tp = c.tp, cp = c.cp, Tc = Tn / cp;
  // Load-balanced context parallel: halves of Th tokens, two per rank.
  const bool bal = cp > 1 && c.cpBalanced;
  const int64_t Th = Tn / (2 * cp);
  const int dp = c.dp;
  // Expert parallel: the dp replicas split into dp / ep groups of ep
  // consecutive ones (Megatron's expert group, inside data parallel), mesh
  // axes edp x ep; replica d = idx(r,edp) * ep + idx(r,ep).
  const int ep = c.ep, edp = dp / ep;
  const std::string dpMesh = ep > 1 ? (edp > 1 ? "edp = " + S(edp) + ", " : "") + "ep = " + S(ep) + ", "
                                    : dp > 1 ? "dp = " + S(dp) + ", " : "";
  const std::string dpIdx = ep > 1 ? (edp > 1 ? "(idx(r,edp)*" + S(ep) + "+idx(r,ep))" : "idx(r,ep)") : "idx(r,dp)";
  std::vector<std::string> dpAxes;
  if (ep > 1 && edp > 1) dpAxes.push_back("edp");
  if (ep > 1) dpAxes.push_back("ep");
  else if (dp > 1) dpAxes.push_back("dp");
  // Megatron's rank order: tp fastest, then cp, then dp (ep), then pp.
  auto rankOf = [&](int stage, int d, int64_t t, int64_t k = 0) {
    return ((int64_t(stage) * dp + d) * cp + k) * tp + t;
  };
  Generated out;
  const bool sp = c.sequenceParallel;  // tokens sharded on dim 0
  const int64_t Tl = sp ? Tc / tp : T;
  // Per rank: set for each body below.
  int64_t Hl = 0, Fl = 0, nhl = 0, nkvl = 0;
  const bool kvRepl = pl.kvRepl;
  const int64_t grp = m.llama ? nh / nkv : 1;  // query heads per KV head
  const std::string scale = "dense<f32[], [" + std::to_string(1.0 / std::sqrt(double(dk))) + "]>";
  // A dims list; B marks the batch dim: its size, or dropped in the flat layout.
  auto L = [&](std::initializer_list<int64_t> ds) {
    std::string o = "[";
    for (int64_t d : ds) {
      if (d == B && c.flat) continue;
      // S's or D's batch and tokens, set at the end
      o += (o.size() > 1 ? ", " : "") + (d == B ? std::string("@B@") : d == T ? std::string("@T@") : S(d));
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
  int curStage = 0;
  int64_t base = 0;  // the first rank of the pipeline stage being written
  // The stage's ranks as a comprehension domain: "tp", or "8..15".
  auto stageRanks = [&] {
    return c.pp == 1 && cp == 1 ? std::string("tp") : S(base) + ".." + S(base + dp * cp * tp - 1);
  };
  // "dist[*].n" without pipeline stages, else over the stage's ranks.
  auto every = [&](const std::string& n) {
    return c.pp == 1 && cp == 1 ? "dist[*]." + n : "for r in " + stageRanks() + ": dist[r]." + n;
  };
  auto perBlockRun = [&](const std::string& n, const Blocks& b, const std::function<std::string(int)>& fn) {
    auto rs = runs(c.tp, [&](int r) { return b.size[size_t(r)]; });
    for (auto [a, z] : rs) {
      if (rs.size() == 1) {
        rl << "for r in " << stageRanks() << ": dist[r]." << n << " = " << fn(a) << "\n";
        continue;
      }
      for (int d = 0; d < dp; ++d)  // the run in each data-parallel replica and context-parallel rank
        for (int64_t k = 0; k < cp; ++k)
          rl << "for r in " << rankOf(curStage, d, a, k) << ".." << rankOf(curStage, d, z, k) << ": dist[r]." << n
             << " = " << fn(a) << "\n";
    }
  };

  std::ostringstream seqText, distText, relText;
  distText << "program " << m.name << "_tp" << tp << (cp > 1 ? "_cp" + S(cp) : "") << (dp > 1 ? "_dp" + S(dp) : "")
           << (c.pp > 1 ? "_pp" + S(c.pp) : "") << " {\n  world " << tp * cp * dp * c.pp << "\n  mesh ["
           << (c.pp > 1 ? "pp = " + S(c.pp) + ", " : "") << dpMesh << (cp > 1 ? "cp = " + S(cp) + ", " : "")
           << "tp = " << tp << "]\n";
  // Backward relations: per differentiated leaf, its stage and layout.
  struct LeafLayout {
    int stage = 0;
    int dim = -1;  // -1: replicated
    std::vector<std::vector<std::pair<int64_t, int64_t>>> blocks;  // per tp index: (S offset, extent), S order
    std::string rebuilt;  // else: the gradient's expect expression (expert weights, over ep and tp)
  };
  std::map<std::string, LeafLayout> layouts;
  auto replicated = [&](const std::string& n) {
    out.varies[n] = {};
    layouts[n] = LeafLayout{curStage, -1, {}, {}};
  };
  auto sharded = [&](const std::string& n, int dim, const Blocks& b, std::vector<int64_t> bases) {
    if (tp == 1) return replicated(n);  // one shard: the whole weight
    out.varies[n] = {"tp"};
    LeafLayout l{curStage, dim, {}, {}};
    for (int64_t t = 0; t < tp; ++t) {
      l.blocks.emplace_back();
      for (int64_t base0 : bases) l.blocks.back().push_back({base0 + b.off[size_t(t)], b.size[size_t(t)]});
    }
    layouts[n] = l;
  };
  // x0 and the output's tangent: the batch over dp, the tokens over cp (a
  // chunk each, rows rowsOf) and within a chunk over tp under sequence
  // parallelism. `seqName` in S, laid out on `stage`'s ranks.
  // With micro-batches, micro-batch i of replica d is S's sequences
  // [(i dp + d) Bl, (i dp + d + 1) Bl) and D's tensors of it are named
  // <name>_mb<i> (replicateMicroBatches).
  const int64_t Bl = c.batch, Tl0 = sp ? Tc / tp : Tc;
  const int mbs = c.microBatches;
  auto mbName = [&](const std::string& n, int i) { return mbs > 1 ? n + "_mb" + S(i) : n; };
  // The rank's rows of S's expression `e` along dim 0: its context-parallel
  // chunk, and within it (shardTp: sequence parallel) its tp shard.
  auto tokenRows = [&](const std::string& e, bool shardTp) {
    if (cp == 1 && !shardTp) return e;
    if (bal) {
      // Megatron's load-balanced chunks: rank k holds halves k and 2 cp - 1 - k
      auto half = [&](const std::string& lo, const std::string& hi) {
        return "slice(" + e + ", dim=0, start=" + lo + ", end=" + hi + ")";
      };
      std::string rows = "concat(dim=0, " + half("idx(r,cp)*" + S(Th), "(idx(r,cp)+1)*" + S(Th)) + ", " +
                         half(S((2 * cp - 1) * Th) + "-idx(r,cp)*" + S(Th), S(2 * cp * Th) + "-idx(r,cp)*" + S(Th)) + ")";
      if (!shardTp) return rows;
      return "slice(" + rows + ", dim=0, start=idx(r,tp)*" + S(Tl0) + ", end=(idx(r,tp)+1)*" + S(Tl0) + ")";
    }
    std::string at = cp > 1 && shardTp ? "idx(r,cp)*" + S(Tc) + "+" : "";
    std::string ax = shardTp ? "tp" : "cp";
    int64_t w = shardTp ? Tl0 : Tc;
    return "slice(" + e + ", dim=0, start=" + at + "idx(r," + ax + ")*" + S(w) + ", end=" + at + "(idx(r," + ax +
           ")+1)*" + S(w) + ")";
  };
  auto tokensRelation = [&](const std::string& n, const std::string& seqName) {
    std::string lines;
    for (int i = 0; i < mbs; ++i) {
      std::string e = "seq." + seqName, dn = mbName(n, i);
      if (dp > 1 || mbs > 1) {
        std::string lo = "(" + S(i * dp) + "+" + dpIdx + ")*" + S(Bl), hi = "(" + S(i * dp + 1) + "+" + dpIdx + ")*" + S(Bl);
        if (i == 0) lo = dpIdx + "*" + S(Bl), hi = "(" + dpIdx + "+1)*" + S(Bl);
        if (dp == 1) lo = S(i * Bl), hi = S((i + 1) * Bl);
        e = "slice(" + e + ", dim=1, start=" + lo + ", end=" + hi + ")";
      }
      e = tokenRows(e, sp);
      std::vector<std::string> ax = dpAxes;
      if (cp > 1) ax.push_back("cp");
      if (sp) ax.push_back("tp");
      out.varies[dn] = ax;
      if (dp == 1 && !sp && cp == 1) lines += every(dn) + " = " + e + "\n";
      else lines += "for r in " + stageRanks() + ": dist[r]." + dn + " = " + e + "\n";
    }
    return lines;
  };
  // The S tensor rebuilt from `stage`'s ranks' tensors `n` laid out like x0.
  auto tokensRebuilt = [&](int stage, const std::string& n) {
    std::string o;
    for (int i = 0; i < mbs; ++i)
      for (int d = 0; d < dp; ++d) {
        // the chunk of context-parallel rank k, from its tp ranks' shards
        auto chunk = [&](int64_t k) {
          if (!sp) return "dist[" + S(rankOf(stage, d, 0, k)) + "]." + mbName(n, i);
          std::string part = "concat(dim=0";
          for (int64_t t = 0; t < tp; ++t) part += ", dist[" + S(rankOf(stage, d, t, k)) + "]." + mbName(n, i);
          return part + ")";
        };
        std::string part = chunk(0);
        if (bal) {  // S's halves in order: rank j's first for j < cp, then the second halves back
          part = "concat(dim=0";
          for (int64_t j = 0; j < 2 * cp; ++j) {
            bool first = j < cp;
            part += ", slice(" + chunk(first ? j : 2 * cp - 1 - j) + ", dim=0, start=" + S(first ? 0 : Th) +
                    ", end=" + S(first ? Th : 2 * Th) + ")";
          }
          part += ")";
        } else if (cp > 1) {
          part = "concat(dim=0";
          for (int64_t k = 0; k < cp; ++k) part += ", " + chunk(k);
          part += ")";
        }
        o += (o.empty() ? "" : ", ") + part;
      }
    return dp > 1 || mbs > 1 ? "concat(dim=1, " + o + ")" : o;
  };
  auto classes = runs(c.tp, [&](int r) {  // (MLP blocks: heads unused)
    auto at = size_t(c.attention ? r : 0);
    return std::tuple{pl.heads.size[at], pl.kv.size[at], pl.ffn.size[size_t(r)]};
  });
  // Each body is written with its ranks' sizes; S and the relation file (which
  // names every rank's block) are kept from the first pass.
  // Pipeline stages (c.pp > 1): stage s runs layers [s L / pp, (s + 1) L /
  // pp) on ranks s*tp .. s*tp + tp - 1 (Megatron's order, tp fastest), takes
  // its input from the same tp rank of the stage before (recv) and sends its
  // output to the next. Peers are positions in the rank's "pp" group (its
  // stage neighbours, whatever its dp and tp coordinates), so one body
  // serves every rank of a stage that has its sizes.
  const std::vector<int> firstLayer = stageSplit(c.layers, c.pp);
  // Interleaved (vpp > 1): pp * vpp equal virtual stages, stage s holding
  // virtual stages s, s + pp, ... (Megatron's model chunks); a chunk's
  // input comes from the stage before (the last stage's chunk v feeds the
  // first stage's chunk v + 1), each transfer tagged with the virtual stage
  // that receives it.
  const int vpp = c.vpp, nvs = c.pp * vpp, perChunk = c.layers / nvs;
  auto chunkLayers = [&](int stage, int v) {
    if (vpp == 1) return std::pair{firstLayer[size_t(stage)], firstLayer[size_t(stage) + 1]};
    int vs = v * c.pp + stage;
    return std::pair{vs * perChunk, (vs + 1) * perChunk};
  };
  auto chunkTag = [&](int stage, int v) { return vpp == 1 ? 0 : v * c.pp + stage; };
  std::string lastOut;
  for (int stage = 0; stage < c.pp; ++stage) {
  base = rankOf(stage, 0, 0);
  curStage = stage;
  const bool firstStage = stage == 0, lastStage = stage == c.pp - 1;
  // Data-parallel replicas run the same body.
  const int rep = 0;
  for (auto [first, last] : classes) {
    Hl = pl.heads.size[size_t(first)], Fl = pl.ffn.size[size_t(first)], nhl = Hl / dv;
    nkvl = kvRepl ? 1 : pl.kv.size[size_t(first)] / dv;
    std::ostringstream sq, ds;
    rl.str("");
    std::ostringstream sqIn;  // S's inputs: written by the first stage only
    if (firstStage)
      sqIn << "# generated by shardproof parallelize: " << m.name << " " << (c.attention ? "attention + MLP" : "MLP")
           << ", " << c.layers << " layers\ngraph " << m.name << " {\n";
    std::vector<std::string> heads;  // the ranks running this body
    {
      // Replicas whose ranks follow each other share one `rank a..b` (one
      // graph for the whole range: ir::Program's rank classes).
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (int d = 0; d < dp; ++d)
        for (int64_t k = 0; k < cp; ++k) {
          int64_t lo = rankOf(stage, d, first, k), hi = rankOf(stage, d, last, k);
          if (!spans.empty() && spans.back().second + 1 == lo) spans.back().second = hi;
          else spans.emplace_back(lo, hi);
        }
      for (auto [lo, hi] : spans) heads.push_back("  rank " + S(lo) + (hi > lo ? ".." + S(hi) : "") + " {\n");
    }
    std::string sI = "  ", dI = "    ";
    // The stage's input: the tokens, or the previous stage's output.
    std::string x = firstStage ? "x0" : "l" + S(chunkLayers(stage, 0).first - 1) + "_y";
    if (firstStage) {
      sqIn << sI << "input %x0: " << t3(T, H) << "\n";
      ds << dI << "input %x0: " << t3(Tl, H) << "\n";
      rl << tokensRelation("x0", "x0");
      layouts["x0"] = LeafLayout{0, -2, {}, {}};
    } else {
      std::string shape = L({Tl, B, H});
      ds << dI << "%" << x << ": " << t3(Tl, H) << " = recv() {group = \"pp\", peer = " << stage - 1
         << ", tag = " << chunkTag(stage, 0) << ", dtype = f32, shape = " << shape << "}\n";
    }
    // Per-position inputs (RoPE angles or tables, the mask's rows): the
    // same on every rank, or under context parallel the rank's chunk's rows
    // (Megatron's get_pos_emb_on_this_cp_rank; the mask rows of its queries).
    auto positional = [&](const std::string& n) {
      if (cp == 1) rl << every(n) << " = seq." << n << "\n";
      else rl << "for r in " << stageRanks() << ": dist[r]." << n << " = " << tokenRows("seq." + n, false) << "\n";
      out.varies[n] = cp > 1 ? std::vector<std::string>{"cp"} : std::vector<std::string>{};
    };
    if (c.attention && m.llama && c.rope == RopeForm::Halves) {
      std::string ty = "f32" + std::string(c.flat ? "[@T@, 1, " : "[@T@, 1, 1, ") + S(rd / 2) + "]";
      if (firstStage) sqIn << sI << "input %cos: " << ty << "\n" << sI << "input %sin: " << ty << "\n";
      ds << dI << "input %cos: " << ty << "\n" << dI << "input %sin: " << ty << "\n";
      positional("cos");
      positional("sin");
    }
    if (c.attention && m.llama && c.rope == RopeForm::Megatron) {
      // Megatron's rotary_pos_emb: the angles of every position, emb = cat(freqs, freqs)
      std::string ty = "f32" + std::string(c.flat ? "[@T@, 1, " : "[@T@, 1, 1, ") + S(rd) + "]";
      if (firstStage) sqIn << sI << "input %freqs: " << ty << "\n";
      ds << dI << "input %freqs: " << ty << "\n";
      positional("freqs");
    }
    if (c.attention && c.causal) {
      // The additive causal mask (0 on and below the diagonal, -inf above),
      // an input: the same on every rank, and the proof holds for any mask.
      if (firstStage) sqIn << sI << "input %mask: f32[" << Tn << ", " << Tn << "]\n";
      ds << dI << "input %mask: f32[@T@, " << Tn << "]\n";
      positional("mask");
    }
    auto shard = [&](const std::string& n, int dim, const Blocks& b) {
      perBlockRun(n, b, [&](int a) { return blockSlice(n, dim, b, a, 0); });
      sharded(n, dim, b, {0});
    };
    auto repl = [&](const std::string& n) {
      rl << every(n) << " = seq." << n << "\n";
      replicated(n);
    };
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
      if (tp == 1)  // one rank holds the whole sum: no collective (Megatron calls none)
        ds << dI << "%" << out << ": " << t3(T, H) << " = identity(%" << n << ")\n";
      else if (sp)
        ds << dI << "%" << out << ": " << t3(Tl, H) << " = reduce_scatter(%" << n
           << ") {group = \"tp\", dim = 0}\n";
      else
        ds << dI << "%" << out << ": " << t3(T, H) << " = all_reduce(%" << n << ") {group = \"tp\"}\n";
    };
    // A row-parallel linear's bias: added once, after the reduction (every
    // rank holds it; adding it before the all_reduce would count it tp
    // times). `in` is the reduced value on both sides, `out` the result.
    auto rowBias = [&](const std::string& b, const std::string& in, const std::string& out) {
      if (!c.biases || m.llama) return;  // (qwen2: biases on q, k and v only)
      sq << sI << "param %" << b << ": f32[" << H << "]\n";
      ds << dI << "param %" << b << ": f32[" << H << "]\n";
      repl(b);
      both(out, t3(T, H), t3(Tl, H), "add(%" + in + ", %" + b + ")");
    };
    auto param2 = [&](const std::string& n, int64_t r, int64_t cc, int64_t dr, int64_t dc) {
      sq << sI << "param %" << n << ": f32[" << r << ", " << cc << "]\n";
      ds << dI << "param %" << n << ": f32[" << dr << ", " << dc << "]\n";
    };

    // A routed mixture of experts in place of the MLP (Megatron's MoE layer,
    // dropless): the router's top-k of softmax (sigmoid) scores, the gates
    // those scores (renormalized over the k), every expert run on every
    // token and weighted by its gate (zero where not routed: the same sum as
    // dispatching the routed tokens only), summed over the experts; shared
    // experts a SwiGLU MLP added (qwen2_moe: times a sigmoid gate). D: each
    // tp rank routes its replica's tokens itself (under sequence parallel
    // its own shard, the gates then gathered like the tokens, as Megatron's
    // router runs before the token dispatcher's gather); the experts' ffn
    // is split over tp like the MLP's
    // (expert tensor parallel = tp); with ep > 1 each rank of the ep group
    // holds experts / ep experts, all_to_all sends each expert's copy of the
    // tokens and gates to its rank (concatenated on the batch dim, the ep
    // group's replicas' sequences) and the weighted outputs back. What it
    // leaves, partial over tp, goes to the MLP's reduction ("mp").
    auto moeMlp = [&](const std::string& p, const std::string& sin_, const std::string& din, const std::string& dloc) {
      const int64_t E = c.experts, K = c.topK, Fe = c.moeFfn, El = E / ep, Fel = Fe / tp;
      const int lastAx = c.flat ? 1 : 2;  // the hidden (expert) dim of [T, B, *]
      auto w3 = [&](const std::string& n, int64_t a, int64_t b, int64_t cc, int64_t da, int64_t db, int64_t dc) {
        sq << sI << "param %" << n << ": f32[" << a << ", " << b << ", " << cc << "]\n";
        ds << dI << "param %" << n << ": f32[" << da << ", " << db << ", " << dc << "]\n";
      };
      // ---- router ----
      // Under sequence parallel each tp rank routes its own tokens (before
      // the gather, as Megatron's router does) and the gates are gathered
      // with the tokens: every rank runs one graph, and the backward
      // reduce-scatters the gates' partial gradients like the tokens'.
      const int64_t Tr = sp ? Tl : T;  // D's routed tokens
      const std::string rin = sp ? dloc : din;
      param2(p + "wr", H, E, H, E);
      repl(p + "wr");
      both(p + "lg", t3(T, E), t3(Tr, E), "matmul(%" + sin_ + ", %" + p + "wr)", "matmul(%" + rin + ", %" + p + "wr)");
      both(p + "rp", t3(T, E), t3(Tr, E), std::string(c.sigmoidRouter ? "sigmoid" : "softmax") + "(%" + p + "lg)");
      std::string sel = p + "rp";
      if (c.selectionBias) {  // selection only: the gates stay the scores
        sq << sI << "param %" << p << "eb: f32[" << E << "]\n";
        ds << dI << "param %" << p << "eb: f32[" << E << "]\n";
        repl(p + "eb");
        both(p + "rb", t3(T, E), t3(Tr, E), "add(%" + p + "rp, %" + p + "eb)");
        sel = p + "rb";
      }
      for (auto* o : {&sq, &ds}) {
        std::string tk = o == &sq ? L({T, B, K}) : L({Tr, B, K});
        *o << (o == &sq ? sI : dI) << "%" << p << "tv: f32" << tk << ", %" << p << "ti: i64" << tk << " = topk(%" << sel
           << ") {k = " << K << "}\n";
      }
      both(p + "oh", "f32" + L({T, B, K, E}), "f32" + L({Tr, B, K, E}), "one_hot(%" + p + "ti) {depth = " + S(E) + "}");
      both(p + "mk", t3(T, E), t3(Tr, E), "reduce_sum(%" + p + "oh) {axes = [" + ax(2) + "], keepdims = 0}");
      both(p + "gt", t3(T, E), t3(Tr, E), "mul(%" + p + "rp, %" + p + "mk)");
      std::string g = p + "gt";
      if (c.normTopK) {
        both(p + "gs", t3(T, 1), t3(Tr, 1), "reduce_sum(%" + g + ") {axes = [" + S(lastAx) + "], keepdims = 1}");
        both(p + "gn", t3(T, E), t3(Tr, E), "div(%" + g + ", %" + p + "gs)");
        g = p + "gn";
      }
      if (c.routedScale != 1.0) {
        std::ostringstream v;
        v.precision(17);
        v << c.routedScale;
        both(p + "rsc", "f32[]", "f32[]", "constant() {value = dense<f32[], [" + v.str() + "]>}");
        both(p + "gsc", t3(T, E), t3(Tr, E), "mul(%" + g + ", %" + p + "rsc)");
        g = p + "gsc";
      }
      std::string dg = g;
      if (sp) {
        dg = g + "_ag";
        ds << dI << "%" << dg << ": " << t3(T, E) << " = all_gather(%" << g << ") {group = \"tp\", dim = 0}\n";
      }
      // gates expert-major [E, T, B, 1]
      std::string ge = L({E, T, B}), g4 = L({E, T, B, 1});
      both(p + "ge", "f32" + ge, "f32" + ge, "transpose(%" + g + ") {perm = " + perm("[2, 0, 1]", "[1, 0]") + "}",
           "transpose(%" + dg + ") {perm = " + perm("[2, 0, 1]", "[1, 0]") + "}");
      both(p + "g4", "f32" + g4, "f32" + g4, "unsqueeze(%" + p + "ge) {axes = [" + S(lastAx + 1) + "]}");
      // ---- experts ----
      w3(p + "we1", E, H, Fe, El, H, Fel);
      w3(p + "we3", E, H, Fe, El, H, Fel);
      w3(p + "we2", E, Fe, H, El, Fel, H);
      auto expertRel = [&](const std::string& n, int fdim, int64_t fe) {
        std::string e = "seq." + n;
        if (ep > 1) e = "slice(" + e + ", dim=0, start=idx(r,ep)*" + S(El) + ", end=(idx(r,ep)+1)*" + S(El) + ")";
        if (tp > 1)
          e = "slice(" + e + ", dim=" + S(fdim) + ", start=idx(r,tp)*" + S(fe / tp) + ", end=(idx(r,tp)+1)*" + S(fe / tp) + ")";
        rl << "for r in " << stageRanks() << ": dist[r]." << n << " = " << e << "\n";
        std::vector<std::string> v;
        if (ep > 1) v.push_back("ep");
        if (tp > 1) v.push_back("tp");
        out.varies[n] = v;
        // the gradient: experts over ep on dim 0, each expert's ffn over tp
        auto overTp = [&](int e2) {
          if (tp == 1) return "dist[" + S(rankOf(curStage, e2, 0)) + "].grad_" + n;
          std::string cat = "concat(dim=" + S(fdim);
          for (int64_t t = 0; t < tp; ++t) cat += ", dist[" + S(rankOf(curStage, e2, t)) + "].grad_" + n;
          return cat + ")";
        };
        std::string rebuilt = overTp(0);
        if (ep > 1) {
          rebuilt = "concat(dim=0";
          for (int e2 = 0; e2 < ep; ++e2) rebuilt += ", " + overTp(e2);
          rebuilt += ")";
        }
        layouts[n] = LeafLayout{curStage, 0, {}, rebuilt};
      };
      expertRel(p + "we1", 2, Fe);
      expertRel(p + "we3", 2, Fe);
      expertRel(p + "we2", 1, Fe);
      const int64_t Bd = c.batch * ep;  // D's batch after the dispatch (ep > 1: never flat)
      auto dx = [&](int64_t last) { return ep > 1 ? "f32[" + S(El) + ", @T@, " + S(Bd) + ", " + S(last) + "]" : "f32" + L({E, T, B, last}); };
      both(p + "x1", "f32" + L({1, T, B, H}), "f32" + L({1, T, B, H}), "unsqueeze(%" + sin_ + ") {axes = [0]}",
           "unsqueeze(%" + din + ") {axes = [0]}");
      both(p + "xe", "f32" + L({E, T, B, H}), "f32" + L({E, T, B, H}), "expand(%" + p + "x1) {shape = " + L({E, T, B, H}) + "}");
      std::string xin = p + "xe", gin = p + "g4";
      if (ep > 1) {
        ds << dI << "%" << p << "xa: " << dx(H) << " = all_to_all(%" << p << "xe) {group = \"ep\", split_dim = 0, concat_dim = 2}\n";
        ds << dI << "%" << p << "ga: " << dx(1) << " = all_to_all(%" << p << "g4) {group = \"ep\", split_dim = 0, concat_dim = 2}\n";
      }
      std::string dxin = ep > 1 ? p + "xa" : xin, dgin = ep > 1 ? p + "ga" : gin;
      // the expert weights with a unit token dim: [E, 1, H, F] against [E, T, B, H]
      std::string wsh = c.flat ? "" : "u";
      for (auto [n, a, b2, da, db] : {std::tuple{"we1", H, Fe, H, Fel}, std::tuple{"we3", H, Fe, H, Fel},
                                      std::tuple{"we2", Fe, H, Fel, H}}) {
        if (c.flat) continue;
        both(p + n + "u", "f32[" + S(E) + ", 1, " + S(a) + ", " + S(b2) + "]",
             "f32[" + S(El) + ", 1, " + S(da) + ", " + S(db) + "]", "unsqueeze(%" + p + n + ") {axes = [1]}");
      }
      std::string sF = "f32" + L({E, T, B, Fe}), sH = "f32" + L({E, T, B, H});
      both(p + "h1", sF, dx(Fel), "matmul(%" + xin + ", %" + p + "we1" + wsh + ")", "matmul(%" + dxin + ", %" + p + "we1" + wsh + ")");
      both(p + "h3", sF, dx(Fel), "matmul(%" + xin + ", %" + p + "we3" + wsh + ")", "matmul(%" + dxin + ", %" + p + "we3" + wsh + ")");
      both(p + "a1", sF, dx(Fel), "silu(%" + p + "h1)");
      both(p + "ah", sF, dx(Fel), "mul(%" + p + "a1, %" + p + "h3)");
      both(p + "ye", sH, dx(H), "matmul(%" + p + "ah, %" + p + "we2" + wsh + ")");
      both(p + "yw", sH, dx(H), "mul(%" + p + "ye, %" + gin + ")", "mul(%" + p + "ye, %" + dgin + ")");
      std::string yback = p + "yw";
      if (ep > 1) {
        ds << dI << "%" << p << "yb: " << sH << " = all_to_all(%" << p << "yw) {group = \"ep\", split_dim = 2, concat_dim = 0}\n";
      }
      std::string dyback = ep > 1 ? p + "yb" : yback;
      std::string routed = c.sharedFfn > 0 ? "ys" : "m";
      sq << sI << "%" << p << routed << ": " << t3(T, H) << " = reduce_sum(%" << yback << ") {axes = [0], keepdims = 0}\n";
      ds << dI << "%" << p << (c.sharedFfn > 0 ? "ys" : "mp") << ": " << t3(T, H) << " = reduce_sum(%" << dyback
         << ") {axes = [0], keepdims = 0}\n";
      if (c.sharedFfn > 0) {
        const int64_t Fs = c.sharedFfn, Fsl = Fs / tp;
        param2(p + "wsg", H, Fs, H, Fsl);
        param2(p + "wsu", H, Fs, H, Fsl);
        param2(p + "wsd", Fs, H, Fsl, H);
        Blocks bs = blocks(Fs, c.tp);
        shard(p + "wsg", 1, bs);
        shard(p + "wsu", 1, bs);
        shard(p + "wsd", 0, bs);
        both(p + "sgate", t3(T, Fs), t3(T, Fsl), "matmul(%" + sin_ + ", %" + p + "wsg)", "matmul(%" + din + ", %" + p + "wsg)");
        both(p + "sup", t3(T, Fs), t3(T, Fsl), "matmul(%" + sin_ + ", %" + p + "wsu)", "matmul(%" + din + ", %" + p + "wsu)");
        both(p + "sact", t3(T, Fs), t3(T, Fsl), "silu(%" + p + "sgate)");
        both(p + "sgu", t3(T, Fs), t3(T, Fsl), "mul(%" + p + "sact, %" + p + "sup)");
        both(p + "sh", t3(T, H), t3(T, H), "matmul(%" + p + "sgu, %" + p + "wsd)");
        std::string sh = p + "sh";
        if (c.sharedGate) {  // qwen2_moe: sigmoid(x @ w) [T, B, 1] times the shared expert's output
          param2(p + "wsq", H, 1, H, 1);
          repl(p + "wsq");
          both(p + "sql", t3(T, 1), t3(T, 1), "matmul(%" + sin_ + ", %" + p + "wsq)", "matmul(%" + din + ", %" + p + "wsq)");
          both(p + "sqg", t3(T, 1), t3(T, 1), "sigmoid(%" + p + "sql)");
          both(p + "shg", t3(T, H), t3(T, H), "mul(%" + p + "sh, %" + p + "sqg)");
          sh = p + "shg";
        }
        sq << sI << "%" << p << "m: " << t3(T, H) << " = add(%" << p << "ys, %" << sh << ")\n";
        ds << dI << "%" << p << "mp: " << t3(T, H) << " = add(%" << p << "ys, %" << sh << ")\n";
      }
    };

    // RoPE (rotate-half) on `a` [T, B, heads (S: sh, D: dh), rd]; the result n + "_rot".
    auto rope = [&](const std::string& n, const std::string& a, int64_t sh, int64_t dh) {
      const int64_t h2 = rd / 2;
      if (c.rope == RopeForm::Megatron) {
        // megatron/core/models/common/embeddings/rope_utils.py,
        // _apply_rotary_pos_emb_bshd (unfused): per call
        //   cos_ = cos(freqs); sin_ = sin(freqs)
        //   t = t * cos_ + _rotate_half(t) * sin_,  _rotate_half(t) = cat(-t2, t1)
        std::string fty = "f32" + std::string(c.flat ? "[@T@, 1, " : "[@T@, 1, 1, ") + S(rd) + "]";
        both(n + "_cos", fty, fty, "cos(%freqs)");
        both(n + "_sin", fty, fty, "sin(%freqs)");
        auto full = [&](bool s) { return t4(T, B, s ? sh : dh, rd); };
        auto half = [&](bool s) { return t4(T, B, s ? sh : dh, h2); };
        both(n + "_c", full(true), full(false), "mul(%" + a + ", %" + n + "_cos)");
        both(n + "_t1", half(true), half(false),
             "slice(%" + a + ") {starts = [0], ends = [" + S(h2) + "], axes = [" + ax(3) + "]}");
        both(n + "_t2", half(true), half(false),
             "slice(%" + a + ") {starts = [" + S(h2) + "], ends = [" + S(rd) + "], axes = [" + ax(3) + "]}");
        both(n + "_nt2", half(true), half(false), "neg(%" + n + "_t2)");
        both(n + "_rh", full(true), full(false), "concat(%" + n + "_nt2, %" + n + "_t1) {axis = " + ax(3) + "}");
        both(n + "_s", full(true), full(false), "mul(%" + n + "_rh, %" + n + "_sin)");
        both(n + "_rot", full(true), full(false), "add(%" + n + "_c, %" + n + "_s)");
        return;
      }
      // vLLM's _apply_rotary_emb_torch (neox style): cos/sin of the half
      // angles, computed once and shared by every layer
      //   o1 = x1 * cos - x2 * sin;  o2 = x2 * cos + x1 * sin;  cat(o1, o2)
      auto ty = [&](bool s) { return t4(T, B, s ? sh : dh, h2); };
      auto line = [&](const std::string& o, const std::string& rhs) { both(o, ty(true), ty(false), rhs); };
      line(n + "_lo", "slice(%" + a + ") {starts = [0], ends = [" + S(h2) + "], axes = [" + ax(3) + "]}");
      line(n + "_hi", "slice(%" + a + ") {starts = [" + S(h2) + "], ends = [" + S(rd) + "], axes = [" + ax(3) + "]}");
      line(n + "_a", "mul(%" + n + "_lo, %cos)");
      line(n + "_b", "mul(%" + n + "_hi, %sin)");
      line(n + "_rlo", "sub(%" + n + "_a, %" + n + "_b)");
      line(n + "_d", "mul(%" + n + "_hi, %cos)");
      line(n + "_e", "mul(%" + n + "_lo, %sin)");
      line(n + "_rhi", "add(%" + n + "_d, %" + n + "_e)");
      both(n + "_rot", t4(T, B, sh, rd), t4(T, B, dh, rd), "concat(%" + n + "_rlo, %" + n + "_rhi) {axis = " + ax(3) + "}");
    };
    // Both sides: `in` split along its last dim into o1 (w1 wide) and o2 (w2
    // wide); [T, B, heads, *] with S's heads sh and D's dh, or [T, B, *] when
    // sh is 0.
    auto split2 = [&](const std::string& o1, const std::string& o2, const std::string& in, int64_t sh, int64_t dh,
                      int64_t w1, int64_t w2) {
      auto ty = [&](int64_t heads, int64_t w) { return heads ? t4(T, B, heads, w) : t3(T, w); };
      std::string attr = " = split(%" + in + ") {axis = " + ax(sh ? 3 : 2) + ", sizes = [" + S(w1) + ", " + S(w2) + "]}\n";
      sq << sI << "%" << o1 << ": " << ty(sh, w1) << ", %" << o2 << ": " << ty(sh, w2) << attr;
      ds << dI << "%" << o1 << ": " << ty(dh, w1) << ", %" << o2 << ": " << ty(dh, w2) << attr;
    };
    // Multi-head latent attention's queries, keys and values [T, B, heads,
    // dk | dk | dv] (Megatron-core's MLASelfAttention, Hugging Face's
    // DeepseekV3Attention). The latent down projections and their RMSNorms
    // are replicated, reading the normed tokens (gathered under sequence
    // parallel); the up projections are column-parallel by whole heads, each
    // head's columns [q_nope | q_pe] and [k_nope | v] (the head the outer
    // factor: a rank's heads are one contiguous block of columns); k_pe is
    // one head, roped on every rank and expanded to the rank's heads.
    auto mlaQkv = [&](const std::string& p, const std::string& sin_, const std::string& din) {
      const int64_t Rq = m.qLoraRank, Rkv = m.kvLoraRank, dn = m.qkNope;
      auto latentNorm = [&](const std::string& g, const std::string& o, const std::string& in, int64_t w) {
        sq << sI << "param %" << g << ": f32[" << w << "]\n";
        ds << dI << "param %" << g << ": f32[" << w << "]\n";
        repl(g);
        both(o, t3(T, w), t3(T, w), "rms_norm(%" + in + ", %" + g + ") {epsilon = 1e-5}");
      };
      // q = W_qb(rms_norm(W_qa x)), or W_q x without a query latent
      std::string qs = sin_, qd = din, wq = p + "wq";  // the q projection's input on each side
      if (Rq > 0) {
        param2(p + "wqa", H, Rq, H, Rq);
        repl(p + "wqa");
        both(p + "qa", t3(T, Rq), t3(T, Rq), "matmul(%" + sin_ + ", %" + p + "wqa)", "matmul(%" + din + ", %" + p + "wqa)");
        latentNorm(p + "qag", p + "qan", p + "qa", Rq);
        qs = qd = p + "qan", wq = p + "wqb";
      }
      const int64_t qin = Rq > 0 ? Rq : H;
      param2(wq, qin, nh * dk, qin, nhl * dk);
      shard(wq, 1, blocks(nh, c.tp, dk));
      both(p + "q", t3(T, nh * dk), t3(T, nhl * dk), "matmul(%" + qs + ", %" + wq + ")", "matmul(%" + qd + ", %" + wq + ")");
      both(p + "q4", t4(T, B, nh, dk), t4(T, B, nhl, dk), "reshape(%" + p + "q) {shape = " + sh4(T, B, nh, dk) + "}",
           "reshape(%" + p + "q) {shape = " + sh4(T, B, nhl, dk) + "}");
      split2(p + "qnope", p + "qpe", p + "q4", nh, nhl, dn, rd);
      // [c | k_pe] = W_kva x; each head's [k_nope | v] = W_kvb rms_norm(c)
      param2(p + "wkva", H, Rkv + rd, H, Rkv + rd);
      repl(p + "wkva");
      both(p + "kva", t3(T, Rkv + rd), t3(T, Rkv + rd), "matmul(%" + sin_ + ", %" + p + "wkva)",
           "matmul(%" + din + ", %" + p + "wkva)");
      split2(p + "ckv", p + "kpe", p + "kva", 0, 0, Rkv, rd);
      latentNorm(p + "kvg", p + "ckvn", p + "ckv", Rkv);
      param2(p + "wkvb", Rkv, nh * (dn + dv), Rkv, nhl * (dn + dv));
      shard(p + "wkvb", 1, blocks(nh, c.tp, dn + dv));
      both(p + "kv", t3(T, nh * (dn + dv)), t3(T, nhl * (dn + dv)), "matmul(%" + p + "ckvn, %" + p + "wkvb)");
      both(p + "kv4", t4(T, B, nh, dn + dv), t4(T, B, nhl, dn + dv),
           "reshape(%" + p + "kv) {shape = " + sh4(T, B, nh, dn + dv) + "}",
           "reshape(%" + p + "kv) {shape = " + sh4(T, B, nhl, dn + dv) + "}");
      split2(p + "knope", p + "v", p + "kv4", nh, nhl, dn, dv);
      // RoPE on q_pe and on k_pe's one head, which every head then uses
      rope(p + "q", p + "qpe", nh, nhl);
      both(p + "kpe4", t4(T, B, 1, rd), t4(T, B, 1, rd), "unsqueeze(%" + p + "kpe) {axes = [" + ax(2) + "]}");
      rope(p + "k", p + "kpe4", 1, 1);
      both(p + "kpee", t4(T, B, nh, rd), t4(T, B, nhl, rd), "expand(%" + p + "k_rot) {shape = " + sh4(T, B, nh, rd) + "}",
           "expand(%" + p + "k_rot) {shape = " + sh4(T, B, nhl, rd) + "}");
      both(p + "qf", t4(T, B, nh, dk), t4(T, B, nhl, dk), "concat(%" + p + "qnope, %" + p + "q_rot) {axis = " + ax(3) + "}");
      both(p + "kf", t4(T, B, nh, dk), t4(T, B, nhl, dk), "concat(%" + p + "knope, %" + p + "kpee) {axis = " + ax(3) + "}");
      return std::tuple{p + "qf", p + "kf", p + "v"};
    };

    for (int v = 0; v < vpp; ++v) {
    if (v > 0) {  // the chunk's input: the previous virtual stage's output
      x = "l" + S(chunkLayers(stage, v).first - 1) + "_y";
      ds << dI << "%" << x << ": " << t3(Tl, H) << " = recv() {group = \"pp\", peer = " << (stage + c.pp - 1) % c.pp
         << ", tag = " << chunkTag(stage, v) << ", dtype = f32, shape = " << L({Tl, B, H}) << "}\n";
    }
    for (int l = chunkLayers(stage, v).first; l < chunkLayers(stage, v).second; ++l) {
      std::string p = "l";  // (not "l" + S(l): GCC 12 -Wrestrict false positive)
      p += S(l) + "_";
      std::string y = x;
      if (c.attention) {
        // ---- attention ----
        norm(p + "n1", p + "n1", x, Tl);
        std::string din = gatherIn(p + "n1");
        std::string sin_ = p + "n1";
        std::string q4, k4, v4;  // [T, B, heads, head dim], the same names on both sides

        if (mla) {
          std::tie(q4, k4, v4) = mlaQkv(p, sin_, din);
        } else {
          std::string q, k, v;  // names (same on both sides)
          if (!m.llama) {
            // fused QKV, column parallel: rank shard is [q_r | k_r | v_r]
            param2(p + "wqkv", H, 3 * H, H, 3 * Hl);
            perBlockRun(p + "wqkv", pl.heads, [&](int a) {
              std::string e = "concat(dim=1";
              for (int j = 0; j < 3; ++j) e += ", " + blockSlice(p + "wqkv", 1, pl.heads, a, j * H);
              return e + ")";
            });
            sharded(p + "wqkv", 1, pl.heads, {0, H, 2 * H});
            const std::string mm = c.biases ? "qkvm" : "qkv";
            sq << sI << "%" << p << mm << ": " << t3(T, 3 * H) << " = matmul(%" << sin_ << ", %" << p << "wqkv)\n";
            ds << dI << "%" << p << mm << ": " << t3(T, 3 * Hl) << " = matmul(%" << din << ", %" << p << "wqkv)\n";
            if (c.biases) {  // the fused bias, sharded like the weight's columns: [bq_r | bk_r | bv_r]
              sq << sI << "param %" << p << "bqkv: f32[" << 3 * H << "]\n";
              ds << dI << "param %" << p << "bqkv: f32[" << 3 * Hl << "]\n";
              perBlockRun(p + "bqkv", pl.heads, [&](int a) {
                std::string e = "concat(dim=0";
                for (int j = 0; j < 3; ++j) e += ", " + blockSlice(p + "bqkv", 0, pl.heads, a, j * H);
                return e + ")";
              });
              sharded(p + "bqkv", 0, pl.heads, {0, H, 2 * H});
              both(p + "qkv", t3(T, 3 * H), t3(T, 3 * Hl), "add(%" + p + "qkvm, %" + p + "bqkv)");
            }
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
                rl << "for r in " << stageRanks() << ": dist[r]." << p << w << " = slice(seq." << p << w
                   << ", dim=1, start=(idx(r,tp)/" << per << ")*" << hd << ", end=(idx(r,tp)/" << per
                   << ")*" << hd << "+" << hd << ")\n";
              } else {
                shard(p + w, 1, pl.kv);
              }
            }
            // qwen2's q/k/v biases: column-parallel, sharded like their weights' columns
            const std::string mm = c.biases ? "m" : "";
            both(p + "q" + mm, t3(T, H), t3(T, Hl), "matmul(%" + sin_ + ", %" + p + "wq)",
                 "matmul(%" + din + ", %" + p + "wq)");
            both(p + "k" + mm, t3(T, nkv * hd), t3(T, nkvl * hd), "matmul(%" + sin_ + ", %" + p + "wk)",
                 "matmul(%" + din + ", %" + p + "wk)");
            both(p + "v" + mm, t3(T, nkv * hd), t3(T, nkvl * hd), "matmul(%" + sin_ + ", %" + p + "wv)",
                 "matmul(%" + din + ", %" + p + "wv)");
            if (c.biases) {
              for (auto [w, n, dn] : {std::tuple{"q", H, Hl}, std::tuple{"k", nkv * hd, nkvl * hd},
                                      std::tuple{"v", nkv * hd, nkvl * hd}}) {
                std::string b = p + "b" + w;
                sq << sI << "param %" << b << ": f32[" << n << "]\n";
                ds << dI << "param %" << b << ": f32[" << dn << "]\n";
                if (std::string(w) == "q") {
                  shard(b, 0, pl.heads);
                } else if (kvRepl) {
                  int64_t per = tp / nkv;
                  rl << "for r in " << stageRanks() << ": dist[r]." << b << " = slice(seq." << b << ", dim=0, start=(idx(r,tp)/"
                     << per << ")*" << hd << ", end=(idx(r,tp)/" << per << ")*" << hd << "+" << hd << ")\n";
                  out.varies[b] = {"tp"};
                } else {
                  shard(b, 0, pl.kv);
                }
                both(p + w, t3(T, n), t3(T, dn), "add(%" + p + w + "m, %" + b + ")");
              }
            }
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
          q4 = q + "4", k4 = k + "4", v4 = v + "4";
          if (m.llama) {
            // RoPE (rotate-half) on q and k
            for (auto [n, sh, dh] : {std::tuple{q, nh, nhl}, std::tuple{k, nkv, nkvl}}) rope(n, n + "4", sh, dh);
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
        }
        // [T, B, n, d] -> [B, n, T, d] (Megatron's [s, b, h] layout)
        both(p + "qh", t4(B, nh, T, dk), t4(B, nhl, T, dk), "transpose(%" + q4 + ") {perm = " + perm("[1, 2, 0, 3]", "[1, 0, 2]") + "}");
        both(p + "kt", t4(B, nh, dk, T), t4(B, nhl, dk, T), "transpose(%" + k4 + ") {perm = " + perm("[1, 2, 3, 0]", "[1, 2, 0]") + "}");
        both(p + "vh", t4(B, nh, T, dv), t4(B, nhl, T, dv), "transpose(%" + v4 + ") {perm = " + perm("[1, 2, 0, 3]", "[1, 0, 2]") + "}");
        // Context parallel: D's keys and values, its chunk of the tokens,
        // gathered over cp as the attention's matmuls read them (after GQA's
        // head expansion: the gradients out of the matmuls, partial over cp,
        // meet the all_gather, whose adjoint is then a reduce_scatter); the
        // queries and the scores' rows stay the chunk's.
        std::string kt = p + "kt", vh = p + "vh";
        if (cp > 1) {
          ds << dI << "%" << kt << "_cp: " << t4(B, nhl, dk, Tn) << " = all_gather(%" << kt << ") {group = \"cp\", dim = "
             << ax(3) << "}\n";
          ds << dI << "%" << vh << "_cp: " << t4(B, nhl, Tn, dv) << " = all_gather(%" << vh << ") {group = \"cp\", dim = "
             << ax(2) << "}\n";
          kt += "_cp", vh += "_cp";
          if (bal) {
            // the gathered halves (rank 0's two, rank 1's, ...) put back in
            // S's order: rank j's first halves, then the second ones back
            for (auto [n, d, ty] : {std::tuple{&kt, 3, t4(B, nhl, dk, Th)}, std::tuple{&vh, 2, t4(B, nhl, Th, dv)}}) {
              std::string sizes, outs, order;
              for (int64_t j = 0; j < 2 * cp; ++j) {
                sizes += (j ? ", " : "") + S(Th);
                outs += std::string(j ? ", " : "") + "%" + *n + "_h" + S(j) + ": " + ty;
              }
              for (int64_t j = 0; j < 2 * cp; ++j)
                order += std::string(j ? ", " : "") + "%" + *n + "_h" + S(j < cp ? 2 * j : 2 * (2 * cp - 1 - j) + 1);
              ds << dI << outs << " = split(%" << *n << ") {axis = " << ax(d) << ", sizes = [" << sizes << "]}\n";
              std::string full = d == 3 ? t4(B, nhl, dk, Tn) : t4(B, nhl, Tn, dv);
              ds << dI << "%" << *n << "_s: " << full << " = concat(" << order << ") {axis = " << ax(d) << "}\n";
              *n += "_s";
            }
          }
        }
        both(p + "sc", t4(B, nh, T, T), t4(B, nhl, T, Tn), "matmul(%" + p + "qh, %" + p + "kt)", "matmul(%" + p + "qh, %" + kt + ")");
        both(p + "scale", "f32[]", "f32[]", "constant() {value = " + scale + "}");
        both(p + "ss", t4(B, nh, T, T), t4(B, nhl, T, Tn), "mul(%" + p + "sc, %" + p + "scale)");
        std::string logits = p + "ss";
        if (c.causal) {
          both(p + "sm", t4(B, nh, T, T), t4(B, nhl, T, Tn), "add(%" + p + "ss, %mask)");
          logits = p + "sm";
        }
        both(p + "pr", t4(B, nh, T, T), t4(B, nhl, T, Tn), "softmax(%" + logits + ")");
        both(p + "a", t4(B, nh, T, dv), t4(B, nhl, T, dv), "matmul(%" + p + "pr, %" + p + "vh)", "matmul(%" + p + "pr, %" + vh + ")");
        both(p + "at", t4(T, B, nh, dv), t4(T, B, nhl, dv), "transpose(%" + p + "a) {perm = " + perm("[2, 0, 1, 3]", "[1, 0, 2]") + "}");
        both(p + "a3", t3(T, Ha), t3(T, Hl),
             "reshape(%" + p + "at) {shape = " + L({T, B, Ha}) + "}",
             "reshape(%" + p + "at) {shape = " + L({T, B, Hl}) + "}");
        param2(p + "wo", Ha, H, Hl, H);
        shard(p + "wo", 0, pl.heads);
        const bool ob = c.biases && !m.llama;
        sq << sI << "%" << p << (ob ? "om" : "o") << ": " << t3(T, H) << " = matmul(%" << p << "a3, %" << p << "wo)\n";
        ds << dI << "%" << p << "op: " << t3(T, H) << " = matmul(%" << p << "a3, %" << p << "wo)\n";
        reduceOut(p + "op", p + (ob ? "om" : "o"));
        rowBias(p + "bo", p + "om", p + "o");
        both(p + "r1", t3(T, H), t3(Tl, H), "add(%" + x + ", %" + p + "o)");
        y = p + "r1";
      }
      // ---- MLP ----
      norm(p + "n2", p + "n2", y, Tl);
      std::string din = gatherIn(p + "n2");
      std::string sin_ = p + "n2";
      std::string yo = p + "y";
      if (c.experts > 0 && l >= c.denseLayers) {
        moeMlp(p, sin_, din, p + "n2");
      } else if (!m.llama) {
        param2(p + "w1", H, F, H, Fl);
        param2(p + "w2", F, H, Fl, H);
        shard(p + "w1", 1, pl.ffn);
        shard(p + "w2", 0, pl.ffn);
        const std::string hm = c.biases ? "hm" : "h";
        sq << sI << "%" << p << hm << ": " << t3(T, F) << " = matmul(%" << sin_ << ", %" << p << "w1)\n";
        ds << dI << "%" << p << hm << ": " << t3(T, Fl) << " = matmul(%" << din << ", %" << p << "w1)\n";
        if (c.biases) {  // column-parallel bias: sharded like w1's columns
          sq << sI << "param %" << p << "b1: f32[" << F << "]\n";
          ds << dI << "param %" << p << "b1: f32[" << Fl << "]\n";
          shard(p + "b1", 0, pl.ffn);
          both(p + "h", t3(T, F), t3(T, Fl), "add(%" + p + "hm, %" + p + "b1)");
        }
        both(p + "g", t3(T, F), t3(T, Fl), "gelu(%" + p + "h)");
        sq << sI << "%" << p << (c.biases ? "mm" : "m") << ": " << t3(T, H) << " = matmul(%" << p << "g, %" << p << "w2)\n";
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
      reduceOut(p + "mp", p + (c.biases && !m.llama ? "mm" : "m"));
      if (!m.llama) rowBias(p + "b2", p + "mm", p + "m");
      both(yo, t3(T, H), t3(Tl, H), "add(%" + y + ", %" + p + "m)");
      x = yo;
    }
    if (v + 1 < vpp)  // to the next virtual stage (the last stage's: the first stage's next chunk)
      ds << dI << "send(%" << x << ") {group = \"pp\", peer = " << (stage + 1) % c.pp
         << ", tag = " << chunkTag(stage, v) + 1 << "}\n";
    }
    if (lastStage) {
      sq << sI << "output %" << x << "\n}\n";
      ds << dI << "output %" << x << "\n  }\n";
      if (sp && c.pp == 1 && dp == 1 && mbs == 1 && cp == 1)
        rl << "expect seq." << x << " = concat(dim=0, for r in tp: dist[r]." << x << ")\n";
      else
        rl << "expect seq." << x << " = " << tokensRebuilt(stage, x) << "\n";
      if (first == 0 && rep == 0) {
        lastOut = x;
        // the tangent of the output, laid out like it
        out.backwardRelations += tokensRelation("d_" + x, "d_" + x);
      }
    } else {
      ds << dI << "send(%" << x << ") {group = \"pp\", peer = " << stage + 1 << ", tag = "
         << (vpp == 1 ? 0 : chunkTag(stage, vpp - 1) + 1) << "}\n  }\n";
    }
    if (first == 0 && rep == 0) seqText << sqIn.str() << sq.str(), relText << rl.str();
    for (const std::string& h : heads) distText << h << ds.str();
  }
  }
  distText << "}\n";
  // The gradients: each leaf's rebuilt from its stage's ranks as the leaf is
  // laid out (a sharded weight's blocks in S's order, each block's shards in
  // rank order; a replicated one from the stage's first rank, every rank
  // holding the same after the gradient all_reduces).
  for (const auto& [n, l] : layouts) {
    std::string e = l.rebuilt;
    if (!e.empty()) {
    } else if (l.dim == -2) {
      e = tokensRebuilt(0, "grad_" + n);
    } else if (l.dim == -1) {
      e = "dist[" + S(rankOf(l.stage, 0, 0)) + "].grad_" + n;
    } else {
      e = "concat(dim=" + S(l.dim);
      for (size_t b = 0; b < l.blocks[0].size(); ++b) {
        for (int64_t t = 0; t < tp; ++t) {
          std::string part = "dist[" + S(rankOf(l.stage, 0, t)) + "].grad_" + n;
          int64_t local = 0;
          for (size_t k = 0; k < b; ++k) local += l.blocks[size_t(t)][k].second;
          int64_t ext = l.blocks[size_t(t)][b].second;
          if (l.blocks[0].size() > 1)
            part = "slice(" + part + ", dim=" + S(l.dim) + ", start=" + S(local) + ", end=" + S(local + ext) + ")";
          e += ", " + part;
        }
      }
      e += ")";
    }
    out.backwardRelations += "expect seq.grad_" + n + " = " + e + "\n";
  }
  std::string st = seqText.str(), dt = distText.str();
  // The batch (@B@) and token (@T@) markers: one pass, the texts run to tens of MB.
  auto sizesAre = [](std::string& text, int64_t b, int64_t t) {
    std::string out, bs = S(b), ts = S(t);
    out.reserve(text.size());
    size_t from = 0;
    for (size_t at; (at = text.find('@', from)) != std::string::npos;) {
      out.append(text, from, at - from);
      if (text.compare(at, 3, "@B@") == 0) out.append(bs), from = at + 3;
      else if (text.compare(at, 3, "@T@") == 0) out.append(ts), from = at + 3;
      else out.push_back('@'), from = at + 1;
    }
    out.append(text, from, std::string::npos);
    text = std::move(out);
  };
  sizesAre(st, c.batch * dp * mbs, Tn);
  sizesAre(dt, c.batch, Tc);
  out.text = {st, dt, relText.str()};
  return out;
}

// The tags a micro-batch's transfers take: the receiving virtual stage's
// index when interleaved (pp * vpp of them), else one; micro-batch i's are
// offset by i times this.
int64_t tagsPerMicroBatch(int pp, int vpp) { return vpp == 1 ? 1 : int64_t(pp) * vpp; }

// Micro-batches (GPipe's schedule): each rank runs its stage's layers on
// micro-batch 0, 1, ..., m-1 in turn, sharing its weights; the forward of
// one micro-batch is the generated body with every computed value, the
// stage's input x0 and its outputs renamed <name>_mb<i>, and the pipeline
// transfers of micro-batch i tagged i (the backward, differentiated after,
// runs them in reverse and accumulates each weight's gradient over them).
ir::GraphSpec replicateMicroBatches(const ir::GraphSpec& g, int m, int64_t tagsPerMb) {
  ir::GraphSpec out;
  out.name = g.name;
  std::set<std::string> perMb{"x0"};
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) perMb.insert(o);
  auto name = [&](const std::string& v, int i) { return perMb.count(v) ? v + "_mb" + std::to_string(i) : v; };
  for (const auto& l : g.leaves) {
    if (!perMb.count(l.name)) {
      out.leaves.push_back(l);
      continue;
    }
    for (int i = 0; i < m; ++i) {
      ir::LeafSpec c = l;
      c.name = name(l.name, i);
      out.leaves.push_back(c);
    }
  }
  for (int i = 0; i < m; ++i) {
    for (const auto& n : g.nodes) {
      ir::NodeSpec c = n;
      if (!c.name.empty()) c.name = c.name + "_mb" + std::to_string(i);
      for (auto& v : c.inputs) v = name(v, i);
      for (auto& v : c.outputs) v = name(v, i);
      if (c.op == ir::OpKind::Send || c.op == ir::OpKind::Recv)  // the chunk's tag (interleaved) within the micro-batch's
        c.attrs["tag"] = int64_t(i) * tagsPerMb + (c.attrs.count("tag") ? ir::attrInt(c.attrs, "tag") : 0);
      out.nodes.push_back(std::move(c));
    }
    for (const auto& o : g.outputs) out.outputs.push_back(name(o, i));
  }
  return out;
}

// Megatron's 1F1B order of one stage: warm-up forwards, then a forward
// and a backward in turn, then the remaining backwards. Each (phase,
// micro-batch, chunk) is a slot: slot[0][i * vpp + c] of the forward of
// micro-batch i's chunk c, slot[1][...] of its backward. Without
// interleaving (vpp 1) stage s warms up with min(pp - s - 1, m) forwards;
// interleaved (Megatron's forward_backward_pipelining_with_interleaving),
// the m * vpp virtual micro-batches run in groups of pp per chunk (forward
// k: chunk (k mod pp vpp) / pp of micro-batch (k / pp vpp) pp + k mod pp;
// backward k the same with the chunks reversed) after (pp - s - 1) 2 +
// (vpp - 1) pp warm-up forwards, or all of them when m == pp.
std::array<std::vector<int>, 2> scheduleSlots(int stage, int pp, int vpp, int m) {
  const int total = m * vpp;
  std::array<std::vector<int>, 2> slot{std::vector<int>(size_t(total)), std::vector<int>(size_t(total))};
  auto key = [&](int k, bool backward) {
    if (vpp == 1) return k;
    int chunk = (k % (pp * vpp)) / pp, mb = (k / (pp * vpp)) * pp + k % pp;
    return mb * vpp + (backward ? vpp - 1 - chunk : chunk);
  };
  int warm = vpp == 1 ? std::min(pp - stage - 1, m) : m == pp ? total : std::min((pp - stage - 1) * 2 + (vpp - 1) * pp, total);
  int next = 0, f = 0, b = 0;
  for (; f < warm; ++f) slot[0][size_t(key(f, false))] = next++;
  while (f < total) {
    slot[0][size_t(key(f++, false))] = next++;
    slot[1][size_t(key(b++, true))] = next++;
  }
  while (b < total) slot[1][size_t(key(b++, true))] = next++;
  return slot;
}

// Reorders a differentiated stage body (forward of every micro-batch, then
// the backward, as autodiff writes it) into the order `slot` gives. Each
// node's phase is its name's (autodiff names what it writes bw_ / grad_);
// its micro-batch the latest among its own name's (<name>_mb<i>), a
// transfer's tag's (i * tagsPerMb + the virtual stage receiving it; a
// backward recv's is its forward send's plus autodiff's offset) and its
// inputs'; its chunk a forward transfer's, else the latest of its inputs'
// (forward) or the earliest (backward: what the backward of chunk c reads
// besides its own gradient is chunk c's forward). Its slot is that (phase,
// micro-batch, chunk)'s, and never before an input's, so the order stays
// topological (the builder keeps a topological declaration order as is).
// What no micro-batch reaches (weights, their transposes) goes first, and
// so, interleaved, does what no chunk reaches (a weight's per-micro-batch
// view); a weight gradient accumulated over micro-batches, after the last.
void reorderStage(ir::GraphSpec& g, const std::array<std::vector<int>, 2>& slot, int pp, int vpp,
                  int64_t gradTagOffset) {
  const int64_t tagsPerMb = tagsPerMicroBatch(pp, vpp);
  const int m = int(slot[0].size()) / vpp;
  auto mbOfName = [&](const std::string& n) {
    size_t at = n.rfind("_mb");
    if (at == std::string::npos || at + 3 >= n.size()) return -1;
    int v = 0;
    for (size_t i = at + 3; i < n.size(); ++i) {
      if (n[i] < '0' || n[i] > '9') return -1;
      v = v * 10 + (n[i] - '0');
      if (v >= m) return -1;
    }
    return v;
  };
  auto backwardName = [](const std::string& n) { return n.rfind("bw_", 0) == 0 || n.rfind("grad_", 0) == 0; };
  struct Label {
    int mb = -1, chunk = -1, slot = 0;
  };
  std::map<std::string, Label> of;
  std::vector<int> nodeSlot(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::NodeSpec& n = g.nodes[i];
    const bool bw = backwardName(n.name) || (!n.outputs.empty() && backwardName(n.outputs[0]));
    Label l;
    l.mb = std::max(mbOfName(n.name), n.outputs.empty() ? -1 : mbOfName(n.outputs[0]));
    if (n.op == ir::OpKind::Recv || n.op == ir::OpKind::Send) {
      int64_t t = ir::attrInt(n.attrs, "tag");
      if (t >= gradTagOffset) t -= gradTagOffset;
      if (t / tagsPerMb < m) l.mb = std::max(l.mb, int(t / tagsPerMb));
      int64_t vs = t % tagsPerMb;  // the virtual stage receiving it
      // a forward recv feeds its own chunk; a backward recv brings the
      // gradient of what the chunk sent to virtual stage vs
      if (vpp == 1) l.chunk = 0;
      else if (n.op == ir::OpKind::Recv) l.chunk = int(bw ? (vs - 1) / pp : vs / pp);
    }
    for (const auto& in : n.inputs) {
      auto it = of.find(in);
      if (it == of.end()) {
        // a leaf of one micro-batch: the first stage's x0_mb<i> feeds the
        // first chunk, the last stage's tangent d_<output>_mb<i> the last
        if (int mb = mbOfName(in); mb >= 0) {
          int c = in.rfind("d_", 0) == 0 ? vpp - 1 : 0;
          l.mb = std::max(l.mb, mb);
          l.chunk = l.chunk < 0 ? c : bw ? std::min(l.chunk, c) : std::max(l.chunk, c);
        }
        continue;
      }
      l.mb = std::max(l.mb, it->second.mb);
      l.slot = std::max(l.slot, it->second.slot);
      if (it->second.chunk >= 0 && (n.op != ir::OpKind::Recv))
        l.chunk = l.chunk < 0 ? it->second.chunk : bw ? std::min(l.chunk, it->second.chunk) : std::max(l.chunk, it->second.chunk);
    }
    // no chunk (interleaved): computed from weights alone (a weight's
    // per-micro-batch view, its transpose in the backward), placed by its
    // inputs only, never at some chunk's slot
    if (l.mb >= 0 && (vpp == 1 || l.chunk >= 0))
      l.slot = std::max(l.slot, slot[bw ? 1 : 0][size_t(l.mb * vpp + std::max(l.chunk, 0))]);
    nodeSlot[i] = l.slot;
    for (const auto& o : n.outputs) of[o] = l;
  }
  std::vector<size_t> order(g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return nodeSlot[a] < nodeSlot[b]; });
  std::vector<ir::NodeSpec> nodes;
  nodes.reserve(g.nodes.size());
  for (size_t i : order) nodes.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(nodes);
}

// The training step: S and every rank of D differentiated (ir/autodiff.h)
// with respect to the parameters and the input tokens, the output's tangent
// an input laid out like the output, each gradient expected as its leaf is
// laid out.
Result<ParallelProgram> withBackward(const ProgramSpec& spec, const Generated& gen, const ir::Program& dist) {
  auto fail = [](const Error& e) {
    return makeError(e.id, "parallelize --backward: " + e.message + " (a generator bug)");
  };
  auto seq = ir::parseGraph(gen.text.seq, "seq.sp");
  if (!seq) return fail(seq.error());
  ir::GradOptions o;
  o.wrt.push_back("x0");
  for (const auto& [leaf, axes] : gen.varies)
    if (leaf.rfind("x0_mb", 0) == 0) o.wrt.push_back(leaf);
  for (ir::ValueId p : seq->params()) o.wrt.push_back(seq->value(p).name);
  o.varies = gen.varies;
  auto sb = ir::differentiate(*seq, o);
  if (!sb) return fail(sb.error());
  auto db = ir::differentiate(dist, o);
  if (!db) return fail(db.error());
  if (spec.oneFOneB && spec.pp > 1 && spec.microBatches > 1) {
    ir::ProgramSpec ps = ir::toSpecShared(*db);
    const int64_t perStage = int64_t(spec.dp) * spec.cp * spec.tp;
    // a rank class spanning stages (bodies equal up to their peers' positions)
    // gets one representative per stage: the stages' orders differ
    std::map<std::pair<int64_t, int64_t>, int64_t> repOf;  // (class, stage) -> rank
    for (size_t r = 0; r < ps.ranks.size() && !ps.sameAs.empty(); ++r) {
      int64_t cls = ps.sameAs[r], stage = int64_t(r) / perStage;
      auto [it, fresh] = repOf.emplace(std::pair{cls, stage}, int64_t(r));
      if (fresh && cls != int64_t(r)) ps.ranks[r] = ps.ranks[size_t(cls)];
      ps.sameAs[r] = it->second;
    }
    for (size_t r = 0; r < ps.ranks.size(); ++r)
      if (ps.sameAs.empty() || ps.sameAs[r] == int64_t(r))
        reorderStage(ps.ranks[r], scheduleSlots(int(int64_t(r) / perStage), spec.pp, spec.vpp, spec.microBatches), spec.pp,
                     spec.vpp, o.gradTagOffset);
    db = ir::buildProgram(ps);
    if (!db) return fail(db.error());
  }
  std::string head = gen.text.seq.substr(0, gen.text.seq.find('\n') + 1);  // the "# generated by" line
  return ParallelProgram{head + ir::printGraph(*sb), ir::printProgram(*db),
                         gen.text.relations + gen.backwardRelations};
}

}  // namespace

std::string layoutPhrase(const ProgramSpec& spec) {
  return "tp " + S(spec.tp) + (spec.sequenceParallel ? " + sequence parallel" : "") +
         (spec.cp > 1 ? ", cp " + S(spec.cp) : "") + (spec.dp > 1 ? ", dp " + S(spec.dp) : "") + (spec.ep > 1 ? ", ep " + S(spec.ep) : "") +
         (spec.pp > 1 ? ", pp " + S(spec.pp) : "") + (spec.vpp > 1 ? ", vpp " + S(spec.vpp) : "");
}

Result<ParallelProgram> parallelize(const ProgramSpec& spec) {
  if (spec.pp > 1 && stageSplit(spec.layers, spec.pp).empty())
    return makeError("parallelize-unsupported", "parallelize: " + S(spec.layers) + " layers do not fill " +
                                                    S(spec.pp) + " pipeline stages");
  if (spec.tp < 1 || spec.pp < 1 || spec.layers < 1 || spec.batch < 1 || spec.seq < 1 || spec.hidden < 1 || spec.heads < 1 ||
      spec.ffn < 1 || (spec.flat && spec.batch != 1))
    return makeError("parallelize-unsupported",
                     "parallelize: tp, layers, batch, seq, hidden, heads and ffn must be positive (and batch 1 "
                     "in the [seq, hidden] layout)");
  if (spec.dp < 1 || spec.microBatches < 1 || ((spec.dp > 1 || spec.microBatches > 1) && spec.flat))
    return makeError("parallelize-unsupported",
                     "parallelize: dp and micro-batches must be positive (and 1 in the [seq, hidden] layout, which "
                     "has no batch dim)");
  if (spec.vpp < 1 || (spec.vpp > 1 && (spec.pp < 2 || spec.layers % (spec.pp * spec.vpp) != 0 ||
                                          spec.microBatches % spec.pp != 0)))
    return makeError("parallelize-unsupported",
                     "parallelize: the interleaved schedule needs pp > 1, layers divisible by pp * vpp (" +
                         S(spec.layers) + " layers, pp " + S(spec.pp) + ", vpp " + S(spec.vpp) +
                         ") and micro-batches a multiple of pp (" + S(spec.microBatches) + ")");
  auto plan = planCell(spec);
  if (auto* why = std::get_if<std::string>(&plan)) return makeError("parallelize-unsupported", "parallelize: " + *why);
  if (spec.backward && std::get<Plan>(plan).kvRepl)
    return makeError("parallelize-unsupported",
                     "parallelize: the backward with tp " + S(spec.tp) + " above " + S(spec.kvHeads) +
                         " KV heads (each KV head's weights held by several ranks, whose gradients Megatron never "
                         "forms: it needs query groups divisible by tp)");
  Generated gen = generate(spec, std::get<Plan>(plan));
  if (spec.microBatches == 1 && !spec.backward) return gen.text;
  // D as IR, read once: micro-batches replicated, then differentiated.
  auto bug = [](const Error& e) { return makeError(e.id, "parallelize: " + e.message + " (a generator bug)"); };
  auto dist = ir::parseProgram(gen.text.dist, "dist.sp");
  if (!dist) return bug(dist.error());
  if (spec.microBatches > 1) {
    ir::ProgramSpec ps = ir::toSpecShared(*dist);  // once per rank class
    for (size_t r = 0; r < ps.ranks.size(); ++r)
      if (ps.sameAs[r] == int64_t(r))
        ps.ranks[r] = replicateMicroBatches(ps.ranks[r], spec.microBatches, tagsPerMicroBatch(spec.pp, spec.vpp));
    dist = ir::buildProgram(ps);
    if (!dist) return bug(dist.error());
  }
  if (spec.backward) return withBackward(spec, gen, *dist);
  gen.text.dist = ir::printProgram(*dist);
  return gen.text;
}

Result<ProgramSpec> specFromConfig(const ModelConfig& cfg, const Layout& layout, int64_t seq, int64_t batch,
                                   int64_t layers) {
  std::vector<std::string> missing;
  if (!cfg.gated && cfg.kvHeads != cfg.heads) missing.push_back("GQA with a GELU MLP");
  if (!cfg.mla() && cfg.headDim * cfg.heads != cfg.hidden)
    missing.push_back("head dim " + S(cfg.headDim) + " x " + S(cfg.heads) + " heads != hidden " + S(cfg.hidden));
  if (!missing.empty()) {
    std::string m;
    for (size_t i = 0; i < missing.size(); ++i) m += (i ? ", " : "") + missing[i];
    return makeError("parallelize-unsupported", "parallelize: not generated yet: " + m +
                                                    " (tensor, sequence, context, data, expert and pipeline parallel of GQA/MHA/MLA layers, dense or MoE)");
  }
  ProgramSpec s;
  s.name = cfg.name;
  for (char& ch : s.name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  if (s.name.empty() || std::isdigit(static_cast<unsigned char>(s.name[0]))) s.name = "m_" + s.name;
  s.hidden = cfg.hidden;
  s.heads = cfg.heads;
  s.kvHeads = cfg.kvHeads;
  s.ffn = cfg.ffn;
  s.llama = cfg.gated;
  s.tp = int(layout.tp);
  s.pp = int(layout.pp);
  s.vpp = int(std::max<int64_t>(layout.vpp, 1));
  s.cp = int(layout.cp);
  s.sequenceParallel = layout.sequenceParallel && layout.tp > 1;
  s.layers = int(layers > 0 ? layers : cfg.layers);
  s.seq = seq;
  s.batch = batch;
  s.causal = true;
  s.biases = cfg.biases;
  s.ep = int(layout.ep);
  if (cfg.moe()) {
    s.experts = cfg.experts, s.topK = cfg.topK, s.moeFfn = cfg.moeFfn, s.sharedFfn = cfg.sharedFfn;
    s.denseLayers = int(cfg.denseLayers);
    s.normTopK = cfg.normTopK, s.sigmoidRouter = cfg.sigmoidRouter, s.sharedGate = cfg.sharedGate;
    s.selectionBias = cfg.selectionBias, s.routedScale = cfg.routedScale;
  }
  if (cfg.mla()) {
    s.qLoraRank = cfg.qLoraRank, s.kvLoraRank = cfg.kvLoraRank;
    s.qkNope = cfg.qkNopeDim, s.qkRope = cfg.qkRopeDim, s.vHeadDim = cfg.vHeadDim;
  }
  return s;
}

}  // namespace sp::planner
