// Mutant generation: sites, the rebuilding sink, the fault-injecting kinds
// and selection. The semantics-preserving kinds are in preserving.cpp.
#include "tests/mutate/mutator.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tests/mutate/sites.h"

namespace sp::mutate {

using ir::OpKind;

const std::vector<std::string>& faultKinds() {
  static const std::vector<std::string> k = {
      "drop-collective", "allreduce-to-allgather", "allgather-to-allreduce", "collective-dim",
      "collective-group", "reduce-mode", "broadcast-root", "constant-perturb", "float-attr-perturb",
      "send-swap", "recv-swap", "relation-shard-dim", "relation-shard-offset", "slice-axis", "slice-offset",
      "collective-order-swap", "collective-group-one-rank"};
  return k;
}

const std::vector<std::string>& preservingKinds() {
  static const std::vector<std::string> k = {"insert-identity", "duplicate-value", "commute-operands",
                                             "allreduce-via-allgather", "permute-nodes"};
  return k;
}

bool isCollective(OpKind op) { return ir::opInfo(op).category == ir::OpCategory::Collective; }

std::string Site::ranks() const {
  std::string s;
  for (auto [r, i] : at) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

std::vector<Site> sites(const ProgramSpec& s) {
  std::vector<Site> out;
  std::map<std::pair<std::string, OpKind>, size_t> index;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& nodes = s.ranks[r].nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::string key = nodes[i].outputs.empty() ? nodes[i].name : nodes[i].outputs[0];
      auto [it, fresh] = index.emplace(std::make_pair(key, nodes[i].op), out.size());
      if (fresh) out.push_back({key, nodes[i].op, {}});
      out[it->second].at.emplace_back(r, i);
    }
  }
  return out;
}

const ir::TensorType* typeOf(const ir::Program& p, size_t rank, const std::string& name) {
  const ir::Graph& g = p.rank(int64_t(rank));
  auto v = g.findValue(name);
  return v ? &g.value(*v).type : nullptr;
}

void Sink::add(const std::string& kind, const std::string& desc, bool preserving, const ProgramSpec& s) {
  add(kind, desc, preserving, s, rel_);
}

void Sink::add(const std::string& kind, const std::string& desc, bool preserving, const ProgramSpec& s,
               const rewrite::RelationFile& rel) {
  auto p = ir::buildProgram(s);
  if (!p.ok()) { ++out_->stillborn[kind]; return; }
  out_->mutants.push_back({kind, desc, preserving, std::move(*p), rel});
}

namespace {

std::string str(const ir::AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  return "?";
}

// Apply `edit` to the node on every rank of the site; one mutant.
template <typename F>
void atSite(const ProgramSpec& base, const Site& site, Sink& sink, const std::string& kind,
            const std::string& what, F edit) {
  ProgramSpec s = base;
  for (auto [r, i] : site.at) edit(s.ranks[r].nodes[i]);
  sink.add(kind, std::string(ir::opName(site.op)) + " '" + site.key + "' " + what + " on ranks " + site.ranks(),
           false, s);
}

void collectiveMutants(const ir::Program& dist, const ProgramSpec& base, const Site& site, Sink& sink) {
  const OpKind op = site.op;
  auto [r0, i0] = site.at[0];
  const NodeSpec& n0 = base.ranks[r0].nodes[i0];
  if (op != OpKind::Send && op != OpKind::Recv) {
    atSite(base, site, sink, "drop-collective", "replaced by identity", [](NodeSpec& n) {
      n.op = OpKind::Identity;
      n.attrs.clear();
    });
    for (const auto& g : groupNames(base)) {
      if (g == std::get<std::string>(n0.attrs.at("group"))) continue;
      atSite(base, site, sink, "collective-group", "in group " + g, [&](NodeSpec& n) { n.attrs["group"] = g; });
    }
  }
  if (op == OpKind::AllReduce)
    atSite(base, site, sink, "allreduce-to-allgather", "as all_gather dim 0", [](NodeSpec& n) {
      n.op = OpKind::AllGather;
      n.attrs = {{"group", n.attrs.at("group")}, {"dim", int64_t(0)}};
    });
  if (op == OpKind::AllGather)
    atSite(base, site, sink, "allgather-to-allreduce", "as all_reduce sum", [](NodeSpec& n) {
      n.op = OpKind::AllReduce;
      n.attrs = {{"group", n.attrs.at("group")}, {"reduce", std::string("sum")}};
    });
  if (op == OpKind::AllReduce || op == OpKind::ReduceScatter)
    for (const char* m : {"sum", "avg", "max", "min"})
      if (std::get<std::string>(n0.attrs.at("reduce")) != m)
        atSite(base, site, sink, "reduce-mode", std::string("reducing with ") + m,
               [&](NodeSpec& n) { n.attrs["reduce"] = std::string(m); });
  const ir::TensorType* in = n0.inputs.empty() ? nullptr : typeOf(dist, r0, n0.inputs[0]);
  const int64_t rank = in ? int64_t(in->shape.size()) : 0;
  for (const char* attr : {"dim", "split_dim", "concat_dim"}) {
    if (op == OpKind::AllReduce || !n0.attrs.count(attr)) continue;
    int64_t cur = std::get<int64_t>(n0.attrs.at(attr));
    for (int64_t d = 0; d < rank; ++d)
      if (d != cur && d != cur + rank)
        atSite(base, site, sink, "collective-dim", std::string(attr) + " " + std::to_string(cur) + " -> " +
               std::to_string(d), [&](NodeSpec& n) { n.attrs[attr] = d; });
  }
  if (op == OpKind::Broadcast)
    atSite(base, site, sink, "broadcast-root", "from root " +
           std::to_string(std::get<int64_t>(n0.attrs.at("root")) + 1), [](NodeSpec& n) {
      n.attrs["root"] = std::get<int64_t>(n.attrs.at("root")) + 1;
    });
}

ir::Tensor perturbed(const ir::Tensor& t) {
  ir::Tensor out(t.dtype(), t.dims());
  const bool isFloat = ir::isFloat(t.dtype());
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.getAsDouble(i);
    out.setFromDouble(i, t.dtype() == ir::DType::Bool ? 1 - v : isFloat ? v * 1.5 + 0.25 : v + 1);
  }
  return out;
}

