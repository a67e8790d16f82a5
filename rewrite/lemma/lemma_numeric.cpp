// Numeric check of lemmas with the interpreter's kernels on random concrete
// shapes that satisfy the side conditions, and the lemma status table.
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "rewrite/lemma/lemma.h"

namespace sp::rewrite {

namespace {

struct Instance {
  std::map<std::string, ir::Tensor> tensors;
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> reals;
  std::map<std::string, ir::OpKind> ops;  // op variables: the op of the trait checked
};

// Variables by kind: tensors, integers (slice bounds, sizes, constant
// values), scale factors, and float attributes of IR ops (dropout's ratio),
// drawn in (0, 1).
struct VarKinds {
  std::map<std::string, bool> tensors, ints, factors, fractions;
  std::map<std::string, OpTrait> ops;
};

void collectVars(const Pattern& p, VarKinds& v) {
  if (p.op == PatOp::Var) { v.tensors[p.name] = true; return; }
  if (p.op == PatOp::OpVar) v.ops[p.name] = p.trait;
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Var)
      (p.op == PatOp::Scale ? v.factors : p.op == PatOp::Ir && !isDimVarAttr(p, a) ? v.fractions : v.ints)[a.text] = true;
  for (const auto& a : p.args) collectVars(*a, v);
}

std::optional<int64_t> condValue(const CondTerm& t, const Instance& in) {
  switch (t.kind) {
    case CondTerm::Kind::Const: return t.value;
    case CondTerm::Kind::Var: return in.ints.count(t.var) ? std::optional<int64_t>(in.ints.at(t.var)) : std::nullopt;
    case CondTerm::Kind::Rank: return in.tensors.at(t.var).rank();
    case CondTerm::Kind::Shape: return std::nullopt;  // compared in holds()
    case CondTerm::Kind::Size: {
      const auto& x = in.tensors.at(t.var);
      int64_t d = t.value;
      if (!t.args.empty()) {  // a computed dim: in range or no size
        auto c = condValue(t.args[0], in);
        if (!c || *c < 0 || *c >= x.rank()) return std::nullopt;
        return x.dims()[size_t(*c)];
      }
      if (!t.dimVar.empty()) {
        if (!in.ints.count(t.dimVar)) return std::nullopt;
        d = in.ints.at(t.dimVar);
      }
      d = d < 0 ? d + x.rank() : d;
      if (d < 0 || d >= x.rank()) return std::nullopt;
      return x.dims()[size_t(d)];
    }
    default: {
      auto a = condValue(t.args[0], in), b = condValue(t.args[1], in);
      if (!a || !b) return std::nullopt;
      if (t.kind == CondTerm::Kind::Mod) {
        if (*b < 1) return std::nullopt;
        return ((*a % *b) + *b) % *b;
      }
      return t.kind == CondTerm::Kind::Add ? *a + *b : t.kind == CondTerm::Kind::Sub ? *a - *b : *a * *b;
    }
  }
}

bool holds(const Cond& c, const Instance& in) {
  if (c.lhs.kind == CondTerm::Kind::Shape) {  // shape(?a) == shape(?b), or with the last k dims left out
    if (!in.tensors.count(c.lhs.var) || !in.tensors.count(c.rhs.var)) return false;
    const auto &a = in.tensors.at(c.lhs.var).dims(), &b = in.tensors.at(c.rhs.var).dims();
    const size_t k = size_t(c.lhs.value);
    return a.size() == b.size() && a.size() >= k && std::equal(a.begin(), a.end() - long(k), b.begin());
  }
  auto a = condValue(c.lhs, in), b = condValue(c.rhs, in);
  if (!a || !b) return false;
  switch (c.op) {
    case CmpOp::Eq: return *a == *b;
    case CmpOp::Ne: return *a != *b;
    case CmpOp::Lt: return *a < *b;
    case CmpOp::Le: return *a <= *b;
    case CmpOp::Gt: return *a > *b;
    case CmpOp::Ge: return *a >= *b;
  }
  return false;
}

std::string dimsStr(const std::vector<int64_t>& d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return "[" + s + "]";
}

Result<ir::Tensor> evalPattern(const Pattern& p, const Instance& in, const EvalOpFn& ev) {
  using ir::OpKind;
  if (p.op == PatOp::Var) return in.tensors.at(p.name);
  auto constOf = [&](const Pattern& c, ir::DType dt) {
    const PatAttr* a = c.attr("value");
    return ir::Tensor::scalar(dt, double(a->kind == PatAttr::Kind::Var ? in.ints.at(a->text) : a->i));
  };
  if (p.op == PatOp::Const) return constOf(p, ir::DType::F32);
  // Operands first; a const operand takes the dtype of its sibling (the
  // other branch of a where, else the first non-const operand).
  std::vector<ir::Tensor> xs(p.args.size());
  for (size_t k = 0; k < p.args.size(); ++k)
    if (p.args[k]->op != PatOp::Const) { SP_ASSIGN(xs[k], evalPattern(*p.args[k], in, ev)); }
  for (size_t k = 0; k < p.args.size(); ++k) {
    if (p.args[k]->op != PatOp::Const) continue;
    ir::DType dt = ir::DType::F32;
    size_t sib = p.irOp == OpKind::Where && k >= 1 ? 3 - k : 0;
    for (size_t q = sib; q < xs.size(); ++q)
      if (xs[q].defined() && p.args[q]->op != PatOp::Const) { dt = xs[q].dtype(); break; }
    xs[k] = constOf(*p.args[k], dt);
  }
  auto intOf = [&](const std::string& n) -> int64_t {
    const PatAttr* a = p.attr(n);
    if (a->kind == PatAttr::Kind::Expr) return condValue(*a->expr, in).value_or(-1);  // -1: out of bounds, rejected
    return a->kind == PatAttr::Kind::Var ? in.ints.at(a->text) : a->i;
  };
  auto one = [&](OpKind k, ir::AttrMap attrs, std::vector<ir::Tensor> args) -> Result<ir::Tensor> {
    SP_ASSIGN(ir::AttrMap full, ir::completeAttrs(k, std::move(attrs)));
    SP_ASSIGN(auto outs, ev(k, full, args));
    if (outs.empty()) return makeError("numeric-check", std::string(ir::opName(k)) + ": no output");  // patterns denote output 0
    return outs[0];
  };
  switch (p.op) {
    case PatOp::Concat: {
      // A computed dim (dim=?d - 1) out of range is no dim: never read it
      // counted from the end.
      int64_t dim = intOf("dim");
      if (p.attr("dim")->kind == PatAttr::Kind::Expr && (dim < 0 || xs.empty() || dim >= xs[0].rank()))
        return makeError("bad-axis", "concat: computed dim " + std::to_string(dim) + " out of range");
      return one(OpKind::Concat, {{"axis", dim}}, xs);
    }
    case PatOp::Slice: {  // the relation operator: 0 <= start <= end <= size, no clamping
      int64_t rank = xs[0].rank(), dim = intOf("dim"), s = intOf("start"), e = intOf("end");
      int64_t d = dim < 0 ? dim + rank : dim;
      if (d < 0 || d >= rank)
        return makeError("bad-axis", "slice: dim " + std::to_string(dim) + " out of range for rank " + std::to_string(rank));
      if (!(0 <= s && s <= e && e <= xs[0].dims()[size_t(d)]))
        return makeError("slice-out-of-bounds", "slice dim " + std::to_string(dim) + " [" + std::to_string(s) + ", " +
                                                    std::to_string(e) + ") of extent " + std::to_string(xs[0].dims()[size_t(d)]));
      return one(OpKind::Slice, {{"starts", std::vector<int64_t>{s}}, {"ends", std::vector<int64_t>{e}},
                                 {"axes", std::vector<int64_t>{dim}}}, xs);
    }
    case PatOp::Sum: {  // the relation operator: parts of identical shape, no broadcasting
      ir::Tensor acc = xs[0];
      for (size_t k = 1; k < xs.size(); ++k) {
        if (xs[k].dims() != xs[0].dims())
          return makeError("shape-mismatch", "sum: part " + std::to_string(k) + " has shape " + dimsStr(xs[k].dims()) +
                                                 ", part 0 has " + dimsStr(xs[0].dims()));
        SP_ASSIGN(acc, one(OpKind::Add, {}, {acc, xs[k]}));
      }
      return acc;
    }
    case PatOp::Scale: {
      const PatAttr* a = p.attr("factor");
      double f = a->kind == PatAttr::Kind::Var ? in.reals.at(a->text) : a->f;
      if (a->kind == PatAttr::Kind::Recip) {  // 1/TERM
        auto n = condValue(*a->expr, in);
        if (!n || *n == 0) return makeError("bad-factor", "scale factor 1/" + a->expr->str() + " is undefined");
        f = 1.0 / double(*n);
      }
      return one(OpKind::Mul, {}, {xs[0], ir::Tensor::scalar(xs[0].dtype(), f)});
    }
    case PatOp::Permute: return one(OpKind::Transpose, {{"perm", p.attr("perm")->ints}}, xs);
    case PatOp::SplitLast: case PatOp::MergeLast: {  // row-major reshapes of the last dim(s)
      int64_t k = intOf("size");
      std::vector<int64_t> dims = xs[0].dims();
      if (k < 1) return makeError("bad-size", p.name + ": size " + std::to_string(k) + " < 1");
      if (p.op == PatOp::SplitLast) {
        if (dims.empty() || dims.back() % k != 0)
          return makeError("bad-size", "split_last: " + dimsStr(dims) + " by " + std::to_string(k));
        dims.back() /= k;
        dims.push_back(k);
      } else {
        if (dims.size() < 2 || dims.back() != k)
          return makeError("bad-size", "merge_last: " + dimsStr(dims) + " by " + std::to_string(k));
        dims.pop_back();
        dims.back() *= k;
      }
      ir::Shape shape;
      for (int64_t d : dims) shape.push_back(ir::Dim(d));
      return one(OpKind::Reshape, {{"shape", shape}}, xs);
    }
    case PatOp::MergeDims: {  // row-major reshape merging dims d, d+1
      int64_t k = intOf("size"), r = int64_t(xs[0].dims().size());
      int64_t d = p.attr("dim")->i < 0 ? p.attr("dim")->i + r : p.attr("dim")->i;
      std::vector<int64_t> dims = xs[0].dims();
      if (k < 1 || d < 0 || d + 1 >= r || dims[size_t(d + 1)] != k)
        return makeError("bad-size", "merge_dims: " + dimsStr(dims) + " at dim " + std::to_string(d) + " by " + std::to_string(k));
      dims[size_t(d)] *= k;
      dims.erase(dims.begin() + d + 1);
      ir::Shape shape;
      for (int64_t v : dims) shape.push_back(ir::Dim(v));
      return one(OpKind::Reshape, {{"shape", shape}}, xs);
    }
    case PatOp::SplitDims: {  // row-major reshape splitting dim d into (A, k)
      int64_t k = intOf("size"), r = int64_t(xs[0].dims().size());
      int64_t d = p.attr("dim")->i < 0 ? p.attr("dim")->i + r : p.attr("dim")->i;
      std::vector<int64_t> dims = xs[0].dims();
      if (k < 1 || d < 0 || d >= r || dims[size_t(d)] % k != 0)
        return makeError("bad-size", "split_dims: " + dimsStr(dims) + " at dim " + std::to_string(d) + " by " + std::to_string(k));
      dims[size_t(d)] /= k;
      dims.insert(dims.begin() + d + 1, k);
      ir::Shape shape;
      for (int64_t v : dims) shape.push_back(ir::Dim(v));
      return one(OpKind::Reshape, {{"shape", shape}}, xs);
    }
    case PatOp::Ir: {
      ir::AttrMap attrs;
      for (const auto& a : p.attrs) {
        switch (a.kind) {
          case PatAttr::Kind::Int: {
            const ir::AttrSpec* s = ir::opInfo(p.irOp).attr(a.name);
            if (s && s->kind == ir::AttrKind::Float) attrs[a.name] = double(a.i);
            else attrs[a.name] = a.i;
            break;
          }
          case PatAttr::Kind::Float: attrs[a.name] = a.f; break;
          case PatAttr::Kind::Ints: attrs[a.name] = a.ints; break;
          case PatAttr::Kind::Str: {  // a dtype attribute (cast's to) is written as its name
            const ir::AttrSpec* s = ir::opInfo(p.irOp).attr(a.name);
            auto dt = s && s->kind == ir::AttrKind::Type ? ir::parseDType(a.text) : std::nullopt;
            if (dt) attrs[a.name] = *dt;
            else attrs[a.name] = a.text;
            break;
          }
          case PatAttr::Kind::Var:  // a float attribute (the parser's rule), a reduction's axes=[?e] or a norm's axis=?e
            if (a.list) attrs[a.name] = std::vector<int64_t>{in.ints.at(a.text)};
            else if (isDimVarAttr(p, a)) attrs[a.name] = in.ints.at(a.text);
            else attrs[a.name] = in.reals.at(a.text);
            break;
          case PatAttr::Kind::Expr: attrs[a.name] = condValue(*a.expr, in).value_or(-1); break;
          case PatAttr::Kind::Recip: break;  // scale factors only
        }
      }
      return one(p.irOp, attrs, xs);
    }
    case PatOp::OpVar: {  // the op of the trait checked, default attributes (mod: fmod, which float operands need)
      OpKind k = in.ops.at(p.name);
      return one(k, k == OpKind::Mod ? ir::AttrMap{{"fmod", int64_t(1)}} : ir::AttrMap{}, xs);
    }
    case PatOp::Var: case PatOp::Const: break;
  }
  return makeError("internal", "unreachable");
}

}  // namespace

