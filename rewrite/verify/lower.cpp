// Lowering of D: collective matching across ranks and per-node equations.
#include "rewrite/verify/lower.h"

#include <cmath>
#include <deque>
#include <set>
#include <tuple>

#include "ir/collective_order.h"
#include "ir/collectives.h"
#include "ir/text.h"

namespace sp::rewrite {

namespace {

std::string where(const ir::Program& p, int64_t r, ir::NodeId n) {
  const auto& node = p.rank(r).node(n);
  return "rank " + std::to_string(r) + ": " + std::string(ir::opName(node.op)) + " '" + node.name + "'";
}

}  // namespace

// Matching comes from the one module that orders blocking communication
// (ir/collective_order.h), which the interpreter's scheduler uses too: a D
// that can hang is an error (`deadlock`, with the cycle of waiting ranks)
// before any equation is built.
Result<DistModel> lowerProgram(const ir::Program& p) {
  DistModel m;
  m.prog = &p;
  size_t world = size_t(p.worldSize());
  m.collOf.resize(world);
  m.recvFrom.resize(world);
  m.sendTo.resize(world);
  m.outputs.resize(world);
  SP_ASSIGN(ir::CollectiveOrder order, ir::orderCollectives(p));
  m.zeros.resize(world);
  // What depends only on a rank's graph is found once per rank class.
  std::vector<std::vector<ir::NodeId>> classSources(size_t(p.numClasses()));
  for (int64_t c = 0; c < p.numClasses(); ++c) {
    const ir::Graph& g = p.classGraph(c);
    std::set<ir::ValueId> zeros, outputs(g.outputs().begin(), g.outputs().end());
    std::vector<ir::NodeId> sources;
    for (ir::NodeId n = 0; n < ir::NodeId(g.nodes().size()); ++n) {
      const ir::Node& node = g.node(n);
      if (node.op == ir::OpKind::Constant || node.op == ir::OpKind::Range) sources.push_back(n);
      bool zero = false;
      if (node.op == ir::OpKind::Constant) {
        zero = allZeros(ir::attrTensor(node.attrs, "value"));
      } else {
        std::vector<bool> z;
        for (ir::ValueId in : node.inputs) z.push_back(zeros.count(in) > 0);
        zero = zeroResult(node.op, z);
      }
      if (zero) zeros.insert(node.outputs.begin(), node.outputs.end());
    }
    classSources[size_t(c)] = std::move(sources);
    for (int64_t r : p.classRanks(c)) {
      m.zeros[size_t(r)] = zeros;
      m.outputs[size_t(r)] = outputs;
      m.numNodes += int64_t(g.nodes().size());
    }
  }
  for (int64_t r = 0; r < p.worldSize(); ++r)  // in rank order
    for (ir::NodeId n : classSources[size_t(p.classOf(r))]) m.sources.emplace_back(r, n);
  for (const ir::CollectiveStep& step : order.colls) {
    CollInstance ci;
    ci.op = step.op;
    ci.attrs = p.rank(step.members[0]).node(step.nodes[0]).attrs;
    ci.attrs.erase("group");
    ci.members = step.members;
    ci.nodes = step.nodes;
    for (size_t i = 0; i < ci.members.size(); ++i) m.collOf[size_t(ci.members[i])].set(ci.nodes[i], int(m.colls.size()));
    m.colls.push_back(std::move(ci));
  }
  for (auto& c : m.collOf) c.seal();
  for (const ir::MessageStep& msg : order.messages) {
    const auto& sv = p.rank(msg.src).value(p.rank(msg.src).node(msg.send).inputs[0]).type;
    const auto& rv = p.rank(msg.dst).value(p.rank(msg.dst).node(msg.recv).outputs[0]).type;
    if (!(sv == rv))
      return makeError("mismatched-send-recv", where(p, msg.src, msg.send) + " sends " + sv.str() + " but " +
                                                   where(p, msg.dst, msg.recv) + " receives " + rv.str());
    m.recvFrom[size_t(msg.dst)][msg.recv] = {msg.src, msg.send};
    m.sendTo[size_t(msg.src)][msg.send] = {msg.dst, msg.recv};
  }
  return m;
}

namespace {

std::vector<DistLeaf> addCollective(Engine& e, const DistModel& m, const CollInstance& ci) {
  const ir::Program& p = *m.prog;
  std::vector<ClassId> xs, ys;
  std::vector<DistLeaf> outs;
  for (size_t i = 0; i < ci.members.size(); ++i) {
    const ir::Node& n = p.rank(ci.members[i]).node(ci.nodes[i]);
    xs.push_back(e.dist(ci.members[i], n.inputs[0]));
    ys.push_back(e.dist(ci.members[i], n.outputs[0]));
    outs.emplace_back(ci.members[i], n.outputs[0]);
  }
  int64_t g = int64_t(xs.size());
  auto reduce = [&](const std::string& red) -> std::optional<ClassId> {
    if (red == "sum") return e.sum(xs);
    if (red == "avg") {
      auto s = e.sum(xs);
      return s ? e.scale(*s, 1.0 / double(g)) : std::nullopt;
    }
    ir::OpKind k = red == "max" ? ir::OpKind::Max : ir::OpKind::Min;
    std::optional<ClassId> acc = xs[0];
    for (size_t i = 1; i < xs.size() && acc; ++i) acc = e.irNodeInfer(k, {}, {*acc, xs[i]});
    return acc;
  };
  switch (ci.op) {
    case ir::OpKind::AllReduce: {
      auto r = reduce(ir::attrStr(ci.attrs, "reduce"));
      if (r)
        for (ClassId y : ys) e.mergeChecked(y, *r);
      break;
    }
    case ir::OpKind::AllGather: {
      auto c = e.concat(ir::attrInt(ci.attrs, "dim"), xs);
      if (c)
        for (ClassId y : ys) e.mergeChecked(y, *c);
      break;
    }
    case ir::OpKind::ReduceScatter: {
      auto r = reduce(ir::attrStr(ci.attrs, "reduce"));
      int64_t rank = int64_t(e.graph().type(xs[0]).shape.size());
      int64_t d = normDim(ir::attrInt(ci.attrs, "dim"), rank);
      const ir::Dim& ext = e.graph().type(ys[0]).shape[size_t(d)];
      if (!r) break;
      if (ext.isConcrete())
        for (size_t i = 0; i < ys.size(); ++i)
          if (auto s = e.slice(*r, d, int64_t(i) * ext.value(), int64_t(i + 1) * ext.value())) e.mergeChecked(ys[i], *s);
      if (auto c = e.concat(d, ys)) e.mergeChecked(*c, *r);
      break;
    }
    case ir::OpKind::AllToAll: {
      int64_t rank = int64_t(e.graph().type(xs[0]).shape.size());
      int64_t sd = normDim(ir::attrInt(ci.attrs, "split_dim"), rank);
      int64_t cd = normDim(ir::attrInt(ci.attrs, "concat_dim"), rank);
      const ir::Dim& ext = e.graph().type(xs[0]).shape[size_t(sd)];
      if (!ext.isConcrete() || ext.value() % g != 0) break;
      int64_t k = ext.value() / g;
      for (size_t j = 0; j < ys.size(); ++j) {
        std::vector<ClassId> parts;
        for (size_t i = 0; i < xs.size(); ++i)
          if (auto s = e.slice(xs[i], sd, int64_t(j) * k, int64_t(j + 1) * k)) parts.push_back(*s);
        if (parts.size() != xs.size()) break;
        if (auto c = e.concat(cd, parts)) e.mergeChecked(ys[j], *c);
      }
      break;
    }
    case ir::OpKind::Broadcast: {
      int64_t root = ir::attrInt(ci.attrs, "root");
      if (root >= 0 && root < g)
        for (ClassId y : ys) e.mergeChecked(y, xs[size_t(root)]);
      break;
    }
    default: break;
  }
  return outs;
}

// The value of a D tensor computed by a one-element float constant.
std::optional<double> scalarConstant(const ir::Graph& g, ir::ValueId v) {
  ir::NodeId n = g.value(v).producer;
  if (n < 0 || g.node(n).op != ir::OpKind::Constant) return std::nullopt;
  const ir::Tensor& t = ir::attrTensor(g.node(n).attrs, "value");
  if (t.numel() != 1 || !ir::isFloat(t.dtype())) return std::nullopt;
  return t.getAsDouble(0);
}

// x * c and x / c by a one-element constant c are scale(x, c) and
// scale(x, 1/c) when x has the product's type (c broadcasts into it). 1/c
// only when it is exact (c a power of two), so the factor means what the
// program divides by; other divisors are left to the lemmas.
void bridgeScalarFactor(Engine& e, const ir::Graph& g, int64_t r, const ir::Node& node, ClassId out) {
  bool mul = node.op == ir::OpKind::Mul, div = node.op == ir::OpKind::Div;
  if (!(mul || div) || node.inputs.size() != 2) return;
  for (size_t k = 0; k < 2; ++k) {
    if (div && k == 0) continue;  // c / x is not a scale of x
    auto c = scalarConstant(g, node.inputs[k]);
    if (!c || *c == 0.0 || !std::isfinite(*c)) continue;
    int exp = 0;
    if (div && std::frexp(*c, &exp) != 0.5 && std::frexp(*c, &exp) != -0.5) continue;
    ClassId x = e.dist(r, node.inputs[1 - k]);
    if (auto s = e.scale(x, div ? 1.0 / *c : *c)) e.mergeChecked(out, *s);
  }
}

}  // namespace

// A constant input is its value: its leaf joins the constant's e-node, so
// ranks holding the same constant (a loss scale) meet in one class and rules
// see the value in the e-graph.
void addConstantInput(Engine& e, const DistModel& m, int64_t r, ir::ValueId v) {
  const ir::Graph& g = m.prog->rank(r);
  ir::NodeId p = g.value(v).producer;
  if (p >= 0 && g.node(p).op == ir::OpKind::Constant) addDistNode(e, m, r, p);
}

std::optional<ClassId> relateScalarConstant(Engine& e, const DistModel& m, const ir::Node& seqNode) {
  if (seqNode.op != ir::OpKind::Constant) return std::nullopt;
  const ir::Tensor& t = ir::attrTensor(seqNode.attrs, "value");
  if (t.numel() != 1 || !ir::isFloat(t.dtype())) return std::nullopt;
  double want = t.getAsDouble(0);
  for (const auto& [r, n] : m.sources) {
    const ir::Graph& g = m.prog->rank(r);
    ir::ValueId v = g.node(n).outputs[0];
    auto have = scalarConstant(g, v);
    if (!have || *have == 0.0 || !(g.value(v).type == t.type())) continue;
    double f = want / *have;
    if (!std::isfinite(f) || std::fma(f, *have, -want) != 0.0) continue;  // the factor must be exact
    addDistNode(e, m, r, n);
    return e.scale(e.dist(r, v), f);
  }
  return std::nullopt;
}

std::vector<DistLeaf> addDistNode(Engine& e, const DistModel& m, int64_t r, ir::NodeId n) {
  const ir::Graph& g = m.prog->rank(r);
  const ir::Node& node = g.node(n);
  if (const int* c = m.collOf[size_t(r)].find(n)) return addCollective(e, m, m.colls[size_t(*c)]);
  if (node.op == ir::OpKind::Send) {
    auto it = m.sendTo[size_t(r)].find(n);
    if (it == m.sendTo[size_t(r)].end()) return {};
    auto [dst, rn] = it->second;
    ir::ValueId y = m.prog->rank(dst).node(rn).outputs[0];
    e.mergeChecked(e.dist(dst, y), e.dist(r, node.inputs[0]));
    return {{dst, y}};
  }
  if (node.op == ir::OpKind::Recv) {
    auto it = m.recvFrom[size_t(r)].find(n);
    if (it == m.recvFrom[size_t(r)].end()) return {};
    auto [src, sn] = it->second;
    ir::ValueId x = m.prog->rank(src).node(sn).inputs[0];
    e.mergeChecked(e.dist(r, node.outputs[0]), e.dist(src, x));
    return {{r, node.outputs[0]}};
  }
  std::vector<ClassId> kids;
  for (ir::ValueId v : node.inputs) {
    addConstantInput(e, m, r, v);
    kids.push_back(e.dist(r, v));
  }
  std::vector<DistLeaf> outs;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    ir::ValueId o = node.outputs[k];
    ClassId leaf = e.dist(r, o);
    auto c = e.irNode(node.op, node.attrs, kids, int(k), g.value(o).type);
    if (c) e.mergeChecked(leaf, *c);
    bridgeScalarFactor(e, g, r, node, leaf);
    outs.emplace_back(r, o);
  }
  return outs;
}

