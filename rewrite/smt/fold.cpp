// Sound elimination of fold terms (big sums / maxima / minima over integer
// ranges) before a query reaches Z3. Every step is an identity:
//   decide:  inside [lo, hi), a condition implied (or refuted) by the context
//            and lo <= v < hi is replaced by true (false);
//   hoist:   op_v ite(c, f, g) = ite(c, op_v f, op_v g) when c has no v;
//   split:   op_[lo,hi) f = op_[lo,m) f (+|max|min) op_[m,hi) f, lo < m < hi;
//   linear:  (sums only) sum_v (k * f + g) = k * sum_v f + sum_v g when k has no v;
//   shift:   op_[lo,hi) f(v) = op_[0,hi-lo) f(u + lo), and an integer
//            u + a - c in the body is u + 0 where the context implies a = c;
//   one:     op_[lo,hi) f(v) = f(lo) when the context implies hi = lo + 1.
// What remains, op_[0,n) f(u, t1..tk) with t1..tk the maximal subterms of
// the body free of u, is replaced by F_f(n, t1..tk) where F_f is an
// uninterpreted function per (op, f) - a function of n and the values of
// the t's, so bodies equal up to those subterms share F (congruence: the
// second part of a concat, b(i - na, u), shifted to i = u' + na, meets the
// part's own b(u', u)) and nothing else is assumed about it.
#include <functional>
#include <set>

#include "ir/support.h"
#include "rewrite/smt/z3_impl.h"

namespace sp::smt {

namespace {

constexpr int kMaxSplitDepth = 12;

bool contains(const z3::expr& e, const z3::expr& v, std::map<unsigned, bool>& memo) {
  unsigned id = Z3_get_ast_id(e.ctx(), e);
  if (auto it = memo.find(id); it != memo.end()) return it->second;
  bool r = false;
  if (z3::eq(e, v)) r = true;
  else if (e.is_app())
    for (unsigned i = 0; i < e.num_args() && !r; ++i) r = contains(e.arg(i), v, memo);
  memo[id] = r;
  return r;
}

bool contains(const z3::expr& e, const z3::expr& v) {
  std::map<unsigned, bool> memo;
  return contains(e, v, memo);
}

bool isCmp(const z3::expr& e) {
  if (!e.is_app()) return false;
  switch (e.decl().decl_kind()) {
    case Z3_OP_LE: case Z3_OP_LT: case Z3_OP_GE: case Z3_OP_GT: return true;
    case Z3_OP_EQ: return e.arg(0).is_arith();
    default: return false;
  }
}

// Arithmetic atoms inside the conditions of ite terms of e, in a fixed order.
void condAtoms(const z3::expr& e, bool inCond, std::vector<z3::expr>& out,
               std::set<unsigned>& seen) {
  unsigned id = Z3_get_ast_id(e.ctx(), e);
  if (!seen.insert(id * 2 + (inCond ? 1 : 0)).second) return;
  if (!e.is_app()) return;
  if (inCond && isCmp(e)) {
    out.push_back(e);
    return;
  }
  if (e.decl().decl_kind() == Z3_OP_ITE) {
    condAtoms(e.arg(0), true, out, seen);
    condAtoms(e.arg(1), inCond, out, seen);
    condAtoms(e.arg(2), inCond, out, seen);
    return;
  }
  for (unsigned i = 0; i < e.num_args(); ++i) condAtoms(e.arg(i), inCond, out, seen);
}

z3::expr subst1(const z3::expr& e, const z3::expr& from, const z3::expr& to) {
  z3::expr_vector f(e.ctx()), t(e.ctx());
  f.push_back(from);
  t.push_back(to);
  return z3::expr(e).substitute(f, t);
}

bool numeral(const z3::expr& e, int64_t* v) {
  if (!e.is_numeral()) return false;
  return e.is_numeral_i64(*v);
}

// For an integer atom linear in v with coefficient +-1, the point m such that
// the atom is constant on v < m and on v >= m.
std::optional<z3::expr> threshold(const z3::expr& atom, const z3::expr& v) {
  Z3_decl_kind k = atom.decl().decl_kind();
  if (k == Z3_OP_EQ || !atom.arg(0).is_int()) return std::nullopt;
  z3::context& z = atom.ctx();
  z3::expr d = atom.arg(0) - atom.arg(1);
  z3::expr d0 = subst1(d, v, z.int_val(0)).simplify();
  z3::expr d1 = subst1(d, v, z.int_val(1)).simplify();
  z3::expr d2 = subst1(d, v, z.int_val(2)).simplify();
  int64_t c = 0, c2 = 0;
  if (!numeral((d1 - d0).simplify(), &c) || !numeral((d2 - d1).simplify(), &c2) || c != c2)
    return std::nullopt;
  if (c != 1 && c != -1) return std::nullopt;
  // Linear in v but maybe through v's appearance elsewhere: confirm d == c*v + d0.
  const z3::expr& rest = d0;
  z3::expr one = z.int_val(1);
  z3::expr m(z);
  switch (k) {
    case Z3_OP_LE: m = c == 1 ? one - rest : rest; break;
    case Z3_OP_LT: m = c == 1 ? -rest : rest + one; break;
    case Z3_OP_GE: m = c == 1 ? -rest : rest + one; break;
    case Z3_OP_GT: m = c == 1 ? one - rest : rest; break;
    default: return std::nullopt;
  }
  return m.simplify();
}

}  // namespace

namespace {

struct FoldNormalizer {
  Context::Impl& impl;
  unsigned timeoutMs;
  bool* abstracted;