namespace {

std::string instanceStr(const Instance& in) {
  std::string s;
  for (const auto& [n, t] : in.tensors) s += (s.empty() ? "" : ", ") + ("?" + n + " " + dimsStr(t.dims()));
  for (const auto& [n, v] : in.ints) s += (s.empty() ? "" : ", ") + ("?" + n + " = " + std::to_string(v));
  for (const auto& [n, k] : in.ops) s += (s.empty() ? "" : ", ") + ("?" + n + " = " + std::string(ir::opName(k)));
  return s;
}

// Dtypes the patterns demand of tensor variables: an index operand (gather,
// gather_elements) is i64, a condition (where, and/or/xor/not) bool; the
// demand flows through ops that keep their operand's dtype. Others: f32.
using DTypes = std::map<std::string, ir::DType>;
void demand(const Pattern& p, std::optional<ir::DType> dt, DTypes& out) {
  using ir::OpKind;
  if (p.op == PatOp::Var) {
    if (dt && *dt != ir::DType::F32) out.emplace(p.name, *dt);
    return;
  }
  auto all = [&](std::optional<ir::DType> d) { for (const auto& a : p.args) demand(*a, d, out); };
  if (p.op != PatOp::Ir) return all(dt);  // relation operators keep the dtype
  const auto cat = ir::opInfo(p.irOp).category;
  switch (p.irOp) {
    case OpKind::Gather: case OpKind::GatherElements:
      demand(*p.args[0], dt, out);
      return demand(*p.args[1], ir::DType::I64, out);
    case OpKind::Where:
      demand(*p.args[0], ir::DType::Bool, out);
      demand(*p.args[1], dt, out);
      return demand(*p.args[2], dt, out);
    case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Not: return all(ir::DType::Bool);
    default: break;
  }
  if (cat == ir::OpCategory::Compare) {  // operands share a dtype: a known variable's
    std::optional<ir::DType> d;
    for (const auto& a : p.args)
      if (a->op == PatOp::Var && out.count(a->name)) d = out.at(a->name);
    return all(d);
  }
  bool keeps = (cat == ir::OpCategory::Unary && p.irOp != OpKind::Cast) ||
               (cat == ir::OpCategory::Binary && p.irOp != OpKind::Pow) || cat == ir::OpCategory::Layout;
  all(keeps ? dt : std::nullopt);
}

}  // namespace

