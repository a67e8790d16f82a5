// Refuted or inconclusive: run the witness and compare where no relation
// was proven.
#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <new>
#include <optional>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "rewrite/witness/witness.h"
#include "rewrite/witness/witness_shrink.h"

namespace sp::rewrite {

std::string secondsStr(double s);  // verify.cpp

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(3);
  os << v;
  return os.str();
}

// The rank and value name of a D tensor; nullopt for a rank outside D.
std::optional<std::pair<int64_t, std::string>> inDist(const ir::Program& dist, const DistRef& c) {
  if (c.rank < 0 || c.rank >= dist.worldSize()) return std::nullopt;
  return std::make_pair(c.rank, c.name);
}

// "r0:all_reduce at mappings.py:484 ...": the source lines of the D
// tensors that came closest, where the distributed code differs (a value
// re-bound by a clone or copy at another source line carries that line:
// the fx importer keeps it on an identity node).
std::string distSites(const ir::Program& dist, const std::vector<DistRef>& closest) {
  std::string out;
  for (const auto& c : closest) {
    auto d = inDist(dist, c);
    if (!d) continue;
    const ir::Graph& g = dist.rank(d->first);
    auto v = g.findValue(d->second);
    if (!v || g.value(*v).producer < 0) continue;
    const ir::SourceLoc& loc = g.node(g.value(*v).producer).loc;
    if (loc.empty()) continue;
    out += (out.empty() ? "" : ", ") + c.str() + " at " + loc.str();
  }
  return out;
}

void distLeaves(const Rel& r, std::set<std::string>& out) {
  if (r.op == RelOp::Dist) out.insert(r.name);
  for (const auto& a : r.args) distLeaves(*a, out);
}

// The op whose rounding S value `v` carries: its producer, looked through
// layout ops (a view of a sum carries the sum's rounding). Null for a leaf.
const ir::Node* roundingOp(const ir::Graph& seq, ir::ValueId v) {
  for (;;) {
    const ir::Value& val = seq.value(v);
    if (val.kind != ir::ValueKind::NodeOutput) return nullptr;
    const ir::Node& n = seq.node(val.producer);
    if (ir::opInfo(n.op).category != ir::OpCategory::Layout || n.inputs.empty()) return &n;
    v = n.inputs[0];
  }
}

double maxAbs(const ir::Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double a = std::fabs(t.getAsDouble(i));
    if (!std::isnan(a)) m = std::max(m, a);
  }
  return m;
}

// The magnitude float rounding in computing S value `v` scales with, for
// the ops whose result can cancel: sums and differences (add, sub,
// reduce_sum, reduce_mean) scale with their largest operand, contractions
// (matmul, gemm) with |A|·|B|·K. Cancellation (the gradient of a key bias,
// which is zero; a softmax row's gradient summed) leaves such a value at the
// noise of its operands, where an error relative to the value itself means
// nothing: a difference counts against the larger of the value and this.
// Other ops (products, selects, normalizations) cannot cancel and give 0:
// their value's own magnitude stands (a select's fill value, say -1e9,
// must not hide a real difference). Operands the run did not keep count 0.
double roundingScale(const ir::Graph& seq, const WitnessRun& run, ir::ValueId v) {
  const ir::Node* n = roundingOp(seq, v);
  if (!n) return 0;
  using K = ir::OpKind;
  const bool linear = ir::opInfo(n->op).category == ir::OpCategory::Linear;
  if (!linear && n->op != K::Add && n->op != K::Sub && n->op != K::ReduceSum && n->op != K::ReduceMean) return 0;
  std::vector<double> mags;
  for (ir::ValueId in : n->inputs) {
    const ir::Tensor& t = run.seq[size_t(in)];
    mags.push_back(t.defined() && ir::isFloat(t.dtype()) ? maxAbs(t) : 0);
  }
  if (linear && mags.size() >= 2) {
    const ir::Tensor& a = run.seq[size_t(n->inputs[0])];
    double k = a.defined() && !a.dims().empty() ? double(a.dims().back()) : 1;
    return mags[0] * mags[1] * k + (mags.size() > 2 ? mags[2] : 0);
  }
  return mags.empty() ? 0 : *std::max_element(mags.begin(), mags.end());
}

