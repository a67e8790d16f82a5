// verify(): iterative relation inference over S in topological order
// (DESIGN.md), then the verdict, with a witness when a relation is missing.
#include "rewrite/verify/verify.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <set>
#include <tuple>
#include <unordered_map>

#include "ir/collective_order.h"
#include "ir/text.h"
#include "rewrite/engine/engine_verify.h"
#include "rewrite/engine/fold.h"
#include "rewrite/lemma/lemma_cache.h"
#include "rewrite/relation/relation_text.h"

namespace sp::rewrite {

std::string groupName(const ir::Program& p, std::vector<int64_t> ranks);
// The failure's message at S op `node`; *namesFault: whether it names
// what D does wrong (else the per-rank engine found no relation there and
// nothing says why: perhaps its own gap).
std::string explainFailure(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node,
                           const std::vector<const SeqRel*>& inputs, const std::string& value,
                           const std::map<std::pair<int64_t, std::string>, std::string>& distInputs,
                           const std::string& rangeGap, std::string* sumGroup, bool* namesFault);
std::string explainExpectMismatch(const ir::Program& dist, const Rel& found, const Rel& expected,
                                  std::string* sumGroup);
std::string sumOverRanksGroup(const ir::Program& dist, const Rel& found);
std::vector<DistRef> sumOriginsOf(const Rel& found);
std::optional<std::string> searchRepair(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                                        const VerifyOptions& opts, const Failure& failure, double seconds);
Status decideWithWitness(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                         const VerifyOptions& opts, const std::vector<std::string>& unproven,
                         const std::map<std::string, RelPtr>& expected,
                         std::chrono::steady_clock::time_point deadline, VerifyReport& rep);

// "5", "0.5", "300": time limits in reasons (also witness_verdict.cpp).
std::string secondsStr(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string_view verdictName(Verdict v) {
  switch (v) {
    case Verdict::Verified: return "verified";
    case Verdict::Refuted: return "refuted";
    case Verdict::Inconclusive: return "inconclusive";
  }
  return "?";
}

namespace {

// A concrete type with a dimension of extent 0.
bool hasNoElements(const ir::TensorType& t) {
  return ir::isConcrete(t.shape) &&
         std::any_of(t.shape.begin(), t.shape.end(), [](const ir::Dim& d) { return d.value() == 0; });
}

// Lemma libraries are proven once per directory, proof cache and process
// (and, through the proof cache file, once per lemma text across processes).
// A library cut short by the time limit is kept only for the run that
// proved it; the next run proves the rest (the proof cache keeps the part
// that was done).
struct ProvenLibrary {
  LemmaLibrary lib;
  std::vector<LemmaStatus> status;
  ProofCacheStats cache;
  int64_t timedOut = 0;  // lemmas not attempted before the deadline
};
Result<const ProvenLibrary*> provenLibrary(const std::string& dir, const std::string& cacheDir,
                                           std::chrono::steady_clock::time_point deadline) {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, ProvenLibrary> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find({dir, cacheDir}); it != cache.end() && it->second.timedOut == 0) return &it->second;
  SP_ASSIGN(LemmaLibrary lib, loadLemmas(dir));
  ProvenLibrary pl{std::move(lib), {}, {}, 0};
  ProveOptions po;
  po.deadline = deadline;
  pl.status = proveLemmasCached(pl.lib, po, cacheDir, &pl.cache);
  for (const auto& s : pl.status) pl.timedOut += s.timedOut;
  return &(cache[{dir, cacheDir}] = std::move(pl));
}

void collectLeaves(const Rel& r, const ir::Program& p, std::vector<DistLeaf>& out) {
  if (r.op == RelOp::Dist) {
    int64_t rank = r.rank.eval({}, nullptr).value();
    if (auto v = p.rank(rank).findValue(r.name)) out.emplace_back(rank, *v);
  }
  for (const auto& a : r.args) collectLeaves(*a, p, out);
}

// Whether r is D's shards of a value: D leaves under concats only.
bool isTiling(const Rel& r) {
  return r.op == RelOp::Dist ||
         (r.op == RelOp::Concat && std::all_of(r.args.begin(), r.args.end(), [](const RelPtr& a) { return isTiling(*a); }));
}

}  // namespace

std::vector<std::string> strs(const std::vector<DistRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.push_back(r.str());
  return out;
}

namespace {

// The D leaves of a relation, as the failure's closest D tensors (at most 6).
void nameLeavesClosest(const Rel& r, const ir::Program& dist, Failure& f) {
  std::vector<DistLeaf> ls;
  collectLeaves(r, dist, ls);
  for (const auto& l : ls) {
    DistRef name{l.first, dist.rank(l.first).value(l.second).name};
    if (f.closestDist.size() < 6 && std::find(f.closestDist.begin(), f.closestDist.end(), name) == f.closestDist.end())
      f.closestDist.push_back(std::move(name));
  }
}

// range(s, l, delta) of S is, by definition, the concat of D ranges of the
// same dtype and delta that tile it in order: range(s, m) ++ range(m, l)
// where m = s + len(range(s, m)) * delta (a context-parallel rank's
// positions start at its sequence offset). Ranks holding the same range
// (replicas) are interchangeable; the lowest is taken. When the tiling
// stops at a position no D range starts at while a D range of another rank
// was left over, says so in `gap` ("positions of rank 1 start at 0 where 4
// was needed (D's range 'pos', loc)").
void tileRange(Engine& eng, const DistModel& model, const ir::Program& dist, const ir::Node& node, ClassId target,
               std::string& gap) {
  auto num = [](const ir::AttrMap& a, const char* k) { return ir::attrFloat(a, k); };
  double start = num(node.attrs, "start"), limit = num(node.attrs, "limit"), delta = num(node.attrs, "delta");
  if (delta <= 0) return;
  std::map<double, std::pair<int64_t, ir::NodeId>> byStart;  // first rank wins
  for (const auto& [r, n] : model.sources) {
    const ir::Node& dn = dist.rank(r).node(n);
    if (dn.op != ir::OpKind::Range || num(dn.attrs, "delta") != delta ||
        ir::attrType(dn.attrs, "dtype") != ir::attrType(node.attrs, "dtype"))
      continue;
    byStart.emplace(num(dn.attrs, "start"), std::make_pair(r, n));
  }
  std::vector<ClassId> parts;
  std::set<int64_t> used;
  double pos = start;
  while (pos < limit) {
    auto it = byStart.find(pos);
    if (it == byStart.end()) {
      for (const auto& [r, n] : model.sources) {
        const ir::Node& dn = dist.rank(r).node(n);
        if (used.count(r) || dn.op != ir::OpKind::Range || num(dn.attrs, "delta") != delta ||
            ir::attrType(dn.attrs, "dtype") != ir::attrType(node.attrs, "dtype"))
          continue;
        gap = "positions of rank " + std::to_string(r) + " start at " + secondsStr(num(dn.attrs, "start")) +
              " where " + secondsStr(pos) + " was needed (D's range '" + dn.name + "'" +
              (dn.loc.empty() ? "" : ", " + dn.loc.str()) + ")";
        break;
      }
      return;
    }
    auto [r, n] = it->second;
    used.insert(r);
    const ir::Value& out = dist.rank(r).value(dist.rank(r).node(n).outputs[0]);
    if (out.type.shape.size() != 1 || !out.type.shape[0].isConcrete() || out.type.shape[0].value() < 1) return;
    addDistNode(eng, model, r, n);
    parts.push_back(eng.dist(r, dist.rank(r).node(n).outputs[0]));
    pos += double(out.type.shape[0].value()) * delta;
  }
  if (pos != limit && !(pos > limit && pos - delta < limit)) return;
  if (parts.size() < 2) return;
  if (auto cat = eng.concat(0, parts)) eng.mergeChecked(target, *cat);
}

// Layer memoization (DESIGN.md, "Scale comes from structure"). The work
// for one S op is a function of its engine's initial e-graph: the input
// relations, the explored D equations and facts, and the S op itself.
// Saturation never adds D leaves and lemmas never look at which D tensor a
// leaf is, so two initial e-graphs with the same canonical text
// (EGraph::canonicalText: types, ops, attribute ids, rank-dependent
// constants and shapes, with D leaves numbered by first occurrence) are
// isomorphic: every relation derived in one holds in the other with the
// leaves renamed position by position. Identical layers hit the same text
// and reuse the result instead of re-saturating. Only successes are stored,
// and never for S ops that produce wanted outputs (their expected relation
// and output-leaf extraction are checked afresh).
struct MemoEntry {
  std::vector<std::vector<int64_t>> leaves;  // (rank, value id) by position
  std::vector<std::optional<SeqRel>> outs;   // per S op output; nullopt: dead
  // D leaves the saturation proved equal (positions): replayed on a hit, so
  // later S ops start from the same D equalities as after a fresh run.
  std::vector<std::pair<size_t, size_t>> sameLeaves;
};

using LeafNames = std::map<std::pair<int64_t, std::string>, std::pair<int64_t, std::string>>;

RelPtr renameLeaves(const RelPtr& r, const LeafNames& to) {
  if (!r) return nullptr;
  auto copy = std::make_shared<Rel>(*r);
  if (r->op == RelOp::Dist) {
    auto rank = r->rank.eval({}, nullptr);
    if (!rank.ok()) return nullptr;
    auto it = to.find({*rank, r->name});
    if (it == to.end()) return nullptr;  // a leaf outside the e-graph: no transfer
    copy->rank = IntExpr::constant(it->second.first);
    copy->name = it->second.second;
    return copy;
  }
  for (auto& a : copy->args) {
    a = renameLeaves(a, to);
    if (!a) return nullptr;
  }
  return copy;
}

// The memoized results of `e` renamed onto `leaves` (same canonical text);
// nullopt when some term mentions a leaf the text did not number.
std::optional<std::vector<std::optional<SeqRel>>> transferMemo(const MemoEntry& e,
                                                               const std::vector<std::vector<int64_t>>& leaves,
                                                               const ir::Program& dist) {
  if (e.leaves.size() != leaves.size()) return std::nullopt;
  auto name = [&](const std::vector<int64_t>& l) {
    return std::make_pair(l[0], dist.rank(l[0]).value(ir::ValueId(l[1])).name);
  };
  LeafNames to;
  for (size_t i = 0; i < leaves.size(); ++i) to[name(e.leaves[i])] = name(leaves[i]);
  std::vector<std::optional<SeqRel>> outs;
  for (const auto& o : e.outs) {
    if (!o) { outs.emplace_back(); continue; }
    SeqRel sr;
    sr.best = renameLeaves(o->best, to);
    if (!sr.best) return std::nullopt;
    for (const auto& a : o->alts) {
      sr.alts.push_back(renameLeaves(a, to));
      if (!sr.alts.back()) return std::nullopt;
    }
    outs.push_back(std::move(sr));
  }
  return outs;
}

// An S value with no clean relation yet. DESIGN.md asks clean relations of
// the outputs only; an intermediate value may stand for its own S op over
// its inputs' relations (recomputed from D: exact by definition), so a
// chain such as a vocab-parallel target pick (index arithmetic on
// replicated ids, a flattened row pick, then the mask) can reach the S op
// whose value D does hold. The chain is bounded (float S ops count; index
// and mask arithmetic and constants are recomputed freely), and when it
// ends without a clean relation the failure is the one of its origin: the
// first S op of the chain (not a constant) that had none and computes
// float data, else the first one; localized as without deferral.
struct Pending {
  std::optional<ir::NodeId> origin;
  bool floatOrigin = false;  // the origin computes float data
  Failure failure;
  std::string reason;  // the origin's budget reason, if any
  int floatOps = 0;    // float S ops of the chain
  int ops = 0;         // all S ops of the chain
};
constexpr int kMaxPendingFloatOps = 4;
constexpr int kMaxPendingOps = 48;

// Which of two chains a failure names: one whose origin computes float
// data (where a wrong collective shows) before one of index arithmetic,
// then the earlier origin.
bool blamedBefore(const Pending& a, const Pending& b) {
  if (a.floatOrigin != b.floatOrigin) return a.floatOrigin;
  return *a.origin < *b.origin;
}

// The pending chain blamed first (blamedBefore) that is still open at S op
// `at`: some value of it has a needed consumer not yet walked (or `at`).
// A chain whose values were all consumed by ops with clean relations was
// resolved and is not blamed.
const Pending* firstOpenChain(const ir::Graph& seq, const std::map<ir::ValueId, Pending>& pending,
                              const std::vector<bool>& neededNode, size_t at) {
  const Pending* best = nullptr;
  for (const auto& [v, p] : pending) {
    if (!p.origin || (best && !blamedBefore(p, *best))) continue;
    for (ir::NodeId u : seq.users(v))
      if (size_t(u) >= at && neededNode[size_t(u)]) {
        best = &p;
        break;
      }
  }
  return best;
}

// Masks and indices are recomputed freely: D's integer and boolean
// tensors in the e-graph get the ops that compute them (a few levels up),
// so a rank's shard mask or(lt(t, s), ge(t, e)) is visible as such, not
// only as an opaque leaf that exploration reached from its consumer.
void addIndexProducers(Engine& eng, const DistModel& model, const ir::Program& dist) {
  constexpr int kLevels = 3;
  std::set<std::pair<int64_t, ir::NodeId>> added;
  for (int level = 0; level < kLevels; ++level) {
    std::vector<std::pair<int64_t, ir::NodeId>> fresh;  // producers added at this level
    for (ClassId c : eng.graph().canonicalClasses()) {
      ir::DType dt = eng.graph().type(c).dtype;
      if (ir::isFloat(dt)) continue;
      for (const DistLeaf& l : eng.distLeaves(c)) {
        const ir::Graph& g = dist.rank(l.first);
        ir::NodeId n = g.value(l.second).producer;
        if (n < 0) continue;
        ir::OpCategory cat = ir::opInfo(g.node(n).op).category;
        if (cat == ir::OpCategory::Collective || cat == ir::OpCategory::Random) continue;
        if (added.insert({l.first, n}).second) fresh.emplace_back(l.first, n);
      }
    }
    if (fresh.empty()) break;
    std::set<DistLeaf> factsDone;
    for (auto [r, n] : fresh)
      for (ir::ValueId in : dist.rank(r).node(n).inputs) addFacts(eng, model, {r, in}, factsDone);
    for (auto [r, n] : fresh) addDistNode(eng, model, r, n);
  }
}

// Whether class `c` holds a D leaf (accepted by leafOk) or a concat whose
// parts all do, recursively: the S value is then a tiling of D tensors, the
// clean relation of a sharded value, and saturation can stop (goal). Without
// this a sharded S value (no single D leaf) saturated to the fixpoint, which
// grows exponentially once matmul and concat lemmas recombine the shards
// (GPT TP8 [seq, hidden]: 447 nodes when the tiling appears, 83k at the
// fixpoint, the same relation extracted).
bool tiledByLeaves(const EGraph& g, ClassId c, const std::function<bool(const DistLeaf&)>& leafOk) {
  std::map<ClassId, int> state;  // 1: on the stack (a cycle is no tiling), 2: tiled, 3: not
  std::function<bool(ClassId)> rec = [&](ClassId x) -> bool {
    x = g.find(x);
    auto [it, fresh] = state.emplace(x, 1);
    if (!fresh) return it->second == 2;
    bool ok = false;
    for (const ENode& n : g.nodes(x)) {
      if (n.op == kOpDist) ok = leafOk({n.data[0], ir::ValueId(n.data[1])});
      else if (n.op == kOpConcat) ok = std::all_of(n.kids.begin(), n.kids.end(), rec);
      if (ok) break;
    }
    state[x] = ok ? 2 : 3;
    return ok;
  };
  return rec(c);
}

// The seeds exploration starts from first. A class holding several D
// copies on one rank is a value D recomputes (every layer's cos(freqs),
// merged across layers and ranks by DistEqualities): exploring from every
// copy walks every layer's attention on every rank for one S op (~tp x
// layers leaves, Llama TP8 8 layers: 128 per RoPE op), and memoization
// misses as each layer's e-graph holds the others. Such copies stay merged
// into their class (congruence still sees them where the other inputs'
// exploration reaches their users) but are not explored from, as long as
// some input class without copies leaves seeds. The first phase also
// explores one compute hop (plus the layout ops and collectives after it):
// most S ops meet their D counterpart there, and the cos(freqs) op no
// longer walks every layer. The first phase stands only where it reached
// the goal (a D leaf, a tiling by D leaves, the expected relation); else
// verify() explores afresh from every seed with opts.exploreHops, as
// before: the search is only reduced, never a relation lost.
constexpr int kFirstPhaseHops = 1;
constexpr int kDeeperPhases = 2;
std::vector<DistLeaf> restrictSeeds(Engine& eng, const std::vector<DistLeaf>& seeds) {
  std::map<ClassId, std::map<int64_t, std::set<ir::ValueId>>> perRank;
  for (const DistLeaf& l : seeds) perRank[eng.graph().find(eng.dist(l.first, l.second))][l.first].insert(l.second);
  std::set<ClassId> copies;
  for (const auto& [c, ranks] : perRank)
    for (const auto& [r, vs] : ranks)
      if (vs.size() > 1) copies.insert(c);
  std::vector<DistLeaf> out;
  for (const DistLeaf& l : seeds)
    if (!copies.count(eng.graph().find(eng.dist(l.first, l.second)))) out.push_back(l);
  return out.empty() ? seeds : out;
}

// D tensors proven equal in one S op's engine (a value replicated on several
// ranks: input facts and congruence) stay equal: later engines start with
// them merged and explore from every copy, so a rank's copy of a replicated
// KV head still meets the query heads of that rank several ops later.
class DistEqualities {
 public:
  // Seeds' copies are merged in and explored from, up to kCopiesPerRank per
  // rank (the first recorded): a replicated KV head meets the other rank's
  // query heads, a training step's saved copy of a forward value its
  // backward users. Not every copy: a value every layer recomputes
  // (cos(freqs) on every rank) would bring every layer's copy into every
  // later op's engine (Llama 405B, 126 layers: quadratic, > 300 s); close()
  // merges the further copies exploration reaches.
  static constexpr int kCopiesPerRank = 4;
  void apply(Engine& eng, std::vector<DistLeaf>& seeds) const {
    std::map<size_t, std::pair<DistLeaf, std::map<int64_t, int>>> touched;  // group -> (a seed, copies per rank)
    std::set<DistLeaf> have(seeds.begin(), seeds.end());
    for (const DistLeaf& s : seeds)
      if (auto it = group_.find(s); it != group_.end()) {
        auto [t, fresh] = touched.try_emplace(it->second, s, std::map<int64_t, int>{});
        ++t->second.second[s.first];
        if (!fresh) eng.mergeChecked(eng.dist(t->second.first.first, t->second.first.second), eng.dist(s.first, s.second));
      }
    for (auto& [g, t] : touched)
      for (const DistLeaf& o : members_[g]) {
        if (have.count(o) || t.second[o.first] >= kCopiesPerRank) continue;
        ++t.second[o.first];
        if (eng.mergeChecked(eng.dist(t.first.first, t.first.second), eng.dist(o.first, o.second)) &&
            have.insert(o).second)
          seeds.push_back(o);
      }
  }
  // Leaves of one group that exploration brought into `eng` are merged.
  void close(Engine& eng) const {
    std::map<size_t, DistLeaf> first;
    std::vector<std::pair<DistLeaf, DistLeaf>> same;
    for (ClassId c : eng.graph().canonicalClasses())
      for (const DistLeaf& l : eng.distLeaves(c))
        if (auto it = group_.find(l); it != group_.end()) {
          auto [f, fresh] = first.try_emplace(it->second, l);
          if (!fresh) same.emplace_back(f->second, l);
        }
    for (const auto& [a, b] : same) eng.mergeChecked(eng.dist(a.first, a.second), eng.dist(b.first, b.second));
  }
  void record(const Engine& eng) {
    for (ClassId c : eng.graph().canonicalClasses()) {
      std::vector<DistLeaf> ls = eng.distLeaves(c);
      for (size_t i = 1; i < ls.size(); ++i) unite(ls[0], ls[i]);
    }
  }