std::map<std::string, ir::DType> lemmaVarDTypes(const Lemma& l) {
  DTypes out;
  for (int pass = 0; pass < 2; ++pass) {  // twice: comparisons learn from later uses
    demand(*l.lhs, std::nullopt, out);
    demand(*l.rhs, std::nullopt, out);
  }
  return out;
}

namespace {

// f32 values in [-1, 1), bools 0/1, integers in [0, intBound).
ir::Tensor randomTensor(const std::vector<int64_t>& dims, std::mt19937_64& rng, ir::DType dt = ir::DType::F32,
                        int64_t intBound = 1) {
  ir::Tensor t(dt, dims);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t k = 0; k < t.numel(); ++k)
    t.setFromDouble(k, dt == ir::DType::F32 ? u(rng) : dt == ir::DType::Bool ? double(rng() % 2)
                                                                                : double(int64_t(rng() % uint64_t(intBound))));
  return t;
}

enum class Check { Ok, LhsRejected, RhsUndefined, Failed };

bool outOfRange(const Error& e) { return e.id == "index-out-of-range"; }

// Evaluates both sides on `in`; on failure sets st's numeric state and note.
// A right side reading out of range is outside the lemma's domain (it holds
// where the right side is defined); the left side must then be defined.
Check compareSides(const Lemma& l, const Instance& in, const ProveOptions& opts, LemmaStatus& st, std::string* lhsErr) {
  auto fail = [&](const std::string& why) {
    st.numeric = NumericState::Failed;
    st.numericNote = why + " on " + instanceStr(in);
    return Check::Failed;
  };
  auto a = evalPattern(*l.lhs, in, opts.evalOp);
  if (!a.ok() && !outOfRange(a.error())) {
    *lhsErr = a.error().message;
    return Check::LhsRejected;
  }
  auto b = evalPattern(*l.rhs, in, opts.evalOp);
  if (!b.ok() && outOfRange(b.error())) return Check::RhsUndefined;
  if (!a.ok()) return fail("left side reads out of range where the right side is defined (" + a.error().message + ")");
  if (!b.ok()) return fail("right side ill-typed (" + b.error().message + ")");
  if (a->dims() != b->dims()) return fail("shapes differ: left " + dimsStr(a->dims()) + ", right " + dimsStr(b->dims()));
  // Elements agree when equal (infinities of one sign included) or both NaN
  // (log, sqrt, rsqrt of a negative draw on both sides); the tolerance
  // scales with the largest finite magnitude.
  double scale = 1, err = 0;
  for (int64_t k = 0; k < a->numel(); ++k)
    if (double v = std::abs(a->getAsDouble(k)); std::isfinite(v)) scale = std::max(scale, v);
  for (int64_t k = 0; k < a->numel(); ++k) {
    double x = a->getAsDouble(k), y = b->getAsDouble(k);
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    double e = std::abs(x - y);
    err = std::isfinite(e) ? std::max(err, e) : INFINITY;
    if (std::isinf(err)) break;
  }
  st.maxError = std::max(st.maxError, err);
  if (!(err <= 1e-4 * scale)) return fail("max error " + std::to_string(err));
  return Check::Ok;
}