// Could a D value of type `d` rebuild an S value of type `s` the ways
// bestCandidate tries (itself, a chunk, a sum or concat over a group)? Same
// rank and at most one dim that differs; a symbolic dim matches anything.
bool mayRebuild(const ir::TensorType& d, const ir::TensorType& s) {
  if (d.shape.size() != s.shape.size()) return false;
  int differ = 0;
  for (size_t k = 0; k < d.shape.size(); ++k) {
    bool concrete = d.shape[k].syms.empty() && s.shape[k].syms.empty();
    if (concrete && d.shape[k].coef != s.shape[k].coef) ++differ;
  }
  return differ <= 1;
}


// When the witness rebuilds the localized S value as a sum or concat of a
// D value over a group, which no D op computes (else it would have a
// relation), the likely missing collective, in the user's terms; only the
// witness's confirmation when the explanation already found that sum
// missing (`explained`: Failure::missingSumGroups).
std::string collectiveHint(const Candidate& c, const ir::Program& dist, const std::vector<std::string>& explained) {
  if (c.kind == Candidate::Kind::Tensor || !c.order.empty()) return "";
  std::string what = "D's '" + c.name + "'";
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    const ir::Graph& g = dist.rank(r);
    auto v = g.findValue(c.name);
    if (!v) continue;
    if (g.value(*v).producer >= 0 && !g.node(g.value(*v).producer).loc.empty())
      what += " (" + g.node(g.value(*v).producer).loc.str() + ")";
    break;
  }
  if (c.kind == Candidate::Kind::Sum && std::find(explained.begin(), explained.end(), c.group) != explained.end())
    return "; on the witness S's value equals the sum over group " + c.group + " of " + what;
  if (c.kind == Candidate::Kind::Sum)
    return "; on the witness it equals the sum over group " + c.group + " of " + what +
           ", which D never computes: rank-local partial sums, missing sum over group " + c.group + " (all_reduce)";
  return "; on the witness it equals the concat over group " + c.group + " of " + what + " along dim " +
         std::to_string(c.dim) + ", which D never computes (an all_gather over group " + c.group + " along dim " +
         std::to_string(c.dim) + " would)";
}

// Seeds a witness that shows no divergence may try (from opts.seed on), as
// long as all of them together stay below kRetryWork multiply-adds (a few
// tenths of a second): a bug can hide on one draw.
constexpr uint64_t kWitnessSeeds = 4;
constexpr double kRetryWork = 1e10;

}  // namespace