 private:
  void unite(const DistLeaf& a, const DistLeaf& b) {
    auto ga = group_.find(a), gb = group_.find(b);
    if (ga != group_.end() && gb != group_.end() && ga->second == gb->second) return;
    size_t into = ga != group_.end() ? ga->second : gb != group_.end() ? gb->second : members_.size();
    if (into == members_.size()) members_.emplace_back();
    for (const DistLeaf& l : {a, b}) {
      auto g = group_.find(l);
      if (g != group_.end() && g->second == into) continue;
      if (g == group_.end()) { members_[into].push_back(l); group_[l] = into; continue; }
      size_t from = g->second;  // merge group `from` into `into`
      for (const DistLeaf& m : members_[from]) { group_[m] = into; members_[into].push_back(m); }
      members_[from].clear();
    }
  }
  std::map<DistLeaf, size_t> group_;
  std::vector<std::vector<DistLeaf>> members_;
};

double peakRss() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;
}

}  // namespace

namespace {
std::string proofCacheDirOf(const VerifyOptions& opts) {
  return opts.proofCacheDir.empty() ? defaultProofCacheDir() : opts.proofCacheDir == "-" ? "" : opts.proofCacheDir;
}
std::string lemmaDirOf(const VerifyOptions& opts) { return opts.lemmaDir.empty() ? defaultLemmaDir() : opts.lemmaDir; }
}  // namespace

