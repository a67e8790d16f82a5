// Localization messages in the user's terms: what the best candidate lacked.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <variant>

#include "rewrite/engine/engine_verify.h"

namespace sp::rewrite {

std::string secondsStr(double s);  // verify.cpp: "%g"

namespace {

// The D leaves of r: their ranks and value names.
void leavesOf(const Rel& r, std::vector<int64_t>& ranks, std::vector<std::string>& names) {
  if (r.op == RelOp::Dist) {
    ranks.push_back(r.rank.eval({}, nullptr).value());
    names.push_back(r.name);
  }
  for (const auto& a : r.args) leavesOf(*a, ranks, names);
}

// Whether sum `r` adds values of different ranks (partial sums): its
// operands live on pairwise disjoint ranks (sum(pb on rank 0, p on rank
// 1)), or one D tensor name appears in two operands on different ranks
// (sum(x on rank 0, partial o of ranks 0..3)). sum(concat(q_c of ranks
// 0..3), concat(q_s of ranks 0..3)) is neither: an elementwise add on each
// rank.
bool sumsAcrossRanks(const Rel& r) {
  std::map<std::string, std::pair<size_t, int64_t>> seen;  // name -> (operand, rank) first met
  std::set<int64_t> held;
  bool disjoint = true;
  for (size_t i = 0; i < r.args.size(); ++i) {
    std::vector<int64_t> ranks;
    std::vector<std::string> names;
    leavesOf(*r.args[i], ranks, names);
    for (size_t k = 0; k < names.size(); ++k) {
      auto [it, fresh] = seen.emplace(names[k], std::make_pair(i, ranks[k]));
      if (!fresh && it->second.first != i && it->second.second != ranks[k]) return true;
    }
    std::set<int64_t> mine(ranks.begin(), ranks.end());
    for (int64_t k : mine) disjoint = held.insert(k).second && disjoint;
  }
  return disjoint;
}

// The first sum over ranks in r: r itself, or one under layout ops and
// scales (a concat over dp of partial sums over tp).
const Rel* firstSum(const Rel& r) {
  if (r.op == RelOp::Sum && sumsAcrossRanks(r)) return &r;
  for (const auto& a : r.args)
    if (const Rel* s = firstSum(*a)) return s;
  return nullptr;
}

// "D's all_reduce 'o' (loc)".
std::string distOp(const ir::Node& n) {
  return "D's " + std::string(ir::opName(n.op)) + " '" + n.name + "'" + (n.loc.empty() ? "" : " (" + n.loc.str() + ")");
}

bool sumsOverGroup(const ir::Node& n) {
  return (n.op == ir::OpKind::AllReduce || n.op == ir::OpKind::ReduceScatter) && ir::attrStr(n.attrs, "reduce") == "sum";
}

// Calls f(rank, leaf name, its graph, its value) for each D leaf of `r`
// that D has, until f returns a non-empty string, which is returned.
std::string forLeaves(
    const ir::Program& dist, const Rel& r,
    const std::function<std::string(int64_t rank, const std::string& leaf, const ir::Graph&, ir::ValueId)>& f) {
  std::vector<int64_t> ranks;
  std::vector<std::string> names;
  leavesOf(r, ranks, names);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const ir::Graph& g = dist.rank(ranks[i]);
    if (auto v = g.findValue(names[i]))
      if (std::string s = f(ranks[i], names[i], g, *v); !s.empty()) return s;
  }
  return "";
}

// Calls f(rank, leaf name, node) for each D node that reads a D leaf of `r`,
// until f returns a non-empty string, which is returned.
std::string forLeafUsers(const ir::Program& dist, const Rel& r,
                         const std::function<std::string(int64_t rank, const std::string& leaf, const ir::Node&)>& f) {
  return forLeaves(dist, r, [&](int64_t rank, const std::string& leaf, const ir::Graph& g, ir::ValueId v) {
    for (ir::NodeId u : g.users(v))
      if (std::string s = f(rank, leaf, g.node(u)); !s.empty()) return s;
    return std::string();
  });
}

// What D does with rank-local partial sums over `group` instead of summing
// them over it: sums them over another group ("; D's all_reduce 'o' (loc)
// is a sum over group dp where group tp was needed"), or sums values over
// the group that are not the partial sums on every rank (a replicated term
// added on every rank before the sum counts once per rank). "" when no
// leaf of `sum` feeds a summing collective.
struct SumNote {
  std::string text;
  bool sameGroup = false;  // D does sum over the group, other values
};
SumNote sumNote(const ir::Program& dist, const Rel& sum, const std::string& group) {
  SumNote out;
  out.text = forLeafUsers(dist, sum, [&](int64_t, const std::string& leaf, const ir::Node& n) -> std::string {
    if (!sumsOverGroup(n)) return "";
    if (ir::attrStr(n.attrs, "group") != group)
      return "; " + distOp(n) + " is a sum over group " + ir::attrStr(n.attrs, "group") + " where group " + group +
             " was needed";
    out.sameGroup = true;
    return "; " + distOp(n) + " sums '" + leaf + "' over group " + group +
           ", which is not the partial sum on every rank: a replicated term added on every rank before it is summed " +
           "once per rank";
  });
  return out;
}

// "[1, 0]".
std::string ranksStr(const std::vector<int64_t>& ranks) {
  std::string s;
  for (int64_t r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return "[" + s + "]";
}

// What D does with the shards of a concat over `group` along `dim`: sums
// them ("; D's all_reduce 'sg' (loc) is a sum over group tp where concat
// along dim 1 was needed"), gathers them along another dim, or gathers them
// over a group of the same ranks in another order.
std::string concatNote(const ir::Program& dist, const Rel& concat, int64_t dim, int64_t rank, const std::string& group) {
  RankSpace rs = RankSpace::of(dist);
  return forLeafUsers(dist, concat, [&](int64_t at, const std::string&, const ir::Node& n) -> std::string {
    if (!sumsOverGroup(n) && n.op != ir::OpKind::AllGather) return "";
    const std::string& used = ir::attrStr(n.attrs, "group");
    if (used != group) {
      auto want = rs.members(group, at), got = rs.members(used, at);
      if (n.op != ir::OpKind::AllGather || !want.ok() || !got.ok() || *want == *got ||
          std::set<int64_t>(want->begin(), want->end()) != std::set<int64_t>(got->begin(), got->end()))
        return "";
      return "; " + distOp(n) + " concatenates over group " + used + " in order " + ranksStr(*got) + " where " +
             group + " order " + ranksStr(*want) + " was needed";
    }
    if (sumsOverGroup(n))
      return "; " + distOp(n) + " is a sum over group " + group + " where concat along dim " + std::to_string(dim) +
             " was needed (all_gather)";
    if (n.op == ir::OpKind::AllGather && normDim(ir::attrInt(n.attrs, "dim"), rank) != dim)
      return "; " + distOp(n) + " concatenates along dim " +
             std::to_string(normDim(ir::attrInt(n.attrs, "dim"), rank)) + " where dim " + std::to_string(dim) +
             " was needed";
    return "";
  });
}

// " where dim 0 was needed": the one dim of a rank-`rank` operand that the
// op does not read whole (`whole`), when there is exactly one; else "".
std::string whereNeeded(int64_t rank, const std::vector<int64_t>& whole) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(whole.begin(), whole.end(), d) == whole.end()) free.push_back(d);
  return free.size() == 1 ? " where dim " + std::to_string(free[0]) + " was needed" : "";
}