  // e with its maximal u-free subterms (numerals kept) replaced by
  // parameters fold!p0, fold!p1, ... numbered in first-occurrence order;
  // `params` receives the replaced subterms in that order.
  z3::expr generalize(const z3::expr& e, const z3::expr& u, std::vector<z3::expr>& params,
                      std::map<unsigned, z3::expr>& memo) {
    unsigned id = Z3_get_ast_id(e.ctx(), e);
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    z3::expr out = e;
    if (!contains(e, u)) {
      if (!e.is_numeral()) {
        out = impl.z.constant(("fold!p" + std::to_string(params.size())).c_str(), e.get_sort());
        params.push_back(e);
      }
    } else if (e.is_app() && e.num_args() > 0) {
      z3::expr_vector args(impl.z);
      for (unsigned i = 0; i < e.num_args(); ++i) args.push_back(generalize(e.arg(i), u, params, memo));
      out = e.decl()(args);
    }
    memo.emplace(id, out);
    return out;
  }

  z3::expr combine(FoldOp op, const z3::expr& a, const z3::expr& b) {
    switch (op) {
      case FoldOp::Sum: return a + b;
      case FoldOp::Max: return z3::ite(a >= b, a, b);
      case FoldOp::Min: return z3::ite(a <= b, a, b);
    }
    return a;
  }

  z3::expr abstractOne(FoldOp op, const z3::expr& n, const z3::expr& raw, const z3::expr& u) {
    // Generalize: every maximal subterm without u becomes a parameter, so
    // the fold is F(n, t1..tk) for one function F per generalized body.
    // Bodies that differ only in u-free subterms share F (b(i - na, u) of a
    // concat's second part and b(i, u) of the part itself); F(n, t) is still
    // just the fold's value as a function of n and t, so nothing is assumed.
    std::vector<z3::expr> params;
    std::map<unsigned, z3::expr> memo;
    z3::expr body = generalize(raw, u, params, memo);
    auto key = std::make_pair(int(op), impl.astId(body));
    auto it = impl.abstractions.find(key);
    if (it == impl.abstractions.end()) {
      z3::sort_vector dom(impl.z);
      dom.push_back(impl.z.int_sort());
      for (const auto& c : params) dom.push_back(c.get_sort());
      std::string name = std::string(op == FoldOp::Sum ? "sum" : op == FoldOp::Max ? "max" : "min") +
                         "!" + std::to_string(impl.abstractions.size());
      it = impl.abstractions.emplace(key, std::make_pair(impl.z.function(name.c_str(), dom, impl.z.real_sort()), body)).first;
    }
    z3::expr_vector args(impl.z);
    args.push_back(n);
    for (const auto& c : params) args.push_back(c);
    *abstracted = true;
    z3::expr f = it->second.first(args);
    // a sum of exponentials (and positive numerals) over a nonempty range
    if (op == FoldOp::Sum && impl.positiveTerm(body)) impl.positive.push_back(z3::implies(n >= 1, f > 0));
    return f;
  }