Status prepareLemmaLibrary(const VerifyOptions& opts) {
  SP_TRY(provenLibrary(lemmaDirOf(opts), proofCacheDirOf(opts), std::chrono::steady_clock::time_point::max()));
  return okStatus();
}

namespace {

// After a failure, the time the per-rank engine gets in all for the
// relations of the outputs that do not depend on the failing value.
constexpr double kRewalkSeconds = 10.0;

// Group size from which a failure found while folding goes to the witness
// before the per-rank engine (verifyCone).
constexpr int64_t kFoldedRefutationRanks = 16;
// Below it, the per-rank engine's search work (the walk's, on this thread,
// in threadSearchWork units: e-nodes added and e-nodes matched) before the
// fold's localization and the witness take over, where folding saw a likely
// bug. At the op D got wrong the engine may search to its budget for want
// of a relation (a 4-layer MLP stack at TP 8 with one all_reduce dropped:
// 4.6 s), where folding named the fault in milliseconds. A count, not a
// clock: wall time stretches on a loaded machine and CPU time does too
// (hyperthreads sharing a core), and a verdict's localization must not
// depend on the load (with 1 s of thread CPU time, the Llama TP 8 twin's
// moved from the norm to the residual add under a parallel build). 10M
// units are 0.3-1 s of one core here (the Llama block's ops match few
// nodes each, the MLP stack's large sums many).
constexpr int64_t kPerRankFirstWork = 10000000;
constexpr double kWalkShare = 0.8;  // of the time limit, for the per-rank walk

// Rank folding's verdict (rewrite/engine/fold.h), when it decides: verified, or,
// folded over a large group with an S value not held as required, refuted
// by the witness run right away on the outputs concerned (a numeric
// difference there is what any refutation rests on). Small groups go to
// the per-rank engine first: it localizes at the S op and is cheap there,
// while from kFoldedRefutationRanks on its search grows with the group.
// `base`: the report so far (assumptions, statistics).
// *needsRanks: folding from templates left inputs it reads only per rank.
Result<std::optional<VerifyReport>> decideFolded(FoldInput in, const ProvenLibrary& lib, const VerifyOptions& opts,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 const VerifyReport& base, bool* needsRanks = nullptr,
                                                 bool* mismatch = nullptr,
                                                 bool witnessFirst = false, bool faultNamedOnly = false,
                                                 FoldOutcome* seen = nullptr) {
  std::map<std::string, bool> provenByName;
  for (const auto& s : lib.status) provenByName[s.name] = s.proven;
  in.proven = [&](const std::string& n) {
    auto it = provenByName.find(n);
    return it != provenByName.end() && it->second;
  };
  auto t0 = std::chrono::steady_clock::now();
  FoldOutcome fold = verifyFolded(in);
  if (seen && !fold.needsRanks) *seen = fold;
  if (needsRanks) *needsRanks = fold.needsRanks;
  if (mismatch) *mismatch = *mismatch || fold.layoutMismatch;
  spdlog::debug("rank folding: {} in {:.3f} s", fold.verified ? "verified" : fold.why,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::string folded = in.dist->worldSize() == 1
                           ? "one rank" + (fold.copies > 1 ? ", its " + std::to_string(fold.copies) +
                                                                 " micro-batches folded as copies of one step"
                                                           : std::string())
                       : fold.groupSize == 1 ? "layouts decided rank by rank (pipeline stages, no group collective)"
                       : fold.foldedOver.empty()
                           ? "ranks folded: one symbolic rank of group " + fold.group + " (" +
                                 std::to_string(fold.groupSize) + " ranks)"
                           : "ranks folded: one symbolic rank of " + fold.foldedOver;
  if (in.templates) folded += ", input relations read as templates (each checked once for every rank)";
  if (fold.verified) {
    VerifyReport rep = base;
    rep.verdict = Verdict::Verified;
    rep.outputs = fold.outputs;
    rep.stats.lemmasApplied = fold.steps;
    std::string schemas;
    for (const auto& s : fold.schemas) schemas += (schemas.empty() ? "" : "; ") + s;
    rep.assumptions.push_back(folded + "; layouts carried by the n-ary forms of proven lemmas (rewrite/engine/fold.cpp): " +
                              schemas);
    return std::optional<VerifyReport>(std::move(rep));
  }
  // Micro-batch copies grow the per-rank search as ranks do.
  if (!fold.layoutMismatch || (faultNamedOnly && !fold.faultNamed) ||
      (!witnessFirst && fold.groupSize * fold.copies < kFoldedRefutationRanks) ||
      opts.witnessWorkLimit <= 0)
    return std::optional<VerifyReport>();
  const ir::Graph& seq = *in.seq;
  const ir::Value& val = seq.value(*seq.findValue(fold.failedAt.empty() ? fold.unmatched[0] : fold.failedAt));
  bool computed = val.kind == ir::ValueKind::NodeOutput;
  std::string what = computed ? std::string(ir::opName(seq.node(val.producer).op)) + " '" + seq.node(val.producer).name + "'"
                              : "input '" + val.name + "'";
  VerifyReport rep = base;
  rep.failure = Failure{what,          val.name, computed ? seq.node(val.producer).loc : val.loc,
                        fold.diagnosis, fold.closest, std::nullopt, {}, fold.missingSumGroups, fold.sumOrigins, true};
  rep.outputs = fold.outputs;
  SP_TRY(decideWithWitness(seq, *in.dist, *in.relations, opts, fold.unmatched, in.expected, deadline, rep));
  if (rep.verdict != Verdict::Refuted) return std::optional<VerifyReport>();
  rep.assumptions.push_back(folded + " localized the failure");
  return std::optional<VerifyReport>(std::move(rep));
}

// One walk over the cone of opts.outputs, up to the first failure.
// *outputOnly: the failure is at a wanted output whose value has a relation
// over D (not the expected one, or not over D outputs); what it computes
// still has relations.
Result<VerifyReport> verifyCone(const ir::Graph& seq, const ir::Program& dist, const RelationFile& relations,
                                const VerifyOptions& opts, bool* outputOnly) {
  *outputOnly = false;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  VerifyReport rep;
  rep.assumptions = {"real arithmetic (no rounding, overflow or NaN) in lemmas and collective sums",
                     "lemmas applied only at the tensor ranks their proofs cover"};
  // Refinement presumes that D finishes (docs/verify-report.md): a D that
  // can hang is refuted with the cycle of waiting ranks before any value is
  // compared.
  // An SPMD program over mesh-axis groups cannot hang and needs no
  // per-rank matching to be folded (ir::uniformSpmd); its per-rank model
  // is built only if the per-rank engine runs.
  const bool uniform = opts.fold && ir::uniformSpmd(dist);
  Result<DistModel> lowered = uniform ? Result<DistModel>(DistModel{}) : lowerProgram(dist);
  // So is one whose ranks meet at mismatched collectives (another op,
  // reduction, dim or shape on one member: NCCL would hang or mix
  // buffers) or whose send finds no receive.
  const std::string lowerError = lowered ? std::string() : lowered.error().id;
  if (lowerError == "deadlock" || lowerError == "collective-mismatch" || lowerError == "unreceived-send" ||
      lowerError == "mismatched-send-recv") {
    rep.verdict = Verdict::Refuted;
    rep.failure = failureAt("D", "", {}, lowered.error().message);
    rep.stats.distOps = 0;
    for (int64_t r = 0; r < dist.worldSize(); ++r) rep.stats.distOps += int64_t(dist.rank(r).nodes().size());
    rep.stats.seqOps = int64_t(seq.nodes().size());
    rep.stats.seconds = elapsed();
    return rep;
  }
  if (!lowered) return lowered.error();
  DistModel model = std::move(*lowered);
  bool lowerLater = uniform;
  std::string cacheDir = proofCacheDirOf(opts);
  auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(std::clamp(opts.timeLimitSeconds, 0.0, 1e8)));
  SP_ASSIGN(const ProvenLibrary* lib,
            provenLibrary(lemmaDirOf(opts), cacheDir, deadline));
  if (lib->timedOut > 0) {
    rep.reason = "time limit of " + secondsStr(opts.timeLimitSeconds) + " s reached while proving the lemma library (" +
                 std::to_string(lib->status.size() - size_t(lib->timedOut)) + " of " +
                 std::to_string(lib->status.size()) +
                 " lemmas done; `shardproof lemmas --prove` fills the proof cache once for later runs)";
    rep.stats.seconds = elapsed();
    return rep;
  }
  if (lib->cache.hits > 0)
    rep.assumptions.push_back(std::to_string(lib->cache.hits) + " of " + std::to_string(lib->status.size()) +
                              " lemma proofs read from the proof cache " + lib->cache.file);
  std::vector<Rule> rules = compileRules(lib->lib, lib->status);
  // The input relations are checked (types, every D input covered) before
  // any verdict, folded or not; once per template and rank class where
  // that suffices (checkInputTemplates), else once per rank.
  std::optional<TemplateInputs> templates;
  if (opts.fold) templates = checkInputTemplates(seq, dist, relations);
  std::vector<CheckedInput> checkedInputs;
  if (!templates) {
    SP_ASSIGN(checkedInputs, checkInputRelations(seq, dist, relations));
  }
  RankSpace ranks = RankSpace::of(dist);
  rep.stats.seqOps = int64_t(seq.nodes().size());
  rep.stats.distOps = 0;
  for (int64_t c = 0; c < dist.numClasses(); ++c)
    rep.stats.distOps += int64_t(dist.classRanks(c).size() * dist.classGraph(c).nodes().size());

  // Requested outputs and their expected relations.
  std::vector<std::string> wanted = opts.outputs;
  if (wanted.empty())
    for (ir::ValueId o : seq.outputs()) wanted.push_back(seq.value(o).name);
  // Any named S value may be checked: a graph output is rebuilt from D's
  // outputs, an intermediate (an attention output, a weight gradient
  // inside a step) from any D value (GraphGuard-style checks).
  for (const auto& w : wanted)
    if (!seq.findValue(w)) return makeError("unknown-output", "'" + w + "' is not a value of the sequential graph");
  auto isSeqOutput = [&](const std::string& n) {
    auto v = seq.findValue(n);
    return v && std::find(seq.outputs().begin(), seq.outputs().end(), *v) != seq.outputs().end();
  };
  std::map<std::string, RelPtr> expected;
  for (const auto& o : relations.outputs) {
    RelScope s;
    s.ranks = &ranks;
    auto c = concretize(*o.expr, s);
    if (!c.ok()) return makeError(c.error().id, c.error().message, o.location);
    expected[o.name] = *c;
  }

  // An SPMD program over one group is checked once for a symbolic rank
  // (rewrite/engine/fold.h); what folding does not decide goes to the per-rank
  // engine below, which also refutes.
  bool foldMismatch = false;  // folding found an S value held otherwise than required (a likely bug)
  FoldOutcome foldSeen;       // folding's reading of the whole program, where it ran
  if (opts.fold) {
    bool needsRanks = true;
    if (templates) {
      FoldInput fin{&seq, &dist, &relations, nullptr, uniform ? nullptr : &model, wanted, expected, nullptr};
      fin.templates = &*templates;
      SP_ASSIGN(std::optional<VerifyReport> decided,
                decideFolded(fin, *lib, opts, deadline, rep, &needsRanks, &foldMismatch, false, false, &foldSeen));
      if (decided) {
        decided->stats.seconds = elapsed();
        return std::move(*decided);
      }
    }
    if (lowerLater) {
      SP_ASSIGN(model, lowerProgram(dist));
      lowerLater = false;
    }
    if (templates) {
      SP_ASSIGN(checkedInputs, checkInputRelations(seq, dist, relations));
    }
    if (needsRanks) {
      FoldInput fin{&seq, &dist, &relations, &checkedInputs, &model, wanted, expected, nullptr};
      SP_ASSIGN(std::optional<VerifyReport> decided,
                decideFolded(fin, *lib, opts, deadline, rep, nullptr, &foldMismatch, false, false, &foldSeen));
      if (decided) {
        decided->stats.seconds = elapsed();
        return std::move(*decided);
      }
    }
    if (!opts.perRank) {
      rep.verdict = Verdict::Inconclusive;
      rep.reason = "rank folding did not decide, and the per-rank engine is off";
      for (const auto& w : wanted) rep.outputs.push_back({w, "", nullptr});
      rep.stats.seconds = elapsed();
      return rep;
    }
  }
  if (lowerLater) {
    SP_ASSIGN(model, lowerProgram(dist));
  }
  SP_ASSIGN(InputInversion inv, invertInputs(seq, checkedInputs, model));
  // Each D input's relation to S, as text, for explanations.
  std::map<std::pair<int64_t, std::string>, std::string> distInputs;
  if (auto bound = expandInputs(relations, ranks); bound.ok())
    for (const auto& b : *bound)
      if (auto c = concretize(*b.expr, b.scope); c.ok()) distInputs[{b.rank, b.name}] = str(**c);
  Interner interner;
  EngineStats es;
  std::unordered_map<std::string, MemoEntry> memo;
  std::map<ir::ValueId, SeqRel> known;
  std::map<ir::ValueId, Pending> pending;
  DistEqualities sameDist;
  std::map<std::string, ir::NodeId> cse;  // S common subexpressions: key -> the first op
  for (const auto& [name, sr] : inv.seq) known[*seq.findValue(name)] = sr;
  std::map<std::string, OutputResult> done;
  std::vector<std::string> unproven;
  auto isWanted = [&](const std::string& n) { return std::find(wanted.begin(), wanted.end(), n) != wanted.end(); };
  auto isOutputLeaf = [&](const DistLeaf& l) { return model.outputs[size_t(l.first)].count(l.second) > 0; };
  const std::function<bool(const DistLeaf&)> isOutputLeafFn = isOutputLeaf;
  const std::function<bool(const DistLeaf&)> anyLeaf = [](const DistLeaf&) { return true; };
  // The D values a wanted S value must be rebuilt from.
  auto leavesFor = [&](const std::string& n) -> const std::function<bool(const DistLeaf&)>& {
    return isWanted(n) && isSeqOutput(n) ? isOutputLeafFn : anyLeaf;
  };

  // Only S values the wanted outputs depend on need relations (the cone).
  std::vector<bool> neededValue(seq.values().size(), false), neededNode(seq.nodes().size(), false);
  for (const auto& w : wanted) neededValue[size_t(*seq.findValue(w))] = true;
  for (size_t ni = seq.nodes().size(); ni-- > 0;) {
    const ir::Node& n = seq.node(ir::NodeId(ni));
    for (ir::ValueId o : n.outputs) neededNode[ni] = neededNode[ni] || neededValue[size_t(o)];
    if (neededNode[ni])
      for (ir::ValueId in : n.inputs) neededValue[size_t(in)] = true;
  }
  size_t total = seq.nodes().size();
  const VerifyReport beforeWalk = rep;
  // Folding's localization of a likely bug, run with the witness first
  // (faultNamedOnly: only where its reading names the fault).
  auto foldedLocalization = [&](bool faultNamedOnly) -> Result<std::optional<VerifyReport>> {
    FoldInput fin{&seq, &dist, &relations, &checkedInputs, &model, wanted, expected, nullptr};
    SP_ASSIGN(std::optional<VerifyReport> decided,
              decideFolded(fin, *lib, opts, deadline, beforeWalk, nullptr, nullptr, true, faultNamedOnly));
    if (decided) decided->stats.seconds = elapsed();
    return decided;
  };
  const int64_t walkWork0 = threadSearchWork();
  auto walkWork = [&] { return threadSearchWork() - walkWork0; };
  // The walk ends by 80% of the time limit: the witness that decides what
  // the walk leaves open gets the rest (an engine that spent the whole
  // limit left a witness of milliseconds no time, and a one-rank swap of
  // two all_to_alls inconclusive).
  const double walkLimit = opts.timeLimitSeconds * kWalkShare;
  for (size_t ni = 0; ni < total && !rep.failure; ++ni) {
    const ir::Node& node = seq.node(ir::NodeId(ni));
    if (!neededNode[ni]) continue;
    if (opts.progress) opts.progress(ni, total, node.name);
    std::string what = std::string(ir::opName(node.op)) + " '" + node.name + "'";
    if (foldMismatch && walkWork() > kPerRankFirstWork) {
      // Folding already saw a likely bug: its localization and the witness.
      foldMismatch = false;
      SP_ASSIGN(std::optional<VerifyReport> decided, foldedLocalization(false));
      if (decided) return std::move(*decided);
    }
    if (elapsed() > walkLimit) {
      rep.reason = "time limit of " + secondsStr(opts.timeLimitSeconds) + " s reached at " + what;
      rep.failure = failureAt(what, seq.value(node.outputs[0]).name, node.loc, rep.reason);
      break;
    }
    std::vector<const SeqRel*> ins;
    std::string missingInput;
    const Pending* firstPending = nullptr;  // the earliest origin among pending inputs
    int pendingFloat = 0, pendingOps = 0;
    for (ir::ValueId in : node.inputs) {
      auto it = known.find(in);
      ins.push_back(it == known.end() ? nullptr : &it->second);
      if (auto p = pending.find(in); p != pending.end()) {
        pendingFloat = std::max(pendingFloat, p->second.floatOps);
        pendingOps = std::max(pendingOps, p->second.ops);
        if (p->second.origin && (!firstPending || blamedBefore(p->second, *firstPending))) firstPending = &p->second;
        continue;
      }
      if (it == known.end() && missingInput.empty() && !hasNoElements(seq.value(in).type)) {
        const std::string& n = seq.value(in).name;
        missingInput = "S input '" + n + "' has no relation to D inputs: " +
                       (inv.missing.count(n) ? inv.missing[n] : "unknown tensor");
      }
    }
    if (!missingInput.empty()) {
      rep.failure = failureAt(what, seq.value(node.outputs[0]).name, node.loc, missingInput);
      break;
    }
    // S common subexpressions: an op of the same kind, attributes and input
    // values as an earlier one computes the same values (S is deterministic
    // outside its random ops), so the earlier op's relations are this op's
    // too, with no engine (every layer's cos(freqs) of the RoPE: one op of
    // 252 in Llama 405B, which each explored every layer's copies in D).
    // Ops with a wanted output are checked as such. Counted as memo hits,
    // and off with the memo (opts.memoize).
    std::string cseKey;
    if (opts.memoize && ir::opInfo(node.op).category != ir::OpCategory::Random && !firstPending &&
        std::none_of(node.outputs.begin(), node.outputs.end(),
                     [&](ir::ValueId o) { return isWanted(seq.value(o).name) || pending.count(o); })) {
      int64_t inRank = node.inputs.empty() ? 0 : int64_t(seq.value(node.inputs[0]).type.shape.size());
      cseKey = std::to_string(int(node.op)) + ":" + std::to_string(interner.attrs(node.op, node.attrs, inRank)) + ":" +
               std::to_string(node.outputs.size());
      for (ir::ValueId in : node.inputs) cseKey += "," + std::to_string(int64_t(in));
      if (auto it = cse.find(cseKey); it != cse.end()) {
        const ir::Node& twin = seq.node(it->second);
        bool all = true;
        for (size_t k = 0; k < node.outputs.size(); ++k)
          all = all && known.count(twin.outputs[k]) && seq.value(twin.outputs[k]).type == seq.value(node.outputs[k]).type;
        if (all) {
          for (size_t k = 0; k < node.outputs.size(); ++k) known[node.outputs[k]] = known.at(twin.outputs[k]);
          ++rep.stats.memoHits;
          continue;
        }
      }
    }
    // Two phases (see restrictSeeds): exploration first leaves out the D
    // copies a rank recomputes several times; when that engine finds no
    // relation, a fresh one explores from every seed, as before.
    std::optional<Engine> holder;
    holder.emplace(interner, rules, es, dist);
    holder->setZeroLeaves(&model.zeros);
    Engine& eng = *holder;
    std::vector<ClassId> kids;
    std::vector<DistLeaf> seeds;
    bool bad = false;
    // The class of an S value: its clean relation, or (pending) its S op
    // over its inputs' classes.
    std::map<ir::ValueId, ClassId> built;
    std::function<Result<ClassId>(ir::ValueId)> classOf = [&](ir::ValueId in) -> Result<ClassId> {
      if (auto b = built.find(in); b != built.end()) return b->second;
      const ir::Value& iv = seq.value(in);
      ClassId c;
      if (auto k = known.find(in); k != known.end()) {
        const SeqRel* sr = &k->second;
        SP_ASSIGN(c, eng.addRel(*sr->best));
        for (const auto& a : sr->alts)
          if (auto ca = eng.addRel(*a); ca.ok()) eng.mergeChecked(c, *ca);
        if (!(eng.graph().type(c) == iv.type))
          return makeError("relation-shape-mismatch", "S value '" + iv.name + "' has type " + iv.type.str() +
                                                          " but its relation " + str(*sr->best) + " has " +
                                                          eng.graph().type(c).str());
        collectLeaves(*sr->best, dist, seeds);
        for (const auto& a : sr->alts) collectLeaves(*a, dist, seeds);
      } else if (hasNoElements(iv.type) && iv.producer < 0) {
        // An S input without elements is the one empty tensor of its type:
        // a constant (a concat drops it, Engine::concat).
        std::vector<int64_t> dims;
        for (const ir::Dim& d : iv.type.shape) dims.push_back(d.value());
        ir::AttrMap a{{"value", ir::Tensor::fromFloats(iv.type.dtype, dims, {})}};
        auto n = eng.irNode(ir::OpKind::Constant, a, {}, 0, iv.type);
        if (!n) return makeError("internal", "S input '" + iv.name + "': no constant for its empty type");
        c = *n;
      } else {
        const ir::Node& pn = seq.node(iv.producer);
        std::vector<ClassId> pk;
        for (ir::ValueId pin : pn.inputs) {
          SP_ASSIGN(ClassId x, classOf(pin));
          pk.push_back(x);
        }
        int outIndex = int(std::find(pn.outputs.begin(), pn.outputs.end(), in) - pn.outputs.begin());
        auto n = eng.irNode(pn.op, pn.attrs, pk, outIndex, iv.type);
        if (!n) return makeError("internal", "S value '" + iv.name + "': its type disagrees with its inputs' relations");
        c = *n;
      }
      // An S constant is, by definition, also its constant node: op rules
      // that read constant operands (x / c as a scale) then see it.
      if (iv.kind == ir::ValueKind::NodeOutput && seq.node(iv.producer).op == ir::OpKind::Constant)
        if (auto k = eng.irNode(ir::OpKind::Constant, seq.node(iv.producer).attrs, {}, 0, iv.type))
          eng.mergeChecked(c, *k);
      built[in] = c;
      return c;
    };
    std::vector<ClassId> targets;
    std::map<size_t, ClassId> expCls;
    std::string rangeGap;  // why D's ranges do not tile an S range
    // An S value no wanted output depends on needs no relation.
    auto dead = [&](size_t k) {
      return !neededValue[size_t(node.outputs[k])];
    };
    auto goal = [&] {
      for (size_t k = 0; k < targets.size(); ++k) {
        if (dead(k)) continue;
        if (expCls.count(k)) {
          if (eng.graph().find(expCls[k]) != eng.graph().find(targets[k])) return false;
          continue;
        }
        if (eng.distLeaves(targets[k]).empty() &&
            !tiledByLeaves(eng.graph(), targets[k], leavesFor(seq.value(node.outputs[k]).name)))
          return false;
      }
      return true;
    };
    // Whether the engine found what this S op needs (as checked below).
    auto found = [&] {
      for (size_t k = 0; k < targets.size(); ++k) {
        if (dead(k)) continue;
        if (expCls.count(k)) {
          if (eng.graph().find(expCls[k]) != eng.graph().find(targets[k])) return false;
        } else if (!eng.extractClean(targets[k], leavesFor(seq.value(node.outputs[k]).name))) {
          return false;
        }
      }
      return true;
    };
    std::string memoKey;
    std::vector<std::vector<int64_t>> memoLeaves;
    bool memoHit = false;
    StopReason stop = StopReason::Saturated;
    bool cappedByLimit = false;  // this op's search cut short by the time limit
    // Phases: one hop from the seeds without copies, then opts.exploreHops,
    // then, for a wanted value (an output to rebuild) whose search
    // saturated short of the goal with D nodes left beyond the hop limit,
    // twice as deep (a merge chain as long as the group: ring attention's
    // running softmax state at CP 8 passes 16 compute ops): the search only
    // widens, never a relation lost. Not for intermediate values: D often
    // holds none of them (the next op starts from their definition), and
    // widening each one's search cost a Megatron capture 8x its time.
    bool cutByHops = false;
    const bool wantedOp = std::any_of(node.outputs.begin(), node.outputs.end(),
                                      [&](ir::ValueId o) { return isWanted(seq.value(o).name); });
    for (int phase = 0; phase < 2 + kDeeperPhases; ++phase) {
      if (phase > 0) {
        holder.emplace(interner, rules, es, dist);
        holder->setZeroLeaves(&model.zeros);
        kids.clear();
        seeds.clear();
        built.clear();
      }
      for (ir::ValueId in : node.inputs) {
        SP_ASSIGN(ClassId c, classOf(in));
        kids.push_back(c);
      }
      sameDist.apply(eng, seeds);
      std::vector<DistLeaf> from = phase == 0 ? restrictSeeds(eng, seeds) : seeds;
      int hops = phase == 0 ? std::min(opts.exploreHops, kFirstPhaseHops) : opts.exploreHops << (phase - 1);
      bool restricted = from.size() < seeds.size() || hops < opts.exploreHops;
      cutByHops = exploreDist(eng, model, from, hops, phase == 0);
      addIndexProducers(eng, model, dist);
      sameDist.close(eng);
      if (node.op == ir::OpKind::Constant || node.op == ir::OpKind::Range)
        for (const auto& [r, n] : model.sources)
          if (dist.rank(r).node(n).op == node.op &&
              interner.attrs(node.op, dist.rank(r).node(n).attrs, 0) == interner.attrs(node.op, node.attrs, 0))
            addDistNode(eng, model, r, n);
      targets.clear();
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        auto c = eng.irNode(node.op, node.attrs, kids, int(k), seq.value(node.outputs[k]).type);
        if (!c) { bad = true; break; }
        targets.push_back(*c);
      }
      if (bad) return makeError("internal", what + ": its type disagrees with its inputs' relations");
      if (node.op == ir::OpKind::Range) tileRange(eng, model, dist, node, targets[0], rangeGap);
      if (auto c = relateScalarConstant(eng, model, node)) eng.mergeChecked(targets[0], *c);
      expCls.clear();
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const std::string& n = seq.value(node.outputs[k]).name;
        if (!isWanted(n) || !expected.count(n)) continue;
        auto c = eng.addRel(*expected[n]);
        if (!c.ok()) return makeError(c.error().id, "expected relation of '" + n + "': " + c.error().message);
        if (!(eng.graph().type(*c) == eng.graph().type(targets[k]))) {
          // D's outputs cannot meet the expectation (a collective that
          // changed a shape): refuted, the witness shows the shapes.
          unproven.push_back(n);
          rep.failure = failureAt(what, n, node.loc,
                                "the expected relation " + str(*expected[n]) + " rebuilds " +
                                    eng.graph().type(*c).str() + " from D, but S's '" + n + "' is " +
                                    eng.graph().type(targets[k]).str() + ": D's outputs have the wrong shape");
          nameLeavesClosest(*expected[n], dist, *rep.failure);
          break;
        }
        expCls[k] = *c;
      }
      if (rep.failure) break;
      memoKey.clear();
      memoLeaves.clear();
      if (opts.memoize && expCls.empty() && std::none_of(node.outputs.begin(), node.outputs.end(),
                                         [&](ir::ValueId o) { return isWanted(seq.value(o).name); })) {
        eng.graph().rebuild();
        for (size_t k = 0; k < targets.size(); ++k) memoKey += dead(k) ? 'd' : 'l';
        memoKey += eng.graph().canonicalText(kOpDist, targets, memoLeaves);
        if (auto it = memo.find(memoKey); it != memo.end()) {
          if (auto outs = transferMemo(it->second, memoLeaves, dist)) {
            for (size_t k = 0; k < outs->size(); ++k)
              if ((*outs)[k]) known[node.outputs[k]] = *(*outs)[k];
            for (auto [a, b] : it->second.sameLeaves)  // transferred theorems, as the results
              eng.mergeChecked(eng.dist(memoLeaves[a][0], ir::ValueId(memoLeaves[a][1])),
                               eng.dist(memoLeaves[b][0], ir::ValueId(memoLeaves[b][1])));
            eng.graph().rebuild();
            sameDist.record(eng);
            memoHit = true;
            break;
          }
        }
      }
      // One op's search ends by the time limit too (the limit is checked
      // between ops; a repair candidate gets a second or so).
      Budget opBudget = opts.perOpBudget;
      auto leftMs = std::chrono::milliseconds(int64_t(std::max(0.0, walkLimit - elapsed()) * 1000.0) + 1);
      cappedByLimit = leftMs < opBudget.time;
      if (cappedByLimit) opBudget.time = leftMs;
      if (foldMismatch) opBudget.workUntil = walkWork0 + kPerRankFirstWork;
      stop = eng.saturate(opBudget, goal);
      if (foldMismatch && stop != StopReason::GoalReached && stop != StopReason::Saturated &&
          walkWork() > kPerRankFirstWork) {
        // Out of its first turn inside one op (the op D got wrong, often;
        // the work limit may show as the node limit, checked first):
        // folding's localization, if the witness confirms it; else this
        // op's search goes on with its own budget.
        foldMismatch = false;
        SP_ASSIGN(std::optional<VerifyReport> decided, foldedLocalization(false));
        if (decided) return std::move(*decided);
        opBudget.workUntil = 0;
        stop = eng.saturate(opBudget, goal);
      }
      sameDist.record(eng);
      // The narrow phase stands only where it reached the goal (a D leaf or
      // tiling, the expected relation): a relation it found that is only
      // clean (a partial sum) may miss what the full exploration adds.
      if (stop == StopReason::GoalReached || (goal() && found())) break;
      if (!restricted && !(cutByHops && stop == StopReason::Saturated && wantedOp)) break;
    }
    if (rep.failure) break;
    if (memoHit) {
      ++rep.stats.memoHits;
      continue;
    }
    for (size_t k = 0; k < node.outputs.size() && !rep.failure; ++k) {
      const std::string& n = seq.value(node.outputs[k]).name;
      if (dead(k)) continue;  // nothing reads it (a dropout mask): no relation needed
      RelPtr best = eng.extractClean(targets[k], [](const DistLeaf&) { return true; });
      spdlog::debug("verify: {} '{}' = {} ({}, {} lemma applications, {} e-nodes)", what, n,
                    best ? str(*best) : "(no relation)", stopReasonName(stop), es.lemmasApplied, eng.graph().numNodes());
      if (!best) {
        std::string sumGroup;
        bool namesFault = true;
        std::string msg = explainFailure(seq, dist, node, ins, n, distInputs, rangeGap, &sumGroup, &namesFault);
        bool budget = stop != StopReason::Saturated && stop != StopReason::GoalReached;
        if (budget)
          rep.reason = cappedByLimit && stop == StopReason::TimeLimit
                           ? "time limit of " + secondsStr(opts.timeLimitSeconds) + " s reached at " + what
                           : "e-graph budget ran out at " + what + " (" + std::string(stopReasonName(stop)) + ")";
        Failure f = failureAt(what, n, node.loc, msg);
        f.unexplainedGap = !namesFault;
        if (!sumGroup.empty()) f.missingSumGroups.push_back(sumGroup);
        // Closest D tensors: same shape, or a shape that concatenates to it;
        // among those, the fewest D ops downstream of the D tensors the
        // op's input relations name (the seeds) first: the earliest point
        // where D holds this op's value (or the parts a missing collective
        // would combine), then the other explored tensors.
        const auto& want = seq.value(node.outputs[k]).type.shape;
        std::map<DistLeaf, int> hops;
        {
          std::deque<DistLeaf> todo(seeds.begin(), seeds.end());
          for (const auto& l : seeds) hops.emplace(l, 0);
          while (!todo.empty()) {
            DistLeaf l = todo.front();
            todo.pop_front();
            const ir::Graph& g = dist.rank(l.first);
            for (ir::NodeId u : g.users(l.second))
              for (ir::ValueId o : g.node(u).outputs)
                if (hops.emplace(DistLeaf{l.first, o}, hops[l] + 1).second) todo.push_back({l.first, o});
          }
        }
        std::vector<std::tuple<int, int, int64_t, DistRef>> cands;
        for (ClassId c : eng.graph().canonicalClasses())
          for (const auto& l : eng.distLeaves(c)) {
            const auto& s = dist.rank(l.first).value(l.second).type.shape;
            int score = s == want ? 0 : (s.size() == want.size() ? 1 : 9);
            if (score == 1) {
              int diff = 0;
              for (size_t d = 0; d < s.size(); ++d) diff += s[d] != want[d];
              score = diff == 1 ? 1 : 9;
            }
            auto h = hops.find(l);
            if (score < 9)
              cands.emplace_back(score, h == hops.end() ? 1 << 20 : h->second, l.first,
                                 DistRef{l.first, dist.rank(l.first).value(l.second).name});
          }
        std::sort(cands.begin(), cands.end());
        // One entry per D tensor name (its lowest rank): the witness and the
        // repair search compare each alone and over its groups, so the
        // other ranks' copies would only crowd out other tensors.
        std::set<std::string> seenNames;
        for (size_t i = 0; i < cands.size() && f.closestDist.size() < 6; ++i) {
          const DistRef& c = std::get<3>(cands[i]);
          if (seenNames.insert(c.name).second) f.closestDist.push_back(c);
        }
        // Defer (Pending) while the chain is short and this is no checked
        // output; otherwise fail where the earliest open chain began.
        bool isFloatVal = ir::isFloat(seq.value(node.outputs[k]).type.dtype) && node.op != ir::OpKind::Constant;
        bool isFloatOp = isFloatVal && node.op != ir::OpKind::Range;
        Pending pend;
        if (firstPending && firstPending->origin && (firstPending->floatOrigin || !isFloatVal)) {
          pend = *firstPending;  // the chain's origin, failure and reason
        } else if (node.op != ir::OpKind::Constant) {
          pend.origin = ir::NodeId(ni);
          pend.floatOrigin = isFloatVal;
          pend.failure = f;
          pend.reason = rep.reason;
        }
        pend.floatOps = pendingFloat + (isFloatOp ? 1 : 0);
        pend.ops = pendingOps + 1;
        if (!isWanted(n) && !expCls.count(k) && pend.floatOps <= kMaxPendingFloatOps && pend.ops <= kMaxPendingOps) {
          rep.reason.clear();
          pending[node.outputs[k]] = std::move(pend);
          continue;
        }
        const Pending* open = firstOpenChain(seq, pending, neededNode, ni);
        if (open && (!pend.origin || blamedBefore(*open, pend))) pend = *open;
        if (pend.origin) {
          rep.failure = pend.failure;
          rep.reason = pend.reason;
        } else {
          rep.failure = f;
        }
        break;
      }
      SeqRel sr;
      sr.best = best;
      // Up to DistEqualities::kCopiesPerRank leaves per rank: the others
      // (every layer's cos(freqs), thousands at 126 layers) are recorded as
      // equal (sameDist) and merged where a later engine's exploration
      // reaches them (DistEqualities::close).
      std::map<int64_t, int> perRank;
      for (const auto& l : eng.distLeaves(targets[k]))
        if (perRank[l.first]++ < DistEqualities::kCopiesPerRank)
          sr.alts.push_back(Rel::dist(IntExpr::constant(l.first), dist.rank(l.first).value(l.second).name));
      // The class as D's shards of it, when it is one, goes along too: the
      // cheapest term may mix forms (a rotary add over 16 ranks as 12 shards
      // and a sum of two 4-rank concats), which the next op would have to
      // undo before its lemmas meet D's partition.
      // A tiling by gathered leaves (an all_gather's output, a concat of
      // them over dp) is not D's partition: the finest tiling, the shards
      // they were gathered from, goes along.
      if (RelPtr tiling = isTiling(*best) ? eng.extractShards(targets[k], anyLeaf)
                                          : eng.extractClean(targets[k], anyLeaf, true);
          tiling && str(*tiling) != str(*best))
        sr.alts.push_back(tiling);
      known[node.outputs[k]] = sr;
      if (!isWanted(n)) continue;
      if (expCls.count(k)) {
        if (eng.graph().find(expCls[k]) == eng.graph().find(targets[k])) {
          done[n] = OutputResult{n, str(*expected[n]), expected[n]};
        } else {
          unproven.push_back(n);
          *outputOnly = true;
          std::string sumGroup;
          rep.failure = failureAt(what, n, node.loc,
                                "S output '" + n + "' is " + str(*best) + ", not proven equal to the expected " +
                                    str(*expected[n]) + explainExpectMismatch(dist, *best, *expected[n], &sumGroup));
          if (!sumGroup.empty()) {
            rep.failure->missingSumGroups.push_back(sumGroup);
            rep.failure->sumOrigins = sumOriginsOf(*best);
          }
          nameLeavesClosest(*expected[n], dist, *rep.failure);
          nameLeavesClosest(*best, dist, *rep.failure);
        }
        continue;
      }
      RelPtr viaOutputs = eng.extractClean(targets[k], leavesFor(n));
      if (viaOutputs) {
        done[n] = OutputResult{n, str(*viaOutputs), viaOutputs};
      } else {
        unproven.push_back(n);
        *outputOnly = true;
        // A sum over ranks no D output holds: the sum is missing (the
        // repair search tries an all_reduce over that group).
        std::string sumGroup = sumOverRanksGroup(dist, *best);
        rep.failure = failureAt(what, n, node.loc,
                                "S output '" + n + "' is " + str(*best) + " over D intermediates, but no D output rebuilds it" +
                                    (sumGroup.empty() ? "" : ": rank-local partial sums, missing sum over group " +
                                                                 sumGroup + " (all_reduce)"));
        if (!sumGroup.empty()) {
          rep.failure->missingSumGroups.push_back(sumGroup);
          rep.failure->sumOrigins = sumOriginsOf(*best);
        }
        nameLeavesClosest(*best, dist, *rep.failure);
      }
    }
    if (!cseKey.empty() && !rep.failure) cse.emplace(cseKey, ir::NodeId(ni));
    if (!memoKey.empty() && !rep.failure &&
        std::none_of(node.outputs.begin(), node.outputs.end(), [&](ir::ValueId o) { return pending.count(o) > 0; })) {
      MemoEntry entry{memoLeaves, {}, {}};
      for (size_t k = 0; k < node.outputs.size(); ++k)
        entry.outs.push_back(dead(k) ? std::nullopt : std::optional<SeqRel>(known.at(node.outputs[k])));
      std::map<std::vector<int64_t>, size_t> pos;
      for (size_t i = 0; i < memoLeaves.size(); ++i) pos[memoLeaves[i]] = i;
      for (ClassId c : eng.graph().canonicalClasses()) {
        std::vector<DistLeaf> ls = eng.distLeaves(c);
        for (size_t i = 1; i < ls.size(); ++i) {
          auto a = pos.find({ls[0].first, ls[0].second}), b = pos.find({ls[i].first, ls[i].second});
          if (a != pos.end() && b != pos.end()) entry.sameLeaves.emplace_back(a->second, b->second);
        }
      }
      memo.emplace(std::move(memoKey), std::move(entry));
    }
  }
  // Outputs that are S inputs, and outputs never reached.
  for (const auto& w : wanted) {
    if (done.count(w) || std::find(unproven.begin(), unproven.end(), w) != unproven.end()) continue;
    ir::ValueId v = *seq.findValue(w);
    if (seq.value(v).kind != ir::ValueKind::NodeOutput && known.count(v) && !expected.count(w)) {
      done[w] = OutputResult{w, str(*known[v].best), known[v].best};
      continue;
    }
    // An S input returned as an output with an expected relation: its input
    // relations and the expected one must meet in one engine.
    if (seq.value(v).kind != ir::ValueKind::NodeOutput && known.count(v)) {
      Engine eng(interner, rules, es, dist);
      eng.setZeroLeaves(&model.zeros);
      auto c = eng.addRel(*known[v].best);
      auto e = eng.addRel(*expected[w]);
      if (c.ok() && e.ok()) {
        for (const auto& a : known[v].alts)
          if (auto ca = eng.addRel(*a); ca.ok()) eng.mergeChecked(*c, *ca);
        eng.saturate(opts.perOpBudget, [&] { return eng.graph().find(*c) == eng.graph().find(*e); });
        if (eng.graph().find(*c) == eng.graph().find(*e)) {
          done[w] = OutputResult{w, str(*expected[w]), expected[w]};
          continue;
        }
      }
    }
    unproven.push_back(w);
  }
  for (const auto& w : wanted)
    if (done.count(w)) rep.outputs.push_back(done[w]);
    else rep.outputs.push_back(OutputResult{w, "", nullptr});
  rep.stats.lemmasApplied = es.lemmasApplied;
  if (spdlog::should_log(spdlog::level::debug)) {  // where the search spent its work
    std::vector<std::pair<int64_t, std::string>> top;
    for (const auto& [name, n] : es.perLemma) top.emplace_back(n, name);
    std::sort(top.rbegin(), top.rend());
    for (size_t i = 0; i < top.size() && i < 12; ++i)
      spdlog::debug("verify: lemma {} applied {} times", top[i].second, top[i].first);
  }
  // Gather lemmas hold where their sequential (right) side is defined.
  std::function<bool(const Pattern&)> indexes = [&](const Pattern& p) {
    if (p.op == PatOp::Ir && (p.irOp == ir::OpKind::Gather || p.irOp == ir::OpKind::GatherElements)) return true;
    return std::any_of(p.args.begin(), p.args.end(), [&](const PatPtr& a) { return indexes(*a); });
  };
  // C++ steps of relation semantics are trusted code, not proven lemmas:
  // the report says which ones a verdict used.
  std::string engineSteps;
  for (const auto& [name, n] : es.perLemma)
    if (name.rfind("engine:", 0) == 0 && n > 0)
      engineSteps += (engineSteps.empty() ? "" : ", ") + name.substr(7) + " x" + std::to_string(n);
  if (!engineSteps.empty())
    rep.assumptions.push_back("relation-semantics steps of the engine, in C++ (docs/lemmas.md, not Z3-proven): " +
                              engineSteps);
  for (const auto& [name, n] : es.perLemma)
    if (const Lemma* l = lib->lib.find(name); n > 0 && l && indexes(*l->rhs)) {
      rep.assumptions.push_back("S's gather indices are in [0, size) (lemma " + name +
                                " holds where the sequential lookup is defined; D may differ on out-of-range ids)");
      break;
    }
  rep.stats.z3Queries = es.z3Queries;
  if (unproven.empty() && !rep.failure) {
    rep.verdict = Verdict::Verified;
  } else {
    if (!rep.failure) {
      rep.failure = failureAt("", unproven.front(), {}, "no relation found for S output '" + unproven.front() + "'");
      rep.failure->unexplainedGap = true;
    }
    // The per-rank engine stopped for want of a relation (its own gap,
    // perhaps, not D's bug) where folding named the fault (a micro-batch's
    // terms missing or twice, partial sums used as whole): folding's
    // localization, if the witness confirms it.
    // Not where its own explanation names what D does wrong (an all_to_all
    // that does not invert the dispatch, a sum where a concat was needed).
    const bool gap = rep.failure->unexplainedGap;
    if (foldMismatch && gap) {
      SP_ASSIGN(std::optional<VerifyReport> decided, foldedLocalization(true));
      if (decided) return std::move(*decided);
    }
    // Where the per-rank engine found no relation for an S value that
    // folding reads D as holding, the gap is the engine's: the report names
    // the first D op folding gives no layout, at the S op it stands for
    // (a name only: the witness decides as before).
    const std::string stopped = rep.failure->seqValue;
    if (gap && foldSeen.held.count(stopped) &&
        !foldSeen.stuckAt.empty() && foldSeen.stuckAt != stopped) {
      const ir::Value& v = seq.value(*seq.findValue(foldSeen.stuckAt));
      const ir::Node& at = seq.node(v.producer);
      rep.failure = failureAt(std::string(ir::opName(at.op)) + " '" + at.name + "'", v.name, at.loc,
                              "no relation found between S value '" + v.name +
                                  "' and D tensors: folding gives no layout over the group to " + foldSeen.stuckText +
                                  " (the per-rank engine stopped earlier, at S's '" + stopped +
                                  "', which folding reads D as holding)");
    }
    SP_TRY(decideWithWitness(seq, dist, relations, opts, unproven, expected, deadline, rep));
  }
  rep.stats.seconds = elapsed();
  rep.stats.peakRssMb = peakRss();
  return rep;
}