// What the comparisons read: the localized S value and the unproven S
// outputs; in D the closest tensors and the leaves of expected relations
// (on every rank that has them), and the outputs that could rebuild an
// unproven S output.
WitnessPlan planWitness(const ir::Graph& seq, const ir::Program& dist, const Failure& f,
                        const std::vector<std::string>& unproven,
                        const std::map<std::string, RelPtr>& expected) {
  WitnessPlan plan;
  plan.dist.resize(size_t(dist.worldSize()));
  if (seq.findValue(f.seqValue)) plan.seq.push_back(f.seqValue);
  // A closest tensor is compared alone and summed or concatenated over its
  // groups: every rank keeps its copy, unless those copies would take more
  // than kClosestBudget (a large group's full-size partial sums: 1024
  // ranks x 6 MB); then only the ranks the failure names keep theirs, and
  // the rebuilds over groups are not tried (the verdict rests on the
  // outputs either way).
  constexpr double kClosestBudget = 512.0 * 1024 * 1024;
  std::set<std::string> closest;
  std::set<std::pair<int64_t, std::string>> named;
  for (const auto& c : f.closestDist)
    if (auto d = inDist(dist, c)) closest.insert(d->second), named.insert(*d);
  double closestBytes = 0;
  for (int64_t cl = 0; cl < dist.numClasses(); ++cl)
    for (const auto& l : closest)
      if (auto v = dist.classGraph(cl).findValue(l)) {
        const ir::TensorType& t = dist.classGraph(cl).value(*v).type;
        auto n = ir::numElements(t.shape);
        closestBytes += double(dist.classRanks(cl).size()) * (n && n->isConcrete() ? double(n->value()) : 0.0) * double(ir::dtypeSize(t.dtype));
      }
  const bool everyRank = closestBytes <= kClosestBudget;
  std::set<std::string> leaves;  // kept on every rank that has them
  std::vector<ir::TensorType> rebuilt;
  for (const auto& name : unproven) {
    plan.seq.push_back(name);
    if (const ir::Node* n = roundingOp(seq, *seq.findValue(name)))  // roundingScale reads them
      for (ir::ValueId in : n->inputs) plan.seq.push_back(seq.value(in).name);
    if (auto it = expected.find(name); it != expected.end()) distLeaves(*it->second, leaves);
    else rebuilt.push_back(seq.value(*seq.findValue(name)).type);
  }
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    const ir::Graph& g = dist.rank(r);
    auto& keep = plan.dist[size_t(r)];
    for (const auto& l : leaves)
      if (g.findValue(l)) keep.push_back(l);
    for (const auto& l : closest)
      if (!leaves.count(l) && (everyRank || named.count({r, l})) && g.findValue(l)) keep.push_back(l);
    for (ir::ValueId o : g.outputs())
      for (const auto& t : rebuilt)
        if (mayRebuild(g.value(o).type, t)) {
          keep.push_back(g.value(o).name);
          break;
        }
  }
  return plan;
}

