// Repair search: when D is refuted, single edits under which D verifies: an
// all_reduce inserted after a D value the failure names, a reduce_scatter in
// place of a slice of the partial sums it names, or one attribute
// of one collective changed (on every rank that has it). A repair found is a fact
// about the edited program (it is verified, by the same verifier), given to
// the user as the likely fix next to the failure.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "ir/program_edit.h"
#include "rewrite/engine/engine.h"
#include "rewrite/verify/verify.h"

namespace sp::rewrite {

namespace {

struct Candidate {
  std::string what;  // "all_reduce 'se' (loc) reducing with sum instead of avg"
  std::function<void(ir::ProgramSpec&)> edit;  // applied to D's spec when the candidate is tried
};

// The value names of D tensors, each once, in order.
std::vector<std::string> namesOf(const std::vector<DistRef>& refs) {
  std::vector<std::string> names;
  for (const auto& c : refs)
    if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
  return names;
}

// The D value names an edit of a collective can bear on: the values the
// failure names and, on every rank, what they are computed from (a
// collective's inputs on all of its ranks, names being shared by the
// ranks' graphs, which over-approximates), plus the outputs of the first
// collectives downstream of them on each path (the engine may relate a
// value only through a later sum: a masked vocab-parallel gather stays
// pending until its all_reduce, which may be the fault). An edit of a
// collective none of whose outputs is among them changes only values the
// failure does not read. Empty `seeds`: no pruning (nullopt).
std::optional<std::set<std::string>> relevantNames(const ir::Program& dist, const std::vector<std::string>& seeds) {
  if (seeds.empty()) return std::nullopt;
  auto isCollective = [](const ir::Node& n) { return ir::opInfo(n.op).category == ir::OpCategory::Collective; };
  std::vector<const ir::Graph*> graphs;  // each rank class's once
  for (int64_t r = 0; r < dist.worldSize(); ++r)
    if (std::find(graphs.begin(), graphs.end(), &dist.rank(r)) == graphs.end()) graphs.push_back(&dist.rank(r));
  std::set<std::string> in(seeds.begin(), seeds.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (const ir::Graph* gp : graphs) {
      const ir::Graph& g = *gp;
      for (size_t i = g.nodes().size(); i-- > 0;) {
        const ir::Node& n = g.nodes()[i];
        bool feeds = std::any_of(n.outputs.begin(), n.outputs.end(),
                                 [&](ir::ValueId o) { return in.count(g.value(o).name) > 0; });
        if (!feeds) continue;
        for (ir::ValueId u : n.inputs) changed = in.insert(g.value(u).name).second || changed;
      }
    }
  }
  std::set<std::string> out = in;
  for (const ir::Graph* gp : graphs) {
    const ir::Graph& g = *gp;
    std::vector<bool> seen(g.values().size(), false);
    std::vector<ir::ValueId> work;
    for (const auto& name : seeds)
      if (auto v = g.findValue(name)) {
        seen[size_t(*v)] = true;
        work.push_back(*v);
      }
    while (!work.empty()) {
      ir::ValueId x = work.back();
      work.pop_back();
      for (ir::NodeId u : g.users(x)) {
        const ir::Node& n = g.node(u);
        for (ir::ValueId o : n.outputs) {
          if (isCollective(n)) {
            out.insert(g.value(o).name);
            continue;
          }
          if (!seen[size_t(o)]) {
            seen[size_t(o)] = true;
            work.push_back(o);
          }
        }
      }
    }
  }
  return out;
}

// Edits of every collective that keep the program well-formed in most
// cases (the builder rejects the rest): another reduce mode, another dim,
// another group. In program order of the first rank holding the node.
// With `relevant`, only collectives with an output among them.
std::vector<Candidate> candidates(const ir::Program& dist, const ir::ProgramSpec& base,
                                  const std::optional<std::set<std::string>>& relevant) {
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
      if (relevant && std::none_of(n.outputs.begin(), n.outputs.end(),
                                   [&](ir::ValueId o) { return relevant->count(g.value(o).name) > 0; }))
        continue;
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
// the sum).
std::vector<Candidate> insertions(const ir::Program& dist, const std::vector<std::string>& names,
                                  const std::vector<std::string>& groups) {
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
                                  ir::AttrMap attrs{{"group", group}, {"reduce", std::string("sum")}};
                                  int p = gs.producer(name);
                                  if (p < 0) {  // an input: its users (and the outputs) read the sum
                                    std::string summed = gs.freshName(name + "_sum");
                                    gs.renameUses(name, summed);
                                    gs.nodes.push_back({ir::OpKind::AllReduce, {}, {name}, {summed}, attrs, {}});
                                    continue;
                                  }
                                  // Computed: the sum takes its name (an output stays the
                                  // output the relations name), the partial a fresh one.
                                  std::string partial = gs.freshName(name + "_partial");
                                  for (auto& out : gs.nodes[size_t(p)].outputs)
                                    if (out == name) out = partial;
                                  gs.nodes.push_back({ir::OpKind::AllReduce, {}, {partial}, {name}, attrs, {}});
                                }
                              }});
  }
  return out;
}

