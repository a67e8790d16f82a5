// Parser of the plan text form (docs/plan.md), on the text IR's lexer and
// literal grammar (ir/text_reader.h): types, attribute values, locations.
#include "codegen/plan.h"
#include "ir/text_reader.h"

namespace sp::codegen {

namespace {

using ir::text::Tok;
using ir::text::Token;

class PlanParser : public ir::text::TokenReader {
 public:
  using TokenReader::TokenReader;

  Result<Plan> plan() {
    Plan p;
    p.file = file_;
    SP_TRY(keyword("plan"));
    SP_ASSIGN(p.program, name("the program name"));
    SP_TRY(keyword("rank"));
    SP_ASSIGN(p.rank, count("the rank"));
    SP_TRY(keyword("of"));
    SP_ASSIGN(p.world, count("the world size"));
    SP_TRY(keyword("version"));
    const Token& v = peek();
    SP_ASSIGN(int64_t version, integer("the format version"));
    if (version != kPlanVersion)
      return err(v, "bad-plan", "plan format version " + v.text + " is not " + std::to_string(kPlanVersion));
    SP_TRY(expect("{"));
    bool arena = false, streams = false;
    while (!accept("}")) {
      const Token& t = peek();
      if (t.isIdent("mesh")) {
        next();
        SP_TRY(mesh(p));
      } else if (t.isIdent("group")) {
        next();
        SP_TRY(group(p));
      } else if (t.isIdent("bind")) {
        next();
        SP_ASSIGN(std::string sym, name("a symbol"));
        if (p.bindings.count(sym)) return err(t, "bad-plan", "symbol '" + sym + "' is bound twice");
        SP_TRY(expect("="));
        SP_ASSIGN(p.bindings[sym], count("the symbol's value"));
      } else if (t.isIdent("arena") && !arena) {
        next();
        arena = true;
        SP_ASSIGN(p.arenaBytes, count("the arena size in bytes"));
      } else if (t.isIdent("streams") && !streams) {
        next();
        streams = true;
        SP_ASSIGN(int64_t n, count("the number of streams"));
        if (n > 64) return err(t, "bad-plan", "at most 64 streams, got " + std::to_string(n));
        p.streams = int(n);
      } else if (t.isIdent("buffer")) {
        next();
        SP_TRY(buffer(p));
      } else if (t.isIdent("step")) {
        next();
        SP_TRY(step(p, t));
      } else if (t.isIdent("output")) {
        next();
        SP_ASSIGN(int b, bufferRef(p));
        p.outputs.push_back(b);
      } else {
        return unexpected(t, "'mesh', 'group', 'bind', 'arena', 'streams', 'buffer', 'step', 'output' or '}'");
      }
    }
    if (!arena) return err(peek(), "bad-plan", "the plan has no 'arena' line");
    if (peek().kind != Tok::Eof) return unexpected(peek(), "end of file after the closing '}'");
    SP_TRY(checkPlan(p));
    return p;
  }

 private:
  Status keyword(std::string_view w) {
    if (!peek().isIdent(w)) return unexpected(peek(), "'" + std::string(w) + "'");
    next();
    return okStatus();
  }

  // A non-negative integer.
  Result<int64_t> count(const std::string& what) {
    const Token& t = peek();
    SP_ASSIGN(int64_t v, integer(what));
    if (v < 0) return err(t, "bad-plan", what + " must not be negative, got " + t.text);
    return v;
  }

  Result<int> stream() {
    const Token& t = peek();
    if (t.kind != Tok::Ident || t.text.size() < 2 || t.text.size() > 3 || t.text[0] != 's' ||
        t.text.find_first_not_of("0123456789", 1) != std::string::npos)
      return unexpected(t, "a stream like s0");
    next();
    return std::stoi(t.text.substr(1));
  }

  Status mesh(Plan& p) {
    SP_TRY(expect("["));
    do {
      ir::MeshAxis a;
      SP_ASSIGN(a.name, name("a mesh axis name"));
      SP_TRY(expect("="));
      SP_ASSIGN(a.size, count("the axis size"));
      p.mesh.axes.push_back(std::move(a));
    } while (accept(","));
    return expect("]");
  }

  Result<std::vector<int64_t>> ranks() {
    std::vector<int64_t> out;
    SP_TRY(expect("["));
    if (accept("]")) return out;
    do {
      SP_ASSIGN(int64_t r, count("a rank"));
      out.push_back(r);
    } while (accept(","));
    SP_TRY(expect("]"));
    return out;
  }

  Status group(Plan& p) {
    const Token& t = peek();
    SP_ASSIGN(std::string n, name("a group name"));
    if (p.groups.count(n)) return err(t, "bad-plan", "group '" + n + "' is declared twice");
    SP_TRY(expect("="));
    SP_TRY(expect("["));
    ir::GroupPartition part;
    if (!accept("]")) {
      do {
        SP_ASSIGN(auto rs, ranks());
        part.push_back(std::move(rs));
      } while (accept(","));
      SP_TRY(expect("]"));
    }
    p.groups[n] = std::move(part);
    return okStatus();
  }