void constantMutants(const ProgramSpec& base, const Site& site, Sink& sink) {
  const NodeSpec& n0 = base.ranks[site.at[0].first].nodes[site.at[0].second];
  if (site.op == OpKind::Constant)
    atSite(base, site, sink, "constant-perturb", "value * 1.5 + 0.25", [](NodeSpec& n) {
      n.attrs["value"] = perturbed(std::get<ir::Tensor>(n.attrs.at("value")));
    });
  if (isCollective(site.op)) return;
  for (const auto& [name, v] : n0.attrs) {
    const double* f = std::get_if<double>(&v);
    if (!f || !std::isfinite(*f)) continue;
    double nv = *f == 0 ? 0.5 : *f * 1.5;
    const std::string attr = name;
    atSite(base, site, sink, "float-attr-perturb", attr + " " + std::to_string(*f) + " -> " + std::to_string(nv),
           [&](NodeSpec& n) { n.attrs[attr] = nv; });
  }
}

// Slices with one axis: move the axis, or shift the window by its extent.
void sliceMutants(const ir::Program& dist, const ProgramSpec& base, const Site& site, Sink& sink) {
  if (site.op != OpKind::Slice) return;
  auto [r0, i0] = site.at[0];
  const NodeSpec& n0 = base.ranks[r0].nodes[i0];
  const auto& starts = std::get<std::vector<int64_t>>(n0.attrs.at("starts"));
  const auto& axes0 = std::get<std::vector<int64_t>>(n0.attrs.at("axes"));
  const ir::TensorType* in = typeOf(dist, r0, n0.inputs[0]);
  if (!in || starts.size() != 1) return;
  const int64_t rank = int64_t(in->shape.size());
  const int64_t axis = axes0.empty() ? 0 : (axes0[0] + rank) % rank;
  // A square rank-2 input: transpose the new slice back to the old shape.
  const bool square = rank == 2 && in->shape[0] == in->shape[1];
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    ProgramSpec s = base;
    for (auto [r, i] : site.at) {
      GraphSpec& g = s.ranks[r];
      g.nodes[i].attrs["axes"] = std::vector<int64_t>{d};
      if (!square) continue;
      std::string v = g.nodes[i].outputs[0], pre = g.freshName(v);
      g.nodes[i].outputs[0] = pre;
      g.nodes.push_back({OpKind::Transpose, {}, {pre}, {v}, {{"perm", std::vector<int64_t>{1, 0}}}});
    }
    sink.add("slice-axis", "slice '" + site.key + "' axis " + std::to_string(axis) + " -> " + std::to_string(d) +
             (square ? " (transposed back)" : "") + " on ranks " + site.ranks(), false, s);
  }
  ProgramSpec s = base;
  bool any = false;
  for (auto [r, i] : site.at) {
    NodeSpec& n = s.ranks[r].nodes[i];
    const ir::TensorType* t = typeOf(dist, r, n.inputs[0]);
    if (!t || !t->shape[size_t(axis)].isConcrete()) continue;
    const int64_t size = t->shape[size_t(axis)].value();
    int64_t b = std::get<std::vector<int64_t>>(n.attrs["starts"])[0];
    int64_t e = std::get<std::vector<int64_t>>(n.attrs["ends"])[0];
    if (b < 0) b += size;
    e = e < 0 ? e + size : std::min(e, size);
    const int64_t ext = e - b;
    if (ext <= 0 || ext >= size) continue;
    const int64_t shift = e + ext <= size ? ext : b - ext >= 0 ? -ext : 0;
    if (shift == 0) continue;
    n.attrs["starts"] = std::vector<int64_t>{b + shift};
    n.attrs["ends"] = std::vector<int64_t>{e + shift};
    any = true;
  }
  if (any) sink.add("slice-offset", "slice '" + site.key + "' window shifted by its extent on ranks " +
                    site.ranks(), false, s);
}

