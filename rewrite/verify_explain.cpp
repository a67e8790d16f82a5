// Localization messages in the user's terms: what the best candidate lacked.
#include <algorithm>
#include <functional>
#include <set>

#include "rewrite/engine_verify.h"

namespace sp::rewrite {

namespace {

void leavesOf(const Rel& r, std::vector<int64_t>& ranks, std::vector<std::string>& names) {
  if (r.op == RelOp::Dist) {
    ranks.push_back(r.rank.eval({}, nullptr).value());
    names.push_back(str(r));
  }
  for (const auto& a : r.args) leavesOf(*a, ranks, names);
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
      std::string name = names[i].substr(names[i].find('.') + 1);
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

// An S output whose relation is a sum over ranks of D values where the
// expected relation sums nothing: every rank returns its own partial sums.
// "": no such explanation.
std::string explainExpectMismatch(const ir::Program& dist, const Rel& found, const Rel& expected) {
  std::function<bool(const Rel&)> sums = [&](const Rel& r) {
    return r.op == RelOp::Sum || std::any_of(r.args.begin(), r.args.end(), [&](const RelPtr& a) { return sums(*a); });
  };
  if (found.op != RelOp::Sum || sums(expected)) return "";
  std::vector<int64_t> ranks;
  std::vector<std::string> names;
  leavesOf(found, ranks, names);
  if (std::set<int64_t>(ranks.begin(), ranks.end()).size() < 2) return "";
  std::string group = groupName(dist, ranks);
  return ": S's value is a sum over group " + group +
         " of rank-local values, which D's output does not add up: rank-local partial sums, missing sum over group " +
         group + " (all_reduce) before the output";
}

std::string explainFailure(const ir::Graph& seq, const ir::Program& dist, const ir::Node& node,
                           const std::vector<const SeqRel*>& inputs, const std::string& value) {
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
    if (r.op == RelOp::Sum && !linear)
      return "rank-local partial sums reach " + what + ": its input '" + in + "' is " + str(r) +
             "; missing sum over group " + group + " (all_reduce) before it";
    if (r.op == RelOp::Concat) {
      int64_t rank = int64_t(seq.value(node.inputs[i]).type.shape.size());
      int64_t d = normDim(r.dim, rank);
      auto whole = dimsReadWhole(seq, node, i);
      bool otherSplit = false;
      if (node.op == ir::OpKind::MatMul && inputs.size() == 2 && inputs[1 - i] && inputs[1 - i]->best)
        otherSplit = inputs[1 - i]->best->op == RelOp::Concat;
      if (std::find(whole.begin(), whole.end(), d) != whole.end() && !otherSplit)
        return "shard of dim " + std::to_string(d) + " where the full tensor is needed: " + what + " reads all of dim " +
               std::to_string(d) + " of '" + in + "', which D holds split over group " + group +
               "; missing all_gather over group " + group;
    }
  }
  if (std::string a2a = allToAllNotInverse(dist, inputs); !a2a.empty())
    return "no relation found between S value '" + value + "' and D tensors: " + a2a;
  if (ir::opInfo(node.op).category == ir::OpCategory::Binary && inputs.size() == 2 && inputs[0] && inputs[1] &&
      seq.value(node.inputs[0]).type.shape != seq.value(node.inputs[1]).type.shape)
    return "no relation found between S value '" + value + "' and D tensors (" + what +
           " broadcasts its operands; no lemma covers that split)";
  return "no relation found between S value '" + value + "' and D tensors";
}

}  // namespace sp::rewrite
