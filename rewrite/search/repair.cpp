// Repair search: when D is refuted, single edits under which D verifies: an
// all_reduce inserted after a D value the failure names, or one attribute
// of one collective changed (on every rank that has it). A repair found is a fact
// about the edited program (it is verified, by the same verifier), given to
// the user as the likely fix next to the failure.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "ir/program_edit.h"
#include "rewrite/engine/engine.h"
#include "rewrite/verify/verify.h"

namespace sp::rewrite {

namespace {

struct Candidate {
  std::string what;  // "all_reduce 'se' (loc) reducing with sum instead of avg"
  std::function<void(ir::ProgramSpec&)> edit;  // applied to D's spec when the candidate is tried
};

// Edits of every collective that keep the program well-formed in most
// cases (the builder rejects the rest): another reduce mode, another dim,
// another group. In program order of the first rank holding the node.
std::vector<Candidate> candidates(const ir::Program& dist, const ir::ProgramSpec& base) {
  const std::vector<std::string> groups = ir::groupNames(base);
  struct Site {
    const ir::Node* node;  // on the first rank holding it
    int64_t rank;          // of its input
    std::vector<std::pair<size_t, size_t>> at;
  };
  std::vector<std::string> order;
  std::map<std::string, Site> sites;
  for (size_t r = 0; r < size_t(dist.worldSize()); ++r) {
    const ir::Graph& g = dist.rank(int64_t(r));
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& n = g.nodes()[i];
      if (n.op != ir::OpKind::AllReduce && n.op != ir::OpKind::ReduceScatter && n.op != ir::OpKind::AllGather) continue;
      std::string key = std::string(ir::opName(n.op)) + "/" + n.name;
      auto [it, fresh] = sites.try_emplace(key, Site{&n, int64_t(g.value(n.inputs[0]).type.shape.size()), {}});
      if (fresh) order.push_back(key);
      it->second.at.emplace_back(r, i);
    }
  }
  std::vector<Candidate> out;
  for (const auto& key : order) {
    const Site& s = sites.at(key);
    const ir::Node& n = *s.node;
    std::string head = std::string(ir::opName(n.op)) + " '" + n.name + "'" + (n.loc.empty() ? "" : " (" + n.loc.str() + ")");
    auto edit = [&](const std::string& what, const std::string& attr, ir::AttrValue v) {
      out.push_back(Candidate{head + " " + what, [at = s.at, attr, v](ir::ProgramSpec& spec) {
                                for (auto [r, i] : at) spec.ranks[r].nodes[i].attrs[attr] = v;
                              }});
    };
    if (n.op != ir::OpKind::AllGather) {
      const std::string& mode = ir::attrStr(n.attrs, "reduce");
      for (const char* m : {"sum", "avg", "max", "min"})
        if (mode != m) edit("reducing with " + std::string(m) + " instead of " + mode, "reduce", std::string(m));
    }
    if (n.op != ir::OpKind::AllReduce) {
      int64_t dim = normDim(ir::attrInt(n.attrs, "dim"), s.rank);
      for (int64_t d = 0; d < s.rank; ++d)
        if (d != dim) edit("along dim " + std::to_string(d) + " instead of " + std::to_string(dim), "dim", d);
    }
    const std::string& group = ir::attrStr(n.attrs, "group");
    for (const auto& g : groups)
      if (g != group) edit("over group " + g + " instead of " + group, "group", g);
  }
  return out;
}

// A sum over a group the explanation found missing, inserted after a D
// value the failure names (on every rank that holds it, its users reading
// the sum). `closest` holds "r<rank>:<name>" entries.
std::vector<Candidate> insertions(const ir::Program& dist, const std::vector<std::string>& closest,
                                  const std::vector<std::string>& groups) {
  std::vector<std::string> names;
  for (const auto& c : closest) {
    auto colon = c.find(':');
    if (colon == std::string::npos) continue;
    std::string n = c.substr(colon + 1);
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::vector<Candidate> out;
  for (const auto& name : names) {
    std::string where;
    for (int64_t r = 0; r < dist.worldSize() && where.empty(); ++r) {
      const ir::Graph& g = dist.rank(r);
      auto v = g.findValue(name);
      if (v && g.value(*v).producer >= 0 && !g.node(g.value(*v).producer).loc.empty())
        where = " (" + g.node(g.value(*v).producer).loc.str() + ")";
    }
    std::vector<size_t> holders;  // ranks holding a float `name`
    for (int64_t r = 0; r < dist.worldSize(); ++r) {
      const ir::Graph& g = dist.rank(r);
      auto v = g.findValue(name);
      if (v && ir::isFloat(g.value(*v).type.dtype)) holders.push_back(size_t(r));
    }
    if (holders.empty()) continue;
    for (const auto& group : groups)
      out.push_back(Candidate{"an all_reduce over group " + group + " inserted after '" + name + "'" + where,
                              [holders, name, group](ir::ProgramSpec& spec) {
                                for (size_t r : holders) {
                                  ir::GraphSpec& gs = spec.ranks[r];
                                  std::string summed = gs.freshName(name + "_sum");
                                  gs.renameUses(name, summed);
                                  gs.nodes.push_back({ir::OpKind::AllReduce, {}, {name}, {summed},
                                                      {{"group", group}, {"reduce", std::string("sum")}}, {}});
                                }
                              }});
  }
  return out;
}

}  // namespace

std::optional<std::string> searchRepair(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                                        const VerifyOptions& opts, const Failure& failure, double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  auto left = [&] { return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  VerifyOptions sub = opts;
  sub.witnessWorkLimit = 0;  // relations only: a repair must verify
  sub.witnessProgress = nullptr;
  sub.progress = nullptr;
  sub.repairSeconds = 0;
  const ir::ProgramSpec base = ir::toSpec(dist);
  std::vector<Candidate> all = insertions(dist, failure.closestDist, failure.missingSumGroups);
  for (auto& c : candidates(dist, base)) all.push_back(std::move(c));
  // Each edited program is built when it is tried and dropped after: all
  // of them at once would hold a copy of D per candidate (gigabytes for a
  // training step with a few hundred collective edits).
  std::vector<bool> illFormed(all.size(), false);
  // First every candidate by rank folding alone (a correct edit of an SPMD
  // program folds in milliseconds, a wrong one is dropped as fast), then,
  // with the time left, the per-rank engine on each (an edit may verify
  // only per rank: ranks of different sizes, reductions folding lacks),
  // each at most an eighth of the budget: a correct edit verifies about as
  // fast as the program would, a wrong one may spend its e-graph budgets
  // before giving up.
  for (bool perRank : {false, true}) {
    if (!perRank && !opts.fold) continue;
    sub.perRank = perRank;
    for (size_t i = 0; i < all.size() && left() > 0; ++i) {
      if (illFormed[i]) continue;
      ir::ProgramSpec spec = base;
      all[i].edit(spec);
      auto built = ir::buildProgram(spec);
      if (!built.ok()) {  // ill-formed under this edit
        illFormed[i] = true;
        continue;
      }
      sub.timeLimitSeconds = perRank ? std::min(left(), seconds / 8) : left();
      auto r = verify(seq, *built, rel, sub);
      if (r.ok() && r->verdict == Verdict::Verified) return all[i].what;
    }
  }
  return std::nullopt;
}

}  // namespace sp::rewrite