// The walk stops at the first S op without a relation. Each output left
// without a relation that does not depend on that value (or, when the
// failure is only that an output's relation is not over D outputs, every
// other output) is then walked again on its own (no witness; one walk per
// output, within the time limit), so the report gives a relation for every
// output provable independently of the failure. Verdict, failure and
// witness stay those of the first walk.
Result<VerifyReport> verifyUnguarded(const ir::Graph& seq, const ir::Program& dist, const RelationFile& relations,
                                     const VerifyOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool outputOnly = false;
  SP_ASSIGN(VerifyReport rep, verifyCone(seq, dist, relations, opts, &outputOnly));
  auto timedOut = [](const VerifyReport& r) { return r.reason.find("time limit of ") != std::string::npos; };
  if (rep.verdict == Verdict::Verified || !rep.failure || timedOut(rep)) return rep;
  auto failing = seq.findValue(rep.failure->seqValue);
  if (!failing) return rep;
  // S values computed from the failing one (itself included).
  std::vector<bool> down(seq.values().size(), false);
  std::vector<ir::ValueId> work{*failing};
  down[size_t(*failing)] = true;
  // A failing value that is itself a checked output (S saves a mask that D
  // does not) may still be an intermediate with a pending relation: the
  // outputs computed from it are walked on their own too, where it is not
  // checked.
  bool failingIsOutput = std::any_of(rep.outputs.begin(), rep.outputs.end(),
                                     [&](const OutputResult& o) { return o.name == rep.failure->seqValue; });
  while (!outputOnly && !failingIsOutput && !work.empty()) {
    ir::ValueId x = work.back();
    work.pop_back();
    for (ir::NodeId u : seq.users(x))
      for (ir::ValueId o : seq.node(u).outputs)
        if (!down[size_t(o)]) {
          down[size_t(o)] = true;
          work.push_back(o);
        }
  }
  std::set<std::string> tried;
  std::vector<size_t> again;
  for (size_t i = 0; i < rep.outputs.size(); ++i) {
    auto v = seq.findValue(rep.outputs[i].name);
    if (!rep.outputs[i].expr && v && !down[size_t(*v)] && tried.insert(rep.outputs[i].name).second) again.push_back(i);
  }
  // The other outputs' relations are information only (the first walk's
  // failure decides): rank folding first, cheap, for each; then the
  // per-rank engine for those still open within kRewalkSeconds in all, an
  // equal share each (at least 2 s). A walk that runs out of time ends
  // them: the others would fare no better.
  auto rewalk = [&](size_t k, bool perRank, double seconds) -> Result<bool> {
    const std::string name = rep.outputs[again[k]].name;
    VerifyOptions sub = opts;
    sub.outputs = {name};
    sub.timeLimitSeconds = seconds;
    sub.perRank = perRank;
    sub.witnessWorkLimit = 0;  // relations only
    sub.witnessProgress = nullptr;
    bool ignored = false;
    SP_ASSIGN(VerifyReport more, verifyCone(seq, dist, relations, sub, &ignored));
    rep.stats.lemmasApplied += more.stats.lemmasApplied;
    rep.stats.z3Queries += more.stats.z3Queries;
    if (more.outputs.size() == 1 && more.outputs[0].expr)
      for (auto& mine : rep.outputs)
        if (mine.name == name) mine = more.outputs[0];
    return !timedOut(more);
  };
  auto open = [&](size_t k) { return !rep.outputs[again[k]].expr; };
  // A re-walk or the repair search that outgrows memory ends them: the
  // failure found stands (they only add to its report).
  try {
    if (opts.fold)
      for (size_t k = 0; k < again.size(); ++k) {
        double left = opts.timeLimitSeconds - elapsed();
        if (left <= 0) break;
        SP_ASSIGN(bool inTime, rewalk(k, false, left));
        if (!inTime) break;
      }
    if (opts.perRank) {
      const double until = std::min(opts.timeLimitSeconds, elapsed() + kRewalkSeconds);
      size_t stillOpen = 0;
      for (size_t k = 0; k < again.size(); ++k) stillOpen += open(k);
      for (size_t k = 0; k < again.size(); ++k) {
        if (!open(k)) continue;
        double left = until - elapsed();
        if (left <= 0) break;
        SP_ASSIGN(bool inTime, rewalk(k, true, std::min(left, std::max(2.0, left / double(stillOpen--)))));
        if (!inTime) break;
      }
    }
    if (rep.verdict == Verdict::Refuted && opts.repairSeconds > 0) {
      double budget = std::min(opts.repairSeconds, opts.timeLimitSeconds - elapsed());
      if (budget > 0)
        if (auto fix = searchRepair(seq, dist, relations, opts, *rep.failure, budget)) rep.failure->repair = *fix;
    }
  } catch (const std::bad_alloc&) {
    rep.assumptions.push_back("the search for the other outputs' relations (or a repair) ran out of memory and "
                              "stopped; the failure above stands");
  }
  rep.stats.seconds = elapsed();
  rep.stats.peakRssMb = peakRss();
  return rep;
}

}  // namespace