// A reduce_scatter over a group the explanation found missing, in place of
// a slice that cuts a rank's own block out of the partial sums `names` (on
// every rank slicing one of them along one dim to 1/|G| of its extent, at
// any offset): the sequence-parallel reduce-scatter written as "take my
// rows" without the sum.
std::vector<Candidate> scatterSlices(const ir::Program& dist, const std::vector<std::string>& names,
                                     const std::vector<std::string>& groups) {
  std::vector<Candidate> out;
  for (const auto& group : groups) {
    // (slice node name) -> its (rank, node index) sites and dim
    std::map<std::string, std::pair<std::vector<std::pair<size_t, size_t>>, int64_t>> sites;
    std::vector<std::string> order;
    std::string where;
    for (int64_t r = 0; r < dist.worldSize(); ++r) {
      const ir::Graph& g = dist.rank(r);
      auto size = dist.groupOf(group, r);
      if (!size.ok()) continue;
      const int64_t n = int64_t(size->size());
      for (size_t i = 0; i < g.nodes().size(); ++i) {
        const ir::Node& node = g.nodes()[i];
        if (node.op != ir::OpKind::Slice || n < 2) continue;
        const ir::Value& in = g.value(node.inputs[0]);
        if (std::find(names.begin(), names.end(), in.name) == names.end()) continue;
        const ir::Shape& from = in.type.shape;
        const ir::Shape& to = g.value(node.outputs[0]).type.shape;
        if (from.size() != to.size() || !ir::isConcrete(from) || !ir::isConcrete(to)) continue;
        int64_t dim = -1, cut = 0;
        for (size_t d = 0; d < from.size(); ++d)
          if (from[d].value() != to[d].value()) {
            dim = int64_t(d);
            ++cut;
          }
        if (cut != 1 || to[size_t(dim)].value() * n != from[size_t(dim)].value()) continue;
        auto [it, fresh] = sites.try_emplace(node.name, std::make_pair(std::vector<std::pair<size_t, size_t>>{}, dim));
        if (fresh) {
          order.push_back(node.name);
          if (!node.loc.empty() && where.empty()) where = " (" + node.loc.str() + ")";
        }
        if (it->second.second == dim) it->second.first.emplace_back(size_t(r), i);
      }
    }
    for (const auto& name : order) {
      // Named copies, not structured bindings: the lambda captures them
      // (clang 14, the fuzz and sanitizer builds, rejects captured bindings).
      const std::vector<std::pair<size_t, size_t>> at = sites.at(name).first;
      const int64_t dim = sites.at(name).second;
      out.push_back(Candidate{"a reduce_scatter over group " + group + " along dim " + std::to_string(dim) +
                                  " in place of slice '" + name + "'" + where,
                              [at, dim, group](ir::ProgramSpec& spec) {
                                for (auto [r, i] : at) {
                                  ir::NodeSpec& n = spec.ranks[r].nodes[i];
                                  n.op = ir::OpKind::ReduceScatter;
                                  n.attrs = ir::AttrMap{{"group", group}, {"dim", dim}, {"reduce", std::string("sum")}};
                                }
                              }});
    }
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
  // Sums first where the partial sums began, then after the values the
  // failure names; then edits of the collectives those values depend on.
  std::vector<DistRef> origins = failure.sumOrigins;
  origins.insert(origins.end(), failure.closestDist.begin(), failure.closestDist.end());
  std::vector<std::string> named = namesOf(origins);
  // A slice of the partial sums replaced by the reduce_scatter first (the
  // more specific edit, where there is such a slice), then sums inserted.
  std::vector<Candidate> all = scatterSlices(dist, namesOf(failure.sumOrigins), failure.missingSumGroups);
  for (auto& c : insertions(dist, named, failure.missingSumGroups)) all.push_back(std::move(c));
  for (auto& c : candidates(dist, base, relevantNames(dist, named))) all.push_back(std::move(c));
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
  // After a localization by folding the per-rank phase is skipped: the
  // whole program folded, and so does any edit of one collective of it.
  for (bool perRank : {false, true}) {
    if (!perRank && !opts.fold) continue;
    if (perRank && failure.foldLocalized && opts.fold) continue;
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
      auto tc = std::chrono::steady_clock::now();
      auto r = verify(seq, *built, rel, sub);
      if (spdlog::should_log(spdlog::level::debug))  // the outcome's text only when it is shown
        spdlog::debug("repair: {} ({}): {} in {:.3f} s", all[i].what, perRank ? "per rank" : "folded",
                      !r.ok() ? r.error().str()
                      : r->verdict == Verdict::Verified
                          ? "verified"
                          : std::string(verdictName(r->verdict)) + ": " + (r->failure ? r->failure->message : r->reason),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - tc).count());
      if (r.ok() && r->verdict == Verdict::Verified) return all[i].what;
    }
  }
  return std::nullopt;
}

}  // namespace sp::rewrite