// Where the shards of `concat` (split along `dim`, which the op reads
// whole) come from a reduce_scatter along that dim: "; D's reduce_scatter
// 'o' (loc) splits along dim 1 where dim 0 was needed".
std::string scatterNote(const ir::Program& dist, const Rel& concat, int64_t dim, int64_t rank,
                        const std::vector<int64_t>& whole) {
  return forLeaves(dist, concat, [&](int64_t, const std::string&, const ir::Graph& g, ir::ValueId v) -> std::string {
    if (g.value(v).producer < 0) return "";
    const ir::Node& n = g.node(g.value(v).producer);
    if (n.op != ir::OpKind::ReduceScatter || normDim(ir::attrInt(n.attrs, "dim"), rank) != dim) return "";
    return "; " + distOp(n) + " splits along dim " + std::to_string(dim) + whereNeeded(rank, whole);
  });
}

// A replicated S value (the same D value on every rank of the group) that
// D sums over the group: "; D's reduce_scatter 'hs' (loc) is a sum over
// group tp of a replicated value ('h' on every rank)".
std::string replicatedSumNote(const ir::Program& dist, const SeqRel& in) {
  if (in.best->op != RelOp::Dist) return "";
  RankSpace rs = RankSpace::of(dist);
  std::set<std::pair<int64_t, std::string>> same;
  for (const RelPtr& a : in.alts)
    if (a->op == RelOp::Dist) same.emplace(a->rank.eval({}, nullptr).value(), a->name);
  return forLeafUsers(dist, *in.best, [&](int64_t rank, const std::string& leaf, const ir::Node& n) -> std::string {
    if (!sumsOverGroup(n)) return "";
    auto members = rs.members(ir::attrStr(n.attrs, "group"), rank);
    if (!members.ok() || members->size() < 2) return "";
    for (int64_t m : *members)
      if (m != rank && !same.count({m, leaf})) return "";
    return "; " + distOp(n) + " is a sum over group " + ir::attrStr(n.attrs, "group") + " of a replicated value ('" +
           leaf + "' on every rank)";
  });
}

}  // namespace