  Status buffer(Plan& p) {
    const Token& t = peek();
    PlanBuffer b;
    SP_ASSIGN(b.name, valueName());
    if (p.findBuffer(b.name)) return err(t, "bad-plan", "buffer " + ir::text::describe(t) + " is declared twice");
    SP_TRY(expect(":"));
    SP_ASSIGN(b.type, type());
    const Token& k = peek();
    if (k.isIdent("input")) b.kind = BufferKind::Input;
    else if (k.isIdent("param")) b.kind = BufferKind::Param;
    else if (k.isIdent("temp")) b.kind = BufferKind::Temp;
    else return unexpected(k, "'input', 'param' or 'temp'");
    next();
    SP_TRY(keyword("at"));
    SP_ASSIGN(b.offset, count("the arena offset"));
    SP_TRY(keyword("size"));
    SP_ASSIGN(b.bytes, count("the size in bytes"));
    if (peek().isIdent("data")) {
      const Token& d = next();
      if (b.kind != BufferKind::Param) return err(d, "bad-plan", "only param buffers carry data");
      if (peek().kind != Tok::String) return unexpected(peek(), "a quoted .npy file name");
      b.dataFile = next().text;
    }
    p.buffers.push_back(std::move(b));
    return okStatus();
  }

  Result<int> bufferRef(const Plan& p) {
    const Token& t = peek();
    SP_ASSIGN(std::string n, valueName());
    auto b = p.findBuffer(n);
    if (!b) return err(t, "bad-plan", "no buffer " + ir::text::describe(t) + " is declared before this step");
    return *b;
  }

  Status step(Plan& p, const Token& at) {
    const Token& idx = peek();
    SP_ASSIGN(int64_t index, count("the step index"));
    if (index != int64_t(p.steps.size()))
      return err(idx, "bad-plan", "step " + idx.text + " should be step " + std::to_string(p.steps.size()));
    PlanStep s;
    s.line = at.line;
    const Token& k = peek();
    if (k.isIdent("kernel")) s.kind = StepKind::Kernel;
    else if (k.isIdent("collective")) s.kind = StepKind::Collective;
    else if (k.isIdent("send")) s.kind = StepKind::Send;
    else if (k.isIdent("recv")) s.kind = StepKind::Recv;
    else if (k.isIdent("wait")) s.kind = StepKind::Wait;
    else return unexpected(k, "'kernel', 'collective', 'send', 'recv' or 'wait'");
    next();
    SP_ASSIGN(s.stream, stream());
    if (s.kind == StepKind::Wait) {
      SP_TRY(keyword("for"));
      SP_ASSIGN(s.waitFor, stream());
      p.steps.push_back(std::move(s));
      return okStatus();
    }
    if (peek().kind != Tok::String) return unexpected(peek(), "the quoted node name");
    s.name = next().text;
    if (peek().kind == Tok::Value) {
      do {
        SP_ASSIGN(int b, bufferRef(p));
        s.outputs.push_back(b);
      } while (accept(","));
      SP_TRY(expect("="));
    }
    const Token& opTok = peek();
    SP_ASSIGN(s.op, readOp());
    SP_ASSIGN(auto ins, operands());
    for (const auto& n : ins) {
      auto b = p.findBuffer(n);
      if (!b) return err(opTok, "bad-plan", "operand %" + n + " is not a declared buffer");
      s.inputs.push_back(*b);
    }
    if (s.kind == StepKind::Collective) {
      SP_TRY(keyword("comm"));
      SP_ASSIGN(std::string g, name("the communicator's group name"));
      s.attrs["group"] = g;
      SP_ASSIGN(s.members, ranks());
    }
    if (accept("{")) SP_TRY(attrBlock(s.op, s.attrs));
    SP_TRY(requireAttrs(opTok, s.op, s.attrs));
    auto complete = ir::completeAttrs(s.op, s.attrs);
    if (!complete) return err(opTok, complete.error().id, complete.error().message);
    s.attrs = std::move(*complete);
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv) {
      SP_TRY(keyword("pair"));
      const Token& r = peek();
      if (r.kind != Tok::Ident || r.text.size() < 2 || r.text[0] != 'r' || r.text.size() > 8 ||
          r.text.find_first_not_of("0123456789", 1) != std::string::npos)
        return unexpected(r, "the peer rank like r1");
      next();
      s.pairRank = std::stoi(r.text.substr(1));
      SP_TRY(keyword("step"));
      SP_ASSIGN(int64_t ps, count("the peer's step"));
      if (ps > (int64_t(1) << 30)) return err(peek(), "bad-plan", "step index out of range");
      s.pairStep = int(ps);
    }
    SP_ASSIGN(auto loc, sourceLoc());
    if (loc) s.loc = std::move(*loc);
    p.steps.push_back(std::move(s));
    return okStatus();
  }
};

}  // namespace

Result<Plan> parsePlanText(const std::string& text, const std::string& file) {
  SP_ASSIGN(auto toks, ir::text::lex(text, file));
  return PlanParser(std::move(toks), file).plan();
}

}  // namespace sp::codegen
