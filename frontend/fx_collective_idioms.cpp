#include "frontend/fx_collective_idioms.h"

#include <map>

#include "ir/program_edit.h"

namespace sp::frontend {

namespace {

using ir::OpKind;

// The node producing each value of the spec.
std::map<std::string, size_t> producers(const ir::GraphSpec& s) {
  std::map<std::string, size_t> m;
  for (size_t i = 0; i < s.nodes.size(); ++i)
    for (const auto& o : s.nodes[i].outputs) m[o] = i;
  return m;
}

int64_t axisOf(const ir::Graph& g, const ir::NodeSpec& n, const std::string& attr, const std::string& value) {
  auto v = g.findValue(value);
  if (!v || !n.attrs.count(attr)) return n.attrs.count(attr) ? -1 : 0;  // the attribute's default is 0
  auto a = ir::normAxis(ir::attrInt(n.attrs, attr), int64_t(g.value(*v).type.shape.size()), attr);
  return a.ok() ? *a : -1;
}

// `parts` are all the outputs of one split node, in order, splitting its
// input along dim 0 (or `dim`) into pieces of one size `k`: that node.
std::optional<size_t> wholeSplit(const ir::Graph& g, const ir::GraphSpec& s, const std::map<std::string, size_t>& prod,
                                 const std::vector<std::string>& parts, int64_t dim, int64_t k) {
  if (parts.empty()) return std::nullopt;
  auto it = prod.find(parts[0]);
  if (it == prod.end()) return std::nullopt;
  const ir::NodeSpec& sp = s.nodes[it->second];
  if (sp.op != OpKind::Split || sp.inputs.size() != 1 || sp.outputs != parts) return std::nullopt;
  if (axisOf(g, sp, "axis", sp.inputs[0]) != dim || !sp.attrs.count("sizes")) return std::nullopt;
  for (int64_t z : ir::attrInts(sp.attrs, "sizes"))
    if (z != k) return std::nullopt;
  return it->second;
}

}  // namespace

Result<ir::Program> fuseDimCollectives(const ir::Program& p, int64_t* fused) {
  int64_t count = 0;
  ir::ProgramSpec spec = ir::toSpecShared(p);
  for (size_t r = 0; r < spec.ranks.size(); ++r) {
    if (!spec.sameAs.empty() && spec.sameAs[r] != int64_t(r)) continue;
    ir::GraphSpec& s = spec.ranks[r];
    const ir::Graph& g = p.rank(int64_t(r));
    const std::vector<int64_t>& cls = p.classRanks(p.classOf(int64_t(r)));
    // The group's size on every rank the spec stands for, when one.
    auto groupSize = [&](const std::string& group) -> std::optional<int64_t> {
      std::optional<int64_t> n;
      for (int64_t m : cls) {
        auto members = p.groupOf(group, m);
        if (!members.ok() || (n && *n != int64_t(members->size()))) return std::nullopt;
        n = int64_t(members->size());
      }
      return n;
    };
    auto shapeOf = [&](const std::string& v) -> std::optional<ir::Shape> {
      auto id = g.findValue(v);
      if (!id) return std::nullopt;
      return g.value(*id).type.shape;
    };
    const auto prod = producers(s);
    for (auto& n : s.nodes) {
      if (n.op == OpKind::Concat && n.outputs.size() == 1) {
        // gather: cat(split(all_gather(x, dim 0), x.shape[0]), d)
        auto first = prod.find(n.inputs.empty() ? "" : n.inputs[0]);
        if (first == prod.end()) continue;
        const ir::NodeSpec& sp = s.nodes[first->second];
        if (sp.op != OpKind::Split || sp.inputs.size() != 1) continue;
        auto gi = prod.find(sp.inputs[0]);
        // (through wait_tensor, an identity)
        while (gi != prod.end() && s.nodes[gi->second].op == OpKind::Identity && s.nodes[gi->second].inputs.size() == 1)
          gi = prod.find(s.nodes[gi->second].inputs[0]);
        if (gi == prod.end()) continue;
        const ir::NodeSpec& ag = s.nodes[gi->second];
        if (ag.op != OpKind::AllGather || ag.inputs.size() != 1 || axisOf(g, ag, "dim", ag.inputs[0]) != 0) continue;
        auto xs = shapeOf(ag.inputs[0]);
        auto size = groupSize(ir::attrStr(ag.attrs, "group"));
        if (!xs || xs->empty() || !(*xs)[0].isConcrete() || !size || int64_t(n.inputs.size()) != *size) continue;
        if (!wholeSplit(g, s, prod, n.inputs, 0, (*xs)[0].value())) continue;
        const int64_t d = axisOf(g, n, "axis", n.inputs[0]);
        if (d < 0) continue;
        ir::AttrMap a = ag.attrs;
        a["dim"] = d;
        n = ir::NodeSpec{OpKind::AllGather, n.name, {ag.inputs[0]}, n.outputs, a, n.loc};
        ++count;
      } else if (n.op == OpKind::ReduceScatter && n.inputs.size() == 1) {
        // scatter: reduce_scatter(cat(split(x, x.shape[d] / n, d), 0), dim 0)
        if (axisOf(g, n, "dim", n.inputs[0]) != 0) continue;
        auto ci = prod.find(n.inputs[0]);
        if (ci == prod.end()) continue;
        const ir::NodeSpec& cat = s.nodes[ci->second];
        if (cat.op != OpKind::Concat || cat.inputs.empty() || axisOf(g, cat, "axis", cat.inputs[0]) != 0) continue;
        auto size = groupSize(ir::attrStr(n.attrs, "group"));
        if (!size || int64_t(cat.inputs.size()) != *size) continue;
        auto si = prod.find(cat.inputs[0]);
        if (si == prod.end() || s.nodes[si->second].op != OpKind::Split || s.nodes[si->second].inputs.size() != 1) continue;
        const std::string x = s.nodes[si->second].inputs[0];
        const int64_t d = axisOf(g, s.nodes[si->second], "axis", x);
        auto xs = shapeOf(x);
        if (d < 0 || !xs || !(*xs)[size_t(d)].isConcrete() || (*xs)[size_t(d)].value() % *size) continue;
        if (!wholeSplit(g, s, prod, cat.inputs, d, (*xs)[size_t(d)].value() / *size)) continue;
        n.inputs = {x};
        n.attrs["dim"] = d;
        ++count;
      }
    }
  }
  if (fused) *fused = count;
  if (count == 0) return p;
  return ir::buildProgram(spec);
}

}  // namespace sp::frontend
