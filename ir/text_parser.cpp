// Parser of the text IR (grammar in docs/text-ir.md). Statements are parsed
// into a small syntax tree first, then replayed into a GraphBuilder (once per
// rank for `rank a..b` bodies), so semantic errors from the builders carry
// the statement's "file:line:col".
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>

#include "ir/text.h"
#include "ir/text_reader.h"

namespace sp::ir {

namespace {

using text::describe;
using text::suggest;
using text::Tok;
using text::Token;

struct Stmt {
  enum class Kind : uint8_t { Input, Param, Node, Output } kind = Kind::Node;
  std::string pos;           // "file:line:col" of the statement
  SourceLoc loc;             // explicit `@` location, else the text position
  bool explicitLoc = false;
  std::vector<std::string> names;  // node outputs, or the one input/param/output
  std::vector<std::optional<TensorType>> types;
  std::optional<Tensor> data;
  OpKind op{};
  std::vector<std::string> inputs;
  AttrMap attrs;
  std::string nodeName;
};

struct Body {
  std::vector<Stmt> stmts;
};


class Parser : public text::TokenReader {
 public:
  using TokenReader::TokenReader;

  // want: "" (either), "graph" or "program".
  Result<Module> module(std::string_view want) {
    const Token& t = peek();
    bool isGraph = t.isIdent("graph"), isProgram = t.isIdent("program");
    if ((!isGraph && !isProgram) || (want == "graph" && !isGraph) || (want == "program" && !isProgram))
      return unexpected(t, want.empty() ? "'graph' or 'program'" : "'" + std::string(want) + "'");
    std::optional<Module> m;
    if (isGraph) {
      SP_ASSIGN(Graph g, graph());
      m.emplace(std::move(g));
    } else {
      SP_ASSIGN(Program p, program());
      m.emplace(std::move(p));
    }
    if (peek().kind != Tok::Eof) return unexpected(peek(), "end of file after the closing '}'");
    return std::move(*m);
  }

 private:

  Status attrs(Stmt& s) { return attrBlock(s.op, s.attrs); }

  Status location(Stmt& s) {
    SP_ASSIGN(auto loc, sourceLoc());
    if (!loc) return okStatus();
    s.loc = std::move(*loc);
    s.explicitLoc = true;
    return okStatus();
  }

  Status call(Stmt& s) {
    const Token& opTok = peek();
    SP_ASSIGN(s.op, readOp());
    SP_ASSIGN(s.inputs, operands());
    if (accept("{")) SP_TRY(attrs(s));
    SP_TRY(requireAttrs(opTok, s.op, s.attrs));
    if (peek().isIdent("as")) {
      next();
      SP_ASSIGN(s.nodeName, name("a node name"));
    }
    return location(s);
  }

  Status statement(Body& b) {
    const Token& t = peek();
    Stmt s;
    s.pos = where(t);
    s.loc = SourceLoc{file_, t.line, t.col, ""};
    if (t.isIdent("input") || t.isIdent("param")) {
      bool param = t.isIdent("param");
      next();
      s.kind = param ? Stmt::Kind::Param : Stmt::Kind::Input;
      SP_ASSIGN(std::string n, valueName());
      s.names.push_back(std::move(n));
      SP_TRY(expect(":"));
      SP_ASSIGN(TensorType tt, type());
      if (param && accept("=")) {
        if (!peek().isIdent("dense")) return unexpected(peek(), "'dense'");
        next();
        SP_ASSIGN(Tensor data, dense(tt));
        s.data = std::move(data);
      }
      s.types.push_back(std::move(tt));
      SP_TRY(location(s));
    } else if (t.isIdent("output")) {
      next();
      do {
        const Token& v = peek();
        Stmt o;
        o.kind = Stmt::Kind::Output;
        o.pos = where(v);
        o.loc = SourceLoc{file_, v.line, v.col, ""};
        SP_ASSIGN(std::string n, valueName());
        o.names.push_back(std::move(n));
        b.stmts.push_back(std::move(o));
      } while (accept(","));
      return okStatus();
    } else if (t.kind == Tok::Value) {
      do {
        SP_ASSIGN(std::string n, valueName());
        s.names.push_back(std::move(n));
        std::optional<TensorType> tt;
        if (accept(":")) {
          SP_ASSIGN(tt, type());
        }
        s.types.push_back(std::move(tt));
      } while (accept(","));
      SP_TRY(expect("="));
      SP_TRY(call(s));
    } else if (t.kind == Tok::Ident && peek(1).isPunct("(")) {
      SP_TRY(call(s));
    } else if (t.kind == Tok::Ident) {
      return err(t, "unexpected-token", "unknown statement '" + t.text + "'" +
                                            suggest(t.text, {"input", "param", "output"}));
    } else {
      return unexpected(t, "a statement (input, param, output or an op)");
    }
    b.stmts.push_back(std::move(s));
    return okStatus();
  }

