#include "ir/training_step.h"

#include <map>
#include <set>

#include "ir/program_edit.h"

namespace sp::ir {

namespace {

bool isTangent(const std::string& name) { return name.rfind("tangents_", 0) == 0; }

std::string where(const Graph& g) { return "'" + g.name() + "'"; }

// The joined spec of one rank (or of S). fw and bw are built graphs, so their
// value types are known; the spec is rebuilt (and so re-checked) by the caller.
Result<GraphSpec> joinSpec(const Graph& fw, const Graph& bw) {
  if (!bw.params().empty())
    return makeError("training-step", "backward graph " + where(bw) + " has parameters ('" +
                                          bw.value(bw.params().front()).name +
                                          "'): AOTAutograd's backward takes only saved tensors and tangents");
  const auto& bin = bw.inputs();
  size_t saved = 0;
  while (saved < bin.size() && !isTangent(bw.value(bin[saved]).name)) ++saved;
  for (size_t i = saved; i < bin.size(); ++i)
    if (!isTangent(bw.value(bin[i]).name))
      return makeError("training-step", "backward graph " + where(bw) + ": input '" + bw.value(bin[i]).name +
                                            "' follows the tangents; AOTAutograd puts saved tensors first, then "
                                            "tangents_1, tangents_2, ...");
  const size_t tangents = bin.size() - saved;
  const auto& fout = fw.outputs();
  if (saved > fout.size())
    return makeError("training-step", "backward graph " + where(bw) + " takes " + std::to_string(saved) +
                                          " saved tensors, but the forward " + where(fw) + " has only " +
                                          std::to_string(fout.size()) + " outputs");
  const size_t user = fout.size() - saved;
  if (tangents > user)
    return makeError("training-step", "backward graph " + where(bw) + " takes " + std::to_string(tangents) +
                                          " tangents, but the forward " + where(fw) + " has " +
                                          std::to_string(user) + " user outputs (" + std::to_string(fout.size()) +
                                          " outputs, " + std::to_string(saved) + " saved for backward)");
  for (size_t i = 0; i < saved; ++i) {
    const Value& f = fw.value(fout[user + i]);
    const Value& b = bw.value(bin[i]);
    if (!(f.type == b.type))
      return makeError("training-step", "saved tensor " + std::to_string(i) + ": the forward " + where(fw) +
                                            " returns '" + f.name + "' " + f.type.str() + ", the backward " +
                                            where(bw) + " takes '" + b.name + "' " + b.type.str());
  }

  GraphSpec out = graphSpec(fw);
  out.outputs.resize(user);
  std::set<std::string> used;
  for (const auto& l : out.leaves) used.insert(l.name);
  for (const auto& n : out.nodes) used.insert(n.outputs.begin(), n.outputs.end());
  std::map<std::string, std::string> rename;  // bw value -> joined value
  auto fresh = [&](const std::string& name) {
    std::string cand = used.count(name) ? "bw_" + name : name;
    for (int i = 2; used.count(cand); ++i) cand = "bw_" + name + "_" + std::to_string(i);
    used.insert(cand);
    return cand;
  };
  for (size_t i = 0; i < saved; ++i) rename[bw.value(bin[i]).name] = fw.value(fout[user + i]).name;
  for (size_t i = saved; i < bin.size(); ++i) {
    const Value& t = bw.value(bin[i]);
    rename[t.name] = fresh(t.name);
    out.leaves.push_back({rename[t.name], t.type, false, std::nullopt});
  }
  // Gradients named after the forward inputs they belong to.
  std::map<std::string, std::string> gradName;
  const auto& bout = bw.outputs();
  if (bout.size() == fw.inputs().size() + fw.params().size()) {
    std::vector<ValueId> leaves = fw.inputs();
    leaves.insert(leaves.end(), fw.params().begin(), fw.params().end());
    std::set<std::string> seen;
    for (size_t i = 0; i < bout.size(); ++i) {
      const Value& v = bw.value(bout[i]);
      if (v.kind == ValueKind::NodeOutput && seen.insert(v.name).second)
        gradName[v.name] = "grad_" + fw.value(leaves[i]).name;
    }
  }
  GraphSpec b = graphSpec(bw);
  for (auto& n : b.nodes) {
    for (auto& o : n.outputs) {
      auto g = gradName.find(o);
      rename[o] = g != gradName.end() && !used.count(g->second) ? (used.insert(g->second), g->second) : fresh(o);
    }
    for (auto& in : n.inputs) in = rename.at(in);
    for (auto& o : n.outputs) o = rename.at(o);
    if (!n.name.empty()) n.name = "bw_" + n.name;
    out.nodes.push_back(std::move(n));
  }
  for (const auto& o : b.outputs) out.outputs.push_back(rename.at(o));
  return out;
}

}  // namespace

Result<Graph> joinTrainingStep(const Graph& fw, const Graph& bw) {
  SP_ASSIGN(GraphSpec spec, joinSpec(fw, bw));
  return buildGraph(spec);
}

Result<Program> joinTrainingStep(const Program& fw, const Program& bw) {
  if (fw.worldSize() != bw.worldSize())
    return makeError("training-step", "the forward program has " + std::to_string(fw.worldSize()) +
                                          " ranks, the backward " + std::to_string(bw.worldSize()));
  auto axes = [](const Mesh& m) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& a : m.axes) out.emplace_back(a.name, a.size);
    return out;
  };
  if (axes(fw.mesh()) != axes(bw.mesh()))
    return makeError("training-step", "the forward and backward programs have different meshes");
  ProgramSpec s;
  s.worldSize = fw.worldSize();
  s.mesh = fw.mesh();
  s.groups = fw.namedGroups();
  s.ranks.resize(size_t(fw.worldSize()));
  s.sameAs.assign(size_t(fw.worldSize()), -1);
  for (const auto& [name, members] : bw.namedGroups()) {
    auto it = s.groups.find(name);
    if (it != s.groups.end() && !(it->second == members))
      return makeError("training-step", "group '" + name + "' differs between the forward and backward programs");
    s.groups.emplace(name, members);
  }
  // Once per pair of forward and backward graphs: ranks that run both
  // alike share the step.
  std::map<std::pair<const Graph*, const Graph*>, int64_t> done;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    auto [it, fresh] = done.try_emplace({&fw.rank(int64_t(r)), &bw.rank(int64_t(r))}, int64_t(r));
    s.sameAs[r] = it->second;
    if (!fresh) continue;
    auto joined = joinSpec(fw.rank(int64_t(r)), bw.rank(int64_t(r)));
    if (!joined) return makeError(joined.error().id, "rank " + std::to_string(r) + ": " + joined.error().message);
    s.ranks[r] = std::move(*joined);
  }
  return buildProgram(s);
}

}  // namespace sp::ir
