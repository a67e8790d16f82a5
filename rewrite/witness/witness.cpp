// The witness: S and D run by the interpreter on random inputs related by
// R_in, and comparisons of S values with the natural rebuilds from D.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ir/collectives.h"
#include "ir/compare.h"
#include "rewrite/witness/witness.h"

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

// Per node: output elements, times the contracted extent for matmul/gemm.
std::vector<double> nodeWork(const ir::Graph& g) {
  int64_t sym = ir::RunOptions{}.defaultSymbolValue;
  std::vector<double> work;
  work.reserve(g.nodes().size());
  for (const auto& n : g.nodes()) {
    double out = 0;
    for (ir::ValueId o : n.outputs) out += numelOf(g.value(o).type.shape, sym);
    if ((n.op == ir::OpKind::MatMul || n.op == ir::OpKind::Gemm) && !n.inputs.empty()) {
      const auto& a = g.value(n.inputs[0]).type.shape;
      bool transA = n.op == ir::OpKind::Gemm && ir::attrInt(n.attrs, "trans_a") != 0 && a.size() == 2;
      if (!a.empty()) out *= numelOf({transA ? a.front() : a.back()}, sym);
    }
    work.push_back(out);
  }
  return work;
}

std::vector<ir::ValueId> idsOf(const ir::Graph& g, const std::vector<std::string>& names) {
  std::vector<ir::ValueId> ids;
  for (const auto& n : names)
    if (auto v = g.findValue(n)) ids.push_back(*v);
  return ids;
}

double coneWork(const ir::Graph& g, const std::vector<ir::ValueId>& keep, bool comm) {
  std::vector<bool> needed = ir::neededNodes(g, keep, comm);
  std::vector<double> work = nodeWork(g);
  double w = 0;
  for (size_t i = 0; i < work.size(); ++i)
    if (needed[i]) w += work[i];
  return w;
}

// onNode adapter: accumulates the work of finished nodes of one graph.
struct ProgressTracker {
  const WitnessProgress* progress;
  double total;
  double done = 0;
  std::vector<std::vector<double>> work;  // per rank (the graph's nodes)
  std::vector<int64_t> current;           // per rank: node running, -1 none
  std::string phase;                      // "seq" or "rank"
  const std::vector<const ir::Graph*>* graphs;  // per rank

  void onNode(int64_t rank, size_t i) {
    size_t r = size_t(rank);
    if (current[r] >= 0) done += work[r][size_t(current[r])];
    current[r] = int64_t(i);
    std::string at = (phase == "seq" ? std::string("seq ") : "rank " + std::to_string(rank) + " ") +
                     (*graphs)[r]->nodes()[i].name;
    (*progress)(done, total, at);
  }
  void finish() {
    for (size_t r = 0; r < current.size(); ++r)
      if (current[r] >= 0) done += work[r][size_t(current[r])];
    current.assign(current.size(), -1);
  }
};

// A D input that is plain data movement of one S input (the input itself,
// slices, reshapes, permutes), computed on the tensors: no f64 copy, and a
// replicated input shares S's storage. An error: not of that form, or out of
// range (the relation evaluator then computes it, or reports the error).
Result<ir::Tensor> movedInput(const Rel& r, const ir::TensorMap& seq, const RelScope& s) {
  auto unsupported = [] { return makeError("not-data-movement", "evaluated by the relation evaluator"); };
  if (r.op == RelOp::Seq) {
    auto it = seq.find(r.name);
    if (it == seq.end()) return unsupported();
    return it->second;
  }
  if (r.op != RelOp::Slice && r.op != RelOp::Reshape && r.op != RelOp::Permute) return unsupported();
  SP_ASSIGN(ir::Tensor x, movedInput(*r.args[0], seq, s));
  if (r.op == RelOp::Reshape) {
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (const auto& d : r.shape) {
      if (!d.isConcrete()) return unsupported();
      dims.push_back(d.value());
      n *= d.value();
    }
    if (n != x.numel()) return unsupported();
    return x.reshaped(dims);
  }
  ir::AttrMap attrs;
  if (r.op == RelOp::Permute) {
    attrs["perm"] = r.perm;
  } else {
    SP_ASSIGN(int64_t start, r.start.eval(s.vars, s.ranks));
    SP_ASSIGN(int64_t end, r.end.eval(s.vars, s.ranks));
    int64_t axis = r.dim < 0 ? r.dim + x.rank() : r.dim;
    if (axis < 0 || axis >= x.rank() || start < 0 || end < start || end > x.dims()[size_t(axis)]) return unsupported();
    attrs = {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
             {"axes", std::vector<int64_t>{axis}}};
  }
  SP_ASSIGN(auto out, ir::evalOp(r.op == RelOp::Permute ? ir::OpKind::Transpose : ir::OpKind::Slice, attrs, {x}));
  return out[0];
}