// Fills the variables of `in` (shapes `dims`) with random values of their
// dtypes and checks. Integer variables take values in [0, B) for the largest
// B among the sizes and sums of two sizes where the right side is defined
// (gather indices in range); RhsUndefined if there is none.
Check checkInstance(const Lemma& l, Instance& in, const std::map<std::string, std::vector<int64_t>>& dims,
                    const DTypes& dts, const ProveOptions& opts, LemmaStatus& st, std::string* lhsErr,
                    std::mt19937_64& rng) {
  std::set<int64_t, std::greater<>> bounds{1};
  for (const auto& [n, d] : dims)
    for (int64_t x : d) {
      for (int64_t y : std::vector<int64_t>(bounds.begin(), bounds.end())) bounds.insert(x + y);
      bounds.insert(x);
    }
  bool anyInt = false;
  for (const auto& [n, dt] : dts) anyInt = anyInt || (dims.count(n) && dt == ir::DType::I64);
  if (!anyInt) bounds = {1};
  for (int64_t b : bounds)
    for (int trial = 0; trial < 3; ++trial) {
      for (const auto& [n, d] : dims) in.tensors[n] = randomTensor(d, rng, dts.count(n) ? dts.at(n) : ir::DType::F32, b);
      Check c = compareSides(l, in, opts, st, lhsErr);
      if (c != Check::RhsUndefined) return c;
    }
  return Check::RhsUndefined;
}

}  // namespace