// On one rank, two sends (or two recvs) exchange their (peer, tag).
void transferSwaps(const ProgramSpec& base, Sink& sink) {
  for (size_t r = 0; r < base.ranks.size(); ++r) {
    const auto& nodes = base.ranks[r].nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (size_t j = i + 1; j < nodes.size(); ++j) {
        if (nodes[i].op != nodes[j].op || (nodes[i].op != OpKind::Send && nodes[i].op != OpKind::Recv)) continue;
        if (str(nodes[i].attrs.at("peer")) == str(nodes[j].attrs.at("peer")) &&
            str(nodes[i].attrs.at("tag")) == str(nodes[j].attrs.at("tag")))
          continue;
        ProgramSpec s = base;
        auto& a = s.ranks[r].nodes[i].attrs;
        auto& b = s.ranks[r].nodes[j].attrs;
        std::swap(a["peer"], b["peer"]);
        std::swap(a["tag"], b["tag"]);
        const bool send = nodes[i].op == OpKind::Send;
        auto label = [&](const NodeSpec& n) {
          return (send ? "send of '" + n.inputs[0] + "'" : "recv '" + n.outputs[0] + "'") + " (peer " +
                 str(n.attrs.at("peer")) + " tag " + str(n.attrs.at("tag")) + ")";
        };
        sink.add(send ? "send-swap" : "recv-swap", "rank " + std::to_string(r) + ": " + label(nodes[i]) +
                 " and " + label(nodes[j]) + " exchange peer and tag", false, s);
      }
  }
}

// Copy of `e` with the k-th slice over a seq tensor (pre-order) cut along `dim`.
rewrite::RelPtr reslice(const rewrite::RelPtr& e, int& k, int64_t dim) {
  auto copy = std::make_shared<rewrite::Rel>(*e);
  if (e->op == rewrite::RelOp::Slice && e->args[0]->op == rewrite::RelOp::Seq && k-- == 0) {
    copy->dim = dim;
    return copy;
  }
  for (auto& a : copy->args) a = reslice(a, k, dim);
  return copy;
}

// `e` with every rank-dependent term replaced by 0: each rank takes shard 0.
rewrite::IntExpr zeroRanks(const rewrite::IntExpr& e) {
  using K = rewrite::IntExpr::Kind;
  if (e.kind == K::Index || e.kind == K::Var) return rewrite::IntExpr::constant(0);
  rewrite::IntExpr c = e;
  for (auto& a : c.args) a = zeroRanks(a);
  return c;
}

// Copy of `e` with the k-th slice over a seq tensor taking shard 0 on every rank.
rewrite::RelPtr firstShard(const rewrite::RelPtr& e, int& k) {
  auto copy = std::make_shared<rewrite::Rel>(*e);
  if (e->op == rewrite::RelOp::Slice && e->args[0]->op == rewrite::RelOp::Seq && k-- == 0) {
    copy->start = zeroRanks(e->start);
    copy->end = zeroRanks(e->end);
    return copy;
  }
  for (auto& a : copy->args) a = firstShard(a, k);
  return copy;
}

void seqSlices(const rewrite::RelPtr& e, std::vector<const rewrite::Rel*>* out) {
  if (e->op == rewrite::RelOp::Slice && e->args[0]->op == rewrite::RelOp::Seq) out->push_back(e.get());
  for (const auto& a : e->args) seqSlices(a, out);
}