// buildDistInputs (relation_text.h) with data movement on the tensors.
Result<std::vector<ir::TensorMap>> distInputs(const RelationFile& rel, const ir::Program& dist, const ir::TensorMap& sin) {
  RankSpace ranks = RankSpace::of(dist);
  SP_ASSIGN(auto bound, expandInputs(rel, ranks));
  std::vector<ir::TensorMap> out(size_t(dist.worldSize()));
  for (const auto& b : bound) {
    auto t = movedInput(*b.expr, sin, b.scope);
    if (!t.ok()) t = evaluate(*b.expr, TensorSource{&sin, nullptr}, b.scope);
    if (!t.ok()) return makeError(t.error().id, "rank " + std::to_string(b.rank) + ": " + t.error().message, b.location);
    out[size_t(b.rank)][b.name] = std::move(*t);
  }
  return out;
}

}  // namespace

double WitnessWork::total() const {
  double t = seq;
  for (double d : dist) t += d;
  return t;
}

WitnessWork estimateWork(const ir::Graph& seq, const ir::Program& dist, const WitnessPlan& plan) {
  WitnessWork w;
  w.seq = coneWork(seq, idsOf(seq, plan.seq), false);
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    const ir::Graph& g = dist.rank(r);
    static const std::vector<std::string> kNone;
    w.dist.push_back(coneWork(g, idsOf(g, size_t(r) < plan.dist.size() ? plan.dist[size_t(r)] : kNone), true));
  }
  return w;
}

Result<WitnessRun> runWitness(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                              const WitnessPlan& plan, uint64_t seed, const WitnessProgress& progress,
                              std::chrono::steady_clock::time_point deadline) {
  ir::RunOptions opts;
  opts.seed = seed;
  opts.deadline = deadline;
  auto stopped = [](const Error& e, const std::string& phase) {
    return e.id == "time-limit" ? makeError(e.id, phase + e.message) : e;
  };
  static const std::vector<std::string> kNone;
  std::vector<std::vector<ir::ValueId>> dkeep;
  for (int64_t r = 0; r < dist.worldSize(); ++r)
    dkeep.push_back(idsOf(dist.rank(r), size_t(r) < plan.dist.size() ? plan.dist[size_t(r)] : kNone));

  WitnessWork work = estimateWork(seq, dist, plan);
  std::vector<const ir::Graph*> graphs{&seq};
  ProgressTracker track{&progress, work.total(), 0, {nodeWork(seq)}, {-1}, "seq", &graphs};
  if (progress) opts.onNode = [&](int64_t r, size_t i, size_t) { track.onNode(r, i); };

  // S draws its inputs itself and releases each after its last use. They
  // are a pure function of (graph, seed): prepareInputs below draws the same
  // tensors again for R_in, so S and D run on related inputs without S's
  // inputs and D's staying alive through S's run.
  WitnessRun run;
  {
    auto s = ir::runGraphKeep(seq, {}, idsOf(seq, plan.seq), opts);
    if (!s.ok()) return stopped(s.error(), "S ");
    run.seq = std::move(*s);
  }

  track.finish();
  track.phase = "rank";
  track.work.clear();
  graphs.clear();
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    graphs.push_back(&dist.rank(r));
    track.work.push_back(nodeWork(dist.rank(r)));
  }
  track.current.assign(graphs.size(), -1);
  std::vector<ir::TensorMap> din;
  {
    SP_ASSIGN(ir::TensorMap sin, ir::prepareInputs(seq, {}, opts));
    SP_ASSIGN(din, distInputs(rel, dist, sin));
  }
  ir::RunOptions dopts = opts;
  dopts.fillMissing = false;
  auto dvals = ir::runProgramKeep(dist, std::move(din), dkeep, dopts);
  // S ran on these inputs and D, on the inputs the relations give it,
  // indexes out of range: a fault of D's, not of the witness.
  if (!dvals.ok() && dvals.error().id == "index-out-of-range") return makeError("dist-fault", dvals.error().message);
  if (!dvals.ok()) return stopped(dvals.error(), "S done; D ");
  run.dist.resize(dvals->size());
  for (size_t r = 0; r < dvals->size(); ++r) {
    const auto& g = dist.rank(int64_t(r));
    for (size_t v = 0; v < (*dvals)[r].size(); ++v)
      if ((*dvals)[r][v].defined()) run.dist[r][g.value(ir::ValueId(v)).name] = std::move((*dvals)[r][v]);
  }
  return run;
}

