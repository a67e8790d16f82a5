// The witness: S and D run by the interpreter on random inputs related by
// R_in, and comparisons of S values with the natural rebuilds from D.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/compare.h"
#include "rewrite/engine_verify.h"

namespace sp::rewrite {

namespace {

double numelOf(const ir::Shape& s, int64_t defaultSym) {
  double n = 1;
  for (const auto& d : s) {
    double v = double(d.coef);
    for (size_t i = 0; i < d.syms.size(); ++i) v *= double(defaultSym);
    n *= v;
  }
  return n;
}

double graphWork(const ir::Graph& g) {
  ir::RunOptions defaults;
  double w = 0;
  for (const auto& n : g.nodes()) {
    double out = 0;
    for (ir::ValueId o : n.outputs) out += numelOf(g.value(o).type.shape, defaults.defaultSymbolValue);
    if ((n.op == ir::OpKind::MatMul || n.op == ir::OpKind::Gemm) && !n.inputs.empty()) {
      const auto& a = g.value(n.inputs[0]).type.shape;
      double k = a.empty() ? 1 : numelOf({a.back()}, defaults.defaultSymbolValue);
      out *= k;
    }
    w += out;
  }
  return w;
}

}  // namespace

double estimateWork(const ir::Graph& seq, const ir::Program& dist) {
  double w = graphWork(seq);
  for (const auto& g : dist.ranks()) w += graphWork(g);
  return w;
}

Result<WitnessRun> runWitness(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                              uint64_t seed) {
  ir::RunOptions opts;
  opts.seed = seed;
  SP_ASSIGN(ir::TensorMap sin, ir::prepareInputs(seq, {}, opts));
  RankSpace ranks = RankSpace::of(dist);
  SP_ASSIGN(auto din, buildDistInputs(rel, ranks, sin));
  WitnessRun run;
  SP_ASSIGN(run.seq, ir::runGraphAll(seq, sin, opts));
  ir::RunOptions dopts = opts;
  dopts.fillMissing = false;
  SP_ASSIGN(auto dvals, ir::runProgramAll(dist, din, dopts));
  run.dist.resize(dvals.size());
  for (size_t r = 0; r < dvals.size(); ++r) {
    const auto& g = dist.rank(int64_t(r));
    for (size_t v = 0; v < dvals[r].size(); ++v)
      if (dvals[r][v].defined()) run.dist[r][g.value(ir::ValueId(v)).name] = dvals[r][v];
  }
  return run;
}

ErrorStat compareTensors(const ir::Tensor& got, const ir::Tensor& want) {
  ir::TensorDiff d = ir::diffTensors(got, want);
  return ErrorStat{d.maxAbsErr, d.maxRelErr};
}

std::optional<Candidate> bestCandidate(const ir::Tensor& want, const WitnessRun& run, const ir::Program& dist,
                                       const std::vector<std::pair<int64_t, std::string>>& names) {
  std::optional<Candidate> best;
  auto consider = [&](const std::string& what, const ir::Tensor& t) {
    ErrorStat e = compareTensors(t, want);
    if (std::isinf(e.maxAbsErr)) return;
    if (!best || e.maxRelErr < best->err.maxRelErr) best = Candidate{what, e};
  };
  std::vector<std::string> groups;
  for (const auto& a : dist.mesh().axes) groups.push_back(a.name);
  for (const auto& [name, part] : dist.namedGroups()) groups.push_back(name);
  RankSpace ranks = RankSpace::of(dist);
  std::set<std::string> tried;
  for (const auto& [r, name] : names) {
    auto it = run.dist[size_t(r)].find(name);
    if (it == run.dist[size_t(r)].end()) continue;
    const ir::Tensor& t = it->second;
    std::string leaf = "dist[" + std::to_string(r) + "]." + name;
    consider(leaf, t);
    // Chunks of a tensor that is g times larger along one dim.
    if (t.rank() == want.rank())
      for (int64_t d = 0; d < t.rank(); ++d) {
        bool others = true;
        for (int64_t k = 0; k < t.rank(); ++k) others = others && (k == d || t.dims()[size_t(k)] == want.dims()[size_t(k)]);
        int64_t n = want.dims()[size_t(d)];
        if (!others || n == 0 || t.dims()[size_t(d)] <= n || t.dims()[size_t(d)] % n != 0) continue;
        for (int64_t c = 0; c * n < t.dims()[size_t(d)]; ++c) {
          RelScope s;
          s.ranks = &ranks;
          auto sl = evaluate(*Rel::slice(Rel::dist(IntExpr::constant(r), name), d, IntExpr::constant(c * n),
                                         IntExpr::constant((c + 1) * n)),
                             TensorSource{nullptr, &run.dist}, s);
          if (sl.ok()) consider("chunk " + std::to_string(c) + " of " + leaf + " along dim " + std::to_string(d), *sl);
        }
      }
    // Sum and concat over each group containing r.
    for (const auto& gname : groups) {
      auto members = ranks.members(gname, r);
      if (!members.ok() || members->size() < 2) continue;
      std::string key = gname + "/" + name + "/" + std::to_string(members->front());
      if (!tried.insert(key).second) continue;
      std::vector<RelPtr> parts;
      for (int64_t m : *members) parts.push_back(Rel::dist(IntExpr::constant(m), name));
      RelScope s;
      s.ranks = &ranks;
      TensorSource src{nullptr, &run.dist};
      if (auto v = evaluate(*Rel::sum(parts), src, s); v.ok()) consider("sum over " + gname + " of " + name, *v);
      for (int64_t d = 0; d < want.rank(); ++d)
        if (auto v = evaluate(*Rel::concat(d, parts), src, s); v.ok())
          consider("concat over " + gname + " of " + name + " along dim " + std::to_string(d), *v);
    }
  }
  return best;
}

}  // namespace sp::rewrite