// The group whose members are exactly `ranks` (a mesh axis, joined axes or a
// named group), else "ranks {0, 1}".
std::string groupName(const ir::Program& p, std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  RankSpace rs = RankSpace::of(p);
  std::vector<std::string> names;
  for (const auto& a : p.mesh().axes) names.push_back(a.name);
  for (const auto& [n, part] : p.namedGroups()) names.push_back(n);
  for (const auto& n : names) {
    auto m = rs.members(n, ranks.front());
    if (!m.ok()) continue;
    auto s = *m;
    std::sort(s.begin(), s.end());
    if (s == ranks) return n;
  }
  std::string s;
  for (int64_t r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return "ranks {" + s + "}";
}

// Dims of input `i` of `node` that the op reads whole (a shard of one of them
// is not enough): normalized / reduced axes, the contraction dim of matmul.
std::vector<int64_t> dimsReadWhole(const ir::Graph& g, const ir::Node& node, size_t i) {
  int64_t rank = int64_t(g.value(node.inputs[i]).type.shape.size());
  std::vector<int64_t> out;
  switch (ir::opInfo(node.op).category) {
    case ir::OpCategory::Norm: {
      int64_t a = normDim(ir::attrInt(node.attrs, "axis"), rank);
      if (node.op == ir::OpKind::Softmax || node.op == ir::OpKind::LogSoftmax) out.push_back(a);
      else for (int64_t d = a; d < rank; ++d) out.push_back(d);
      break;
    }
    case ir::OpCategory::Reduce:
      if (node.attrs.count("axes")) {
        auto axes = ir::attrInts(node.attrs, "axes");
        if (axes.empty()) for (int64_t d = 0; d < rank; ++d) out.push_back(d);
        for (int64_t a : axes) out.push_back(normDim(a, rank));
      } else {
        out.push_back(normDim(ir::attrInt(node.attrs, "axis"), rank));
      }
      break;
    case ir::OpCategory::Linear:
      if (node.op == ir::OpKind::MatMul && rank >= 2) out.push_back(i == 0 ? rank - 1 : rank - 2);
      break;
    default: break;
  }
  return out;
}

// Bug class 18 (BUGS.md): a combine all_to_all that does not invert the
// dispatch. A D tensor of the failing op's input relation feeds an
// all_to_all of some group whose split/concat dims are not the swap of those
// of the nearest all_to_all of the same group upstream of it (same rank,
// same tensor rank): the inverse of an all_to_all splitting dim s and
// concatenating dim c splits c and concatenates s. Explanatory only: it is
// said after no relation was found.
std::string allToAllNotInverse(const ir::Program& dist, const std::vector<const SeqRel*>& inputs) {
  auto dims = [](const ir::Graph& g, const ir::Node& n) {
    int64_t rank = int64_t(g.value(n.inputs[0]).type.shape.size());
    return std::make_pair(normDim(ir::attrInt(n.attrs, "split_dim"), rank),
                          normDim(ir::attrInt(n.attrs, "concat_dim"), rank));
  };
  auto along = [](std::pair<int64_t, int64_t> d) {
    return d.first == d.second ? "along dim " + std::to_string(d.first)
                               : "split on dim " + std::to_string(d.first) + " and concatenated on dim " +
                                     std::to_string(d.second);
  };
  for (const SeqRel* in : inputs) {
    if (!in || !in->best) continue;
    std::vector<int64_t> ranks;
    std::vector<std::string> names;
    leavesOf(*in->best, ranks, names);
    for (size_t i = 0; i < ranks.size(); ++i) {
      const ir::Graph& g = dist.rank(ranks[i]);
      std::string name = names[i];
      auto v = g.findValue(name);
      if (!v) continue;
      for (ir::NodeId u : g.users(*v)) {
        const ir::Node& combine = g.node(u);
        if (combine.op != ir::OpKind::AllToAll) continue;
        // Nearest all_to_all of the same group upstream of the leaf.
        std::vector<ir::ValueId> stack{*v};
        std::set<ir::ValueId> seen;
        const ir::Node* dispatch = nullptr;
        while (!stack.empty() && !dispatch) {
          ir::ValueId x = stack.back();
          stack.pop_back();
          if (!seen.insert(x).second) continue;
          ir::NodeId p = g.value(x).producer;
          if (p < 0) continue;
          const ir::Node& pn = g.node(p);
          if (pn.op == ir::OpKind::AllToAll && ir::attrStr(pn.attrs, "group") == ir::attrStr(combine.attrs, "group")) {
            dispatch = &pn;
            break;
          }
          for (ir::ValueId w : pn.inputs) stack.push_back(w);
        }
        if (!dispatch || g.value(dispatch->inputs[0]).type.shape.size() != g.value(combine.inputs[0]).type.shape.size())
          continue;
        auto dd = dims(g, *dispatch), cd = dims(g, combine);
        if (cd.first == dd.second && cd.second == dd.first) continue;
        return "the combine all_to_all " + along(cd) + " does not invert the dispatch " + along(dd) + " (rank " +
               std::to_string(ranks[i]) + ": all_to_all '" + combine.name + "' after '" + dispatch->name +
               "', group " + ir::attrStr(combine.attrs, "group") + "): rows do not return where they came from";
      }
    }
  }
  return "";
}

// The group a relation sums over when it is a sum of D values of two or
// more ranks (rank-local partial sums); "" otherwise.
std::string sumOverRanksGroup(const ir::Program& dist, const Rel& found) {
  if (found.op != RelOp::Sum) return "";
  std::vector<int64_t> ranks;
  std::vector<std::string> names;
  leavesOf(found, ranks, names);
  if (std::set<int64_t>(ranks.begin(), ranks.end()).size() < 2) return "";
  return groupName(dist, ranks);
}

// Where the partial sums of `found` (a sum over ranks) began: its operands
// that are one D value (the repair search tries a sum right
// after them first, as after the fold's FoldOutcome::sumOrigins). In
// sum(concat(r1 of ranks 0..7), mp of rank 0, ..., mp of rank 7) that is
// mp; the concat is the rank's own value, added on every rank.
std::vector<DistRef> sumOriginsOf(const Rel& found) {
  std::vector<DistRef> out;
  if (found.op != RelOp::Sum) return out;
  for (const auto& a : found.args)
    if (a->op == RelOp::Dist) {
      auto r = a->rank.eval({}, nullptr);
      if (!r.ok()) continue;
      DistRef o{*r, a->name};
      if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(std::move(o));
    }
  return out;
}

// An S output whose relation is a sum over ranks of D values where the
// expected relation sums nothing: every rank returns its own partial sums.
// "": no such explanation.
std::string explainExpectMismatch(const ir::Program& dist, const Rel& found, const Rel& expected,
                                  std::string* sumGroup) {
  if (firstSum(expected)) return "";
  std::string group = sumOverRanksGroup(dist, found);
  if (group.empty()) return "";
  if (sumGroup) *sumGroup = group;
  return ": S's value is a sum over group " + group +
         " of rank-local values, which D's output does not add up: rank-local partial sums, missing sum over group " +
         group + " (all_reduce) before the output";
}

// Whether reshaping `concat` (of D leaves, concrete shapes) to `to` leaves
// some shard's elements non-contiguous along every target dim: no concat of
// the reshaped shards can equal it. False when unsure (symbolic shapes, a
// shard that is not a D leaf).
bool reshapeInterleaves(const ir::Program& dist, const Rel& concat, const ir::Shape& to) {
  std::vector<std::vector<int64_t>> parts;
  for (const auto& a : concat.args) {
    if (a->op != RelOp::Dist) return false;
    const ir::Graph& g = dist.rank(a->rank.eval({}, nullptr).value());
    auto v = g.findValue(a->name);
    if (!v || !ir::isConcrete(g.value(*v).type.shape) || !ir::isConcrete(to)) return false;
    parts.push_back({});
    for (const auto& d : g.value(*v).type.shape) parts.back().push_back(d.value());
  }
  if (parts.empty()) return false;
  int64_t rank = int64_t(parts[0].size()), d = normDim(concat.dim, rank);
  if (d < 0 || d >= rank) return false;
  for (const auto& p : parts)
    if (int64_t(p.size()) != rank) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= parts[0][size_t(k)];
  for (int64_t k = d + 1; k < rank; ++k) inner *= parts[0][size_t(k)];
  std::vector<int64_t> t;
  for (const auto& x : to) t.push_back(x.value());
  // Contiguous along target dim k: the dims before k hold exactly the outer
  // blocks, and every shard boundary falls on a whole row of the dims after k.
  int64_t before = 1;
  for (size_t k = 0; k < t.size(); ++k) {
    int64_t after = 1;
    for (size_t j = k + 1; j < t.size(); ++j) after *= t[j];
    if (before == outer && after > 0) {
      bool aligned = true;
      int64_t off = 0;
      for (const auto& p : parts) {
        aligned = aligned && (off * inner) % after == 0 && (p[size_t(d)] * inner) % after == 0;
        off += p[size_t(d)];
      }
      if (aligned) return false;
    }
    before *= t[k];
  }
  return true;
}

// A replicated S operand that D slices (through slices and transposes) along
// a dim the S op reads whole before the same op: "; D's matmul 'h' (loc)
// reads a slice of w1 along dim 0 where dim 1 was needed" (the one dim the
// op does not read whole, when there is one). Only when every operand is
// replicated: with a sharded one, a slice of a dim read whole may be a
// legitimate partial sum (row parallel).
std::string sliceNote(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node,
                      const std::vector<const SeqRel*>& inputs) {
  for (const SeqRel* in : inputs)
    if (!in || !in->best || in->best->op != RelOp::Dist) return "";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Rel& leaf = *inputs[i]->best;
    const ir::Graph& g = dist.rank(leaf.rank.eval({}, nullptr).value());
    auto v0 = g.findValue(leaf.name);
    int64_t rank = int64_t(seq.value(node.inputs[i]).type.shape.size());
    if (!v0 || int64_t(g.value(*v0).type.shape.size()) != rank) continue;
    auto whole = dimsReadWhole(seq, node, i);
    // Walk forward: (value, perm: its dim j is the leaf's dim perm[j], leaf dims sliced).
    struct At {
      ir::ValueId v;
      std::vector<int64_t> perm;
      std::set<int64_t> sliced;
    };
    std::vector<int64_t> id(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) id[size_t(d)] = d;
    std::vector<At> work{{*v0, id, {}}};
    for (size_t steps = 0; !work.empty() && steps < 64; ++steps) {
      At at = work.back();
      work.pop_back();
      for (ir::NodeId u : g.users(at.v)) {
        const ir::Node& n = g.node(u);
        At next{n.outputs.empty() ? at.v : n.outputs[0], at.perm, at.sliced};
        if (n.op == ir::OpKind::Slice) {
          const auto& in = g.value(at.v).type.shape;
          const auto& out = g.value(n.outputs[0]).type.shape;
          for (int64_t d = 0; d < rank; ++d)
            if (!(in[size_t(d)] == out[size_t(d)])) next.sliced.insert(at.perm[size_t(d)]);
          work.push_back(next);
        } else if (n.op == ir::OpKind::Transpose) {
          auto p = ir::attrInts(n.attrs, "perm");
          if (p.empty())
            for (int64_t d = rank - 1; d >= 0; --d) p.push_back(d);
          if (int64_t(p.size()) != rank) continue;
          for (int64_t d = 0; d < rank; ++d) next.perm[size_t(d)] = at.perm[size_t(normDim(p[size_t(d)], rank))];
          work.push_back(next);
        } else if (n.op == node.op) {
          for (int64_t d : whole)
            if (at.sliced.count(d))
              return "; " + distOp(n) + " reads a slice of " + seq.value(node.inputs[i]).name + " along dim " +
                     std::to_string(d) + whereNeeded(rank, whole);
        }
      }
    }
  }
  return "";
}