ErrorStat compareTensors(const ir::Tensor& got, const ir::Tensor& want) {
  ir::TensorDiff d = ir::diffTensors(got, want);
  return ErrorStat{d.maxAbsErr, d.maxRelErr};
}

constexpr double kCandidateTie = 1e-6;

// The members' pieces in the order that matches `want`'s equal pieces
// along d, where it is not their own order: S's piece k goes to the unused
// member whose piece is closest (first elements compared first, so a group
// of n costs O(n) full comparisons where the pieces differ). nullopt where
// the pieces differ in size or their own order is the closest.
std::optional<std::vector<int64_t>> piecesOrder(const ir::Tensor& want, const std::vector<ir::Tensor>& parts, int64_t d) {
  const int64_t n = int64_t(parts.size());
  if (n < 2 || want.rank() <= d || want.dims()[size_t(d)] % n != 0) return std::nullopt;
  for (const auto& p : parts)
    if (p.dims()[size_t(d)] != want.dims()[size_t(d)] / n) return std::nullopt;
  auto pieces = ir::splitTensor(want, d, n);
  if (!pieces.ok()) return std::nullopt;
  auto first = [](const ir::Tensor& t) { return t.numel() > 0 ? t.getAsDouble(0) : 0.0; };
  std::vector<bool> used(size_t(n), false);
  std::vector<int64_t> order;
  bool moved = false;
  for (int64_t k = 0; k < n; ++k) {
    const double f = first((*pieces)[size_t(k)]);
    std::vector<int64_t> cands;
    for (int64_t m = 0; m < n; ++m)
      if (!used[size_t(m)] && std::abs(first(parts[size_t(m)]) - f) <= 1e-3 * (1.0 + std::abs(f))) cands.push_back(m);
    if (cands.empty()) return std::nullopt;
    int64_t pick = cands[0];
    double err = INFINITY;
    for (int64_t m : cands) {
      double e = compareTensors(parts[size_t(m)], (*pieces)[size_t(k)]).maxRelErr;
      if (e < err) err = e, pick = m;
    }
    used[size_t(pick)] = true;
    moved = moved || pick != k;
    order.push_back(pick);
  }
  if (!moved) return std::nullopt;
  return order;
}