  // Integer sums in b that read u plus a u-free offset the context proves
  // zero lose the offset: after a shift, a read at u + a - c with a = c
  // implied (not syntactically equal: a concat part's width against its
  // matmul partner's, equal through a broadcast's typing) is the read at u,
  // so the body meets the same body written without the shift.
  z3::expr dropZeroOffsets(const z3::expr& b, const z3::expr& u, const std::vector<z3::expr>& ctx,
                           std::map<unsigned, z3::expr>& memo) {
    unsigned id = Z3_get_ast_id(b.ctx(), b);
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    z3::expr out = b;
    if (b.is_app() && b.num_args() > 0 && contains(b, u)) {
      z3::expr_vector args(impl.z);
      for (unsigned i = 0; i < b.num_args(); ++i) args.push_back(dropZeroOffsets(b.arg(i), u, ctx, memo));
      out = b.decl()(args);
      if (out.is_int() && out.decl().decl_kind() == Z3_OP_ADD) {
        z3::expr_vector keep(impl.z);
        z3::expr offset = impl.z.int_val(0);
        int free = 0;
        for (unsigned i = 0; i < out.num_args(); ++i) {
          if (contains(out.arg(i), u) || out.arg(i).is_numeral()) keep.push_back(out.arg(i));
          else offset = offset + out.arg(i), ++free;
        }
        if (free >= 2 && impl.implied(ctx, offset == impl.z.int_val(0), timeoutMs))
          out = keep.size() == 1 ? keep[0] : z3::sum(keep);
      }
    }
    memo.emplace(id, out);
    return out;
  }

  z3::expr abstract(FoldOp op, const z3::expr& v, const z3::expr& lo, const z3::expr& hi,
                    const z3::expr& body, const std::vector<z3::expr>& ctx) {
    z3::expr u = impl.z.int_const("fold!u");
    z3::expr n = (hi - lo).simplify();
    z3::expr b = subst1(body, v, u + lo).simplify();
    {
      std::map<unsigned, z3::expr> memo;
      b = dropZeroOffsets(b, u, ctx, memo).simplify();
    }
    if (op != FoldOp::Sum) return abstractOne(op, n, b, u);
    z3::params p(impl.z);
    p.set("som", true);
    b = b.simplify(p);
    std::vector<z3::expr> terms;
    if (b.is_app() && b.decl().decl_kind() == Z3_OP_ADD)
      for (unsigned i = 0; i < b.num_args(); ++i) terms.push_back(b.arg(i));
    else
      terms.push_back(b);
    z3::expr total = impl.z.real_val(0);
    for (const auto& t : terms) {
      std::vector<z3::expr> factors;
      if (t.is_app() && t.decl().decl_kind() == Z3_OP_MUL)
        for (unsigned i = 0; i < t.num_args(); ++i) factors.push_back(t.arg(i));
      else
        factors.push_back(t);
      z3::expr coef = impl.z.real_val(1), rest = impl.z.real_val(1);
      // A quotient by a u-free divisor is the dividend times its
      // reciprocal where the divisor is nonzero (x/0 is Z3's fixed unknown
      // value): sum_u a(u) / c = (1/c) sum_u a(u) for c != 0, and the
      // fold as it is otherwise (softmax's row normalizer inside the sum of
      // a matmul over the keys).
      z3::expr plainCoef = impl.z.real_val(1), plainRest = impl.z.real_val(1);
      z3::expr divisorZero = impl.z.bool_val(false);
      bool divided = false;
      for (const auto& f : factors) {
        if (!contains(f, u)) {
          coef = coef * f;
          plainCoef = plainCoef * f;
          continue;
        }
        plainRest = plainRest * f;
        if (f.is_app() && f.decl().decl_kind() == Z3_OP_DIV && f.num_args() == 2 && contains(f.arg(0), u) &&
            !contains(f.arg(1), u)) {
          rest = rest * f.arg(0);
          coef = coef / f.arg(1);
          divisorZero = divisorZero || f.arg(1) == impl.z.real_val(0);
          divided = true;
        } else {
          rest = rest * f;
        }
      }
      z3::expr term = coef * abstractOne(op, n, rest.simplify(), u);
      if (divided)
        term = z3::ite(divisorZero.simplify(), plainCoef * abstractOne(op, n, plainRest.simplify(), u), term);
      total = total + term;
    }
    return total.simplify();
  }

