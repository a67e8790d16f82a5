#include "frontend/fx_parser.h"

#include "frontend/fx_lexer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace sp::frontend::fx {

namespace {

// Expressions nested deeper than this (brackets, calls, subscripts, unary
// signs) are an error at the token, not a stack overflow.
constexpr int kMaxNesting = 200;

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& path) : toks_(std::move(toks)), path_(path) {}

  Result<Module> run() {
    Module m;
    m.path = path_;
    // Skip the preamble up to `def forward(`.
    bool found = false;
    while (cur().kind != Token::Kind::End) {
      if (isName("def") && toks_[pos_ + 1].text == "forward") {
        found = true;
        break;
      }
      ++pos_;
    }
    if (!found) {
      if (auto g = graphPrintLine()) return untypedGraphPrint(*g);
      return err(cur(), "no 'def forward(' in the capture");
    }
    SP_TRY(parseSignature(m));
    ir::SourceLoc src;
    std::string code;
    while (true) {
      const Token& t = cur();
      if (t.kind == Token::Kind::End) return err(t, "forward has no return statement");
      if (t.kind == Token::Kind::Newline) { ++pos_; continue; }
      if (t.kind == Token::Kind::Comment) {
        updateSource(t.text, src, code);
        ++pos_;
        continue;
      }
      if (isName("return")) {
        Stmt s;
        s.kind = Stmt::Kind::Return;
        s.line = t.line;
        s.col = t.col;
        s.src = src;
        ++pos_;
        SP_ASSIGN(s.value, parseExpr());
        SP_TRY(endStatement());
        m.body.push_back(std::move(s));
        return m;
      }
      SP_ASSIGN(std::vector<Stmt> stmts, parseAssign());
      for (auto& s : stmts) {
        s.src = src;
        s.code = code;
        m.body.push_back(std::move(s));
      }
      if (cur().kind == Token::Kind::Punct && cur().text == ";") {
        ++pos_;
        continue;
      }
      SP_TRY(endStatement());
    }
  }

 private:
  // `print(gm.graph)` writes `graph():` then one line per node,
  // `%add : [num_users=1] = call_function[target=...](args = (...), kwargs = {})`,
  // `placeholder[target=...]` for the inputs: the line of `graph():`.
  std::optional<int> graphPrintLine() const {
    for (size_t k = 0; k + 3 < toks_.size(); ++k)
      if (toks_[k].kind == Token::Kind::Name && toks_[k].text == "graph" && toks_[k + 1].text == "(" &&
          toks_[k + 2].text == ")" && toks_[k + 3].text == ":")
        for (size_t j = k + 4; j + 1 < toks_.size(); ++j)
          if (toks_[j].kind == Token::Kind::Name && toks_[j].text == "placeholder" && toks_[j + 1].text == "[")
            return toks_[k].line;
    return std::nullopt;
  }
  Error untypedGraphPrint(int line) const {
    return makeError("fx-untyped",
                     "this is the print(gm.graph) form, which gives no node a tensor type (dtype and shape), and "
                     "the importer checks every node against its declared type; write the graph with "
                     "gm.print_readable(print_output=False) or TORCH_LOGS=graph_code, which type every node "
                     "(docs/fx-import.md, \"Dynamo torch-level graphs\")",
                     path_ + ":" + std::to_string(line));
  }

  const Token& cur() const { return toks_[pos_]; }
  bool isName(const char* n) const { return cur().kind == Token::Kind::Name && cur().text == n; }
  bool isPunct(const char* p) const { return cur().kind == Token::Kind::Punct && cur().text == p; }
  // At an Error token the lexer's message is the error.
  Error err(const Token& t, const std::string& msg) const {
    return makeError("fx-syntax", t.kind == Token::Kind::Error ? t.text : msg,
                     path_ + ":" + std::to_string(t.line) + ":" + std::to_string(t.col));
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Token::Kind::Newline: return "end of line";
      case Token::Kind::End: return "end of file";
      case Token::Kind::Comment: return "comment";
      case Token::Kind::Str: return "string '" + t.text + "'";
      default: return "'" + t.text + "'";
    }
  }
  Status expect(const char* p) {
    if (!isPunct(p)) return err(cur(), std::string("expected '") + p + "', got " + describe(cur()));
    ++pos_;
    return okStatus();
  }
  Status endStatement() {
    if (cur().kind == Token::Kind::Comment) ++pos_;
    if (cur().kind != Token::Kind::Newline && cur().kind != Token::Kind::End)
      return err(cur(), "expected end of statement, got " + describe(cur()));
    return okStatus();
  }

  Status parseSignature(Module& m) {
    pos_ += 2;  // def forward
    SP_TRY(expect("("));
    bool first = true;
    while (!isPunct(")")) {
      if (!first) {
        SP_TRY(expect(","));
        if (isPunct(")")) break;
      }
      first = false;
      if (cur().kind != Token::Kind::Name) return err(cur(), "expected a parameter name, got " + describe(cur()));
      Param p{cur().text, std::nullopt, cur().line, cur().col};
      ++pos_;
      if (isPunct(":")) {
        ++pos_;
        if (cur().kind == Token::Kind::Str) {
          p.annotation = cur().text;
          ++pos_;
        } else {
          SP_ASSIGN(Expr ignored, parseExpr());  // e.g. a Python type name
          (void)ignored;
        }
      }
      if (p.name != "self") m.params.push_back(std::move(p));
    }
    ++pos_;
    if (isPunct("->")) {
      ++pos_;
      SP_ASSIGN(Expr ignored, parseExpr());
      (void)ignored;
    }
    SP_TRY(expect(":"));
    return endStatement();
  }

  // `a: "t" = expr`, a chain `a = b = expr` (one statement per target), a
  // declaration `a: "t"` or an unpacking `a, b, = expr`.
  Result<std::vector<Stmt>> parseAssign() {
    const Token& t = cur();
    if (t.kind != Token::Kind::Name) return err(t, "expected a statement, got " + describe(t));
    Stmt s;
    s.target = t.text;
    s.line = t.line;
    s.col = t.col;
    ++pos_;
    if (const char* op = augmentedOp(); op) return parseAugmented(std::move(s), op);
    if (isPunct("[")) return parseSetItem(std::move(s));
    if (isPunct(",")) {
      s.kind = Stmt::Kind::Unpack;
      s.targets.push_back(s.target);
      s.target.clear();
      while (isPunct(",")) {
        ++pos_;
        if (isPunct("=")) break;
        if (cur().kind != Token::Kind::Name)
          return err(cur(), "expected a name to unpack into, got " + describe(cur()));
        s.targets.push_back(cur().text);
        ++pos_;
      }
      SP_TRY(expect("="));
      SP_ASSIGN(s.value, parseExpr());
      return std::vector<Stmt>{s};
    }
    if (isPunct(":")) {
      ++pos_;
      if (cur().kind != Token::Kind::Str)
        return err(cur(), "expected a quoted type annotation, got " + describe(cur()));
      s.annotation = cur().text;
      ++pos_;
      if (isPunct(";") || cur().kind == Token::Kind::Newline || cur().kind == Token::Kind::Comment ||
          cur().kind == Token::Kind::End) {
        s.kind = Stmt::Kind::Declare;
        return std::vector<Stmt>{s};
      }
    }
    SP_TRY(expect("="));
    SP_ASSIGN(s.value, parseExpr());
    std::vector<Stmt> out{s};
    while (isPunct("=")) {
      if (out.back().value.kind != Expr::Kind::Name || out.back().annotation)
        return err(cur(), "unexpected '=' after " + out.back().value.str());
      Stmt next = out.back();
      next.target = next.value.s;
      next.line = next.value.line;
      next.col = next.value.col;
      ++pos_;
      SP_ASSIGN(Expr v, parseExpr());
      for (auto& st : out) st.value = v;
      next.value = v;
      out.push_back(std::move(next));
    }
    return out;
  }

  // `x OP= y` (FX prints `operator.iadd(x, y)` nodes so): the in-place
  // operator, or nullptr when the statement is not an augmented assignment.
  const char* augmentedOp() const {
    static const std::pair<const char*, const char*> kOps[] = {
        {"+", "operator.iadd"},      {"-", "operator.isub"},   {"*", "operator.imul"},  {"/", "operator.itruediv"},
        {"//", "operator.ifloordiv"}, {"%", "operator.imod"},  {"**", "operator.ipow"}, {"@", "operator.imatmul"},
        {"&", "operator.iand"},      {"|", "operator.ior"},    {"^", "operator.ixor"}};
    if (cur().kind != Token::Kind::Punct) return nullptr;
    const Token& next = toks_[pos_ + 1];
    if (next.kind != Token::Kind::Punct || next.text != "=") return nullptr;
    for (const auto& [tok, name] : kOps)
      if (cur().text == tok) return name;
    return nullptr;
  }

  // The call `op(target, ...)` of an in-place statement on `s.target`, its
  // other arguments to be added.
  static Expr inPlaceCall(const Stmt& s, const char* op) {
    Expr call;
    call.kind = Expr::Kind::Call;
    call.s = op;
    call.line = s.line;
    call.col = s.col;
    Expr recv;
    recv.kind = Expr::Kind::Name;
    recv.s = s.target;
    recv.line = s.line;
    recv.col = s.col;
    call.items.push_back(std::move(recv));
    return call;
  }

  // `x /= y;  itruediv: "f32[8, 2]" = x` (FX's print of an
  // operator.itruediv node: the statement, then the node bound to x) is one
  // statement `itruediv: "f32[8, 2]" = operator.itruediv(x, y)`; without the
  // binding that follows, `x /= y` alone is `x = operator.itruediv(x, y)`.
  // The importer gives the in-place meaning (x names the result from here on).
  Result<std::vector<Stmt>> parseAugmented(Stmt s, const char* op) {
    pos_ += 2;  // OP =
    Expr call = inPlaceCall(s, op);
    SP_ASSIGN(Expr rhs, parseExpr());
    call.items.push_back(std::move(rhs));
    s.value = std::move(call);
    takeBinding(s);
    return std::vector<Stmt>{s};
  }

  // `x[i] = v;  setitem = x` (FX's print of an operator.setitem node, as
  // Dynamo records `x[i] = v`) is the statement
  // `setitem = operator.setitem(x, i, v)`, `x = operator.setitem(x, i, v)`
  // without the binding; the importer gives the in-place meaning.
  Result<std::vector<Stmt>> parseSetItem(Stmt s) {
    ++pos_;  // [
    Expr call = inPlaceCall(s, "operator.setitem");
    SP_ASSIGN(Expr index, parseIndex());
    SP_TRY(expect("]"));
    if (!isPunct("="))
      return err(cur(), "expected '=' after '" + s.target + "[" + index.str() + "]' (subscript assignment), got " +
                            describe(cur()));
    ++pos_;
    SP_ASSIGN(Expr value, parseExpr());
    call.items.push_back(std::move(index));
    call.items.push_back(std::move(value));
    s.value = std::move(call);
    takeBinding(s);
    return std::vector<Stmt>{s};
  }

  // `;  name[: "type"] = x` after an in-place statement on x names its node:
  // the statement takes that target (and type).
  void takeBinding(Stmt& s) {
    auto at = [&](size_t k) -> const Token& { return toks_[std::min(pos_ + k, toks_.size() - 1)]; };
    auto punct = [&](size_t k, const char* p) { return at(k).kind == Token::Kind::Punct && at(k).text == p; };
    if (punct(0, ";") && at(1).kind == Token::Kind::Name) {
      size_t k = 2;
      std::optional<std::string> type;
      if (punct(2, ":") && at(3).kind == Token::Kind::Str) {
        type = at(3).text;
        k = 4;
      }
      const Token& end = at(k + 2);
      bool ends = end.kind == Token::Kind::Newline || end.kind == Token::Kind::Comment ||
                  end.kind == Token::Kind::End || (end.kind == Token::Kind::Punct && end.text == ";");
      if (punct(k, "=") && at(k + 1).kind == Token::Kind::Name && at(k + 1).text == s.target && ends) {
        s.target = at(1).text;
        s.line = at(1).line;
        s.col = at(1).col;
        s.annotation = std::move(type);
        pos_ += k + 2;
      }
    }
  }

  struct Nest {
    explicit Nest(int& d) : d_(d) { ++d_; }
    ~Nest() { --d_; }
    int& d_;
  };
  Status tooDeep(const Token& t) const {
    if (depth_ <= kMaxNesting) return okStatus();
    return err(t, "expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }

  // Infix operators by precedence level (lowest first), as operator.* calls.
  static const char* binaryOp(const std::string& p, int level) {
    static const std::vector<std::vector<std::pair<const char*, const char*>>> kLevels = {
        {{"<", "operator.lt"}, {">", "operator.gt"}, {"<=", "operator.le"}, {">=", "operator.ge"},
         {"==", "operator.eq"}, {"!=", "operator.ne"}},
        {{"|", "operator.or_"}},
        {{"^", "operator.xor"}},
        {{"&", "operator.and_"}},
        {{"+", "operator.add"}, {"-", "operator.sub"}},
        {{"*", "operator.mul"}, {"/", "operator.truediv"}, {"//", "operator.floordiv"}, {"%", "operator.mod"},
         {"@", "operator.matmul"}},
        {{"**", "operator.pow"}},
    };
    for (const auto& [tok, name] : kLevels[size_t(level)])
      if (p == tok) return name;
    return nullptr;
  }

  Result<Expr> parseExpr() { return parseBinary(0); }

  static constexpr int kPowLevel = 6;  // the last level of binaryOp, `**`

  Result<Expr> parseBinary(int level) {
    if (level == kPowLevel + 1) return parseUnary();
    SP_ASSIGN(Expr lhs, parseBinary(level + 1));
    while (cur().kind == Token::Kind::Punct) {
      const char* name = binaryOp(cur().text, level);
      if (!name) break;
      ++pos_;
      // ** is right-associative.
      SP_ASSIGN(Expr rhs, parseBinary(level == kPowLevel ? level : level + 1));
      Expr call;
      call.kind = Expr::Kind::Call;
      call.s = name;
      call.line = lhs.line;
      call.col = lhs.col;
      call.items.push_back(std::move(lhs));
      call.items.push_back(std::move(rhs));
      lhs = std::move(call);
    }
    return lhs;
  }

  // Unary minus/plus: folded into a number, else operator.neg / operator.pos;
  // `~x` is operator.invert.
  Result<Expr> parseUnary() {
    const Token& t = cur();
    if (isPunct("~")) {
      Nest nest(depth_);
      SP_TRY(tooDeep(t));
      ++pos_;
      SP_ASSIGN(Expr inner, parseUnary());
      Expr call;
      call.kind = Expr::Kind::Call;
      call.s = "operator.invert";
      call.line = t.line;
      call.col = t.col;
      call.items.push_back(std::move(inner));
      return call;
    }
    if (!isPunct("-") && !isPunct("+")) return parsePrimary();
    Nest nest(depth_);
    SP_TRY(tooDeep(t));
    bool neg = isPunct("-");
    ++pos_;
    SP_ASSIGN(Expr inner, parseUnary());
    if (inner.kind == Expr::Kind::Int && neg && inner.i == std::numeric_limits<int64_t>::min()) {
      return err(t, "integer literal out of range");
    } else if (inner.kind == Expr::Kind::Int) {
      inner.i = neg ? -inner.i : inner.i;
    } else if (inner.kind == Expr::Kind::Float) {
      inner.f = neg ? -inner.f : inner.f;
    } else {
      Expr call;
      call.kind = Expr::Kind::Call;
      call.s = neg ? "operator.neg" : "operator.pos";
      call.items.push_back(std::move(inner));
      inner = std::move(call);
    }
    inner.line = t.line;
    inner.col = t.col;
    return inner;
  }

  Result<Expr> parsePrimary() {
    const Token& t = cur();
    Nest nest(depth_);
    SP_TRY(tooDeep(t));
    Expr e;
    e.line = t.line;
    e.col = t.col;
    if (t.kind == Token::Kind::Int) {
      e.kind = Expr::Kind::Int;
      std::string digits;
      for (char c : t.text)
        if (c != '_') digits += c;
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (ec != std::errc() || v > uint64_t(std::numeric_limits<int64_t>::max()))
        return err(t, "integer " + t.text + " does not fit in 64 bits");
      e.i = int64_t(v);
      ++pos_;
      return postfix(std::move(e));
    }
    if (t.kind == Token::Kind::Float) {
      e.kind = Expr::Kind::Float;
      e.f = std::strtod(t.text.c_str(), nullptr);
      ++pos_;
      return postfix(std::move(e));
    }
    if (t.kind == Token::Kind::Str) {
      e.kind = Expr::Kind::Str;
      e.s = t.text;
      ++pos_;
      return postfix(std::move(e));
    }
    if (isPunct("[") || isPunct("(")) {
      bool list = isPunct("[");
      const char* close = list ? "]" : ")";
      ++pos_;
      e.kind = list ? Expr::Kind::List : Expr::Kind::Tuple;
      bool trailingComma = false;
      while (!isPunct(close)) {
        SP_ASSIGN(Expr item, parseExpr());
        e.items.push_back(std::move(item));
        trailingComma = false;
        if (isPunct(",")) {
          ++pos_;
          trailingComma = true;
        } else if (!isPunct(close)) {
          return err(cur(), std::string("expected ',' or '") + close + "', got " + describe(cur()));
        }
      }
      ++pos_;
      if (!list && e.items.size() == 1 && !trailingComma) return postfix(std::move(e.items[0]));
      return postfix(std::move(e));
    }
    if (isPunct("...")) {
      e.kind = Expr::Kind::Name;
      e.s = "Ellipsis";
      ++pos_;
      return postfix(std::move(e));
    }
    if (t.kind == Token::Kind::Name) {
      std::string name = t.text;
      ++pos_;
      while (isPunct(".") && toks_[pos_ + 1].kind == Token::Kind::Name) {
        name += "." + toks_[pos_ + 1].text;
        pos_ += 2;
      }
      if (name == "None") {
        e.kind = Expr::Kind::None;
      } else if (name == "True" || name == "False") {
        e.kind = Expr::Kind::Bool;
        e.b = name == "True";
      } else if (name == "inf" || name == "math.inf") {
        e.kind = Expr::Kind::Float;
        e.f = std::numeric_limits<double>::infinity();
      } else if (name == "nan" || name == "math.nan") {
        e.kind = Expr::Kind::Float;
        e.f = std::numeric_limits<double>::quiet_NaN();
      } else {
        e.kind = name.find('.') == std::string::npos ? Expr::Kind::Name : Expr::Kind::Dotted;
        e.s = std::move(name);
      }
      return postfix(std::move(e));
    }
    return err(t, "expected an expression, got " + describe(t));
  }

  // The index of a subscript, between its brackets: Python's form
  // (`x[:, 0]`, `x[1:3]`, `x[::2, None, ...]`: items separated by commas,
  // a tuple when there is a comma) or FX's (`x[(slice(None, None, None),
  // 0)]`: one expression). `a:b:c` is read as the call `slice(a, b, c)`,
  // an omitted bound None, exactly what FX prints for it.
  Result<Expr> parseIndex() {
    const Token& first = cur();
    std::vector<Expr> items;
    bool tuple = false;
    while (true) {
      SP_ASSIGN(Expr item, parseIndexItem());
      items.push_back(std::move(item));
      if (!isPunct(",")) break;
      ++pos_;
      tuple = true;
      if (isPunct("]")) break;
    }
    if (!tuple) return std::move(items[0]);
    Expr t;
    t.kind = Expr::Kind::Tuple;
    t.items = std::move(items);
    t.line = first.line;
    t.col = first.col;
    return t;
  }

  // One item of a subscript index: an expression, or a slice `[a]:[b][:[c]]`.
  Result<Expr> parseIndexItem() {
    const Token& first = cur();
    auto ends = [&] { return isPunct(":") || isPunct(",") || isPunct("]"); };
    Expr bound[3];
    if (!isPunct(":")) {
      SP_ASSIGN(bound[0], parseExpr());
      if (!isPunct(":")) return std::move(bound[0]);
    }
    ++pos_;  // the first ':'
    if (!ends()) { SP_ASSIGN(bound[1], parseExpr()); }
    if (isPunct(":")) {
      ++pos_;
      if (!isPunct(",") && !isPunct("]")) { SP_ASSIGN(bound[2], parseExpr()); }
    }
    Expr call;
    call.kind = Expr::Kind::Call;
    call.s = "slice";
    call.line = first.line;
    call.col = first.col;
    for (auto& b : bound) call.items.push_back(std::move(b));
    return call;
  }

  Result<Expr> postfix(Expr e) {
    for (int links = 0;; ++links) {
      // Each call or subscript nests the expression one level deeper.
      if (links > kMaxNesting) return err(cur(), "expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
      if (isPunct("(")) {
        if (e.kind != Expr::Kind::Name && e.kind != Expr::Kind::Dotted)
          return err(cur(), "cannot call " + e.str());
        Expr call;
        call.kind = Expr::Kind::Call;
        call.s = e.s;
        call.line = e.line;
        call.col = e.col;
        ++pos_;
        bool first = true;
        while (!isPunct(")")) {
          if (!first) {
            SP_TRY(expect(","));
            if (isPunct(")")) break;
          }
          first = false;
          if (cur().kind == Token::Kind::Name && toks_[pos_ + 1].kind == Token::Kind::Punct &&
              toks_[pos_ + 1].text == "=") {
            std::string key = cur().text;
            pos_ += 2;
            SP_ASSIGN(Expr v, parseExpr());
            call.kwargs.emplace_back(std::move(key), std::move(v));
          } else {
            if (!call.kwargs.empty()) return err(cur(), "positional argument after keyword argument");
            SP_ASSIGN(Expr v, parseExpr());
            call.items.push_back(std::move(v));
          }
        }
        ++pos_;
        e = std::move(call);
      } else if (isPunct("[")) {
        Expr sub;
        sub.kind = Expr::Kind::Subscript;
        sub.line = e.line;
        sub.col = e.col;
        ++pos_;
        SP_ASSIGN(Expr index, parseIndex());
        SP_TRY(expect("]"));
        sub.items.push_back(std::move(e));
        sub.items.push_back(std::move(index));
        e = std::move(sub);
      } else {
        return e;
      }
    }
  }

  // `# File: /path/x.py:456 in fn, code: text` sets the location of the nodes
  // that follow; `# No stacktrace found for following nodes` clears it.
  static void updateSource(const std::string& comment, ir::SourceLoc& src, std::string& code) {
    size_t f = comment.find("File: ");
    if (comment.find("No stacktrace found") != std::string::npos) {
      src = {};
      code.clear();
      return;
    }
    if (f == std::string::npos) return;
    std::string rest = comment.substr(f + 6);
    std::string head = rest;
    code.clear();
    if (size_t c = rest.find(", code: "); c != std::string::npos) {
      head = rest.substr(0, c);
      code = rest.substr(c + 8);
      while (!code.empty() && (code.back() == '\r' || code.back() == ' ')) code.pop_back();
    }
    size_t in = head.rfind(" in ");
    std::string where = in == std::string::npos ? head : head.substr(0, in);
    std::string fn = in == std::string::npos ? "" : head.substr(in + 4);
    size_t colon = where.rfind(':');
    ir::SourceLoc loc;
    loc.file = where;
    if (colon != std::string::npos) {
      int line = 0;
      auto [p, ec] = std::from_chars(where.data() + colon + 1, where.data() + where.size(), line);
      if (ec == std::errc() && p == where.data() + where.size()) {
        loc.file = where.substr(0, colon);
        loc.line = line;
      }
    }
    loc.detail = fn;
    src = std::move(loc);
  }

  std::vector<Token> toks_;
  const std::string& path_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string Expr::str() const {
  auto join = [](const std::vector<Expr>& xs) {
    std::string out;
    for (size_t k = 0; k < xs.size(); ++k) out += (k ? ", " : "") + xs[k].str();
    return out;
  };
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return b ? "True" : "False";
    case Kind::Int: return std::to_string(i);
    case Kind::Float: {
      if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
      if (std::isnan(f)) return "nan";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", f);
      return buf;
    }
    case Kind::Str: return "'" + s + "'";
    case Kind::Name:
    case Kind::Dotted: return s;
    case Kind::List: return "[" + join(items) + "]";
    case Kind::Tuple: return "(" + join(items) + (items.size() == 1 ? ",)" : ")");
    case Kind::Call: {
      std::string out = s + "(" + join(items);
      for (size_t k = 0; k < kwargs.size(); ++k)
        out += (k || !items.empty() ? ", " : "") + kwargs[k].first + " = " + kwargs[k].second.str();
      return out + ")";
    }
    case Kind::Subscript: return items[0].str() + "[" + items[1].str() + "]";
  }
  return "?";
}

// Graphs copied from TORCH_LOGS output carry ANSI color codes (the logs
// print them with print_readable(colored=True)): a select-graphic-rendition
// sequence, ESC [ digits and ';' m, is never Python, and is dropped.
static std::string withoutColorCodes(const std::string& text) {
  if (text.find('\x1b') == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      size_t j = i + 2;
      while (j < text.size() && (std::isdigit(uint8_t(text[j])) || text[j] == ';')) ++j;
      if (j < text.size() && text[j] == 'm') {
        i = j;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

namespace {

std::string trimmed(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The quoted value of `key='...'` in s from `from` on ("" when absent or None).
std::string quotedAfter(const std::string& s, const std::string& key, size_t from = 0) {
  size_t k = s.find(key + "='", from);
  if (k == std::string::npos) return "";
  size_t b = k + key.size() + 2, e = s.find('\'', b);
  return e == std::string::npos ? "" : s.substr(b, e - b);
}

bool isIdent(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool isKind(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)) || c == '_'; });
}

// The `Graph signature:` section of print(exported_program), in either form
// torch prints: one `name: KIND [target='t'] [persistent=...]` line per
// entry under `# inputs` and `# outputs` (torch 2.5 on), or one
// `ExportGraphSignature(input_specs=[InputSpec(kind=<InputKind.KIND: n>,
// arg=TensorArgument(name='x'), target='t', ...), ...], output_specs=[...])`.
// Nothing when the text has no such section; an error naming the line when
// it has one that reads otherwise.
Result<std::optional<ExportSignature>> readExportSignature(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string line;
  int no = 0;
  std::optional<ExportSignature> sig;
  std::vector<SignatureEntry>* into = nullptr;
  auto bad = [&](const std::string& why) {
    return makeError("fx-syntax", "graph signature: " + why, path + ":" + std::to_string(no));
  };
  while (std::getline(in, line)) {
    ++no;
    const std::string t = trimmed(line);
    if (!sig) {
      if (t.rfind("Graph signature:", 0) != 0) continue;
      sig = ExportSignature{{}, {}, no};
      std::string rest = trimmed(t.substr(16));
      if (rest.empty()) continue;
      // The one-line form.
      for (const auto& [spec, list] : {std::make_pair(std::string("InputSpec("), &sig->inputs),
                                       std::make_pair(std::string("OutputSpec("), &sig->outputs)})
        for (size_t at = rest.find(spec); at != std::string::npos; at = rest.find(spec, at + 1)) {
          size_t end = rest.find("InputSpec(", at + 1);
          end = std::min(end, rest.find("OutputSpec(", at + 1));
          const std::string one = rest.substr(at, end == std::string::npos ? std::string::npos : end - at);
          size_t dot = one.find("Kind."), colon = one.find(':', dot);
          if (dot == std::string::npos || colon == std::string::npos) return bad("no kind in '" + one + "'");
          SignatureEntry e{quotedAfter(one, "name"), one.substr(dot + 5, colon - dot - 5), quotedAfter(one, "target"), no};
          if (!isKind(e.kind)) return bad("unknown kind in '" + one + "'");
          list->push_back(std::move(e));  // an argument with no name (a constant) is kept nameless
        }
      break;
    }
    if (t.rfind("Range constraints:", 0) == 0) break;
    if (t == "# inputs") { into = &sig->inputs; continue; }
    if (t == "# outputs") { into = &sig->outputs; continue; }
    if (t.empty()) continue;
    size_t colon = t.find(':');
    if (!into || colon == std::string::npos) return bad("expected '# inputs', '# outputs' or 'name: KIND', got '" + t + "'");
    std::string name = trimmed(t.substr(0, colon)), rest = trimmed(t.substr(colon + 1));
    std::string kind = rest.substr(0, rest.find(' '));
    if (!isIdent(name) || !isKind(kind)) return bad("expected 'name: KIND', got '" + t + "'");
    into->push_back({name, kind, quotedAfter(rest, "target"), no});
  }
  return sig;
}

}  // namespace

Result<Module> parseModule(const std::string& text, const std::string& path) {
  SP_ASSIGN(Module m, Parser(lex(withoutColorCodes(text)), path).run());
  SP_ASSIGN(m.signature, readExportSignature(withoutColorCodes(text), path));
  return m;
}

std::optional<ir::DType> dtypeFromTorchName(const std::string& name) {
  using ir::DType;
  static const std::pair<const char*, DType> kNames[] = {
      {"float32", DType::F32}, {"float", DType::F32},   {"f32", DType::F32},
      {"float64", DType::F64}, {"double", DType::F64},  {"f64", DType::F64},
      {"float16", DType::F16}, {"half", DType::F16},    {"f16", DType::F16},
      {"bfloat16", DType::BF16}, {"bf16", DType::BF16},
      {"int64", DType::I64},   {"long", DType::I64},    {"i64", DType::I64},
      {"int32", DType::I32},   {"int", DType::I32},     {"i32", DType::I32},
      {"int16", DType::I16},   {"short", DType::I16},   {"i16", DType::I16},
      {"int8", DType::I8},     {"i8", DType::I8},
      {"uint8", DType::U8},    {"u8", DType::U8},
      {"bool", DType::Bool},   {"b8", DType::Bool},
  };
  std::string n = name.rfind("torch.", 0) == 0 ? name.substr(6) : name;
  for (const auto& [k, t] : kNames)
    if (n == k) return t;
  return std::nullopt;
}

// torch 2.3+ prints strides and the device after the dims where asked
// (`print_readable(include_stride=True, include_device=True)`, TORCH_LOGS
// graphs): "f32[4, 8][8, 1]cuda:0". A stride list must have one entry per
// dim (integers or symbolic expressions); the device is a name with an
// optional ":index". Values do not depend on either: both are checked and
// dropped. Returns the "dtype[dims]" part, or an error.
static Result<std::string> stripStridesAndDevice(const std::string& text) {
  size_t close = text.find(']');
  if (close == std::string::npos || close + 1 == text.size()) return text;
  std::string head = text.substr(0, close + 1), rest = text.substr(close + 1);
  auto bad = [&](const std::string& why) {
    return makeError("fx-type", "type annotation '" + text + "': " + why);
  };
  auto count = [](const std::string& list) {  // entries of "[a, b, c]" (0 for "[]")
    std::string inner = list.substr(1, list.size() - 2);
    if (inner.find_first_not_of(' ') == std::string::npos) return size_t(0);
    return size_t(std::count(inner.begin(), inner.end(), ',')) + 1;
  };
  if (rest[0] == '[') {
    size_t end = rest.find(']');
    if (end == std::string::npos) return bad("unclosed stride list");
    std::string strides = rest.substr(0, end + 1);
    if (strides.find('[', 1) != std::string::npos) return bad("nested brackets in the stride list");
    if (count(strides) != count(head.substr(head.find('[')))) return bad("the stride list does not have one entry per dim");
    rest = rest.substr(end + 1);
  }
  if (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string name = rest.substr(0, colon), index = colon == std::string::npos ? "" : rest.substr(colon + 1);
    bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return std::islower(uint8_t(c)) || c == '_'; });
    ok = ok && (colon == std::string::npos || (!index.empty() && std::all_of(index.begin(), index.end(), [](char c) {
                                                  return std::isdigit(uint8_t(c));
                                                })));
    if (!ok) return bad("expected a device such as 'cpu' or 'cuda:0' after the dims, got '" + rest + "'");
  }
  return head;
}

Result<ir::TensorType> parseTensorAnnotation(const std::string& full) {
  SP_ASSIGN(std::string text, stripStridesAndDevice(full));
  size_t open = text.find('[');
  if (open == std::string::npos || text.empty() || text.back() != ']')
    return makeError("fx-type", "type annotation '" + text + "' is not dtype[dims]");
  std::string dt = text.substr(0, open);
  auto dtype = dtypeFromTorchName(dt);
  if (!dtype || dt.find('.') != std::string::npos)
    return makeError("fx-type", "unsupported dtype '" + dt + "' in type annotation '" + text + "'");
  ir::TensorType t;
  t.dtype = *dtype;
  std::string inner = text.substr(open + 1, text.size() - open - 2);
  size_t start = 0;
  while (start < inner.size()) {
    size_t comma = inner.find(',', start);
    if (comma == std::string::npos) comma = inner.size();
    std::string part = inner.substr(start, comma - start);
    std::string trimmed;
    for (char c : part)
      if (c != ' ') trimmed += c;
    auto d = ir::parseDim(trimmed);
    if (!d) return makeError("fx-type", "bad dim '" + trimmed + "' in type annotation '" + text + "'");
    t.shape.push_back(*d);
    start = comma + 1;
  }
  return t;
}

}  // namespace sp::frontend::fx