Result<std::optional<Candidate>> bestCandidate(const ir::Tensor& want, const WitnessRun& run, const ir::Program& dist,
                                               const std::vector<std::pair<int64_t, std::string>>& names,
                                               std::chrono::steady_clock::time_point deadline) {
  std::optional<Candidate> best;
  auto consider = [&](const std::string& what, const ir::Tensor& t, Candidate::Kind kind, const std::string& group,
                      const std::string& name, int64_t dim, int64_t rank, int64_t chunkDim = -1) {
    ErrorStat e = compareTensors(t, want);
    if (std::isinf(e.maxAbsErr)) return;
    // Candidates within float noise of each other are one value (a tensor
    // and its clone, its view): the first in `names` order stands, so the
    // choice follows the caller's order, not the rounding of a sum.
    if (!best || e.maxRelErr + kCandidateTie < best->err.maxRelErr)
      best = Candidate{what, e, kind, group, name, dim, rank, chunkDim};
  };
  using K = Candidate::Kind;
  auto late = [&] { return std::chrono::steady_clock::now() > deadline; };
  auto stopped = [&](const std::string& at) {
    return makeError("time-limit", "S and D done; comparing D tensors with S, at " + at);
  };
  std::vector<std::string> groups;
  for (const auto& a : dist.mesh().axes) groups.push_back(a.name);
  for (const auto& [name, part] : dist.namedGroups()) groups.push_back(name);
  RankSpace ranks = RankSpace::of(dist);
  const std::vector<int64_t>& wd = want.dims();
  // Shapes are checked before anything is built: a sum or concat of large
  // tensors that cannot match `want` never is.
  std::set<std::string> tried;
  for (const auto& [r, name] : names) {
    auto found = run.dist[size_t(r)].find(name);
    if (found == run.dist[size_t(r)].end()) continue;
    std::string leaf = "dist[" + std::to_string(r) + "]." + name;
    if (late()) return stopped(leaf);
    const ir::Tensor& t = found->second;
    const std::vector<int64_t>* td = &t.dims();
    if (*td == wd) consider(leaf, t, K::Tensor, {}, name, 0, r);
    // Chunks of a tensor that is g times larger along one dim (g at most the
    // world size: a gathered tensor).
    if (t.rank() == want.rank())
      for (int64_t d = 0; d < t.rank(); ++d) {
        bool others = true;
        for (int64_t k = 0; k < t.rank(); ++k) others = others && (k == d || (*td)[size_t(k)] == wd[size_t(k)]);
        int64_t n = wd[size_t(d)];
        if (!others || n == 0 || (*td)[size_t(d)] <= n || (*td)[size_t(d)] % n != 0) continue;
        int64_t parts = (*td)[size_t(d)] / n;
        if (parts > dist.worldSize()) continue;
        auto chunks = ir::splitTensor(t, d, parts);
        if (!chunks.ok()) continue;
        for (int64_t c = 0; c < parts; ++c)
          consider("chunk " + std::to_string(c) + " of " + leaf + " along dim " + std::to_string(d), (*chunks)[size_t(c)],
                   K::Tensor, {}, name, 0, r, d);
        if (late()) return stopped("chunks of " + leaf);
      }
    // Sum and concat over each group containing r, in the tensors' dtype.
    for (const auto& gname : groups) {
      auto members = ranks.members(gname, r);
      if (!members.ok() || members->size() < 2) continue;
      std::string key = gname + "/" + name + "/" + std::to_string(members->front());
      if (!tried.insert(key).second) continue;
      std::vector<ir::Tensor> parts;
      for (int64_t m : *members)
        if (auto it = run.dist[size_t(m)].find(name); it != run.dist[size_t(m)].end()) parts.push_back(it->second);
      if (parts.size() != members->size()) continue;
      bool sameAsWant = std::all_of(parts.begin(), parts.end(), [&](const ir::Tensor& p) { return p.dims() == wd; });
      if (sameAsWant)
        if (auto v = ir::reduceTensors(parts, ir::ReduceOp::Sum); v.ok())
          consider("sum over " + gname + " of " + name, *v, K::Sum, gname, name, 0, r);
      for (int64_t d = 0; d < want.rank(); ++d) {
        int64_t along = 0;
        bool fits = true;
        for (const auto& p : parts) {
          fits = fits && p.rank() == want.rank();
          for (int64_t k = 0; fits && k < want.rank(); ++k) fits = k == d || p.dims()[size_t(k)] == wd[size_t(k)];
          if (fits) along += p.dims()[size_t(d)];
        }
        if (!fits || along != wd[size_t(d)]) continue;
        if (late()) return stopped("concat over " + gname + " of " + name);
        if (auto v = ir::concatTensors(parts, d); v.ok())
          consider("concat over " + gname + " of " + name + " along dim " + std::to_string(d), *v,
                   K::Concat, gname, name, d, r);
        // The same pieces in another order (rank r holding piece n-1-r, a
        // rotation): each of S's equal pieces matched to the member whose
        // tensor is closest to it, each member once.
        if (late()) return stopped("pieces over " + gname + " of " + name);
        if (auto order = piecesOrder(want, parts, d)) {
          std::vector<ir::Tensor> placed;
          std::string text;
          for (int64_t k : *order) {
            placed.push_back(parts[size_t(k)]);
            text += (text.empty() ? "" : ", ") + std::to_string((*members)[size_t(k)]);
          }
          if (auto v = ir::concatTensors(placed, d); v.ok()) {
            auto before = best;
            consider("concat over " + gname + " of " + name + " along dim " + std::to_string(d) + " in rank order " +
                         text, *v, K::Concat, gname, name, d, r);
            if (best && (!before || best->what != before->what))
              for (int64_t k : *order) best->order.push_back((*members)[size_t(k)]);
          }
        }
      }
    }
  }
  return best;
}

InputLayouts inputLayouts(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel) {
  const int64_t world = dist.worldSize();
  const RankSpace ranks = RankSpace::of(dist);  // the scopes below point at it
  InputLayouts layouts;
  auto bound = expandInputs(rel, ranks);
  if (!bound.ok()) return layouts;
  auto seqShape = [&](const std::string& n) -> std::optional<ir::Shape> {
    auto v = seq.findValue(n);
    if (!v) return std::nullopt;
    return seq.value(*v).type.shape;
  };
  for (const auto& b : *bound) {
    auto& per = layouts[b.name];
    per.resize(size_t(world));
    if (auto c = concretize(*b.expr, b.scope); c.ok() && b.rank >= 0 && b.rank < world)
      per[size_t(b.rank)] = relBoxes(**c, seqShape);
  }
  return layouts;
}