// D's counterparts of the S op (same op, reading a D leaf of an input's
// relation) with a float attribute other than S's: "; D's layer_norm 'y'
// (loc) has epsilon 1.5e-05 where S's has 1e-05".
std::string attrNote(const ir::Program& dist, const ir::Node& node, const std::vector<const SeqRel*>& inputs) {
  for (const SeqRel* in : inputs) {
    if (!in || !in->best) continue;
    std::string note = forLeafUsers(dist, *in->best, [&](int64_t, const std::string&, const ir::Node& n) -> std::string {
      if (n.op != node.op) return "";
      for (const auto& [k, v] : node.attrs) {
        auto it = n.attrs.find(k);
        if (!std::holds_alternative<double>(v) || it == n.attrs.end() || !std::holds_alternative<double>(it->second))
          continue;
        double want = std::get<double>(v), got = std::get<double>(it->second);
        if (got != want)
          return "; " + distOp(n) + " has " + k + " " + secondsStr(got) + " where S's has " + secondsStr(want);
      }
      return "";
    });
    if (!note.empty()) return note;
  }
  return "";
}

// An S constant upstream of the failing op whose D namesake (a constant of
// the same name and shape on some rank) holds other values: "; D's
// constant 'scale' (loc) is 0.625 where S's is 0.25" (or "differs from
// S's" for a tensor).
std::string constNote(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node) {
  std::vector<ir::ValueId> stack(node.inputs.begin(), node.inputs.end());
  std::set<ir::ValueId> seen;
  while (!stack.empty() && seen.size() < 512) {
    ir::ValueId v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second || seq.value(v).producer < 0) continue;
    const ir::Node& p = seq.node(seq.value(v).producer);
    stack.insert(stack.end(), p.inputs.begin(), p.inputs.end());
    if (p.op != ir::OpKind::Constant) continue;
    const ir::Tensor& want = ir::attrTensor(p.attrs, "value");
    for (int64_t r = 0; r < dist.worldSize(); ++r) {
      const ir::Graph& g = dist.rank(r);
      auto d = g.findValue(seq.value(v).name);
      if (!d || g.value(*d).producer < 0) continue;
      const ir::Node& dn = g.node(g.value(*d).producer);
      if (dn.op != ir::OpKind::Constant) continue;
      const ir::Tensor& got = ir::attrTensor(dn.attrs, "value");
      if (got.dims() != want.dims() || got.dtype() != want.dtype() || got.identical(want)) continue;
      return "; " + distOp(dn) + (want.numel() == 1 ? " is " + secondsStr(got.getAsDouble(0)) + " where S's is " +
                                                          secondsStr(want.getAsDouble(0))
                                                    : " differs from S's constant '" + seq.value(v).name + "'");
    }
  }
  return "";
}