void checkLemmaNumerically(const Lemma& l, const std::vector<LemmaInstance>& solved, const ProveOptions& opts,
                           LemmaStatus& st) {
  if (!opts.evalOp) { st.numeric = NumericState::Skipped; st.numericNote = "no interpreter"; return; }
  VarKinds vars;
  collectVars(*l.lhs, vars);
  const auto& tv = vars.tensors;
  const auto& iv = vars.ints;
  std::mt19937_64 rng(opts.seed);
  const DTypes dts = lemmaVarDTypes(l);
  auto reals = [&](Instance& in) {
    for (const auto& [n, _] : vars.factors) in.reals[n] = 0.5 + double(rng() % 100) / 50.0;
    for (const auto& [n, _] : vars.fractions) in.reals[n] = 0.05 + double(rng() % 90) / 100.0;
  };
  int checked = 0;
  std::string lastErr;
  // Op variables: the whole check runs once per op of each variable's trait
  // (variable j takes op (k + j) mod |trait| in round k), with the op's
  // default attributes. No op variable: one round.
  size_t rounds = 1;
  for (const auto& [n, t] : vars.ops) rounds = std::max(rounds, opsOfTrait(t).size());
  for (size_t round = 0; round < rounds; ++round) {
  std::map<std::string, ir::OpKind> ops;
  size_t j = 0;
  for (const auto& [n, t] : vars.ops) {
    auto all = opsOfTrait(t);
    ops[n] = all[(round + j++) % all.size()];
  }
  // 1. Instances solved from the left side's typing and the conditions: the
  // interpreter must accept the left side (else the prover's typing model is
  // wrong) and the right side must agree.
  for (const auto& s : solved) {
    Instance in;
    in.ints = s.ints;
    in.ops = ops;
    reals(in);
    switch (checkInstance(l, in, s.dims, dts, opts, st, &lastErr, rng)) {
      case Check::Ok: ++checked; break;
      case Check::RhsUndefined: break;
      case Check::Failed: return;
      case Check::LhsRejected:
        st.numeric = NumericState::Failed;
        st.numericNote = "left side rejected by the interpreter (" + lastErr + ") on " + instanceStr(in) +
                         ", which the prover types as well formed";
        return;
    }
  }
  // 2. Random shapes (each default-rank variable of rank 1..maxRank, dims
  // 1..3) that the interpreter accepts for the left side and that satisfy the
  // conditions: independent of the prover's typing model.
  std::map<std::string, int> explicitRank;
  for (const auto& c : l.conds)
    if (c.op == CmpOp::Eq && c.lhs.kind == CondTerm::Kind::Rank && c.rhs.kind == CondTerm::Kind::Const)
      explicitRank[c.lhs.var] = int(c.rhs.value);
  int randomChecked = 0;
  for (int attempt = 0; attempt < 2000 && randomChecked < 4 * opts.numericTrials; ++attempt) {
    Instance in;
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [n, _] : tv) {
      int r = explicitRank.count(n) ? explicitRank[n] : int(1 + rng() % uint64_t(std::max(opts.maxRank, 1)));
      std::vector<int64_t> dims;
      for (int d = 0; d < r; ++d) dims.push_back(int64_t(1 + rng() % 3));
      in.tensors[n] = randomTensor(dims, rng);
      shapes[n] = dims;
    }
    for (const auto& [n, _] : iv) in.ints[n] = int64_t(rng() % 4);
    in.ops = ops;
    reals(in);
    bool ok = true;
    for (const auto& c : l.conds) ok = ok && holds(c, in);
    if (!ok) continue;
    switch (checkInstance(l, in, shapes, dts, opts, st, &lastErr, rng)) {
      case Check::Ok: ++checked; ++randomChecked; break;
      case Check::Failed: return;
      case Check::LhsRejected: case Check::RhsUndefined: break;
    }
  }
  }
  if (checked == 0) {
    st.numeric = NumericState::Skipped;
    st.numericNote = "no well-typed instance of the left side found" + (lastErr.empty() ? "" : " (" + lastErr + ")");
    return;
  }
  st.numeric = NumericState::Ok;
}

