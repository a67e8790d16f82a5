// Refuted or inconclusive: run the witness and compare where no relation
// was proven.
#include <cmath>
#include <sstream>

#include "rewrite/engine_verify.h"

namespace sp::rewrite {

// Above this many estimated multiply-adds (S and all D ranks together) the
// witness is not run: at roughly 1e9 per second on two cores it would take
// longer than a CI check should. The localization is still reported.
inline constexpr double kWitnessWorkLimit = 4e9;

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(3);
  os << v;
  return os.str();
}

// "r0:all_reduce (mappings.py:484 ...)": the source lines of the D tensors
// that came closest, where the distributed code differs.
std::string distSites(const ir::Program& dist, const std::vector<std::string>& closest) {
  std::string out;
  for (const auto& c : closest) {
    auto colon = c.find(':');
    if (c.size() < 2 || c[0] != 'r' || colon == std::string::npos) continue;
    int64_t r = std::stoll(c.substr(1, colon - 1));
    if (r < 0 || r >= dist.worldSize()) continue;
    const ir::Graph& g = dist.rank(r);
    auto v = g.findValue(c.substr(colon + 1));
    if (!v || g.value(*v).producer < 0) continue;
    const ir::SourceLoc& loc = g.node(g.value(*v).producer).loc;
    if (loc.empty()) continue;
    out += (out.empty() ? "" : ", ") + c + " at " + loc.str();
  }
  return out;
}

}  // namespace

Status decideWithWitness(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                         const VerifyOptions& opts, const std::vector<std::string>& unproven,
                         const std::map<std::string, RelPtr>& expected, VerifyReport& rep) {
  Failure& f = *rep.failure;
  std::string base = rep.reason.empty() ? f.message : rep.reason;
  if (std::string sites = distSites(dist, f.closestDist); !sites.empty()) base += " (closest D tensors: " + sites + ")";
  if (!rel.unrelated.empty()) {
    std::string names;
    for (const auto& u : rel.unrelated) names += (names.empty() ? "" : ", ") + u.name + " (" + u.reason + ")";
    rep.verdict = Verdict::Inconclusive;
    rep.reason = base + "; witness not run: D inputs without a relation to S have no value to run with: " + names;
    return okStatus();
  }
  double work = estimateWork(seq, dist);
  if (work > kWitnessWorkLimit) {
    rep.verdict = Verdict::Inconclusive;
    rep.reason = base + "; witness skipped: about " + fmt(work) + " multiply-adds exceed the limit of " +
                 fmt(kWitnessWorkLimit);
    return okStatus();
  }
  auto run = runWitness(seq, dist, rel, opts.seed);
  if (!run.ok()) {
    rep.verdict = Verdict::Inconclusive;
    rep.reason = base + "; witness could not run: " + run.error().str();
    return okStatus();
  }
  Witness w;
  w.seed = opts.seed;
  RankSpace ranks = RankSpace::of(dist);
  // At the localized value: the closest D tensors.
  bool localDiverges = false;
  if (auto v = seq.findValue(f.seqValue)) {
    std::vector<std::pair<int64_t, std::string>> names;
    for (const auto& c : f.closestDist) {
      auto colon = c.find(':');
      names.emplace_back(std::stoll(c.substr(1, colon - 1)), c.substr(colon + 1));
    }
    if (auto best = bestCandidate(run->seq[size_t(*v)], *run, dist, names)) {
      w.atLocalized = best->err;
      localDiverges = best->err.maxRelErr > opts.tolerance;
    } else {
      localDiverges = !names.empty();
      w.atLocalized.maxAbsErr = w.atLocalized.maxRelErr = names.empty() ? 0 : INFINITY;
    }
  }
  // At the outputs without a proven relation: the expected relation, else
  // the best natural rebuild from D outputs.
  std::vector<std::pair<int64_t, std::string>> outNames;
  for (int64_t r = 0; r < dist.worldSize(); ++r)
    for (ir::ValueId o : dist.rank(r).outputs()) outNames.emplace_back(r, dist.rank(r).value(o).name);
  bool outDiverges = false, outNoCandidate = false, outMatches = false;
  for (const auto& name : unproven) {
    const ir::Tensor& s = run->seq[size_t(*seq.findValue(name))];
    std::optional<ErrorStat> err;
    if (auto it = expected.find(name); it != expected.end()) {
      RelScope sc;
      sc.ranks = &ranks;
      auto t = evaluate(*it->second, TensorSource{nullptr, &run->dist}, sc);
      if (t.ok()) err = compareTensors(*t, s);
    } else if (auto best = bestCandidate(s, *run, dist, outNames)) {
      err = best->err;
    }
    if (!err) { outNoCandidate = true; continue; }
    w.outputs.emplace_back(name, *err);
    if (err->maxRelErr > w.worstOutput.maxRelErr || std::isinf(err->maxRelErr)) w.worstOutput = *err;
    if (err->maxRelErr > opts.tolerance) outDiverges = true;
    else outMatches = true;
  }
  if (outDiverges || (outNoCandidate && !outMatches && localDiverges)) {
    rep.verdict = Verdict::Refuted;
    rep.reason.clear();
    f.witness = w;
    return okStatus();
  }
  rep.verdict = Verdict::Inconclusive;
  f.witness = w;  // informative: no divergence was found
  rep.reason = base + "; the witness (seed " + std::to_string(opts.seed) + ") shows no divergence" +
               (outMatches ? " at the outputs (max relative error " + fmt(w.worstOutput.maxRelErr) + ")" : "") +
               ": a lemma or op rule may be missing";
  return okStatus();
}

}  // namespace sp::rewrite
