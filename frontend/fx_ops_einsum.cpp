// einsum(equation, tensors): any equation, explicit (`bij,bjk->bik`) or
// implicit (`ij,jk`: the labels seen once, sorted), with `...` (broadcast
// dims, aligned from the right). Lowered to IR ops as torch contracts it:
// labels of one operand that no other operand nor the output has are
// summed first (reduce_sum); then operands are contracted left to right,
// each pair as one batched matmul: labels of both that are kept (in the
// output or a later operand) are batch dims, labels of both that are not
// kept are the contraction, the others are the free rows and columns
// (transpose, reshape, matmul, reshape); finally labels not in the output
// are summed and the rest transposed into the output's order. A label
// repeated within one operand (a diagonal, `ii->i`) is an error.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

constexpr int kEllipsis = 1000;  // labels of broadcast dims: kEllipsis + k

struct Term {
  TRef t;
  std::vector<int> labels;  // one per dim
};

bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// "ab...c" -> letters before and after the ellipsis; error text on failure.
struct Spec {
  std::vector<int> before, after;
  bool ellipsis = false;
};

std::optional<Spec> parseTerm(const std::string& s, std::string& why) {
  Spec sp;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      if (sp.ellipsis) {
        why = "term '" + s + "' has two ellipses";
        return std::nullopt;
      }
      sp.ellipsis = true;
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(s[i]))) {
      why = "term '" + s + "' has the character '" + std::string(1, s[i]) + "' (labels are letters)";
      return std::nullopt;
    }
    (sp.ellipsis ? sp.after : sp.before).push_back(int(s[i]));
  }
  return sp;
}

std::vector<int> labelsOf(const Spec& sp, int64_t ellipsisDims, int64_t allEllipsisDims) {
  std::vector<int> out = sp.before;
  for (int64_t k = allEllipsisDims - ellipsisDims; k < allEllipsisDims; ++k) out.push_back(kEllipsis + int(k));
  out.insert(out.end(), sp.after.begin(), sp.after.end());
  return out;
}

std::string labelName(int l) { return l >= kEllipsis ? "...[" + std::to_string(l - kEllipsis) + "]" : std::string(1, char(l)); }

class Einsum {
 public:
  explicit Einsum(Emitter& e) : e_(e) {}

  // Sums the labels of `t` that are not in `keep`.
  Term sumOut(Term t, const std::set<int>& keep) {
    std::vector<int64_t> axes;
    std::vector<int> left;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      if (keep.count(t.labels[d])) left.push_back(t.labels[d]);
      else axes.push_back(int64_t(d));
    }
    if (axes.empty()) return t;
    return {e_.reduce(OpKind::ReduceSum, t.t, axes, false), left};
  }

  // `t` with its dims in the order of `order` (labels of t).
  Term permute(Term t, const std::vector<int>& order) {
    std::vector<int64_t> perm;
    ir::Shape s;
    for (int l : order) {
      int64_t d = std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin();
      perm.push_back(d);
      s.push_back(t.t.type.shape[size_t(d)]);
    }
    bool identity = true;
    for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == int64_t(k);
    if (identity) return t;
    return {e_.emit(OpKind::Transpose, {t.t}, {{"perm", perm}}, TensorType{t.t.dtype(), s}, "einsum_perm"), order};
  }

  ir::Dim dim(const Term& t, int l) const {
    return t.t.type.shape[size_t(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin())];
  }

  // Contracts a and b, keeping the labels in `keep`.
  Term contract(Term a, Term b, const std::set<int>& keep) {
    std::set<int> keepA = keep, keepB = keep;
    keepA.insert(b.labels.begin(), b.labels.end());
    keepB.insert(a.labels.begin(), a.labels.end());
    a = sumOut(a, keepA);
    b = sumOut(b, keepB);
    std::vector<int> batch, contr, freeA, freeB;
    for (int l : a.labels) {
      if (!has(b.labels, l)) freeA.push_back(l);
      else if (keep.count(l)) batch.push_back(l);
      else contr.push_back(l);
    }
    for (int l : b.labels)
      if (!has(a.labels, l)) freeB.push_back(l);
    // a contracted label of size 1 on one side is broadcast to the other's
    for (int l : contr) {
      ir::Dim da = dim(a, l), db = dim(b, l);
      if (da == db) continue;
      Term& small = da == ir::Dim(1) ? a : b;
      ir::Shape s = small.t.type.shape;
      s[size_t(std::find(small.labels.begin(), small.labels.end(), l) - small.labels.begin())] =
          da == ir::Dim(1) ? db : da;
      small.t = e_.expand(small.t, s);
    }
    std::vector<int> orderA = batch, orderB = batch;
    orderA.insert(orderA.end(), freeA.begin(), freeA.end());
    orderA.insert(orderA.end(), contr.begin(), contr.end());
    orderB.insert(orderB.end(), contr.begin(), contr.end());
    orderB.insert(orderB.end(), freeB.begin(), freeB.end());
    a = permute(a, orderA);
    b = permute(b, orderB);
    auto prod = [&](const Term& t, const std::vector<int>& ls) {
      ir::Dim p(1);
      for (int l : ls) p = p * dim(t, l);
      return p;
    };
    ir::Shape sa, sb, so;
    for (int l : batch) {
      sa.push_back(dim(a, l));
      sb.push_back(dim(b, l));
      so.push_back(dim(a, l) == ir::Dim(1) ? dim(b, l) : dim(a, l));
    }
    ir::Shape outShape = so;
    sa.push_back(prod(a, freeA));
    sa.push_back(prod(a, contr));
    sb.push_back(prod(b, contr));
    sb.push_back(prod(b, freeB));
    so.push_back(sa[sa.size() - 2]);
    so.push_back(sb.back());
    TRef m = e_.emit(OpKind::MatMul, {e_.reshape(a.t, sa), e_.reshape(b.t, sb)}, {}, TensorType{a.t.dtype(), so},
                     "einsum_matmul");
    std::vector<int> labels = batch;
    for (int l : freeA) {
      labels.push_back(l);
      outShape.push_back(dim(a, l));
    }
    for (int l : freeB) {
      labels.push_back(l);
      outShape.push_back(dim(b, l));
    }
    return {e_.reshape(m, outShape), labels};
  }

 private:
  Emitter& e_;
};

}  // namespace