namespace {
// Places a rank's tensor t, which holds the pieces `bx` selects, into
// `first` (where no rank has been yet: `set`) and adds it into `sum`.
void placePieces(const ir::Tensor& t, const RelBoxes& bx, ir::Tensor& first, ir::Tensor& sum, std::vector<char>& set) {
  const std::vector<int64_t> wstrides = ir::stridesOf(first.dims()), lstrides = ir::stridesOf(t.dims());
  const size_t R = wstrides.size();
  int64_t off = 0;  // the box's start in t along the concat dim
  for (const auto& b : bx.list) {
    std::vector<int64_t> idx(R, 0), ext(R);
    int64_t n = 1;
    for (size_t k = 0; k < R; ++k) n *= ext[k] = b[k].second - b[k].first;
    for (int64_t e = 0; e < n; ++e) {
      int64_t si = 0, li = 0;
      for (size_t k = 0; k < R; ++k) {
        si += (b[k].first + idx[k]) * wstrides[k];
        li += (idx[k] + (int64_t(k) == bx.dim ? off : 0)) * lstrides[k];
      }
      const double x = t.getAsDouble(li);
      if (!set[size_t(si)]) first.setFromDouble(si, x), sum.setFromDouble(si, x), set[size_t(si)] = 1;
      else sum.setFromDouble(si, sum.getAsDouble(si) + x);
      for (size_t k = R; k-- > 0;) {  // next index, last dim fastest
        if (++idx[k] < ext[k]) break;
        idx[k] = 0;
      }
    }
    if (bx.dim >= 0) off += b[size_t(bx.dim)].second - b[size_t(bx.dim)].first;
  }
}
}  // namespace

Result<std::optional<Candidate>> inputLayoutCandidate(const ir::Tensor& want, const WitnessRun& run,
                                                      const ir::Graph& seq, const InputLayouts& layouts,
                                                      const std::vector<std::pair<int64_t, std::string>>& names,
                                                      std::chrono::steady_clock::time_point deadline) {
  std::map<std::string, int64_t> held;  // D outputs on every rank
  for (const auto& [r, n] : names) ++held[n];
  const std::vector<int64_t>& wd = want.dims();
  std::optional<Candidate> best;
  for (const auto& [input, per] : layouts) {
    auto v = per.empty() || !per[0] ? std::nullopt : seq.findValue(per[0]->leaf);
    if (!v || !ir::isConcrete(seq.value(*v).type.shape) || ir::concreteDims(seq.value(*v).type.shape) != wd ||
        std::any_of(per.begin(), per.end(), [&](const auto& b) { return !b || b->leaf != per[0]->leaf; }))
      continue;
    for (const auto& [out, count] : held) {
      if (count != int64_t(per.size())) continue;
      if (std::chrono::steady_clock::now() > deadline)
        return makeError("time-limit", "S and D done; comparing D tensors with S, at " + out + " laid out as " + input);
      // Positions held by several ranks: the first rank's value (each holds
      // it whole), or their sum (each holds a partial sum: a KV head's
      // gradient on the run of ranks sharing it).
      ir::Tensor first(want.dtype(), wd), sum(want.dtype(), wd);
      std::vector<char> set(size_t(want.numel()), 0);
      bool ok = true;
      for (size_t r = 0; r < per.size() && ok; ++r) {
        auto it = run.dist[r].find(out);
        ok = it != run.dist[r].end() && it->second.dims() == per[r]->dims();
        if (ok) placePieces(it->second, *per[r], first, sum, set);
      }
      if (!ok || std::find(set.begin(), set.end(), 0) != set.end()) continue;
      for (const auto& [t, how] : {std::pair{&first, ""}, std::pair{&sum, ", summed where ranks share a piece"}}) {
        ErrorStat e = compareTensors(*t, want);
        if (std::isinf(e.maxAbsErr)) continue;
        if (!best || e.maxRelErr < best->err.maxRelErr)
          best = Candidate{out + " laid out as D input " + input + " is (its relation)" + how, e,
                           Candidate::Kind::Tensor, {}, out, 0, -1, -1};
      }
    }
  }
  return best;
}

}  // namespace sp::rewrite
