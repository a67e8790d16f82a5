// Symbolic meaning of integer/boolean and indexing ops in lemma proofs:
// const(value=v) (a rank-0 Int v), integer add/sub/mul/max/min, comparisons
// and and/or/xor/not (Bool terms), where (ite, three-way numpy broadcast),
// gather and gather_elements (the data read at the value of the index
// tensor: an Int term, or the floor of a real one). A gather read pushes its definedness (the index is
// an integer in [0, extent)) to Builder::reads: lemma_prove.cpp assumes it
// for the right side and proves it for the left side. Negative indices
// (which the IR wraps) are outside the modelled domain.
#include <algorithm>

#include "rewrite/lemma/lemma_symbolic.h"

namespace sp::rewrite::symbolic {

SymTensor Builder::asReal(const SymTensor& t) {
  if (!t.isBool && !t.isInt) return t;
  SymTensor out = t;
  out.isBool = out.isInt = false;
  smt::Context* zc = &z;
  auto f = t.at;
  if (t.isInt) {
    out.at = [zc, f](const std::vector<Term>& i) { return zc->toReal(f(i)); };
    return out;
  }
  out.at = [zc, f](const std::vector<Term>& i) {
    return zc->ite(f(i), zc->realVal(int64_t(1), 1), zc->realVal(int64_t(0), 1));
  };
  return out;
}

// A number used as a condition: nonzero is true (the IR's cast to bool).
SymTensor Builder::asBool(const SymTensor& t) {
  if (t.isBool) return t;
  SymTensor out = t;
  out.isBool = true;
  out.isInt = false;
  smt::Context* zc = &z;
  auto f = t.at;
  Term zero = t.isInt ? z.intVal(0) : z.realVal(int64_t(0), 1);
  out.at = [zc, f, zero](const std::vector<Term>& i) { return zc->ne(f(i), zero); };
  return out;
}

Result<SymTensor> Builder::constant(const Pattern& p) {
  SP_ASSIGN(Term v, attrInt(p, "value"));
  SymTensor t;  // rank 0
  t.isInt = true;
  t.at = [v](const std::vector<Term>&) { return v; };
  return t;
}

namespace {

// Elementwise f over two broadcast operands.
SymTensor binaryMap(Builder& b, const SymTensor& x, const SymTensor& y, bool isBool,
                    std::function<Term(Term, Term)> f, bool isInt = false) {
  Broadcast bc = b.broadcast(x.shape, y.shape);
  b.wf->insert(b.wf->end(), bc.wf.begin(), bc.wf.end());
  SymTensor out;
  out.shape = bc.shape;
  out.isBool = isBool;
  out.isInt = isInt;
  smt::Context* zc = &b.z;
  out.at = [zc, x, y, f, bc](const std::vector<Term>& idx) {
    return f(x.at(Broadcast::index(*zc, x.shape, bc.directA, idx, bc.oneA)), y.at(Broadcast::index(*zc, y.shape, bc.directB, idx, bc.oneB)));
  };
  return out;
}

Result<SymTensor> compare(Builder& b, ir::OpKind op, SymTensor x, SymTensor y) {
  using ir::OpKind;
  smt::Context* zc = &b.z;
  if (op == OpKind::And || op == OpKind::Or || op == OpKind::Xor) {
    x = b.asBool(x);
    y = b.asBool(y);
    return binaryMap(b, x, y, true, [zc, op](Term u, Term v) {
      return op == OpKind::And ? zc->and_({u, v}) : op == OpKind::Or ? zc->or_({u, v}) : zc->ne(u, v);
    });
  }
  bool same = x.isBool == y.isBool && x.isInt == y.isInt;
  if (!same || (x.isBool && op != OpKind::Eq && op != OpKind::Ne)) {
    x = b.asReal(x);
    y = b.asReal(y);
  }
  return binaryMap(b, x, y, true, [zc, op](Term u, Term v) {
    switch (op) {
      case OpKind::Eq: return zc->eq(u, v);
      case OpKind::Ne: return zc->ne(u, v);
      case OpKind::Lt: return zc->lt(u, v);
      case OpKind::Le: return zc->le(u, v);
      case OpKind::Gt: return zc->gt(u, v);
      default: return zc->ge(u, v);
    }
  });
}

// where(c, a, b): numpy broadcast of c with a, then of that with b.
SymTensor where(Builder& b, SymTensor c, SymTensor x, SymTensor y) {
  c = b.asBool(c);
  if (x.isBool != y.isBool || x.isInt != y.isInt) { x = b.asReal(x); y = b.asReal(y); }
  Broadcast b1 = b.broadcast(c.shape, x.shape);
  Broadcast b2 = b.broadcast(b1.shape, y.shape);
  b.wf->insert(b.wf->end(), b1.wf.begin(), b1.wf.end());
  b.wf->insert(b.wf->end(), b2.wf.begin(), b2.wf.end());
  SymTensor out;
  out.shape = b2.shape;
  out.isBool = x.isBool;
  out.isInt = x.isInt;
  smt::Context* zc = &b.z;
  out.at = [zc, c, x, y, b1, b2](const std::vector<Term>& idx) {
    std::vector<Term> j = Broadcast::index(*zc, b1.shape, b2.directA, idx, b2.oneA);
    return zc->ite(c.at(Broadcast::index(*zc, c.shape, b1.directA, j, b1.oneA)), x.at(Broadcast::index(*zc, x.shape, b1.directB, j, b1.oneB)),
                   y.at(Broadcast::index(*zc, y.shape, b2.directB, idx, b2.oneB)));
  };
  return out;
}

// The integer position a gather reads at index value v (a real), recording
// that the read is defined: v is an integer in [0, extent).
Term readAt(smt::Context& z, std::vector<Term>* sink, Term v, Term extent) {
  if (z.sort(v) == smt::Sort::Int) {
    if (sink) sink->push_back(z.and_({z.ge(v, z.intVal(0)), z.lt(v, extent)}));
    return v;
  }
  if (sink) sink->push_back(z.and_({z.isInt(v), z.ge(v, z.realVal(int64_t(0), 1)), z.lt(v, z.toReal(extent))}));
  return z.toInt(v);
}

Result<SymTensor> gather(Builder& b, const Pattern& p, const SymTensor& x, SymTensor idx) {
  if (!idx.isInt) idx = b.asReal(idx);
  size_t r = x.shape.size(), ri = idx.shape.size();
  if (r == 0) return makeError("rank-too-small", "gather needs data of rank >= 1");
  const PatAttr* a = p.attr("axis");
  SP_ASSIGN(int64_t axis, b.normDim(a ? a->i : 0, r));
  size_t ax = size_t(axis);
  SymTensor out;
  out.isBool = x.isBool;
  out.isInt = x.isInt;
  out.shape.assign(x.shape.begin(), x.shape.begin() + long(ax));
  out.shape.insert(out.shape.end(), idx.shape.begin(), idx.shape.end());
  out.shape.insert(out.shape.end(), x.shape.begin() + long(ax) + 1, x.shape.end());
  smt::Context* zc = &b.z;
  std::vector<Term>* sink = b.reads;
  out.at = [zc, sink, x, idx, ax, ri](const std::vector<Term>& i) {
    std::vector<Term> ii(i.begin() + long(ax), i.begin() + long(ax + ri));
    std::vector<Term> j(i.begin(), i.begin() + long(ax));
    j.push_back(readAt(*zc, sink, idx.at(ii), x.shape[ax]));
    j.insert(j.end(), i.begin() + long(ax + ri), i.end());
    return x.at(j);
  };
  return out;
}

Result<SymTensor> gatherElements(Builder& b, const Pattern& p, const SymTensor& x, SymTensor idx) {
  if (!idx.isInt) idx = b.asReal(idx);
  size_t r = x.shape.size();
  if (idx.shape.size() != r) return makeError("rank-mismatch", "gather_elements: index and data ranks differ");
  const PatAttr* a = p.attr("axis");
  SP_ASSIGN(int64_t axis, b.normDim(a ? a->i : 0, r));
  size_t ax = size_t(axis);
  for (size_t k = 0; k < r; ++k)
    if (k != ax) b.wf->push_back(idx.shape[k] <= x.shape[k]);
  SymTensor out = idx;
  out.isBool = x.isBool;
  out.isInt = x.isInt;
  smt::Context* zc = &b.z;
  std::vector<Term>* sink = b.reads;
  out.at = [zc, sink, x, idx, ax](const std::vector<Term>& i) {
    std::vector<Term> j = i;
    j[ax] = readAt(*zc, sink, idx.at(i), x.shape[ax]);
    return x.at(j);
  };
  return out;
}

// cross_entropy(x, t) for logits [N, C] and targets [N] without class
// weights, as the interpreter computes it: row b's loss is
// log(sum_j exp(x[b, j] - m_b)) + m_b - x[b, t_b] with m_b = max_j x[b, j]
// (the same reals as log(sum_j exp(x[b, j])) - x[b, t_b]); reduction mean
// (the default) averages the rows, sum adds them, none keeps them. The
// target is read like a gather index: defined where it is an integer in
// [0, C) (and not a nonnegative ignore_index), so ignored rows (the default
// ignore_index -100) are outside the modelled domain, as negative gather
// indices are; under the row fold the reads become one fact for all rows.
Result<SymTensor> crossEntropy(Builder& b, const Pattern& p, std::vector<SymTensor>& xs) {
  if (xs.size() != 2) return makeError("unsupported-op", "cross_entropy with class weights has no smt meaning");
  SymTensor x = b.asReal(xs[0]), t = xs[1];
  if (!t.isInt) t = b.asReal(t);
  if (x.shape.size() < 2) return makeError("rank-too-small", "cross_entropy needs logits of rank >= 2");
  if (x.shape.size() != 2) return makeError("unsupported-op", "cross_entropy proofs need rank-2 logits [N, C]");
  if (t.shape.size() != 1) return makeError("rank-mismatch", "cross_entropy: targets of rank-2 logits have rank 1");
  b.wf->push_back(t.shape[0] == x.shape[0]);
  const PatAttr* ra = p.attr("reduction");
  std::string red = ra ? ra->text : "mean";
  if (red != "mean" && red != "sum" && red != "none") return makeError("bad-attr", "cross_entropy: reduction " + red);
  const PatAttr* ia = p.attr("ignore_index");
  int64_t ignore = ia ? ia->i : -100;
  smt::Context* zc = &b.z;
  std::vector<Term>* sink = b.reads;
  Builder* bp = &b;
  Term n = x.shape[0], c = x.shape[1];
  auto row = [zc, bp, sink, x, t, c, ignore](Term r) {
    Term j1 = zc->freshInt("c"), j2 = zc->freshInt("c");
    Term m = zc->fold(smt::FoldOp::Max, j1, zc->intVal(0), c, x.at({r, j1}));
    Term s = zc->fold(smt::FoldOp::Sum, j2, zc->intVal(0), c, bp->uf1("exp", x.at({r, j2}) - m));
    Term tv = t.at({r});
    Term pos = readAt(*zc, sink, tv, c);
    if (ignore >= 0 && sink)
      sink->push_back(zc->ne(tv, zc->sort(tv) == smt::Sort::Int ? zc->intVal(ignore) : zc->realVal(ignore, 1)));
    return zc->neg(x.at({r, pos}) - m - bp->uf1("log", s));
  };
  SymTensor out;
  if (red == "none") {
    out.shape = {n};
    out.at = [row](const std::vector<Term>& i) { return row(i[0]); };
    return out;
  }
  bool mean = red == "mean";
  out.at = [zc, sink, row, n, mean](const std::vector<Term>&) {
    Term r = zc->freshInt("b");
    size_t before = sink ? sink->size() : 0;
    Term v = zc->fold(smt::FoldOp::Sum, r, zc->intVal(0), n, row(r));
    foldReads(*zc, sink, before, {{r, n}});
    return mean ? zc->realDiv(v, zc->toReal(n)) : v;
  };
  return out;
}

}  // namespace

std::optional<Result<SymTensor>> Builder::buildIndexOp(const Pattern& p, std::vector<SymTensor>& xs) {
  using ir::OpKind;
  switch (p.irOp) {
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
    case OpKind::And: case OpKind::Or: case OpKind::Xor:
      return compare(*this, p.irOp, xs[0], xs[1]);
    case OpKind::Not: {
      SymTensor x = asBool(xs[0]), out = x;
      smt::Context* zc = &z;
      out.at = [zc, x](const std::vector<Term>& i) { return zc->not_(x.at(i)); };
      return Result<SymTensor>(out);
    }
    case OpKind::Where: return Result<SymTensor>(where(*this, xs[0], xs[1], xs[2]));
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Max: case OpKind::Min: {
      if (!xs[0].isInt || !xs[1].isInt) return std::nullopt;  // real arithmetic (lemma_symbolic_ir.cpp)
      smt::Context* zc = &z;
      OpKind op = p.irOp;
      return Result<SymTensor>(binaryMap(*this, xs[0], xs[1], false, [zc, op](Term u, Term v) {
        switch (op) {
          case OpKind::Add: return u + v;
          case OpKind::Sub: return u - v;
          case OpKind::Mul: return u * v;
          case OpKind::Max: return zc->ite(zc->ge(u, v), u, v);
          default: return zc->ite(zc->le(u, v), u, v);
        }
      }, true));
    }
    case OpKind::Gather: return gather(*this, p, xs[0], xs[1]);
    case OpKind::GatherElements: return gatherElements(*this, p, xs[0], xs[1]);
    case OpKind::CrossEntropy: return crossEntropy(*this, p, xs);
    default: return std::nullopt;
  }
}

}  // namespace sp::rewrite::symbolic