  // `{ statement* }`; `what` names the construct for a missing '}'.
  Result<Body*> body(const std::string& what) {
    const Token& open = peek();
    SP_TRY(expect("{"));
    bodies_.push_back(std::make_unique<Body>());
    Body* b = bodies_.back().get();
    while (!accept("}")) {
      if (accept(";")) continue;
      if (peek().kind == Tok::Eof)
        return err(peek(), "unexpected-eof", "missing '}' to close " + what + " opened at " +
                                                 std::to_string(open.line) + ":" + std::to_string(open.col));
      SP_TRY(statement(*b));
    }
    return b;
  }

  // Builder errors point at the statement: a missing location becomes
  // `fallback`, and an explicit source location shared by no other statement
  // is replaced by the text position (the source stays in the message).
  Error locate(Error e, const std::string& fallback) const {
    if (e.location.empty()) {
      e.location = fallback;
      return e;
    }
    const Stmt* hit = nullptr;
    int count = 0;
    for (const auto& b : bodies_)
      for (const Stmt& s : b->stmts)
        if (s.explicitLoc && s.loc.str() == e.location) {
          hit = &s;
          ++count;
        }
    if (count == 1) {
      e.message += " (source " + e.location + ")";
      e.location = hit->pos;
    }
    return e;
  }

  Result<GraphBuilder> instantiate(const Body& b, const std::string& graphName) const {
    GraphBuilder gb(graphName);
    for (const Stmt& s : b.stmts) {
      Status st = okStatus();
      switch (s.kind) {
        case Stmt::Kind::Input: st = gb.addInput(s.names[0], *s.types[0], s.loc); break;
        case Stmt::Kind::Param: st = gb.addParam(s.names[0], *s.types[0], s.data, s.loc); break;
        case Stmt::Kind::Output: st = gb.addOutput(s.names[0], s.loc); break;
        case Stmt::Kind::Node:
          st = gb.addNode(s.op, s.inputs, s.names, s.attrs, s.loc, s.nodeName, s.types);
          break;
      }
      if (!st) return locate(st.error(), s.pos);
    }
    return gb;
  }

  Result<Graph> graph() {
    const Token& kw = next();
    SP_ASSIGN(std::string gname, name("a graph name"));
    SP_ASSIGN(Body * b, body("graph '" + gname + "'"));
    SP_ASSIGN(GraphBuilder gb, instantiate(*b, gname));
    auto g = std::move(gb).finish();
    if (!g) return locate(g.error(), where(kw));
    return std::move(*g);
  }

