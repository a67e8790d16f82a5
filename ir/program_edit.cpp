#include "ir/program_edit.h"

#include <set>

namespace sp::ir {

int GraphSpec::producer(const std::string& v) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].outputs)
      if (o == v) return int(i);
  return -1;
}

void GraphSpec::renameUses(const std::string& from, const std::string& to) {
  for (auto& n : nodes)
    for (auto& in : n.inputs)
      if (in == from) in = to;
  for (auto& o : outputs)
    if (o == from) o = to;
}

std::string GraphSpec::freshName(const std::string& base) const {
  std::set<std::string> used;
  for (const auto& l : leaves) used.insert(l.name);
  for (const auto& n : nodes) used.insert(n.outputs.begin(), n.outputs.end());
  for (int i = 0;; ++i) {
    std::string cand = base + "__m" + std::to_string(i);
    if (!used.count(cand)) return cand;
  }
}

GraphSpec graphSpec(const Graph& g) {
  GraphSpec gs;
  gs.name = g.name();
  auto addLeaf = [&](ValueId v, bool isParam) {
    const Tensor* data = isParam ? g.paramData(v) : nullptr;
    gs.leaves.push_back({g.value(v).name, g.value(v).type, isParam,
                         data ? std::optional<Tensor>(*data) : std::nullopt});
  };
  for (ValueId v : g.inputs()) addLeaf(v, false);
  for (ValueId v : g.params()) addLeaf(v, true);
  for (const Node& n : g.nodes()) {
    NodeSpec ns{n.op, {}, {}, {}, n.attrs, n.loc};
    for (ValueId v : n.inputs) ns.inputs.push_back(g.value(v).name);
    for (ValueId v : n.outputs) ns.outputs.push_back(g.value(v).name);
    if (ns.outputs.empty() || n.name != ns.outputs[0]) ns.name = n.name;
    gs.nodes.push_back(std::move(ns));
  }
  for (ValueId v : g.outputs()) gs.outputs.push_back(g.value(v).name);
  return gs;
}

namespace {
ProgramSpec withoutRanks(const Program& p) {
  ProgramSpec s;
  s.worldSize = p.worldSize();
  s.mesh = p.mesh();
  s.groups = p.namedGroups();
  return s;
}
}  // namespace

ProgramSpec toSpec(const Program& p) {
  ProgramSpec s = withoutRanks(p);
  for (int64_t r = 0; r < p.worldSize(); ++r) s.ranks.push_back(graphSpec(p.rank(r)));
  return s;
}

ProgramSpec toSpecShared(const Program& p) {
  ProgramSpec s = withoutRanks(p);
  s.ranks.resize(size_t(p.worldSize()));
  s.sameAs.resize(size_t(p.worldSize()));
  for (int64_t c = 0; c < p.numClasses(); ++c) {
    const auto& rs = p.classRanks(c);
    s.ranks[size_t(rs[0])] = graphSpec(p.classGraph(c));
    for (int64_t r : rs) s.sameAs[size_t(r)] = rs[0];
  }
  return s;
}

namespace {

Result<GraphBuilder> builder(const GraphSpec& gs) {
  GraphBuilder gb(gs.name);
  for (const auto& l : gs.leaves) {
    if (l.isParam) SP_TRY(gb.addParam(l.name, l.type, l.data));
    else SP_TRY(gb.addInput(l.name, l.type));
  }
  for (const auto& n : gs.nodes) SP_TRY(gb.addNode(n.op, n.inputs, n.outputs, n.attrs, n.loc, n.name));
  for (const auto& o : gs.outputs) SP_TRY(gb.addOutput(o));
  return gb;
}

}  // namespace

Result<Graph> buildGraph(const GraphSpec& s) {
  SP_ASSIGN(GraphBuilder gb, builder(s));
  return std::move(gb).finish();
}

Result<Program> buildProgram(const ProgramSpec& s) {
  ProgramBuilder pb(s.worldSize, s.mesh);
  for (const auto& [name, members] : s.groups) SP_TRY(pb.addGroup(name, members));
  if (s.sameAs.empty()) {
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      SP_ASSIGN(GraphBuilder gb, builder(s.ranks[r]));
      SP_TRY(pb.setRank(int64_t(r), std::move(gb)));
    }
    return std::move(pb).finish();
  }
  if (s.sameAs.size() != s.ranks.size()) return makeError("bad-spec", "sameAs has another length than ranks");
  std::map<int64_t, std::vector<int64_t>> byRep;
  for (size_t r = 0; r < s.sameAs.size(); ++r) {
    int64_t rep = s.sameAs[r];
    if (rep < 0 || rep >= int64_t(s.ranks.size()) || s.sameAs[size_t(rep)] != rep)
      return makeError("bad-spec", "rank " + std::to_string(r) + " shares the spec of rank " + std::to_string(rep) +
                                       ", which has none of its own");
    byRep[rep].push_back(int64_t(r));
  }
  for (const auto& [rep, ranks] : byRep) {
    SP_ASSIGN(GraphBuilder gb, builder(s.ranks[size_t(rep)]));
    SP_TRY(pb.setRanks(ranks, std::move(gb)));
  }
  return std::move(pb).finish();
}

std::vector<std::string> groupNames(const ProgramSpec& s) {
  std::vector<std::string> out;
  std::string all;
  for (const auto& a : s.mesh.axes) {
    out.push_back(a.name);
    all += (all.empty() ? "" : "+") + a.name;
  }
  if (s.mesh.axes.size() >= 2) out.push_back(all);
  for (const auto& [name, members] : s.groups) out.push_back(name);
  return out;
}

}  // namespace sp::ir