namespace {

// What one run of the witness shows.
struct RunOutcome {
  Witness w;
  std::optional<Candidate> local;  // the localized value's closest rebuild
  bool localDiverges = false;
  bool outDiverges = false, outMatches = false;
  std::vector<std::string> noCandidate, guessed;
};

// Compares a run: at the localized value, the closest D tensors; at the
// outputs without a proven relation, the expected relation, else the best
// natural rebuild from D outputs. `counts` says whether a difference at an
// output (its S name, and the expect line or the rebuild compared) stands
// for the program as written (the shrunk witness: rewrite/witness/witness_shrink.h).
using CountsFn = std::function<bool(const std::string&, const Rel*, const Candidate*)>;
Result<RunOutcome> compareRun(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                              const WitnessRun& run, const Failure& f,
                              const VerifyOptions& opts, const std::vector<std::string>& unproven,
                              const std::map<std::string, RelPtr>& expected, const CountsFn& counts,
                              std::chrono::steady_clock::time_point deadline) {
  RunOutcome o;
  RankSpace ranks = RankSpace::of(dist);
  if (auto v = seq.findValue(f.seqValue)) {
    std::vector<std::pair<int64_t, std::string>> names;
    for (const auto& c : f.closestDist)
      if (auto d = inDist(dist, c)) names.push_back(*d);
    SP_ASSIGN(auto best, bestCandidate(run.seq[size_t(*v)], run, dist, names, deadline));
    if (best) {
      o.local = *best;
      o.w.atLocalized = best->err;
      o.w.atLocalizedRebuild = best->what;
      o.localDiverges = best->err.maxRelErr > opts.tolerance;
    } else {
      o.localDiverges = !names.empty();
      o.w.atLocalized.maxAbsErr = o.w.atLocalized.maxRelErr = names.empty() ? 0 : INFINITY;
    }
  }
  std::vector<std::pair<int64_t, std::string>> outNames;
  for (int64_t r = 0; r < dist.worldSize(); ++r)
    for (ir::ValueId out : dist.rank(r).outputs()) outNames.emplace_back(r, dist.rank(r).value(out).name);
  // A refutation rests on a real numeric difference at an S output: its
  // `expect` relation evaluated on D, or, without one, the closest natural
  // rebuild from D's outputs (said among the assumptions). The localized
  // value's closest rebuild is only a guess at a relation and never
  // refutes; an output with nothing of a fitting shape to compare leaves
  // the verdict inconclusive, saying so.
  std::optional<InputLayouts> layouts;  // read once, where an output has no expect line
  for (const auto& name : unproven) {
    const ir::Tensor& s = run.seq[size_t(*seq.findValue(name))];
    std::optional<ErrorStat> err;
    std::string guess;
    bool standsFull = true;
    if (auto it = expected.find(name); it != expected.end()) {
      RelScope sc;
      sc.ranks = &ranks;
      auto t = evaluate(*it->second, TensorSource{nullptr, &run.dist}, sc);
      if (t.ok()) err = compareTensors(*t, s);
      standsFull = !counts || counts(name, it->second.get(), nullptr);
    } else {
      SP_ASSIGN(auto best, bestCandidate(s, run, dist, outNames, deadline));
      // or a D output laid out as an S input is (a fused weight's gradient)
      if (!layouts) layouts = inputLayouts(seq, dist, rel);
      SP_ASSIGN(auto laid, inputLayoutCandidate(s, run, seq, *layouts, outNames, deadline));
      if (laid && (!best || laid->err.maxRelErr < best->err.maxRelErr)) best = laid;
      if (best) {
        err = best->err;
        guess = best->what;
        standsFull = !counts || counts(name, nullptr, &*best);
      }
    }
    if (!err) { o.noCandidate.push_back(name); continue; }
    if (double floor = roundingScale(seq, run, *seq.findValue(name)); err->maxAbsErr > 0 && floor > 0)
      err->maxRelErr = std::min(err->maxRelErr, err->maxAbsErr / floor);
    o.w.outputs.emplace_back(name, *err);
    if (err->maxRelErr > o.w.worstOutput.maxRelErr || std::isinf(err->maxRelErr)) o.w.worstOutput = *err;
    if (err->maxRelErr > opts.tolerance) {
      if (!standsFull) continue;  // neither a refutation nor a match
      o.outDiverges = true;
      if (!guess.empty())
        o.guessed.push_back("S output '" + name + "' has no expect line: the witness compared it with its closest "
                            "rebuild from D's outputs, " + guess);
    } else {
      o.outMatches = true;
    }
  }
  return o;
}

// Refuted: the report takes the run's witness, and the localized value's
// rebuild names the collective D likely misses.
void refute(const ir::Program& dist, RunOutcome& o, const VerifyOptions& opts, VerifyReport& rep) {
  Failure& f = *rep.failure;
  rep.verdict = Verdict::Refuted;
  rep.reason.clear();
  for (auto& g : o.guessed) rep.assumptions.push_back(std::move(g));
  if (o.local && o.local->err.maxRelErr <= opts.tolerance) {
    f.message += collectiveHint(*o.local, dist, f.missingSumGroups);
    if (o.local->kind == Candidate::Kind::Sum &&
        std::find(f.missingSumGroups.begin(), f.missingSumGroups.end(), o.local->group) == f.missingSumGroups.end())
      f.missingSumGroups.push_back(o.local->group);
  }
  f.witness = o.w;
}

// The witness with S's row dims shrunk (rewrite/witness/witness_shrink.h), tried
// before the full-size one: it only refutes. True when it did.
Result<bool> refuteShrunk(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                          const VerifyOptions& opts, const std::vector<std::string>& unproven,
                          const std::map<std::string, RelPtr>& expected, double fullWork,
                          std::chrono::steady_clock::time_point deadline, VerifyReport& rep) {
  if (fullWork < opts.shrinkWitnessFrom) return false;  // cheap at full size
  std::string why;
  auto shrunk = ShrunkWitness::make(seq, dist, rel, expected, &why);
  spdlog::debug("witness: {}", shrunk ? shrunk->note() : "not shrunk: " + why);
  if (!shrunk) return false;
  const Failure& f = *rep.failure;
  WitnessPlan plan = planWitness(shrunk->seq(), shrunk->dist(), f, unproven, shrunk->expected());
  double work = estimateWork(shrunk->seq(), shrunk->dist(), plan).total();
  // Not worth a second run, or beyond the limit itself.
  if (work * 2 > fullWork || work > opts.witnessWorkLimit) return false;
  CountsFn counts = [&](const std::string& name, const Rel* expect, const Candidate* c) {
    return c ? shrunk->transfers(name, *c) : expect && shrunk->transfersExpected(name);
  };
  for (uint64_t k = 0; k < kWitnessSeeds; ++k) {
    auto run = runWitness(shrunk->seq(), shrunk->dist(), shrunk->rel(), plan, opts.seed + k, opts.witnessProgress,
                          deadline);
    if (!run.ok()) return false;  // the full-size witness says why
    SP_ASSIGN(RunOutcome o, compareRun(shrunk->seq(), shrunk->dist(), shrunk->rel(), *run, f, opts, unproven,
                                       shrunk->expected(),
                                       counts, deadline));
    if (o.outDiverges) {
      o.w.seed = opts.seed + k;
      o.w.shrunk = shrunk->note();
      refute(dist, o, opts, rep);
      rep.assumptions.push_back(shrunk->note());
      return true;
    }
    if (double(k + 2) * work > kRetryWork) break;
  }
  return false;
}

Status decideWithWitnessRun(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                            const VerifyOptions& opts, const std::vector<std::string>& unproven,
                            const std::map<std::string, RelPtr>& expected,
                            std::chrono::steady_clock::time_point deadline, VerifyReport& rep) {
  Failure& f = *rep.failure;
  // Where D differs: the source lines of the closest D tensors go into the
  // failure's message (text and JSON reports) whatever the verdict.
  if (std::string sites = distSites(dist, f.closestDist); !sites.empty())
    f.message += " (closest D tensors: " + sites + ")";
  std::string base = rep.reason.empty() ? f.message : rep.reason;
  if (!rel.unrelated.empty()) {
    std::string names;
    for (const auto& u : rel.unrelated) names += (names.empty() ? "" : ", ") + u.name + " (" + u.reason + ")";
    rep.verdict = Verdict::Inconclusive;
    rep.reason = base + "; witness not run: D inputs without a relation to S have no value to run with: " + names;
    return okStatus();
  }
  WitnessPlan plan = planWitness(seq, dist, f, unproven, expected);
  double work = estimateWork(seq, dist, plan).total();
  // The run's deadline, or the witness's own when that comes first.
  std::string limit = "time limit of " + secondsStr(opts.timeLimitSeconds) + " s";
  if (opts.witnessTimeLimitSeconds >= 0) {
    auto own = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(std::min(opts.witnessTimeLimitSeconds, 1e8)));
    if (own < deadline) {
      deadline = own;
      limit = "witness time limit of " + secondsStr(opts.witnessTimeLimitSeconds) + " s";
    }
  }
  auto timedOut = [&](const Error& e) {
    rep.verdict = Verdict::Inconclusive;
    rep.reason = base + "; " + limit + " reached while computing the witness (" + e.message + ")";
    return okStatus();
  };
  // A witness with fewer rows first, where S and D treat rows alike.
  if (opts.witnessWorkLimit > 0 && opts.shrinkWitness) {
    auto shrunk = refuteShrunk(seq, dist, rel, opts, unproven, expected, work, deadline, rep);
    if (!shrunk.ok() && shrunk.error().id == "time-limit") return timedOut(shrunk.error());
    if (shrunk.ok() && *shrunk) return okStatus();
  }
  if (work > opts.witnessWorkLimit) {
    rep.verdict = Verdict::Inconclusive;
    rep.reason = base + "; witness skipped: about " + fmt(work) + " multiply-adds exceed the witness limit of " +
                 fmt(opts.witnessWorkLimit) + " (--witness-limit)";
    return okStatus();
  }
  for (uint64_t k = 0;; ++k) {
    const uint64_t seed = opts.seed + k;
    auto run = runWitness(seq, dist, rel, plan, seed, opts.witnessProgress, deadline);
    if (!run.ok() && run.error().id == "time-limit") return timedOut(run.error());
    if (!run.ok() && run.error().id == "dist-fault") {
      rep.verdict = Verdict::Refuted;
      rep.reason.clear();
      Witness w;
      w.seed = seed;
      w.fault = run.error().message;
      f.message += "; on the witness's inputs D faults where S runs: " + w.fault;
      f.witness = std::move(w);
      return okStatus();
    }
    if (!run.ok()) {
      rep.verdict = Verdict::Inconclusive;
      rep.reason = base + "; witness could not run: " + run.error().str();
      return okStatus();
    }
    auto compared = compareRun(seq, dist, rel, *run, f, opts, unproven, expected, nullptr, deadline);
    if (!compared.ok()) return timedOut(compared.error());
    RunOutcome& o = *compared;
    o.w.seed = seed;
    if (o.outDiverges) {
      refute(dist, o, opts, rep);
      return okStatus();
    }
    if (!o.noCandidate.empty() && !o.outMatches) {
      std::string names;
      for (const auto& n : o.noCandidate) names += (names.empty() ? "'" : ", '") + n + "'";
      rep.verdict = Verdict::Inconclusive;
      f.witness = o.w;
      rep.reason = base + "; the witness has no value of D to compare with S output " + names +
                   " (no D output of a fitting shape, and no expect line saying how D holds it)" +
                   (o.localDiverges ? "; the closest rebuild at " + f.seqValue +
                                          " differs, but that is a guess at a relation, not a refutation"
                                    : "");
      return okStatus();
    }
    // No divergence on this seed. A cheap witness tries the next seeds: a
    // bug can hide on one draw (a shard's max that happens to be the row's).
    if (k + 1 < kWitnessSeeds && double(k + 2) * work <= kRetryWork) continue;
    rep.verdict = Verdict::Inconclusive;
    f.witness = o.w;  // informative: no divergence was found
    std::string seeds = k == 0 ? "seed " + std::to_string(opts.seed)
                               : "seeds " + std::to_string(opts.seed) + ".." + std::to_string(seed);
    rep.reason = base + "; the witness (" + seeds + ") shows no divergence" +
                 (o.outMatches ? " at the outputs (max relative error " + fmt(o.w.worstOutput.maxRelErr) + ")" : "") +
                 ": a lemma or op rule may be missing";
    return okStatus();
  }
}

}  // namespace

// The witness's tensors may not fit in memory: then the verdict stays
// inconclusive, saying so, instead of the process dying.
Status decideWithWitness(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                         const VerifyOptions& opts, const std::vector<std::string>& unproven,
                         const std::map<std::string, RelPtr>& expected,
                         std::chrono::steady_clock::time_point deadline, VerifyReport& rep) {
  try {
    return decideWithWitnessRun(seq, dist, rel, opts, unproven, expected, deadline, rep);
  } catch (const std::bad_alloc&) {
    rep.verdict = Verdict::Inconclusive;
    rep.failure->witness.reset();
    rep.reason = (rep.reason.empty() ? rep.failure->message : rep.reason) +
                 "; the witness ran out of memory (its tensors did not fit; --witness-limit skips witnesses this "
                 "large)";
    return okStatus();
  }
}

}  // namespace sp::rewrite