Status mapEinsum(Emitter& e) {
  SP_ASSIGN(std::string eq, e.string(0, "equation"));
  SP_ASSIGN(auto list, e.tensorList(1, "tensors"));
  SP_ASSIGN(TensorType t, e.outType(0));
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  auto bad = [&](const std::string& why) { return e.error("fx-arg", "equation '" + eq + "': " + why); };
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    size_t c = lhs.find(',', at);
    terms.push_back(lhs.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  if (terms.size() != list.size())
    return bad(std::to_string(terms.size()) + " operand terms but " + std::to_string(list.size()) + " tensors");
  std::string why;
  std::vector<Spec> specs;
  int64_t allEll = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    auto sp = parseTerm(terms[k], why);
    if (!sp) return bad(why);
    if (!list[k]) return bad("operand " + std::to_string(k) + " is None");
    int64_t letters = int64_t(sp->before.size() + sp->after.size());
    int64_t ell = list[k]->rank() - letters;
    if (ell < 0 || (ell > 0 && !sp->ellipsis))
      return bad("term '" + terms[k] + "' has " + std::to_string(letters) + " labels for operand " +
                 std::to_string(k) + " of type " + list[k]->type.str());
    allEll = std::max(allEll, ell);
    specs.push_back(*sp);
  }
  std::vector<Term> ops;
  std::map<int, int> count;
  for (size_t k = 0; k < terms.size(); ++k) {
    int64_t letters = int64_t(specs[k].before.size() + specs[k].after.size());
    if (list[k]->dtype() != t.dtype)
      return e.error("type-mismatch", "operand " + std::to_string(k) + " is " + list[k]->type.str() +
                                          " but the result is declared " + std::string(ir::dtypeName(t.dtype)) +
                                          " (einsum operands and result share one dtype)");
    Term term{*list[k], labelsOf(specs[k], list[k]->rank() - letters, allEll)};
    std::set<int> seen;
    for (int l : term.labels) {
      if (!seen.insert(l).second)
        return e.error("fx-unsupported", "equation '" + eq + "': label '" + labelName(l) + "' repeats in term '" +
                                             terms[k] + "' (a diagonal), which is not supported");
      ++count[l];
    }
    ops.push_back(std::move(term));
  }
  // sizes agree across operands, up to broadcasting of 1
  std::map<int, ir::Dim> size;
  for (const auto& o : ops)
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const ir::Dim& x = o.t.type.shape[d];
      auto [it, fresh] = size.emplace(o.labels[d], x);
      if (fresh || it->second == x || x == ir::Dim(1)) continue;
      if (it->second == ir::Dim(1)) it->second = x;
      else return bad("label '" + labelName(o.labels[d]) + "' has sizes " + it->second.str() + " and " + x.str());
    }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    auto sp = parseTerm(eq.substr(arrow + 2), why);
    if (!sp) return bad(why);
    out = labelsOf(*sp, sp->ellipsis ? allEll : 0, allEll);
    std::set<int> seen;
    for (int l : out) {
      if (!seen.insert(l).second) return bad("output label '" + labelName(l) + "' repeats");
      if (!count.count(l)) return bad("output label '" + labelName(l) + "' is in no operand");
    }
  } else {  // implicit: the broadcast dims, then the labels seen once, sorted
    for (int64_t k = 0; k < allEll; ++k) out.push_back(kEllipsis + int(k));
    for (const auto& [l, n] : count)
      if (l < kEllipsis && n == 1) out.push_back(l);
  }
  Einsum es(e);
  std::set<int> outSet(out.begin(), out.end());
  auto keptAfter = [&](size_t k) {  // labels of the output and of operands after k
    std::set<int> keep = outSet;
    for (size_t j = k + 1; j < ops.size(); ++j) keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  Term acc = es.sumOut(ops[0], keptAfter(0));
  for (size_t k = 1; k < ops.size(); ++k) acc = es.contract(acc, ops[k], keptAfter(k));
  acc = es.permute(es.sumOut(acc, outSet), out);
  return e.outValue(0, acc.t);
}

}  // namespace sp::frontend::fx