  Result<Program> program() {
    const Token& kw = next();
    SP_ASSIGN(std::string pname, name("a program name"));
    const Token& open = peek();
    SP_TRY(expect("{"));
    std::optional<int64_t> world;
    std::string worldPos = where(kw), meshPos;
    Mesh mesh;
    std::vector<std::pair<std::string, GroupPartition>> groups;
    std::vector<std::string> groupPos;
    std::optional<ProgramBuilder> pb;
    auto fixHeader = [&](Error e) {
      if (e.id == "bad-world") e.location = worldPos;
      if (e.id == "mesh-size") e.location = meshPos.empty() ? worldPos : meshPos;
      return e;
    };
    auto start = [&](const Token& at) -> Status {
      if (pb) return okStatus();
      if (!world) return err(at, "missing-world", "program '" + pname + "' must declare 'world N' first");
      pb.emplace(*world, mesh);
      for (size_t i = 0; i < groups.size(); ++i)
        if (auto st = pb->addGroup(groups[i].first, groups[i].second); !st) {
          Error e = fixHeader(st.error());
          if (e.location.empty()) e.location = groupPos[i];
          return e;
        }
      return okStatus();
    };
    while (!accept("}")) {
      const Token& t = peek();
      if (t.kind == Tok::Eof)
        return err(t, "unexpected-eof", "missing '}' to close program '" + pname + "' opened at " +
                                            std::to_string(open.line) + ":" + std::to_string(open.col));
      bool header = t.isIdent("world") || t.isIdent("mesh") || t.isIdent("group");
      if (header && pb)
        return err(t, "late-declaration", "'" + t.text + "' must come before the first rank");
      if (t.isIdent("world")) {
        if (world) return err(t, "duplicate-declaration", "'world' is declared twice");
        next();
        worldPos = where(t);
        SP_ASSIGN(world, integer("the world size"));
      } else if (t.isIdent("mesh")) {
        if (!meshPos.empty()) return err(t, "duplicate-declaration", "'mesh' is declared twice");
        next();
        meshPos = where(t);
        SP_TRY(expect("["));
        int64_t ranks = 1;
        do {
          const Token& a = peek();
          SP_ASSIGN(std::string axis, name("a mesh axis name"));
          SP_TRY(expect("="));
          SP_ASSIGN(int64_t size, integer("the axis size"));
          if (mesh.axis(axis)) return err(a, "duplicate-axis", "mesh axis '" + axis + "' is declared twice");
          if (size < 1 || size > (int64_t(1) << 20) || ranks * size > (int64_t(1) << 20))
            return err(a, "mesh-size", "mesh axis '" + axis + "' of size " + std::to_string(size) +
                                           " makes the mesh larger than [1, 2^20] ranks");
          ranks *= size;
          mesh.axes.push_back({axis, size});
        } while (accept(","));
        SP_TRY(expect("]"));
      } else if (t.isIdent("group")) {
        next();
        SP_ASSIGN(std::string gname, name("a group name"));
        SP_TRY(expect("="));
        SP_TRY(expect("["));
        GroupPartition part;
        do {
          SP_TRY(expect("["));
          part.emplace_back();
          if (!accept("]")) {
            do {
              SP_ASSIGN(int64_t r, integer("a rank"));
              part.back().push_back(r);
            } while (accept(","));
            SP_TRY(expect("]"));
          }
        } while (accept(","));
        SP_TRY(expect("]"));
        groups.emplace_back(std::move(gname), std::move(part));
        groupPos.push_back(where(t));
      } else if (t.isIdent("rank")) {
        next();
        SP_TRY(start(t));
        SP_ASSIGN(int64_t first, integer("a rank number"));
        int64_t last = first;
        if (accept("..")) {
          const Token& l = peek();
          SP_ASSIGN(last, integer("the last rank of the range"));
          if (last < first)
            return err(l, "bad-rank-range", "rank range " + std::to_string(first) + ".." +
                                                std::to_string(last) + " is empty");
        }
        std::string gname = pname;
        if (peek().kind == Tok::Ident || peek().kind == Tok::String) gname = next().text;
        SP_ASSIGN(Body * b, body("rank " + std::to_string(first)));
        SP_ASSIGN(GraphBuilder gb, instantiate(*b, gname));
        std::vector<int64_t> rs;
        for (int64_t r = first; r <= std::min(last, *world - 1); ++r) rs.push_back(r);
        if (last >= *world) rs.push_back(std::max(first, *world));  // reported as outside the world
        if (auto st = pb->setRanks(rs, std::move(gb)); !st) return locate(fixHeader(st.error()), where(t));
      } else {
        return err(t, "unexpected-token", "expected world, mesh, group or rank, got " + describe(t));
      }
    }
    SP_TRY(start(kw));
    auto p = std::move(*pb).finish();
    if (!p) return locate(fixHeader(p.error()), where(kw));
    return std::move(*p);
  }

  std::vector<std::unique_ptr<Body>> bodies_;
};

Result<Module> parseAs(const std::string& text, const std::string& filename, std::string_view want) {
  SP_ASSIGN(auto toks, text::lex(text, filename));
  return Parser(std::move(toks), filename).module(want);
}

}  // namespace

Result<Module> parseModule(const std::string& text, const std::string& filename) {
  return parseAs(text, filename, "");
}

Result<Graph> parseGraph(const std::string& text, const std::string& filename) {
  SP_ASSIGN(Module m, parseAs(text, filename, "graph"));
  return std::get<Graph>(std::move(m));
}

Result<Program> parseProgram(const std::string& text, const std::string& filename) {
  SP_ASSIGN(Module m, parseAs(text, filename, "program"));
  return std::get<Program>(std::move(m));
}

}  // namespace sp::ir
