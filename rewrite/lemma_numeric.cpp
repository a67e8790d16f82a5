// Numeric check of lemmas with the interpreter's kernels on random concrete
// shapes that satisfy the side conditions, and the lemma status table.
#include <cmath>
#include <random>
#include <sstream>

#include "rewrite/lemma.h"

namespace sp::rewrite {

namespace {

struct Instance {
  std::map<std::string, ir::Tensor> tensors;
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> reals;
};

void collectVars(const Pattern& p, std::map<std::string, bool>& tensors, std::map<std::string, bool>& intVars,
                 std::map<std::string, bool>& realVars) {
  if (p.op == PatOp::Var) { tensors[p.name] = true; return; }
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Var) (p.op == PatOp::Scale ? realVars : intVars)[a.text] = true;
  for (const auto& a : p.args) collectVars(*a, tensors, intVars, realVars);
}

std::optional<int64_t> condValue(const CondTerm& t, const Instance& in) {
  switch (t.kind) {
    case CondTerm::Kind::Const: return t.value;
    case CondTerm::Kind::Var: return in.ints.count(t.var) ? std::optional<int64_t>(in.ints.at(t.var)) : std::nullopt;
    case CondTerm::Kind::Rank: return in.tensors.at(t.var).rank();
    case CondTerm::Kind::Size: {
      const auto& x = in.tensors.at(t.var);
      int64_t d = t.value < 0 ? t.value + x.rank() : t.value;
      if (d < 0 || d >= x.rank()) return std::nullopt;
      return x.dims()[size_t(d)];
    }
    default: {
      auto a = condValue(t.args[0], in), b = condValue(t.args[1], in);
      if (!a || !b) return std::nullopt;
      return t.kind == CondTerm::Kind::Add ? *a + *b : t.kind == CondTerm::Kind::Sub ? *a - *b : *a * *b;
    }
  }
}

bool holds(const Cond& c, const Instance& in) {
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

Result<ir::Tensor> evalPattern(const Pattern& p, const Instance& in, const EvalOpFn& ev) {
  using ir::OpKind;
  if (p.op == PatOp::Var) return in.tensors.at(p.name);
  std::vector<ir::Tensor> xs;
  for (const auto& a : p.args) {
    SP_ASSIGN(ir::Tensor t, evalPattern(*a, in, ev));
    xs.push_back(std::move(t));
  }
  auto intOf = [&](const std::string& n) {
    const PatAttr* a = p.attr(n);
    return a->kind == PatAttr::Kind::Var ? in.ints.at(a->text) : a->i;
  };
  auto one = [&](OpKind k, ir::AttrMap attrs, std::vector<ir::Tensor> args) -> Result<ir::Tensor> {
    SP_ASSIGN(ir::AttrMap full, ir::completeAttrs(k, std::move(attrs)));
    SP_ASSIGN(auto outs, ev(k, full, args));
    if (outs.size() != 1) return makeError("numeric-check", std::string(ir::opName(k)) + ": expected one output");
    return outs[0];
  };
  switch (p.op) {
    case PatOp::Concat: return one(OpKind::Concat, {{"axis", p.attr("dim")->i}}, xs);
    case PatOp::Slice:
      return one(OpKind::Slice, {{"starts", std::vector<int64_t>{intOf("start")}}, {"ends", std::vector<int64_t>{intOf("end")}},
                                 {"axes", std::vector<int64_t>{p.attr("dim")->i}}}, xs);
    case PatOp::Sum: {
      ir::Tensor acc = xs[0];
      for (size_t k = 1; k < xs.size(); ++k) { SP_ASSIGN(acc, one(OpKind::Add, {}, {acc, xs[k]})); }
      return acc;
    }
    case PatOp::Scale: {
      const PatAttr* a = p.attr("factor");
      double f = a->kind == PatAttr::Kind::Var ? in.reals.at(a->text) : a->f;
      return one(OpKind::Mul, {}, {xs[0], ir::Tensor::scalar(xs[0].dtype(), f)});
    }
    case PatOp::Permute: return one(OpKind::Transpose, {{"perm", p.attr("perm")->ints}}, xs);
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
          case PatAttr::Kind::Str: attrs[a.name] = a.text; break;
          case PatAttr::Kind::Var: attrs[a.name] = in.ints.at(a.text); break;
        }
      }
      return one(p.irOp, attrs, xs);
    }
    case PatOp::Var: break;
  }
  return makeError("internal", "unreachable");
}

}  // namespace

void checkLemmaNumerically(const Lemma& l, const std::vector<int>& ranks, const ProveOptions& opts, LemmaStatus& st) {
  if (!opts.evalOp) { st.numeric = NumericState::Skipped; st.numericNote = "no interpreter"; return; }
  std::map<std::string, bool> tv, iv, rv;
  collectVars(*l.lhs, tv, iv, rv);
  std::map<std::string, int> explicitRank;
  for (const auto& c : l.conds)
    if (c.op == CmpOp::Eq && c.lhs.kind == CondTerm::Kind::Rank && c.rhs.kind == CondTerm::Kind::Const)
      explicitRank[c.lhs.var] = int(c.rhs.value);
  std::mt19937_64 rng(opts.seed);
  int checked = 0;
  std::string lastErr;
  for (int rank : ranks) {
    for (int trial = 0; trial < opts.numericTrials; ++trial) {
      bool found = false;
      for (int attempt = 0; attempt < 400 && !found; ++attempt) {
        Instance in;
        for (const auto& [n, _] : tv) {
          int r = explicitRank.count(n) ? explicitRank[n] : rank;
          std::vector<int64_t> dims;
          for (int d = 0; d < r; ++d) dims.push_back(int64_t(1 + rng() % 3));
          ir::Tensor t(ir::DType::F32, dims);
          std::uniform_real_distribution<double> u(-1, 1);
          for (int64_t k = 0; k < t.numel(); ++k) t.setFromDouble(k, u(rng));
          in.tensors[n] = t;
        }
        for (const auto& [n, _] : iv) in.ints[n] = int64_t(rng() % 4);
        for (const auto& [n, _] : rv) in.reals[n] = 0.5 + double(rng() % 100) / 50.0;
        bool ok = true;
        for (const auto& c : l.conds) ok = ok && holds(c, in);
        if (!ok) continue;
        auto a = evalPattern(*l.lhs, in, opts.evalOp);
        if (!a.ok()) { lastErr = a.error().message; if (a.error().id == "unimplemented") break; continue; }
        found = true;
        auto b = evalPattern(*l.rhs, in, opts.evalOp);
        if (!b.ok()) { st.numeric = NumericState::Failed; st.numericNote = "right side: " + b.error().message; return; }
        if (a->dims() != b->dims()) { st.numeric = NumericState::Failed; st.numericNote = "shapes differ"; return; }
        double scale = 1;
        for (int64_t k = 0; k < a->numel(); ++k) scale = std::max(scale, std::abs(a->getAsDouble(k)));
        for (int64_t k = 0; k < a->numel(); ++k) {
          double e = std::abs(a->getAsDouble(k) - b->getAsDouble(k));
          if (!(e <= st.maxError)) st.maxError = std::isnan(e) ? INFINITY : std::max(st.maxError, e);
        }
        if (!(st.maxError <= 1e-4 * scale)) {
          st.numeric = NumericState::Failed;
          st.numericNote = "max error " + std::to_string(st.maxError);
          return;
        }
        ++checked;
      }
    }
  }
  if (checked == 0) {
    st.numeric = NumericState::Skipped;
    st.numericNote = lastErr.empty() ? "no instance satisfying the conditions found" : lastErr;
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
