// Loader of lemma rule files: parsing and checks (unknown ops, arity,
// attribute names and kinds, unbound variables).
#include <functional>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "rewrite/lemma/lemma.h"
#include "rewrite/relation/lexer.h"
#include "rewrite/relation/relation.h"

#ifndef SP_LEMMA_DIR
#define SP_LEMMA_DIR "rewrite/lemmas"
#endif

namespace sp::rewrite {

const PatAttr* Pattern::attr(const std::string& n) const {
  for (const auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

static std::string attrStr(const PatAttr& a) {
  switch (a.kind) {
    case PatAttr::Kind::Int: return std::to_string(a.i);
    case PatAttr::Kind::Float: { std::ostringstream os; os << a.f; return os.str(); }
    case PatAttr::Kind::Ints: {
      std::string s;
      for (int64_t v : a.ints) s += (s.empty() ? "" : ", ") + std::to_string(v);
      return "[" + s + "]";
    }
    case PatAttr::Kind::Str: return a.text;
    case PatAttr::Kind::Var: return a.list ? "[?" + a.text + "]" : "?" + a.text;
    case PatAttr::Kind::Expr: return a.expr->str();
    case PatAttr::Kind::Recip: return "1/(" + a.expr->str() + ")";
  }
  return "?";
}

std::optional<OpTrait> opTraitByName(const std::string& name) {
  if (name == "unary") return OpTrait::Unary;
  if (name == "binary") return OpTrait::Binary;
  return std::nullopt;
}

const char* opTraitName(OpTrait t) {
  switch (t) {
    case OpTrait::Unary: return "unary";
    case OpTrait::Binary: return "binary";
    case OpTrait::None: break;
  }
  return "none";
}

int opTraitArity(OpTrait t) { return t == OpTrait::Binary ? 2 : 1; }

bool isDimVarAttr(const Pattern& p, const PatAttr& a) {
  if (a.kind != PatAttr::Kind::Var) return false;
  if ((p.op == PatOp::Concat || p.op == PatOp::Slice) && a.name == "dim") return !a.list;
  if (p.op != PatOp::Ir) return false;
  ir::OpCategory c = ir::opInfo(p.irOp).category;
  return (a.list && a.name == "axes" && c == ir::OpCategory::Reduce) ||
         (!a.list && a.name == "axis" && c == ir::OpCategory::Norm);
}

bool opHasTrait(ir::OpKind op, OpTrait t) {
  const ir::OpInfo& info = ir::opInfo(op);
  switch (t) {
    case OpTrait::Unary:  // cast changes the dtype, not is bool only
      return info.category == ir::OpCategory::Unary && op != ir::OpKind::Cast && op != ir::OpKind::Not;
    // Arithmetic (category Binary) and comparisons (category Compare, bool
    // results): each a function of its operands' elements at the same
    // broadcast index, which is all the prover assumes of ?g. The logical
    // and/or/xor (bool operands) are left out: the numeric checks draw
    // real operands.
    case OpTrait::Binary:
      return info.category == ir::OpCategory::Binary ||
             (info.category == ir::OpCategory::Compare && op != ir::OpKind::And && op != ir::OpKind::Or &&
              op != ir::OpKind::Xor);
    case OpTrait::None: break;
  }
  return false;
}

std::vector<ir::OpKind> opsOfTrait(OpTrait t) {
  std::vector<ir::OpKind> out;
  for (size_t k = 0; k < ir::kNumOps; ++k)
    if (opHasTrait(ir::OpKind(k), t)) out.push_back(ir::OpKind(k));
  return out;
}

std::string Pattern::str() const {
  if (op == PatOp::Var) return "?" + name;
  std::string s = op == PatOp::OpVar ? "?" + name + (declares ? std::string(":") + opTraitName(trait) : "") + "("
                                     : name + "(";
  bool first = true;
  for (const auto& a : args) { s += (first ? "" : ", ") + a->str(); first = false; }
  for (const auto& a : attrs) { s += (first ? "" : ", ") + a.name + "=" + attrStr(a); first = false; }
  return s + ")";
}

std::string CondTerm::str() const {
  switch (kind) {
    case Kind::Const: return std::to_string(value);
    case Kind::Size:
      return "size(?" + var + ", " + (!args.empty() ? args[0].str() : dimVar.empty() ? std::to_string(value) : "?" + dimVar) + ")";
    case Kind::Rank: return "rank(?" + var + ")";
    case Kind::Shape: return "shape(?" + var + (value ? ", :-" + std::to_string(value) : "") + ")";
    case Kind::Var: return "?" + var;
    case Kind::Add: return "(" + args[0].str() + " + " + args[1].str() + ")";
    case Kind::Sub: return "(" + args[0].str() + " - " + args[1].str() + ")";
    case Kind::Mul: return args[0].str() + " * " + args[1].str();
    case Kind::Mod: return "mod(" + args[0].str() + ", " + args[1].str() + ")";
  }
  return "?";
}

static const char* cmpText(CmpOp op) {
  static const char* t[] = {"==", "!=", "<", "<=", ">", ">="};
  return t[int(op)];
}
std::string Cond::str() const { return lhs.str() + " " + cmpText(op) + " " + rhs.str(); }

std::string Lemma::str() const {
  std::string s = name + ": " + lhs->str() + " => " + rhs->str();
  for (size_t i = 0; i < conds.size(); ++i) s += (i ? " && " : " if ") + conds[i].str();
  return s;
}

const Lemma* LemmaLibrary::find(const std::string& name) const {
  for (const auto& l : lemmas)
    if (l.name == name) return &l;
  return nullptr;
}

std::string defaultLemmaDir() {
  if (const char* e = std::getenv("SHARDPROOF_LEMMA_DIR"); e && *e) return e;
  return SP_LEMMA_DIR;
}

namespace {

struct RelOpSpec {
  const char* name;
  PatOp op;
  int minArgs, maxArgs;
  std::vector<std::pair<std::string, PatAttr::Kind>> attrs;  // all required
};

// A relation operator of the relation file, as rewrite/relation/relation_ops.def
// declares it: its name, operands and attributes (kinds int, float, ints).
RelOpSpec fromTable(RelOp r, PatOp op) {
  struct Row {
    RelOp op;
    const char* name;
    int minArgs, maxArgs;
    const char* attrs;
  };
  static const Row rows[] = {
#define RELOP(E, NAME, MINA, MAXA, IROP, ATTRS, DOC) {RelOp::E, NAME, MINA, MAXA, ATTRS},
#include "rewrite/relation/relation_ops.def"
#undef RELOP
  };
  for (const Row& row : rows) {
    if (row.op != r) continue;
    RelOpSpec s{row.name, op, row.minArgs, row.maxArgs, {}};
    std::istringstream in(row.attrs);
    for (std::string a; in >> a;) {
      std::string name = a.substr(0, a.find(':')), kind = a.substr(a.find(':') + 1);
      s.attrs.push_back({name, kind == "float" ? PatAttr::Kind::Float : kind == "ints" ? PatAttr::Kind::Ints
                                                                                        : PatAttr::Kind::Int});
    }
    return s;
  }
  SP_ASSERT(false, "relation operator missing from relation_ops.def");
  return {};
}

// The relation operators of the relation file come from its table; the
// rest are the lemma language's own (reshapes named by what they do, and
// integer constants).
const std::vector<RelOpSpec>& relOps() {
  static const std::vector<RelOpSpec> ops = {
      fromTable(RelOp::Concat, PatOp::Concat),
      fromTable(RelOp::Sum, PatOp::Sum),
      fromTable(RelOp::Slice, PatOp::Slice),
      fromTable(RelOp::Scale, PatOp::Scale),
      fromTable(RelOp::Permute, PatOp::Permute),
      {"split_last", PatOp::SplitLast, 1, 1, {{"size", PatAttr::Kind::Int}}},
      {"merge_last", PatOp::MergeLast, 1, 1, {{"size", PatAttr::Kind::Int}}},
      {"merge_dims", PatOp::MergeDims, 1, 1, {{"dim", PatAttr::Kind::Int}, {"size", PatAttr::Kind::Int}}},
      {"split_dims", PatOp::SplitDims, 1, 1, {{"dim", PatAttr::Kind::Int}, {"size", PatAttr::Kind::Int}}},
      {"const", PatOp::Const, 0, 0, {{"value", PatAttr::Kind::Int}}},
  };
  return ops;
}

bool isKebab(const std::string& s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) return false;
  return s.back() != '-';
}

// Nesting deeper than this (terms in terms, parenthesized integer terms) is
// an error at the token, not a stack overflow.
constexpr int kMaxNesting = 200;

struct LemmaParser {
  Cursor& c;
  struct Nest {
    explicit Nest(int& d) : d_(d) { ++d_; }
    ~Nest() { --d_; }
    int& d_;
  };
  Status tooDeep(const Token& t) {
    if (depth <= kMaxNesting) return okStatus();
    return c.errorAt(t, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  std::map<std::string, bool> tensorVars;  // name -> seen on lhs
  std::set<std::string> attrVars;
  std::set<std::string> constVars;  // bound by const(value=?v) on the left side
  std::map<std::string, OpTrait> opVars;  // declared by ?f:trait(...) on the left side
  bool onLhs = true;
  int depth = 0;  // nesting of pattern() and condAtom() calls

  Status useVar(const Token& t, bool asTensor) {
    if (opVars.count(t.text))
      return c.errorAt(t, "variable '?" + t.text + "' is used both as an op and as a " + (asTensor ? "tensor" : "attribute"));
    if (asTensor ? attrVars.count(t.text) : tensorVars.count(t.text))
      return c.errorAt(t, "variable '?" + t.text + "' is used both as a tensor and as an attribute");
    auto& set = asTensor;
    (void)set;
    if (onLhs) {
      if (asTensor) tensorVars[t.text] = true; else attrVars.insert(t.text);
    } else if (asTensor ? !tensorVars.count(t.text) : !attrVars.count(t.text)) {
      return c.errorAt(t, "unbound variable '?" + t.text + "' (not bound by the left side)");
    }
    return okStatus();
  }

  Result<PatAttr> attrValue(const std::string& name, PatAttr::Kind want, const Token& at) {
    PatAttr a;
    a.name = name;
    Token t = c.peek();
    if (t.kind == Token::Kind::Var) {
      c.next();
      if (want != PatAttr::Kind::Int && want != PatAttr::Kind::Float)
        return c.errorAt(t, "attribute '" + name + "' must be a literal");
      SP_TRY(useVar(t, false));
      a.kind = PatAttr::Kind::Var;
      a.text = t.text;
      return a;
    }
    if (c.isPunct("[") && want == PatAttr::Kind::Ints && c.peek(1).kind == Token::Kind::Var && c.isPunct("]", 2)) {
      // axes=[?e]: one axis, a dim variable (reductions only: checked by the caller).
      c.next();
      Token v = c.next();
      SP_TRY(useVar(v, false));
      c.next();
      a.kind = PatAttr::Kind::Var;
      a.list = true;
      a.text = v.text;
      return a;
    }
    if (c.isPunct("[")) {
      c.next();
      a.kind = PatAttr::Kind::Ints;
      if (!c.isPunct("]")) {
        do {
          bool n = c.accept("-");
          Token v = c.next();
          if (v.kind != Token::Kind::Int) return c.errorAt(v, "expected an integer in the list");
          a.ints.push_back(n ? -v.intValue : v.intValue);
        } while (c.accept(","));
      }
      SP_TRY(c.expect("]"));
    } else if (t.kind == Token::Kind::Ident) {
      c.next();
      a.kind = PatAttr::Kind::Str;
      a.text = t.text;
    } else {
      bool n = c.accept("-");
      Token v = c.next();
      if (v.kind == Token::Kind::Int) { a.kind = PatAttr::Kind::Int; a.i = n ? -v.intValue : v.intValue; a.f = double(a.i); }
      else if (v.kind == Token::Kind::Float) { a.kind = PatAttr::Kind::Float; a.f = n ? -v.floatValue : v.floatValue; }
      else return c.errorAt(v, "expected a value for attribute '" + name + "', found " + Cursor::describe(v));
    }
    bool ok = a.kind == want || (want == PatAttr::Kind::Float && a.kind == PatAttr::Kind::Int);
    if (!ok) return c.errorAt(at, "attribute '" + name + "' has the wrong kind");
    if (want == PatAttr::Kind::Float) a.kind = PatAttr::Kind::Float;
    return a;
  }

  Result<PatPtr> pattern() {
    Token t = c.next();
    Nest nest(depth);
    SP_TRY(tooDeep(t));
    auto p = std::make_shared<Pattern>();
    if (t.kind == Token::Kind::Var && (c.isPunct(":") || c.isPunct("("))) return opVar(t, p);
    if (t.kind == Token::Kind::Var) {
      SP_TRY(useVar(t, true));
      p->op = PatOp::Var;
      p->name = t.text;
      return PatPtr(p);
    }
    if (t.kind != Token::Kind::Ident) return c.errorAt(t, "expected a term, found " + Cursor::describe(t));
    p->name = t.text;
    const RelOpSpec* rel = nullptr;
    for (const auto& r : relOps())
      if (t.text == r.name) rel = &r;
    const ir::OpInfo* info = nullptr;
    if (rel) {
      p->op = rel->op;
    } else if (auto k = ir::opByName(t.text)) {
      info = &ir::opInfo(*k);
      p->op = PatOp::Ir;
      p->irOp = *k;
      if (info->category == ir::OpCategory::Collective || info->category == ir::OpCategory::Source ||
          (info->numOutputs != 1 && *k != ir::OpKind::Dropout))  // dropout: output 0, the masked values
        return c.errorAt(t, "op '" + t.text + "' cannot appear in a lemma (collective, source or multi-output)");
    } else {
      return c.errorAt(t, "unknown op '" + t.text + "'");
    }
    SP_TRY(c.expect("("));
    while (!c.isPunct(")")) {
      if (c.peek().kind == Token::Kind::Ident && c.isPunct("=", 1)) {
        Token n = c.next();
        c.next();
        PatAttr::Kind want = PatAttr::Kind::Int;
        bool known = false;
        if (rel) {
          for (const auto& [an, ak] : rel->attrs)
            if (an == n.text) { want = ak; known = true; }
        } else if (const ir::AttrSpec* s = info->attr(n.text)) {
          known = true;
          switch (s->kind) {
            case ir::AttrKind::Int: want = PatAttr::Kind::Int; break;
            case ir::AttrKind::Float: want = PatAttr::Kind::Float; break;
            case ir::AttrKind::Ints: want = PatAttr::Kind::Ints; break;
            case ir::AttrKind::String: want = PatAttr::Kind::Str; break;
            case ir::AttrKind::Type: want = PatAttr::Kind::Str; break;  // a dtype name (cast's to=f32)
            default: return c.errorAt(n, "attribute '" + n.text + "' of " + t.text + " cannot be written in a lemma");
          }
        }
        if (!known) return c.errorAt(n, "op '" + t.text + "' has no attribute '" + n.text + "'");
        if (p->attr(n.text)) return c.errorAt(n, "attribute '" + n.text + "' given twice");
        PatAttr a;
        if (!onLhs && rel && rel->op == PatOp::Scale && c.peek().kind == Token::Kind::Int && c.peek().intValue == 1 &&
            c.isPunct("/", 1)) {
          // Right side scale factor 1/TERM: the reciprocal of an integer term.
          c.next();
          c.next();
          SP_ASSIGN(CondTerm term, condAtom());
          a.name = n.text;
          a.kind = PatAttr::Kind::Recip;
          a.expr = std::make_shared<CondTerm>(term);
        } else if (!onLhs && rel && ((rel->op == PatOp::Slice && n.text != "dim") || (rel->op == PatOp::Concat && n.text == "dim")) &&
            (c.peek().kind == Token::Kind::Var || c.isIdent("size") || c.isIdent("rank") || c.isPunct("("))) {
          // Right side slice bounds: an integer term of bound variables and
          // sizes. Right side concat dims: a term of dim variables and ranks
          // (a reduction that drops a dim before the concat's: dim=?d - 1).
          SP_ASSIGN(CondTerm term, condTerm());
          a.name = n.text;
          if (term.kind == CondTerm::Kind::Var) { a.kind = PatAttr::Kind::Var; a.text = term.var; }
          else { a.kind = PatAttr::Kind::Expr; a.expr = std::make_shared<CondTerm>(term); }
        } else {
          SP_ASSIGN(a, attrValue(n.text, want, n));
          if (const ir::AttrSpec* s = rel ? nullptr : info->attr(n.text);
              s && s->kind == ir::AttrKind::Type && !ir::parseDType(a.text))
            return c.errorAt(n, "attribute '" + n.text + "' of " + t.text + " must be a dtype, not '" + a.text + "'");
        }
        // A float attribute of an IR op may be a variable (dropout's ratio=?p):
        // matched against the node's value, the same value on the right side.
        bool irFloatVar = !rel && a.kind == PatAttr::Kind::Var && !a.list &&
                          info->attr(n.text)->kind == ir::AttrKind::Float;
        // A dim variable (isDimVarAttr): bound to the matched node's dim,
        // counted from 0; or a right side concat's computed dim.
        a.name = n.text;
        bool dimVar = isDimVarAttr(*p, a) ||
                      (rel && rel->op == PatOp::Concat && n.text == "dim" && a.kind == PatAttr::Kind::Expr);
        if (a.list && !dimVar) return c.errorAt(n, "a list variable [?v] is only a reduction's axes");
        if ((a.kind == PatAttr::Kind::Var || a.kind == PatAttr::Kind::Expr || a.kind == PatAttr::Kind::Recip) && !irFloatVar && !dimVar && !(rel && (rel->op == PatOp::Slice || rel->op == PatOp::Scale || rel->op == PatOp::SplitLast || rel->op == PatOp::MergeLast || rel->op == PatOp::MergeDims || rel->op == PatOp::SplitDims || rel->op == PatOp::Const) && n.text != "dim"))
          return c.errorAt(n, "attribute '" + n.text + "' must be a literal");
        p->attrs.push_back(a);
      } else {
        if (!p->attrs.empty()) return c.error("operands must come before attributes");
        SP_ASSIGN(PatPtr a, pattern());
        p->args.push_back(a);
      }
      if (!c.accept(",")) break;
    }
    SP_TRY(c.expect(")"));
    if (rel && rel->op == PatOp::Const) {
      // The engine matches constants; on the right side it reuses a matched
      // one (the class bound by the left side's const(value=?v)), it does
      // not build new ones.
      const PatAttr* v = p->attr("value");
      bool isVar = v && v->kind == PatAttr::Kind::Var;
      if (onLhs && isVar) constVars.insert(v->text);
      if (!onLhs && !(isVar && constVars.count(v->text)))
        return c.errorAt(t, "const(...) on the right side needs a variable value bound by a const(...) of the left side");
    }
    int n = int(p->args.size());
    int mn = rel ? rel->minArgs : info->minInputs, mx = rel ? rel->maxArgs : info->maxInputs;
    if (n < mn || (mx >= 0 && n > mx))
      return c.errorAt(t, "op '" + t.text + "' takes " +
                              (mx < 0 ? "at least " + std::to_string(mn) : mn == mx ? std::to_string(mn) : std::to_string(mn) + " to " + std::to_string(mx)) +
                              " operand(s), got " + std::to_string(n));
    if (rel) {
      for (const auto& [an, _] : rel->attrs)
        if (!p->attr(an)) return c.errorAt(t, "op '" + t.text + "' needs attribute '" + an + "'");
    } else {
      for (const auto& s : info->attrs)
        if (!s.defaultValue && !p->attr(s.name))
          return c.errorAt(t, "op '" + t.text + "' needs attribute '" + s.name + "'");
    }
    return PatPtr(p);
  }

  // An op variable: `?f:trait(operands)` declares it (left side only, once),
  // `?f(operands)` uses it. No attributes: it keeps the matched node's.
  Result<PatPtr> opVar(const Token& t, std::shared_ptr<Pattern> p) {
    if (tensorVars.count(t.text) || attrVars.count(t.text))
      return c.errorAt(t, "variable '?" + t.text + "' is used both as an op and as a tensor or attribute");
    p->op = PatOp::OpVar;
    p->name = t.text;
    if (c.accept(":")) {
      Token tr = c.next();
      if (tr.kind != Token::Kind::Ident) return c.errorAt(tr, "expected a trait after '?" + t.text + ":', found " + Cursor::describe(tr));
      auto trait = opTraitByName(tr.text);
      if (!trait) return c.errorAt(tr, "unknown trait '" + tr.text + "' (known: unary, binary)");
      if (!onLhs) return c.errorAt(t, "op variable '?" + t.text + "' is declared on the right side (declare it on the left side)");
      if (opVars.count(t.text)) return c.errorAt(t, "op variable '?" + t.text + "' is declared twice");
      opVars[t.text] = *trait;
      p->trait = *trait;
      p->declares = true;
    } else {
      auto it = opVars.find(t.text);
      if (it == opVars.end())
        return c.errorAt(t, onLhs ? "op variable '?" + t.text + "' is used before its declaration (write ?" + t.text + ":TRAIT(...))"
                                  : "unbound op variable '?" + t.text + "' (not declared by the left side)");
      p->trait = it->second;
    }
    SP_TRY(c.expect("("));
    while (!c.isPunct(")")) {
      if (c.peek().kind == Token::Kind::Ident && c.isPunct("=", 1))
        return c.errorAt(c.peek(), "op variable '?" + t.text + "' takes no attributes (it keeps those of the matched op)");
      SP_ASSIGN(PatPtr a, pattern());
      p->args.push_back(a);
      if (!c.accept(",")) break;
    }
    SP_TRY(c.expect(")"));
    int want = opTraitArity(p->trait);
    if (int(p->args.size()) != want)
      return c.errorAt(t, "op variable '?" + t.text + "' of trait " + opTraitName(p->trait) + " takes " + std::to_string(want) +
                              " operand(s), got " + std::to_string(p->args.size()));
    return PatPtr(p);
  }

  Result<CondTerm> condAtom() {
    Token t = c.next();
    Nest nest(depth);
    SP_TRY(tooDeep(t));
    CondTerm ct;
    if (t.kind == Token::Kind::Int) { ct.value = t.intValue; return ct; }
    if (t.kind == Token::Kind::Punct && t.text == "-") {
      Token v = c.next();
      if (v.kind != Token::Kind::Int) return c.errorAt(v, "expected an integer");
      ct.value = -v.intValue;
      return ct;
    }
    if (t.kind == Token::Kind::Punct && t.text == "(") {
      SP_ASSIGN(ct, condTerm());
      SP_TRY(c.expect(")"));
      return ct;
    }
    if (t.kind == Token::Kind::Var) {
      SP_TRY(useVar(t, false));
      ct.kind = CondTerm::Kind::Var;
      ct.var = t.text;
      return ct;
    }
    if (t.kind == Token::Kind::Ident && t.text == "mod") {
      SP_TRY(c.expect("("));
      SP_ASSIGN(CondTerm a, condTerm());
      SP_TRY(c.expect(","));
      SP_ASSIGN(CondTerm b, condTerm());
      SP_TRY(c.expect(")"));
      ct.kind = CondTerm::Kind::Mod;
      ct.args = {a, b};
      return ct;
    }
    if (t.kind == Token::Kind::Ident && t.text == "shape") {
      SP_TRY(c.expect("("));
      Token v = c.next();
      if (v.kind != Token::Kind::Var) return c.errorAt(v, "expected a tensor variable");
      SP_TRY(useVar(v, true));
      if (c.accept(",")) {  // shape(?x, :-k): every dim but the last k
        SP_TRY(c.expect(":"));
        SP_TRY(c.expect("-"));
        Token k = c.next();
        if (k.kind != Token::Kind::Int || k.intValue < 1) return c.errorAt(k, "expected shape(?x, :-k) with k >= 1");
        ct.value = k.intValue;
      }
      SP_TRY(c.expect(")"));
      ct.kind = CondTerm::Kind::Shape;
      ct.var = v.text;
      return ct;
    }
    if (t.kind == Token::Kind::Ident && (t.text == "size" || t.text == "rank")) {
      SP_TRY(c.expect("("));
      Token v = c.next();
      if (v.kind != Token::Kind::Var) return c.errorAt(v, "expected a tensor variable");
      SP_TRY(useVar(v, true));
      ct.var = v.text;
      ct.kind = t.text == "size" ? CondTerm::Kind::Size : CondTerm::Kind::Rank;
      if (t.text == "size") {
        SP_TRY(c.expect(","));
        bool literal = (c.peek().kind == Token::Kind::Int && c.isPunct(")", 1)) ||
                       (c.isPunct("-") && c.peek(1).kind == Token::Kind::Int && c.isPunct(")", 2));
        bool dimVar = c.peek().kind == Token::Kind::Var && c.isPunct(")", 1);
        if (literal || dimVar) {
          bool n = c.accept("-");
          Token d = c.next();
          if (d.kind == Token::Kind::Var) {  // size(?a, ?d): a dim variable of the left side
            SP_TRY(useVar(d, false));
            ct.dimVar = d.text;
          } else {
            ct.value = n ? -d.intValue : d.intValue;
          }
        } else {
          // size(?c, ?d - rank(?a) + rank(?c)): a dim computed from dim
          // variables, ranks and literals, counted from 0; out of range,
          // the condition does not hold (never read from the end).
          Token at = c.peek();
          if (c.isPunct("-") && c.peek(1).kind != Token::Kind::Int)
            return c.errorAt(c.peek(1), "size() needs a literal dim, a dim variable or a computed dim (?d - 1)");
          SP_ASSIGN(CondTerm dt, condTerm());
          std::function<bool(const CondTerm&)> dimTerm = [&](const CondTerm& x) {
            switch (x.kind) {
              case CondTerm::Kind::Const: case CondTerm::Kind::Var: case CondTerm::Kind::Rank: return true;
              case CondTerm::Kind::Add: case CondTerm::Kind::Sub: case CondTerm::Kind::Mul:
                return dimTerm(x.args[0]) && dimTerm(x.args[1]);
              default: return false;
            }
          };
          if (!dimTerm(dt)) return c.errorAt(at, "a computed dim of size() is made of dim variables, ranks, literals, + - *");
          ct.args = {dt};
        }
      }
      SP_TRY(c.expect(")"));
      return ct;
    }
    return c.errorAt(t, "expected size(?x, d), rank(?x), mod(a, b), ?v or an integer, found " + Cursor::describe(t));
  }

  Result<CondTerm> condTerm() {
    SP_ASSIGN(CondTerm a, condAtom());
    while (c.isPunct("+") || c.isPunct("-") || c.isPunct("*")) {
      if (a.kind == CondTerm::Kind::Shape) return c.error("shape() is not an integer");
      std::string op = c.next().text;
      SP_ASSIGN(CondTerm b, condAtom());
      if (b.kind == CondTerm::Kind::Shape) return c.error("shape() is not an integer");
      CondTerm r;
      r.kind = op == "+" ? CondTerm::Kind::Add : op == "-" ? CondTerm::Kind::Sub : CondTerm::Kind::Mul;
      r.args = {a, b};
      a = r;
    }
    return a;
  }

  Result<Cond> cond() {
    Cond k;
    SP_ASSIGN(k.lhs, condTerm());
    static const std::vector<std::pair<const char*, CmpOp>> ops = {
        {"==", CmpOp::Eq}, {"!=", CmpOp::Ne}, {"<=", CmpOp::Le}, {">=", CmpOp::Ge}, {"<", CmpOp::Lt}, {">", CmpOp::Gt}};
    bool found = false;
    for (const auto& [t, op] : ops)
      if (c.accept(t)) { k.op = op; found = true; break; }
    if (!found) return c.error("expected a comparison, found " + Cursor::describe(c.peek()));
    SP_ASSIGN(k.rhs, condTerm());
    bool ls = k.lhs.kind == CondTerm::Kind::Shape, rs = k.rhs.kind == CondTerm::Kind::Shape;
    if ((ls || rs) && !(ls && rs && k.op == CmpOp::Eq))
      return c.error("shape() is compared only with another shape(), by == (shape(?a) == shape(?b))");
    if (ls && k.lhs.value != k.rhs.value)
      return c.error("both shape() sides must leave out the same number of dims (shape(?a, :-1) == shape(?b, :-1))");
    return k;
  }
};

}  // namespace

Result<std::vector<Lemma>> parseLemmas(const std::string& text, const std::string& file) {
  std::vector<Lemma> out;
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    std::string loc = file + ":" + std::to_string(lineNo);
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) return makeError("parse-error", "expected 'name: lhs => rhs'", loc);
    std::string name = line.substr(start, colon - start);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (!isKebab(name)) return makeError("parse-error", "lemma name '" + name + "' is not kebab-case", loc + ":" + std::to_string(start + 1));
    std::string body(line.size(), ' ');
    std::copy(line.begin() + long(colon) + 1, line.end(), body.begin() + long(colon) + 1);
    SP_ASSIGN(auto toks, lexLine(body, file, lineNo));
    Cursor c(std::move(toks), file, lineNo);
    LemmaParser p{c, {}, {}, {}, {}, true};
    Lemma l;
    l.name = name;
    l.location = loc;
    SP_ASSIGN(l.lhs, p.pattern());
    if (l.lhs->op == PatOp::Var) return makeError("parse-error", "the left side must be an op, not a variable", loc);
    SP_TRY(c.expect("=>"));
    p.onLhs = false;
    SP_ASSIGN(l.rhs, p.pattern());
    if (c.isIdent("if")) {
      c.next();
      do {
        SP_ASSIGN(Cond k, p.cond());
        l.conds.push_back(k);
      } while (c.accept("&&"));
    }
    if (!c.atEnd()) return c.error("unexpected " + Cursor::describe(c.peek()) + " at end of rule");
    for (const auto& o : out)
      if (o.name == l.name) return makeError("duplicate-lemma", "lemma '" + l.name + "' is already defined at " + o.location, loc);
    out.push_back(std::move(l));
  }
  return out;
}

Result<LemmaLibrary> loadLemmas(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return makeError("lemma-dir-missing", "lemma directory '" + dir + "' does not exist");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".rules") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  LemmaLibrary lib;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    SP_ASSIGN(auto ls, parseLemmas(ss.str(), f.filename().string()));
    for (auto& l : ls) {
      if (const Lemma* prev = lib.find(l.name))
        return makeError("duplicate-lemma", "lemma '" + l.name + "' is already defined at " + prev->location, l.location);
      lib.lemmas.push_back(std::move(l));
    }
  }
  return lib;
}

}  // namespace sp::rewrite
