// Proposed input relations from names and shapes, one comprehension line
// per D input covering all ranks, for review with printRelations.
#include <set>

#include "rewrite/verify.h"

namespace sp::rewrite {

namespace {

struct Proposal {
  bool replicated = false;
  std::string axis;  // sharded: mesh axis
  int64_t dim = 0;
  int64_t extent = 0;  // shard extent
};

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
    auto sv = seq.findValue(name);
    if (!sv || seq.value(*sv).kind == ir::ValueKind::NodeOutput)
      return makeError("unmatched-input", "D input '" + name + "' (rank " + std::to_string(ranksOf[name][0]) +
                                              ") has no S input or parameter of the same name");
    const ir::TensorType& st = seq.value(*sv).type;
    std::optional<Proposal> common;
    for (int64_t r : ranksOf[name]) {
      const auto& dt = dist.rank(r).value(*dist.rank(r).findValue(name)).type;
      Proposal p;
      std::string tried;
      if (dt.shape == st.shape) {
        p.replicated = true;
      } else if (dt.shape.size() == st.shape.size()) {
        std::vector<Proposal> found;
        for (size_t d = 0; d < st.shape.size(); ++d) {
          if (dt.shape[d] == st.shape[d]) continue;
          for (const auto& a : dist.mesh().axes) {
            if (a.size < 2) continue;
            if (dt.shape[d] * ir::Dim(a.size) == st.shape[d] && dt.shape[d].isConcrete())
              found.push_back({false, a.name, int64_t(d), dt.shape[d].value()});
          }
        }
        size_t differing = 0;
        for (size_t d = 0; d < st.shape.size(); ++d) differing += dt.shape[d] != st.shape[d];
        if (differing == 1 && found.size() == 1) p = found[0];
        else
          return makeError("unmatched-input",
                           "rank " + std::to_string(r) + ": D input '" + name + "' " + dt.str() + " vs S " + st.str() +
                               ": " + (differing != 1 ? std::to_string(differing) + " dims differ"
                                                      : std::to_string(found.size()) + " mesh axes divide the dim") +
                               " (tried: same shape, one dim split over a mesh axis)");
      } else {
        return makeError("unmatched-input", "rank " + std::to_string(r) + ": D input '" + name + "' " + dt.str() +
                                                " has rank " + std::to_string(dt.shape.size()) + ", S " + st.str() +
                                                " has rank " + std::to_string(st.shape.size()));
      }
      if (common && (common->replicated != p.replicated || common->axis != p.axis || common->dim != p.dim))
        return makeError("unmatched-input", "D input '" + name + "' is related differently on different ranks");
      common = p;
    }
    InputRelation ir;
    ir.name = name;
    bool allRanks = int64_t(ranksOf[name].size()) == dist.worldSize();
    if (common->replicated && allRanks) {
      ir.allRanks = true;
      ir.expr = Rel::seq(name);
      f.inputs.push_back(ir);
      continue;
    }
    if (common->replicated) {
      for (int64_t r : ranksOf[name]) {
        InputRelation one = ir;
        one.rank = IntExpr::constant(r);
        one.expr = Rel::seq(name);
        f.inputs.push_back(one);
      }
      continue;
    }
    // for r in AXIS: dist[r].x = slice(seq.x, dim=D, start=idx(r,AXIS)*K, end=(idx(r,AXIS)+1)*K)
    IntExpr idx = IntExpr::index(IntExpr::var("r"), common->axis);
    ir.loopVar = "r";
    ir.loopDomain.group = common->axis;
    ir.rank = IntExpr::var("r");
    ir.expr = Rel::slice(Rel::seq(name), common->dim, idx * common->extent,
                         (idx + IntExpr::constant(1)) * common->extent);
    if (!allRanks)
      return makeError("unmatched-input", "D input '" + name + "' is sharded over " + common->axis +
                                              " but exists only on some ranks");
    f.inputs.push_back(ir);
  }
  return f;
}

}  // namespace sp::rewrite