// Running out of memory anywhere in the search (an e-graph that grows
// faster than its node budget sees, under the process's memory limit) is
// an unknown verdict, never a crash and never a guess.
Result<VerifyReport> verify(const ir::Graph& seq, const ir::Program& dist, const RelationFile& relations,
                            const VerifyOptions& opts) {
  try {
    return verifyUnguarded(seq, dist, relations, opts);
  } catch (const std::bad_alloc&) {
    VerifyReport rep;
    rep.verdict = Verdict::Inconclusive;
    rep.reason = "the proof search ran out of memory (SHARDPROOF_MEMORY_LIMIT_MB or the machine's memory); "
                 "the verdict is unknown";
    for (ir::ValueId o : seq.outputs()) rep.outputs.push_back({seq.value(o).name, "", nullptr});
    return rep;
  }
}

void limitSearchMemory() {
  uint64_t limit = 0;
  if (const char* e = std::getenv("SHARDPROOF_MEMORY_LIMIT_MB"); e && *e) {
    limit = std::strtoull(e, nullptr, 10) << 20;
  } else {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) limit = uint64_t(double(pages) * double(page) * 0.85);
  }
  if (limit == 0) return;
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0) return;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= limit) return;
  rl.rlim_cur = limit;
  setrlimit(RLIMIT_AS, &rl);
}

Result<VerifyReport> verifyTexts(const std::string& seq, const std::string& dist, const std::string& relations,
                                 const VerifyOptions& opts) {
  SP_ASSIGN(ir::Graph s, ir::parseGraph(seq, "seq.sp"));
  SP_ASSIGN(ir::Program d, ir::parseProgram(dist, "dist.sp"));
  SP_ASSIGN(RelationFile r, parseRelations(relations, "relations.rel"));
  return verify(s, d, r, opts);
}

}  // namespace sp::rewrite