  // Whether hi - lo is 1, read off the context's equalities with a numeral
  // (a lemma's `size(?a, ?d) == 1`) without a solver call: the common
  // ranges are not one element, and a query each would slow every proof.
  bool oneElement(const z3::expr& lo, const z3::expr& hi, const std::vector<z3::expr>& ctx) {
    z3::expr n = (hi - lo).simplify();
    int64_t k = 0;
    if (numeral(n, &k)) return k == 1;
    z3::expr_vector from(impl.z), to(impl.z);
    std::function<void(const z3::expr&)> eqs = [&](const z3::expr& e) {
      if (!e.is_app()) return;
      if (e.decl().decl_kind() == Z3_OP_AND) {
        for (unsigned i = 0; i < e.num_args(); ++i) eqs(e.arg(i));
      } else if (e.decl().decl_kind() == Z3_OP_EQ && e.arg(0).is_int()) {
        if (e.arg(1).is_numeral() && !e.arg(0).is_numeral()) from.push_back(e.arg(0)), to.push_back(e.arg(1));
        else if (e.arg(0).is_numeral() && !e.arg(1).is_numeral()) from.push_back(e.arg(1)), to.push_back(e.arg(0));
      }
    };
    for (const auto& c : ctx) eqs(c);
    if (from.empty()) return false;
    return numeral(n.substitute(from, to).simplify(), &k) && k == 1;
  }

  z3::expr range(FoldOp op, const z3::expr& v, const z3::expr& lo, const z3::expr& hi,
                 z3::expr body, std::vector<z3::expr>& ctx, int depth) {
    if (oneElement(lo, hi, ctx)) return subst1(body, v, lo).simplify();
    std::vector<z3::expr> inner = ctx;
    inner.push_back(lo <= v);
    inner.push_back(v < hi);
    // decide
    std::vector<z3::expr> atoms;
    std::set<unsigned> seen;
    condAtoms(body, false, atoms, seen);
    z3::expr_vector from(impl.z), to(impl.z);
    std::vector<z3::expr> open;
    for (const auto& a : atoms) {
      if (impl.implied(inner, a, timeoutMs)) {
        from.push_back(a);
        to.push_back(impl.z.bool_val(true));
      } else if (impl.implied(inner, !a, timeoutMs)) {
        from.push_back(a);
        to.push_back(impl.z.bool_val(false));
      } else {
        open.push_back(a);
      }
    }
    if (from.size() > 0) body = body.substitute(from, to).simplify();
    if (depth < kMaxSplitDepth) {
      // hoist a condition that does not depend on v
      for (const auto& a : open) {
        if (contains(a, v)) continue;
        std::vector<z3::expr> cT = ctx, cF = ctx;
        cT.push_back(a);
        cF.push_back(!a);
        z3::expr bt = subst1(body, a, impl.z.bool_val(true)).simplify();
        z3::expr bf = subst1(body, a, impl.z.bool_val(false)).simplify();
        return z3::ite(a, range(op, v, lo, hi, bt, cT, depth + 1),
                       range(op, v, lo, hi, bf, cF, depth + 1));
      }
      // split at the threshold of a condition on v
      for (const auto& a : open) {
        auto m = threshold(a, v);
        if (!m) continue;
        if (!impl.implied(ctx, lo < *m, timeoutMs) || !impl.implied(ctx, *m < hi, timeoutMs))
          continue;
        return combine(op, range(op, v, lo, *m, body, ctx, depth + 1),
                       range(op, v, *m, hi, body, ctx, depth + 1));
      }
    }
    return abstract(op, v, lo, hi, body, ctx);
  }
};

void placeholders(const z3::expr& e, const std::map<unsigned, FoldInfo>& folds,
                  std::vector<z3::expr>& out, std::set<unsigned>& seen) {
  unsigned id = Z3_get_ast_id(e.ctx(), e);
  if (!seen.insert(id).second) return;
  if (folds.count(id)) {
    out.push_back(e);
    return;
  }
  if (e.is_app())
    for (unsigned i = 0; i < e.num_args(); ++i) placeholders(e.arg(i), folds, out, seen);
}

}  // namespace

z3::expr Context::Impl::normalize(const z3::expr& e, std::vector<z3::expr>& ctx,
                                  unsigned timeoutMs, bool* abstracted) {
  std::vector<z3::expr> phs;
  std::set<unsigned> seen;
  placeholders(e, folds, phs, seen);
  if (phs.empty()) return e;
  z3::expr_vector from(z), to(z);
  FoldNormalizer fn{*this, timeoutMs, abstracted};
  for (const auto& ph : phs) {
    const FoldInfo& f = folds.at(astId(ph));
    z3::expr lo = canon(f.lo), hi = canon(f.hi);
    std::vector<z3::expr> inner = ctx;
    inner.push_back(lo <= f.var);
    inner.push_back(f.var < hi);
    z3::expr body = normalize(canon(f.body), inner, timeoutMs, abstracted).simplify();
    from.push_back(ph);
    to.push_back(fn.range(f.op, f.var, lo.simplify(), hi.simplify(), body, ctx, 0));
  }
  return z3::expr(e).substitute(from, to);
}

}  // namespace sp::smt
