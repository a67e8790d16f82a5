// Proposed input relations from names and shapes, one comprehension line
// per D input covering all ranks, for review with printRelations.
//
// Which S input a D input relates to: the S input or parameter of the same
// name; for a dropout stream (`<node>_rng`, docs/fx-import.md) with no
// namesake, the S stream of the dropout at the same source line, else the
// one at the same position among the streams. Dynamo's lifted module
// constants (`_tensor_constantN`) are numbered per capture, so a namesake in
// S means nothing: a D constant left without a value is declared unrelated,
// with the reason.
#include <set>

#include "rewrite/verify.h"

namespace sp::rewrite {

namespace {

struct Proposal {
  bool replicated = false;
  std::string axis;  // sharded: mesh axis
  int64_t dim = 0;
  int64_t extent = 0;   // shard extent
  int64_t holders = 1;  // consecutive ranks of the axis holding the same shard
};

bool startsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool endsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool isLeaf(const ir::Graph& g, const std::string& name) {
  auto v = g.findValue(name);
  return v && g.value(*v).kind != ir::ValueKind::NodeOutput;
}

// "file:line" of the first node reading a leaf (the dropout of a stream).
std::string readerSite(const ir::Graph& g, const std::string& name) {
  auto v = g.findValue(name);
  if (!v || g.users(*v).empty()) return "";
  const ir::SourceLoc& l = g.node(g.users(*v).front()).loc;
  return l.file.empty() || l.line == 0 ? "" : l.file + ":" + std::to_string(l.line);
}

std::vector<std::string> streams(const ir::Graph& g) {
  std::vector<std::string> out;
  for (ir::ValueId v : g.inputs())
    if (endsWith(g.value(v).name, "_rng")) out.push_back(g.value(v).name);
  return out;
}

// The S stream of a D dropout stream without a namesake.
Result<std::string> matchStream(const ir::Graph& seq, const ir::Graph& d, const std::string& name) {
  std::vector<std::string> ss = streams(seq), ds = streams(d);
  std::string site = readerSite(d, name);
  std::vector<std::string> sameSite;
  for (const auto& s : ss)
    if (!site.empty() && readerSite(seq, s) == site) sameSite.push_back(s);
  if (sameSite.size() == 1) return sameSite[0];
  if (ss.size() == ds.size())
    for (size_t i = 0; i < ds.size(); ++i)
      if (ds[i] == name) return ss[i];
  return makeError("unmatched-input", "D dropout stream '" + name + "' has no S stream of the same name, " +
                                          std::to_string(sameSite.size()) + " S streams read at its source line " +
                                          (site.empty() ? "(unknown)" : site) + ", and S has " +
                                          std::to_string(ss.size()) + " streams where D has " +
                                          std::to_string(ds.size()));
}

// Replicated, or one dim split evenly over one mesh axis.
Result<Proposal> propose(const ir::TensorType& st, const ir::TensorType& dt, const ir::Program& dist, int64_t r,
                         const std::string& name) {
  Proposal p;
  if (dt.shape == st.shape) {
    p.replicated = true;
    return p;
  }
  if (dt.shape.size() != st.shape.size())
    return makeError("unmatched-input", "rank " + std::to_string(r) + ": D input '" + name + "' " + dt.str() +
                                            " has rank " + std::to_string(dt.shape.size()) + ", S " + st.str() +
                                            " has rank " + std::to_string(st.shape.size()));
  std::vector<Proposal> found;
  size_t differing = 0;
  for (size_t d = 0; d < st.shape.size(); ++d) {
    if (dt.shape[d] == st.shape[d]) continue;
    ++differing;
    for (const auto& a : dist.mesh().axes) {
      if (a.size < 2 || !dt.shape[d].isConcrete()) continue;
      if (dt.shape[d] * ir::Dim(a.size) == st.shape[d]) {
        found.push_back({false, a.name, int64_t(d), dt.shape[d].value()});
        continue;
      }
      // Fewer shards than ranks (KV heads when TP exceeds them): c shards,
      // each held by a.size / c consecutive ranks, Megatron's layout (rank
      // r holds KV head r / (TP / kv_heads)). Proposed, never trusted: the
      // verifier checks it like any relation.
      for (int64_t c = 2; c < a.size; ++c)
        if (a.size % c == 0 && dt.shape[d] * ir::Dim(c) == st.shape[d])
          found.push_back({false, a.name, int64_t(d), dt.shape[d].value(), a.size / c});
    }
  }
  if (differing == 1 && found.size() == 1) return found[0];
  std::string axes;
  for (const auto& f : found) axes += (axes.empty() ? " (" : ", ") + f.axis;
  if (found.size() > 1) axes += "; write the relation in a file and pass --relation)";
  return makeError("unmatched-input",
                   "rank " + std::to_string(r) + ": D input '" + name + "' " + dt.str() + " vs S " + st.str() + ": " +
                       (differing != 1 ? std::to_string(differing) + " dims differ"
                                       : std::to_string(found.size()) + " mesh axes divide the dim" + axes) +
                       " (tried: same shape, one dim split over a mesh axis, shards held by consecutive ranks)");
}

// for r in AXIS: dist[r].x = slice(seq.s, dim=D, start=idx(r,AXIS)*K, end=(idx(r,AXIS)+1)*K)
// (idx(r,AXIS)/H for a shard held by H consecutive ranks)
Status addRelation(RelationFile& f, const std::string& name, const std::string& sname, const Proposal& p,
                   const std::vector<int64_t>& ranks, int64_t world) {
  InputRelation ir;
  ir.name = name;
  bool allRanks = int64_t(ranks.size()) == world;
  if (p.replicated && allRanks) {
    ir.allRanks = true;
    ir.expr = Rel::seq(sname);
    f.inputs.push_back(ir);
    return okStatus();
  }
  if (p.replicated) {
    for (int64_t r : ranks) {
      InputRelation one = ir;
      one.rank = IntExpr::constant(r);
      one.expr = Rel::seq(sname);
      f.inputs.push_back(one);
    }
    return okStatus();
  }
  if (!allRanks)
    return makeError("unmatched-input", "D input '" + name + "' is sharded over " + p.axis + " but exists only on some ranks");
  IntExpr idx = IntExpr::index(IntExpr::var("r"), p.axis);
  if (p.holders > 1) idx = idx.divC(p.holders);
  ir.loopVar = "r";
  ir.loopDomain.group = p.axis;
  ir.rank = IntExpr::var("r");
  ir.expr = Rel::slice(Rel::seq(sname), p.dim, idx * p.extent, (idx + IntExpr::constant(1)) * p.extent);
  f.inputs.push_back(ir);
  return okStatus();
}

}  // namespace

Result<RelationFile> inferRelations(const ir::Graph& seq, const ir::Program& dist) {
  RelationFile f;
  // D input names in first-appearance order (rank 0 first).
  std::vector<std::string> order;
  std::map<std::string, std::vector<int64_t>> ranksOf;
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    const auto& g = dist.rank(r);
    std::vector<ir::ValueId> leaves = g.inputs();
    leaves.insert(leaves.end(), g.params().begin(), g.params().end());
    for (ir::ValueId v : leaves) {
      const std::string& n = g.value(v).name;
      if (!ranksOf.count(n)) order.push_back(n);
      ranksOf[n].push_back(r);
    }
  }
  for (const auto& name : order) {
    int64_t r0 = ranksOf[name][0];
    const ir::Graph& g0 = dist.rank(r0);
    if (startsWith(name, "_tensor_constant") && g0.value(*g0.findValue(name)).kind == ir::ValueKind::Param) {
      f.unrelated.push_back({name, "module constant self." + name + " (" + g0.value(*g0.findValue(name)).type.str() +
                                       ", read at " + (readerSite(g0, name).empty() ? "?" : readerSite(g0, name)) +
                                       ") has no value in the capture: pass --fx-constant " + name +
                                       "=VALUE, or list its source site",
                             ""});
      continue;
    }
    std::string sname = name;
    if (!isLeaf(seq, name)) {
      if (!endsWith(name, "_rng"))
        return makeError("unmatched-input", "D input '" + name + "' (rank " + std::to_string(r0) +
                                                ") has no S input or parameter of the same name");
      SP_ASSIGN(sname, matchStream(seq, g0, name));
    }
    const ir::TensorType& st = seq.value(*seq.findValue(sname)).type;
    std::optional<Proposal> common;
    for (int64_t r : ranksOf[name]) {
      const auto& dt = dist.rank(r).value(*dist.rank(r).findValue(name)).type;
      SP_ASSIGN(Proposal p, propose(st, dt, dist, r, name));
      if (common && (common->replicated != p.replicated || common->axis != p.axis || common->dim != p.dim ||
                     common->holders != p.holders))
        return makeError("unmatched-input", "D input '" + name + "' is related differently on different ranks");
      common = p;
    }
    SP_TRY(addRelation(f, name, sname, *common, ranksOf[name], dist.worldSize()));
  }
  return f;
}

}  // namespace sp::rewrite