void addFacts(Engine& e, const DistModel& m, const DistLeaf& leaf, std::set<DistLeaf>& done) {
  if (!done.insert(leaf).second) return;
  auto it = m.facts.find(leaf);
  if (it == m.facts.end()) return;
  for (const auto& [a, b] : it->second) {
    auto ca = e.addRel(*a);
    auto cb = e.addRel(*b);
    if (ca.ok() && cb.ok()) e.mergeChecked(*ca, *cb);
  }
}

// freeAtLimit: a tensor at the hop limit still passes layout ops and
// collectives (they cost no hop), so a one-hop exploration reaches the
// all_reduce of the partial matmul it adds.
bool exploreDist(Engine& e, const DistModel& m, const std::vector<DistLeaf>& seeds, int hops, bool freeAtLimit) {
  bool cut = false;
  std::set<DistLeaf> factsDone;
  std::set<std::pair<int64_t, ir::NodeId>> visited;
  std::deque<std::pair<DistLeaf, int>> q;
  for (const auto& s : seeds) q.emplace_back(s, 0);
  std::set<DistLeaf> queued(seeds.begin(), seeds.end());
  // (class, depth, its node count when listed): a class that grew since is
  // listed again.
  std::set<std::tuple<ClassId, int, size_t>> expanded;
  while (!q.empty()) {
    auto [leaf, depth] = q.front();
    q.pop_front();
    addFacts(e, m, leaf, factsDone);
    // D tensors equal to this one (facts: another rank holding the same S
    // piece) are explored too: their users are candidates as well. Once
    // per class and depth: a class of n copies (every layer's cos(freqs)
    // on every rank, n in the thousands) was listed n times, n^2 inserts.
    ClassId cls = e.graph().find(e.dist(leaf.first, leaf.second));
    if (expanded.insert({cls, depth, e.graph().nodes(cls).size()}).second)
      for (const auto& same : e.distLeaves(cls))
        if (queued.insert(same).second) q.emplace_back(same, depth);
    bool atLimit = depth >= hops;
    if (atLimit && !freeAtLimit) {
      cut = cut || !m.prog->rank(leaf.first).users(leaf.second).empty();
      continue;
    }
    const ir::Graph& g = m.prog->rank(leaf.first);
    for (ir::NodeId n : g.users(leaf.second)) {
      const ir::Node& node = g.node(n);
      // Layout ops and collectives move data without computing: passing
      // through them costs no hop (DESIGN.md).
      ir::OpCategory cat = ir::opInfo(node.op).category;
      bool free = cat == ir::OpCategory::Layout || cat == ir::OpCategory::Collective || node.op == ir::OpKind::Identity;
      if (atLimit && !free) {
        cut = cut || !visited.count({leaf.first, n});
        continue;
      }
      if (!visited.insert({leaf.first, n}).second) continue;
      for (ir::ValueId in : node.inputs) addFacts(e, m, {leaf.first, in}, factsDone);
      int next = free ? depth : depth + 1;
      for (const auto& out : addDistNode(e, m, leaf.first, n))
        if (queued.insert(out).second) q.emplace_back(out, next);
    }
  }
  // Facts of every leaf the equations brought in (other members' inputs).
  for (ClassId c : e.graph().canonicalClasses())
    for (const auto& l : e.distLeaves(c)) addFacts(e, m, l, factsDone);
  return cut;
}

}  // namespace sp::rewrite