// A weight sharded on the wrong dim: the relation slices another dim of the
// S tensor, and the D leaf takes the new shard's type (stillborn if D's
// computation no longer fits it).
void relationMutants(const ir::Graph& seq, const ir::Program& dist, const rewrite::RelationFile& rel, Sink& sink) {
  rewrite::RankSpace ranks = rewrite::RankSpace::of(dist);
  rewrite::TypeLookup lookup;
  lookup.seq = [&](const std::string& n) -> Result<ir::TensorType> {
    auto v = seq.findValue(n);
    if (!v) return makeError("no-value", "no seq value '" + n + "'");
    return seq.value(*v).type;
  };
  lookup.dist = [](int64_t, const std::string& n) -> Result<ir::TensorType> {
    return makeError("no-value", "dist leaf '" + n + "' in an input relation");
  };
  for (size_t i = 0; i < rel.inputs.size(); ++i) {
    std::vector<const rewrite::Rel*> slices;
    seqSlices(rel.inputs[i].expr, &slices);
    for (size_t k = 0; k < slices.size(); ++k) {
      auto t = lookup.seq(slices[k]->args[0]->name);
      if (!t.ok()) continue;
      if (!(zeroRanks(slices[k]->start) == slices[k]->start)) {
        rewrite::RelationFile m = rel;
        int idx = int(k);
        m.inputs[i].expr = firstShard(rel.inputs[i].expr, idx);
        sink.add("relation-shard-offset", "dist." + m.inputs[i].name + " (" + m.inputs[i].location +
                 ") takes the first shard of seq." + slices[k]->args[0]->name + " on every rank", false,
                 toSpec(dist), m);
      }
      const int64_t rank = int64_t(t->shape.size());
      const int64_t cur = (slices[k]->dim + rank) % std::max<int64_t>(rank, 1);
      for (int64_t d = 0; d < rank; ++d) {
        if (d == cur) continue;
        rewrite::RelationFile m = rel;
        int idx = int(k);
        m.inputs[i].expr = reslice(rel.inputs[i].expr, idx, d);
        auto bound = rewrite::expandInputs(m, ranks);
        if (!bound.ok()) { ++sink.stillborn("relation-shard-dim"); continue; }
        ProgramSpec s = toSpec(dist);
        bool ok = true;
        for (const auto& b : *bound) {
          if (b.name != m.inputs[i].name) continue;
          auto ty = rewrite::inferType(*b.expr, lookup, b.scope);
          if (!ty.ok()) { ok = false; break; }
          GraphSpec& g = s.ranks[size_t(b.rank)];
          for (auto& l : g.leaves) {
            if (l.name != b.name || l.type == *ty) continue;
            // A square shard cut on the other dim: D transposes it to fit.
            if (ty->shape.size() == 2 && l.type.shape.size() == 2 && ty->shape[0] == l.type.shape[1] &&
                ty->shape[1] == l.type.shape[0]) {
              std::string t = g.freshName(l.name + "_t");
              g.renameUses(l.name, t);
              g.nodes.push_back({OpKind::Transpose, {}, {l.name}, {t}, {{"perm", std::vector<int64_t>{1, 0}}}});
            }
            l.type = *ty;
          }
        }
        if (!ok) { ++sink.stillborn("relation-shard-dim"); continue; }
        sink.add("relation-shard-dim", "dist." + m.inputs[i].name + " (" + m.inputs[i].location + ") slices seq." +
                 slices[k]->args[0]->name + " on dim " + std::to_string(d) + " instead of " + std::to_string(cur),
                 false, s, m);
      }
    }
  }
}

}  // namespace

void addFaultMutants(const ir::Graph& seq, const ir::Program& dist, const rewrite::RelationFile& rel, Sink& sink) {
  ProgramSpec base = toSpec(dist);
  for (const Site& site : sites(base)) {
    if (isCollective(site.op)) collectiveMutants(dist, base, site, sink);
    constantMutants(base, site, sink);
    sliceMutants(dist, base, site, sink);
  }
  transferSwaps(base, sink);
  relationMutants(seq, dist, rel, sink);
}

MutantSet generateMutants(const ir::Graph& seq, const ir::Program& dist, const rewrite::RelationFile& relations) {
  MutantSet set;
  Sink sink(&set, relations);
  addFaultMutants(seq, dist, relations, sink);
  addDeadlockMutants(dist, sink);
  addPreservingMutants(dist, sink);
  return set;
}

std::vector<const Mutant*> selectMutants(const MutantSet& set, size_t cap) {
  std::map<std::string, std::vector<const Mutant*>> byKind;
  for (const auto& m : set.mutants) byKind[m.kind].push_back(&m);
  std::vector<const Mutant*> out;
  for (size_t round = 0; out.size() < cap; ++round) {
    bool any = false;
    for (const auto& kinds : {faultKinds(), preservingKinds()})
      for (const auto& k : kinds) {
        auto it = byKind.find(k);
        if (it == byKind.end() || round >= it->second.size() || out.size() >= cap) continue;
        out.push_back(it->second[round]);
        any = true;
      }
    if (!any) break;
  }
  return out;
}

}  // namespace sp::mutate