// A dropout whose D counterpart draws its mask from another stream than the
// one laid out like S's (DESIGN.md: a stream is laid out like the tensor it
// masks): "; stream s_rep is replicated over group tp where per-rank slices
// of s1 were needed". `distInputs` holds each D input's relation to S, per
// (rank, name), as text.
std::string streamNote(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node,
                       const std::vector<const SeqRel*>& inputs,
                       const std::map<std::pair<int64_t, std::string>, std::string>& distInputs) {
  if (node.op != ir::OpKind::Dropout || inputs.size() < 2 || !inputs[0] || !inputs[0]->best || !inputs[1] ||
      !inputs[1]->best)
    return "";
  const SeqRel& stream = *inputs[1];
  std::set<std::pair<int64_t, std::string>> laidOut;  // D tensors equal to (parts of) S's stream
  std::vector<RelPtr> terms = stream.alts;
  terms.push_back(stream.best);
  for (const RelPtr& t : terms) {
    std::vector<int64_t> ranks;
    std::vector<std::string> names;
    leavesOf(*t, ranks, names);
    for (size_t i = 0; i < ranks.size(); ++i) laidOut.emplace(ranks[i], names[i]);
  }
  std::string needed = stream.best->op == RelOp::Dist
                           ? std::string("a replicated stream was needed")
                           : "per-rank slices of " + seq.value(node.inputs[1]).name + " were needed";
  return forLeafUsers(dist, *inputs[0]->best, [&](int64_t rank, const std::string&, const ir::Node& n) -> std::string {
    if (n.op != ir::OpKind::Dropout || n.inputs.size() < 2) return "";
    const ir::Graph& g = dist.rank(rank);
    const std::string& used = g.value(n.inputs[1]).name;
    if (laidOut.count({rank, used}) || g.value(n.inputs[1]).producer >= 0) return "";
    // How the stream used relates to S across the ranks that hold it.
    std::set<std::string> forms;
    std::vector<int64_t> holders;
    for (const auto& [key, text] : distInputs)
      if (key.second == used) {
        forms.insert(text);
        holders.push_back(key.first);
      }
    if (holders.size() < 2) return "";
    return "; stream " + used + (forms.size() == 1 ? " is replicated over" : " differs across") + " group " +
           groupName(dist, holders) + " where " + needed + ", in " + distOp(n);
  });
}

