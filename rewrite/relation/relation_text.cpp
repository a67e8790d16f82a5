// Parser and printer of relation files.
#include "rewrite/relation/relation_text.h"

#include <set>
#include <sstream>

#include "rewrite/relation/lexer.h"

namespace sp::rewrite {

namespace {

// Nesting deeper than this (expressions in expressions, parenthesized
// integers, comprehensions in comprehensions) is an error at the token, not
// a stack overflow.
constexpr int kMaxNesting = 200;

struct Parser {
  Cursor& c;
  std::set<std::string> vars;           // loop variables in scope
  const std::map<std::string, int64_t>& lets;
  int depth = 0;
  struct Nest {
    explicit Nest(int& d) : d_(d) { ++d_; }
    ~Nest() { --d_; }
    int& d_;
  };
  Status tooDeep() {
    if (depth <= kMaxNesting) return okStatus();
    return c.error("nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  // a op b of two constants, or an error at `at`.
  Result<IntExpr> folded(int64_t a, char op, int64_t b, const Token& at) {
    int64_t out = 0;
    bool bad = op == '+' ? __builtin_add_overflow(a, b, &out)
               : op == '-' ? __builtin_sub_overflow(a, b, &out)
                           : __builtin_mul_overflow(a, b, &out);
    if (bad) return c.errorAt(at, "integer overflow in " + std::to_string(a) + " " + op + " " + std::to_string(b));
    return IntExpr::constant(out);
  }

  Result<IntExpr> intAtom() {
    Token t = c.peek();
    Nest nest(depth);
    SP_TRY(tooDeep());
    if (c.accept("-")) {
      SP_ASSIGN(IntExpr e, intAtom());
      if (e.kind == IntExpr::Kind::Const) return folded(0, '-', e.value, t);
      return e * -1;
    }
    if (c.accept("(")) {
      SP_ASSIGN(IntExpr e, intExpr());
      SP_TRY(c.expect(")"));
      return e;
    }
    if (t.kind == Token::Kind::Int) { c.next(); return IntExpr::constant(t.intValue); }
    if (t.kind == Token::Kind::Ident) {
      c.next();
      if (t.text == "idx" && c.accept("(")) {
        SP_ASSIGN(IntExpr r, intExpr());
        SP_TRY(c.expect(","));
        Token g = c.next();
        if (g.kind != Token::Kind::Ident) return c.errorAt(g, "expected a group name, found " + Cursor::describe(g));
        SP_TRY(c.expect(")"));
        return IntExpr::index(r, g.text);
      }
      if (auto it = lets.find(t.text); it != lets.end()) return IntExpr::constant(it->second);
      if (!vars.count(t.text)) return c.errorAt(t, "unbound variable '" + t.text + "'");
      return IntExpr::var(t.text);
    }
    return c.error("expected an integer expression, found " + Cursor::describe(t));
  }

  Result<IntExpr> intTerm() {
    SP_ASSIGN(IntExpr a, intAtom());
    while (c.isPunct("*") || c.isPunct("/") || c.isPunct("%")) {
      Token op = c.next();
      SP_ASSIGN(IntExpr b, intAtom());
      bool aC = a.kind == IntExpr::Kind::Const, bC = b.kind == IntExpr::Kind::Const;
      if (op.text == "*") {
        if (aC && bC) {
          SP_ASSIGN(a, folded(a.value, '*', b.value, op));
        } else if (bC) a = a * b.value;
        else if (aC) a = b * a.value;
        else return c.errorAt(op, "nonlinear product " + a.str() + "*" + b.str());
      } else {
        if (!bC || b.value <= 0) return c.errorAt(op, "'" + op.text + "' needs a positive constant on the right");
        a = op.text == "/" ? a.divC(b.value) : a.modC(b.value);
      }
    }
    return a;
  }

  Result<IntExpr> intExpr() {
    SP_ASSIGN(IntExpr a, intTerm());
    while (c.isPunct("+") || c.isPunct("-")) {
      bool plus = c.next().text == "+";
      SP_ASSIGN(IntExpr b, intTerm());
      a = plus ? a + b : a - b;
    }
    return a;
  }

  Result<int64_t> intLit() {
    bool negv = c.accept("-");
    Token t = c.next();
    if (t.kind != Token::Kind::Int) return c.errorAt(t, "expected an integer, found " + Cursor::describe(t));
    return negv ? -t.intValue : t.intValue;
  }

  // Optional `key=` before a positional argument.
  Status key(const char* k) {
    if (c.isIdent(k) && c.isPunct("=", 1)) { c.next(); c.next(); }
    return okStatus();
  }

  Result<RankDomain> domain() {
    RankDomain d;
    if (c.peek().kind == Token::Kind::Int || c.isPunct("-")) {
      d.isRange = true;
      SP_ASSIGN(d.lo, intLit());
      SP_TRY(c.expect(".."));
      SP_ASSIGN(d.hi, intLit());
      if (d.hi < d.lo) return c.error("empty rank range " + d.str());
      if (d.lo < 0 || d.hi - d.lo >= (int64_t(1) << 20))  // worlds have at most 2^20 ranks
        return c.error("rank range " + d.str() + " is outside 0..2^20");
      return d;
    }
    Token g = c.next();
    if (g.kind != Token::Kind::Ident) return c.errorAt(g, "expected a group or a range lo..hi, found " + Cursor::describe(g));
    d.group = g.text;
    return d;
  }

  Result<RelPtr> part() {
    Nest nest(depth);
    SP_TRY(tooDeep());
    if (!c.isIdent("for")) return expr();
    c.next();
    Token v = c.next();
    if (v.kind != Token::Kind::Ident) return c.errorAt(v, "expected a variable name, found " + Cursor::describe(v));
    if (!c.isIdent("in")) return c.error("expected 'in', found " + Cursor::describe(c.peek()));
    c.next();
    SP_ASSIGN(RankDomain d, domain());
    SP_TRY(c.expect(":"));
    bool had = vars.count(v.text);
    vars.insert(v.text);
    auto body = part();
    if (!had) vars.erase(v.text);
    if (!body.ok()) return body.error();
    return Rel::forEach(v.text, d, *body);
  }

  Result<std::vector<RelPtr>> parts() {
    std::vector<RelPtr> ps;
    do {
      SP_ASSIGN(RelPtr p, part());
      ps.push_back(p);
    } while (c.accept(","));
    return ps;
  }

  Result<std::vector<int64_t>> intList() {
    SP_TRY(c.expect("["));
    std::vector<int64_t> out;
    if (!c.isPunct("]")) {
      do {
        SP_ASSIGN(int64_t v, intLit());
        out.push_back(v);
      } while (c.accept(","));
    }
    SP_TRY(c.expect("]"));
    return out;
  }

  Result<RelPtr> expr() {
    Nest nest(depth);
    SP_TRY(tooDeep());
    Token t = c.next();
    if (t.kind != Token::Kind::Ident) return c.errorAt(t, "expected a relation expression, found " + Cursor::describe(t));
    if (t.text == "seq" || t.text == "dist") {
      IntExpr rank;
      if (t.text == "dist") {
        SP_TRY(c.expect("["));
        SP_ASSIGN(rank, intExpr());
        SP_TRY(c.expect("]"));
      }
      SP_TRY(c.expect("."));
      Token n = c.next();
      if (n.kind != Token::Kind::Ident && n.kind != Token::Kind::Str)
        return c.errorAt(n, "expected a tensor name, found " + Cursor::describe(n));
      return t.text == "seq" ? Rel::seq(n.text) : Rel::dist(rank, n.text);
    }
    SP_TRY(c.expect("("));
    RelPtr out;
    if (t.text == "concat") {
      if (!c.isIdent("dim")) return c.error("concat needs dim=N first");
      SP_TRY(key("dim"));
      SP_ASSIGN(int64_t dim, intLit());
      SP_TRY(c.expect(","));
      SP_ASSIGN(auto ps, parts());
      out = Rel::concat(dim, ps);
    } else if (t.text == "sum") {
      SP_ASSIGN(auto ps, parts());
      out = Rel::sum(ps);
    } else if (t.text == "slice") {
      SP_ASSIGN(RelPtr x, expr());
      SP_TRY(c.expect(","));
      SP_TRY(key("dim"));
      SP_ASSIGN(int64_t dim, intLit());
      SP_TRY(c.expect(","));
      SP_TRY(key("start"));
      SP_ASSIGN(IntExpr s, intExpr());
      SP_TRY(c.expect(","));
      SP_TRY(key("end"));
      SP_ASSIGN(IntExpr e, intExpr());
      out = Rel::slice(x, dim, s, e);
    } else if (t.text == "reshape") {
      SP_ASSIGN(RelPtr x, expr());
      SP_TRY(c.expect(","));
      SP_TRY(c.expect("["));
      ir::Shape shape;
      do {
        Token d = c.next();
        if (d.kind == Token::Kind::Int) shape.push_back(ir::Dim(d.intValue));
        else if (d.kind == Token::Kind::Ident) shape.push_back(ir::Dim::sym(d.text));
        else return c.errorAt(d, "expected a dim, found " + Cursor::describe(d));
      } while (c.accept(","));
      SP_TRY(c.expect("]"));
      out = Rel::reshape(x, shape);
    } else if (t.text == "permute" || t.text == "transpose") {
      SP_ASSIGN(RelPtr x, expr());
      SP_TRY(c.expect(","));
      SP_TRY(key("perm"));
      SP_ASSIGN(auto perm, intList());
      out = Rel::permute(x, perm);
    } else if (t.text == "scale") {
      SP_ASSIGN(RelPtr x, expr());
      SP_TRY(c.expect(","));
      bool negv = c.accept("-");
      Token f = c.next();
      if (f.kind != Token::Kind::Int && f.kind != Token::Kind::Float)
        return c.errorAt(f, "expected a constant factor, found " + Cursor::describe(f));
      double v = f.kind == Token::Kind::Int ? double(f.intValue) : f.floatValue;
      out = Rel::scale(x, negv ? -v : v);
    } else {
      return c.errorAt(t, "unknown relation operator '" + t.text +
                              "' (expected seq, dist, concat, sum, slice, reshape, permute, scale)");
    }
    SP_TRY(c.expect(")"));
    return out;
  }
};

}  // namespace

Result<RelPtr> parseRelExpr(const std::string& text, const IntVars& vars) {
  SP_ASSIGN(auto toks, lexLine(text, "<expr>", 1));
  Cursor c(std::move(toks), "<expr>", 1);
  std::map<std::string, int64_t> lets;
  Parser p{c, {}, lets};
  for (const auto& [k, _] : vars) p.vars.insert(k);
  SP_ASSIGN(RelPtr r, p.expr());
  if (!c.atEnd()) return c.error("unexpected " + Cursor::describe(c.peek()) + " after the expression");
  return r;
}

Result<RelationFile> parseRelations(const std::string& text, const std::string& file) {
  RelationFile f;
  std::map<std::string, int64_t> lets;
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    SP_ASSIGN(auto toks, lexLine(line, file, lineNo));
    Cursor c(std::move(toks), file, lineNo);
    if (c.atEnd()) continue;
    Parser p{c, {}, lets};
    std::string loc = c.lineLocation();
    if (c.isIdent("let")) {
      c.next();
      Token n = c.next();
      if (n.kind != Token::Kind::Ident) return c.errorAt(n, "expected a name after 'let'");
      if (lets.count(n.text)) return c.errorAt(n, "'" + n.text + "' is already defined");
      SP_TRY(c.expect("="));
      SP_ASSIGN(int64_t v, p.intLit());
      lets[n.text] = v;
      f.lets.emplace_back(n.text, v);
    } else if (c.isIdent("unrelated")) {
      c.next();
      Token n = c.next();
      if (n.kind != Token::Kind::Ident && n.kind != Token::Kind::Str)
        return c.errorAt(n, "expected a D input name after 'unrelated'");
      f.unrelated.push_back({n.text, "declared unrelated at " + loc, loc});
    } else if (c.isIdent("expect")) {
      c.next();
      if (!c.isIdent("seq")) return c.error("expect lines define seq.NAME, found " + Cursor::describe(c.peek()));
      c.next();
      SP_TRY(c.expect("."));
      Token n = c.next();
      if (n.kind != Token::Kind::Ident && n.kind != Token::Kind::Str) return c.errorAt(n, "expected a tensor name");
      SP_TRY(c.expect("="));
      SP_ASSIGN(RelPtr e, p.expr());
      f.outputs.push_back({n.text, e, loc});
    } else {
      InputRelation ir;
      ir.location = loc;
      if (c.isIdent("for")) {
        c.next();
        Token v = c.next();
        if (v.kind != Token::Kind::Ident) return c.errorAt(v, "expected a variable name");
        if (!c.isIdent("in")) return c.error("expected 'in', found " + Cursor::describe(c.peek()));
        c.next();
        SP_ASSIGN(ir.loopDomain, p.domain());
        SP_TRY(c.expect(":"));
        ir.loopVar = v.text;
        p.vars.insert(v.text);
      }
      if (!c.isIdent("dist")) return c.error("expected 'dist[...]', 'expect', 'let', 'unrelated' or 'for', found " + Cursor::describe(c.peek()));
      c.next();
      SP_TRY(c.expect("["));
      if (c.accept("*")) {
        if (ir.loopVar) return c.error("dist[*] cannot be combined with a for loop");
        ir.allRanks = true;
      } else {
        SP_ASSIGN(ir.rank, p.intExpr());
      }
      SP_TRY(c.expect("]"));
      SP_TRY(c.expect("."));
      Token n = c.next();
      if (n.kind != Token::Kind::Ident && n.kind != Token::Kind::Str) return c.errorAt(n, "expected a tensor name");
      ir.name = n.text;
      SP_TRY(c.expect("="));
      SP_ASSIGN(ir.expr, p.expr());
      f.inputs.push_back(std::move(ir));
    }
    if (!c.atEnd()) return c.error("unexpected " + Cursor::describe(c.peek()) + " at end of line");
  }
  return f;
}

std::string printRelations(const RelationFile& f) {
  std::string out;
  for (const auto& [k, v] : f.lets) out += "let " + k + " = " + std::to_string(v) + "\n";
  for (const auto& i : f.inputs) {
    if (i.loopVar) out += "for " + *i.loopVar + " in " + i.loopDomain.str() + ": ";
    out += "dist[" + (i.allRanks ? std::string("*") : i.rank.str()) + "]." + relName(i.name) + " = " +
           str(*i.expr) + "\n";
  }
  for (const auto& o : f.outputs) out += "expect seq." + relName(o.name) + " = " + str(*o.expr) + "\n";
  for (const auto& u : f.unrelated)
    out += "unrelated " + relName(u.name) + (u.reason.empty() ? "" : "  # " + u.reason) + "\n";
  return out;
}

Result<std::vector<BoundInput>> expandInputs(const RelationFile& f, const RankSpace& ranks) {
  std::vector<BoundInput> out;
  std::map<std::pair<int64_t, std::string>, std::string> seen;
  for (const auto& in : f.inputs) {
    std::vector<std::pair<int64_t, RelScope>> todo;  // (rank, scope)
    auto scopeFor = [&](int64_t anchor) { RelScope s; s.ranks = &ranks; s.anchorRank = anchor; return s; };
    if (in.allRanks) {
      for (int64_t r = 0; r < ranks.worldSize(); ++r) todo.emplace_back(r, scopeFor(r));
    } else {
      std::vector<int64_t> values;
      if (!in.loopVar) values.push_back(0);
      else if (in.loopDomain.isRange)
        for (int64_t v = in.loopDomain.lo; v <= in.loopDomain.hi; ++v) values.push_back(v);
      else
        for (int64_t r = 0; r < ranks.worldSize(); ++r) {
          SP_TRY(ranks.indexOf(in.loopDomain.group, r));
          values.push_back(r);
        }
      for (int64_t v : values) {
        RelScope s = scopeFor(v);
        if (in.loopVar) s.vars[*in.loopVar] = v;
        auto rank = in.rank.eval(s.vars, &ranks);
        if (!rank.ok()) return makeError(rank.error().id, rank.error().message, in.location);
        if (*rank < 0 || *rank >= ranks.worldSize())
          return makeError("rank-out-of-range", "dist[" + in.rank.str() + "] is rank " + std::to_string(*rank) +
                                                    ", outside the world of " + std::to_string(ranks.worldSize()) + " ranks",
                           in.location);
        s.anchorRank = *rank;
        todo.emplace_back(*rank, s);
      }
    }
    for (auto& [rank, s] : todo) {
      auto key = std::make_pair(rank, in.name);
      if (auto it = seen.find(key); it != seen.end())
        return makeError("duplicate-relation", "dist[" + std::to_string(rank) + "]." + in.name +
                                                   " is already defined at " + it->second, in.location);
      seen[key] = in.location;
      out.push_back({rank, in.name, in.expr, s, in.location});
    }
  }
  return out;
}

Result<std::vector<ir::TensorMap>> buildDistInputs(const RelationFile& f, const RankSpace& ranks,
                                                   const ir::TensorMap& seq) {
  SP_ASSIGN(auto bound, expandInputs(f, ranks));
  std::vector<ir::TensorMap> out(size_t(ranks.worldSize()));
  TensorSource src{&seq, nullptr};
  for (const auto& b : bound) {
    auto t = evaluate(*b.expr, src, b.scope);
    if (!t.ok()) return makeError(t.error().id, "rank " + std::to_string(b.rank) + ": " + t.error().message, b.location);
    out[size_t(b.rank)][b.name] = *t;
  }
  return out;
}

Result<ir::TensorMap> rebuildSeqOutputs(const RelationFile& f, const RankSpace& ranks,
                                        const std::vector<ir::TensorMap>& dist) {
  ir::TensorMap out;
  TensorSource src{nullptr, &dist};
  for (const auto& o : f.outputs) {
    RelScope s;
    s.ranks = &ranks;
    auto t = evaluate(*o.expr, src, s);
    if (!t.ok()) return makeError(t.error().id, t.error().message, o.location);
    out[o.name] = *t;
  }
  return out;
}

}  // namespace sp::rewrite