std::string renderLemmaTable(const std::vector<LemmaStatus>& sts) {
  std::ostringstream os;
  size_t w = 5;
  for (const auto& s : sts) w = std::max(w, s.name.size());
  int proven = 0, numOk = 0, numFail = 0;
  os << std::string("lemma") + std::string(w - 5, ' ') << "  proof     ranks  numeric        ms  note\n";
  for (const auto& s : sts) {
    std::string ranks;
    if (s.proven && s.ranks.empty()) ranks = "fixed";
    else if (!s.ranks.empty()) ranks = std::to_string(s.ranks.front()) + "-" + std::to_string(s.ranks.back());
    else ranks = "-";
    const char* num = s.numeric == NumericState::Ok ? "ok" : s.numeric == NumericState::Failed ? "FAILED" : "skipped";
    char ms[32];
    std::snprintf(ms, sizeof ms, "%8.1f", s.millis);
    std::string note = !s.proven ? s.reason : s.numeric == NumericState::Ok ? "max error " + std::to_string(s.maxError) : s.numericNote;
    if (!s.proven && s.numeric == NumericState::Failed) note += "; numeric: " + s.numericNote;
    os << s.name << std::string(w - s.name.size(), ' ') << "  " << (s.proven ? "proven  " : "UNPROVEN") << "  "
       << ranks << std::string(ranks.size() < 5 ? 5 - ranks.size() : 0, ' ') << "  " << num
       << std::string(9 - std::string(num).size(), ' ') << ms << "  " << note << "\n";
    proven += s.proven;
    numOk += s.numeric == NumericState::Ok;
    numFail += s.numeric == NumericState::Failed;
  }
  os << sts.size() << " lemmas: " << proven << " proven, " << (sts.size() - size_t(proven)) << " unproven; numeric: "
     << numOk << " ok, " << numFail << " failed, " << (sts.size() - size_t(numOk + numFail)) << " skipped\n";
  return os.str();
}

}  // namespace sp::rewrite