namespace {

// explainFailure's text, and whether it names what D does wrong.
struct Explained {
  std::string text;
  bool namesFault = true;
};

Explained explainOp(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node,
                    const std::vector<const SeqRel*>& inputs, const std::string& value,
                    const std::map<std::pair<int64_t, std::string>, std::string>& distInputs, std::string* sumGroup) {
  std::string what = std::string(ir::opName(node.op)) + " '" + node.name + "'";
  bool linear = node.op == ir::OpKind::Add || node.op == ir::OpKind::Sub || node.op == ir::OpKind::Neg ||
                node.op == ir::OpKind::Identity;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] || !inputs[i]->best) continue;
    const Rel& r = *inputs[i]->best;
    const std::string& in = seq.value(node.inputs[i]).name;
    std::vector<int64_t> ranks;
    std::vector<std::string> names;
    leavesOf(r, ranks, names);
    if (ranks.empty()) continue;
    std::string group = groupName(dist, ranks);
    if (r.op == RelOp::Reshape && !r.args.empty() && r.args[0]->op == RelOp::Concat &&
        reshapeInterleaves(dist, *r.args[0], r.shape) && allToAllNotInverse(dist, inputs).empty()) {
      const Rel& cat = *r.args[0];
      const ir::Graph& g = dist.rank(ranks[0]);
      auto leaf = g.findValue(names[0]);
      int64_t d = leaf ? normDim(cat.dim, int64_t(g.value(*leaf).type.shape.size())) : cat.dim;
      std::string reshaped = forLeafUsers(dist, cat, [&](int64_t, const std::string& l, const ir::Node& n) {
        return n.op == ir::OpKind::Reshape ? "; " + distOp(n) + " reshapes each rank's '" + l + "' on its own"
                                           : std::string();
      });
      return {"shards mixed by a reshape: " + what + " reads '" + in + "', which is " + str(r) +
             ", a reshape of a tensor sharded on dim " + std::to_string(d) + " over group " + group +
             " that interleaves the shards" + reshaped};
    }
    if (const Rel* sum = firstSum(r); sum && !linear) {
      std::vector<int64_t> summed;
      std::vector<std::string> unused;
      leavesOf(*sum, summed, unused);
      std::string g = groupName(dist, summed);
      SumNote note = sumNote(dist, *sum, g);
      if (sumGroup && !note.sameGroup) *sumGroup = g;
      return {"rank-local partial sums reach " + what + ": its input '" + in + "' is " + str(r) +
             (note.sameGroup ? "" : "; missing sum over group " + g + " (all_reduce) before it") + note.text};
    }
    if (r.op == RelOp::Concat) {
      int64_t rank = int64_t(seq.value(node.inputs[i]).type.shape.size());
      int64_t d = normDim(r.dim, rank);
      auto whole = dimsReadWhole(seq, node, i);
      const bool readWhole = std::find(whole.begin(), whole.end(), d) != whole.end();
      // A matmul contracting shards of both operands (row parallel) makes
      // partial sums; shards of the other operand along another dim do not
      // pair up with these.
      if (node.op == ir::OpKind::MatMul && readWhole && inputs.size() == 2 && inputs[1 - i] && inputs[1 - i]->best &&
          inputs[1 - i]->best->op == RelOp::Concat) {
        const Rel& o = *inputs[1 - i]->best;
        int64_t orank = int64_t(seq.value(node.inputs[1 - i]).type.shape.size());
        int64_t od = normDim(o.dim, orank);
        auto owhole = dimsReadWhole(seq, node, 1 - i);
        if (std::find(owhole.begin(), owhole.end(), od) != owhole.end()) continue;
        return {"shards do not pair up: " + what + " contracts dim " + std::to_string(d) + " of '" + in +
               "', which D holds split over group " + group + ", while '" + seq.value(node.inputs[1 - i]).name +
               "' is split along dim " + std::to_string(od) +
               (owhole.size() == 1 ? ", not its contracted dim " + std::to_string(owhole[0]) : "")};
      }
      if (readWhole)
        return {"shard of dim " + std::to_string(d) + " where the full tensor is needed: " + what + " reads all of dim " +
               std::to_string(d) + " of '" + in + "', which D holds split over group " + group +
               "; missing all_gather over group " + group + scatterNote(dist, r, d, rank, whole) +
               concatNote(dist, r, d, rank, group)};
    }
  }
  // No explanation from one input: what D does to the inputs' D tensors.
  std::string note = streamNote(seq, dist, node, inputs, distInputs);
  if (note.empty()) note = sliceNote(seq, dist, node, inputs);
  if (note.empty()) note = attrNote(dist, node, inputs);
  if (note.empty()) note = constNote(seq, dist, node);
  for (size_t i = 0; i < inputs.size() && note.empty(); ++i) {
    if (!inputs[i] || !inputs[i]->best) continue;
    const Rel& r = *inputs[i]->best;
    int64_t rank = int64_t(seq.value(node.inputs[i]).type.shape.size());
    std::vector<int64_t> ranks;
    std::vector<std::string> names;
    leavesOf(r, ranks, names);
    if (r.op == RelOp::Concat && !ranks.empty())
      note = concatNote(dist, r, normDim(r.dim, rank), rank, groupName(dist, ranks));
    else note = replicatedSumNote(dist, *inputs[i]);
  }
  if (std::string a2a = allToAllNotInverse(dist, inputs); !a2a.empty())
    return {"no relation found between S value '" + value + "' and D tensors: " + a2a};
  // A broadcast no lemma covers is a gap of the library's, whatever D does.
  if (ir::opInfo(node.op).category == ir::OpCategory::Binary && inputs.size() == 2 && inputs[0] && inputs[1] &&
      seq.value(node.inputs[0]).type.shape != seq.value(node.inputs[1]).type.shape)
    return {"no relation found between S value '" + value + "' and D tensors (" + what +
                " broadcasts its operands; no lemma covers that split)" + note,
            false};
  return {"no relation found between S value '" + value + "' and D tensors" + note, !note.empty()};
}

}  // namespace

std::string explainFailure(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node,
                           const std::vector<const SeqRel*>& inputs, const std::string& value,
                           const std::map<std::pair<int64_t, std::string>, std::string>& distInputs,
                           const std::string& rangeGap, std::string* sumGroup, bool* namesFault) {
  Explained e = explainOp(seq, dist, node, inputs, value, distInputs, sumGroup);
  // A gap in what the proofs cover (gather indices in range) names it too,
  // unless the library lacks the broadcast anyway.
  if (namesFault) *namesFault = e.namesFault || (!rangeGap.empty() && e.text.find(" broadcasts its operands;") == std::string::npos);
  return rangeGap.empty() ? e.text : e.text + ": " + rangeGap;
}

}  // namespace sp::rewrite
