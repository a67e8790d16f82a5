// Semantics-preserving rewrites of D: the verifier must never refute these.
#include <algorithm>
#include <map>
#include <set>

#include "tests/mutate/sites.h"

namespace sp::mutate {
namespace {

using ir::OpKind;

// v = op(...)  ->  v' = op(...); v = identity(v')
void insertIdentity(const ProgramSpec& base, const std::vector<Site>& all, Sink& sink) {
  for (const Site& site : all) {
    ProgramSpec s = base;
    bool any = false;
    for (auto [r, i] : site.at) {
      GraphSpec& g = s.ranks[r];
      if (g.nodes[i].outputs.empty()) continue;
      std::string v = g.nodes[i].outputs[0], pre = g.freshName(v);
      g.nodes[i].outputs[0] = pre;
      g.nodes.push_back({OpKind::Identity, {}, {pre}, {v}, {}});
      any = true;
    }
    if (any) sink.add("insert-identity", "identity after '" + site.key + "' on ranks " + site.ranks(), true, s);
  }
}

// The first node reading v reads dup = identity(v) instead.
void duplicateValue(const ProgramSpec& base, const std::vector<Site>& all, Sink& sink) {
  for (const Site& site : all) {
    ProgramSpec s = base;
    bool any = false;
    for (auto [r, i] : site.at) {
      GraphSpec& g = s.ranks[r];
      if (g.nodes[i].outputs.empty()) continue;
      std::string v = g.nodes[i].outputs[0];
      for (auto& n : g.nodes) {
        auto it = std::find(n.inputs.begin(), n.inputs.end(), v);
        if (it == n.inputs.end()) continue;
        std::string dup = g.freshName(v);
        *it = dup;
        g.nodes.push_back({OpKind::Identity, {}, {v}, {dup}, {}});
        any = true;
        break;
      }
    }
    if (any) sink.add("duplicate-value", "a user of '" + site.key + "' reads an identity copy on ranks " +
                      site.ranks(), true, s);
  }
}

void commuteOperands(const ProgramSpec& base, const std::vector<Site>& all, Sink& sink) {
  for (const Site& site : all) {
    if (site.op != OpKind::Add && site.op != OpKind::Mul && site.op != OpKind::Max && site.op != OpKind::Min)
      continue;
    ProgramSpec s = base;
    for (auto [r, i] : site.at) std::swap(s.ranks[r].nodes[i].inputs[0], s.ranks[r].nodes[i].inputs[1]);
    sink.add("commute-operands", std::string(ir::opName(site.op)) + " '" + site.key +
             "' operands swapped on ranks " + site.ranks(), true, s);
  }
}

// all_reduce(x) -> reduce over dim 0 of all_gather(unsqueeze(x, 0), dim 0).
void allReduceViaAllGather(const ProgramSpec& base, const std::vector<Site>& all, Sink& sink) {
  static const std::map<std::string, OpKind> kReduce = {
      {"sum", OpKind::ReduceSum}, {"avg", OpKind::ReduceMean}, {"max", OpKind::ReduceMax}, {"min", OpKind::ReduceMin}};
  for (const Site& site : all) {
    if (site.op != OpKind::AllReduce) continue;
    ProgramSpec s = base;
    std::string mode;
    for (auto [r, i] : site.at) {
      GraphSpec& g = s.ranks[r];
      NodeSpec n = g.nodes[i];
      mode = std::get<std::string>(n.attrs.at("reduce"));
      std::string u = g.freshName(n.outputs[0] + "_u"), ga = g.freshName(n.outputs[0] + "_g");
      ir::AttrMap gather = {{"group", n.attrs.at("group")}, {"dim", int64_t(0)}};
      ir::AttrMap red = {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(0)}};
      g.nodes[i] = {OpKind::Unsqueeze, {}, n.inputs, {u}, {{"axes", std::vector<int64_t>{0}}}};
      g.nodes.push_back({OpKind::AllGather, {}, {u}, {ga}, gather});
      g.nodes.push_back({kReduce.at(mode), n.name, {ga}, n.outputs, red});
    }
    sink.add("allreduce-via-allgather", "all_reduce '" + site.key + "' (" + mode +
             ") as all_gather + reduce on ranks " + site.ranks(), true, s);
  }
}

// Swap two adjacent independent non-collective nodes in declaration order.
void permuteNodes(const ProgramSpec& base, Sink& sink) {
  std::set<std::pair<std::string, std::string>> done;
  auto key = [](const NodeSpec& n) { return n.outputs.empty() ? n.name : n.outputs[0]; };
  auto independent = [](const NodeSpec& a, const NodeSpec& b) {
    for (const auto& o : a.outputs)
      if (std::find(b.inputs.begin(), b.inputs.end(), o) != b.inputs.end()) return false;
    return !isCollective(a.op) && !isCollective(b.op);
  };
  for (const GraphSpec& g0 : base.ranks) {
    for (size_t i = 0; i + 1 < g0.nodes.size(); ++i) {
      if (!independent(g0.nodes[i], g0.nodes[i + 1])) continue;
      std::pair<std::string, std::string> k{key(g0.nodes[i]), key(g0.nodes[i + 1])};
      if (!done.insert(k).second) continue;
      ProgramSpec s = base;
      for (GraphSpec& g : s.ranks)
        for (size_t j = 0; j + 1 < g.nodes.size(); ++j)
          if (key(g.nodes[j]) == k.first && key(g.nodes[j + 1]) == k.second && independent(g.nodes[j], g.nodes[j + 1]))
            std::swap(g.nodes[j], g.nodes[j + 1]);
      sink.add("permute-nodes", "'" + k.second + "' scheduled before '" + k.first + "'", true, s);
    }
  }
}

}  // namespace

void addPreservingMutants(const ir::Program& dist, Sink& sink) {
  ProgramSpec base = toSpec(dist);
  std::vector<Site> all = sites(base);
  insertIdentity(base, all, sink);
  duplicateValue(base, all, sink);
  commuteOperands(base, all, sink);
  allReduceViaAllGather(base, all, sink);
  permuteNodes(base, sink);
}

}  // namespace sp::mutate
