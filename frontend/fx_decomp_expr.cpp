// Evaluator of the `${...}` expressions in decomposition files.
#include "frontend/fx_decomp_expr.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstdio>

namespace sp::frontend::fx {

namespace {

Error exprError(const std::string& msg) { return makeError("fx-decomp-expr", msg); }

// Nesting of parentheses, brackets and unary minus: deeper is an error, not
// a stack overflow.
constexpr int kMaxDepth = 200;

Error overflow(int64_t x, char op, int64_t y) {
  return exprError("integer overflow in " + std::to_string(x) + " " + op + " " + std::to_string(y));
}

// x op y for + - *, or the overflow error.
Result<int64_t> checked(int64_t x, char op, int64_t y) {
  int64_t out = 0;
  bool bad = op == '+' ? __builtin_add_overflow(x, y, &out)
             : op == '-' ? __builtin_sub_overflow(x, y, &out)
                         : __builtin_mul_overflow(x, y, &out);
  if (bad) return overflow(x, op, y);
  return out;
}

class Parser {
 public:
  Parser(const std::string& t, const DecompEnv& env) : s_(t), env_(env) {}

  Result<DecompValue> parse() {
    SP_ASSIGN(DecompValue v, cmp());
    skip();
    if (p_ != s_.size()) return exprError("unexpected '" + s_.substr(p_) + "' in '" + s_ + "'");
    return v;
  }

 private:
  void skip() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  bool eat(const std::string& tok) {
    skip();
    if (s_.compare(p_, tok.size(), tok) != 0) return false;
    p_ += tok.size();
    return true;
  }

  static Result<int64_t> asInt(const DecompValue& v, const std::string& what) {
    if (auto* i = std::get_if<int64_t>(&v)) return *i;
    return exprError(what + " needs an integer");
  }
  static Result<double> asNum(const DecompValue& v, const std::string& what) {
    if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
    if (auto* d = std::get_if<double>(&v)) return *d;
    return exprError(what + " needs a number");
  }

  Result<DecompValue> cmp() {
    SP_ASSIGN(DecompValue a, add());
    for (const char* op : {"==", "!="}) {
      if (!eat(op)) continue;
      SP_ASSIGN(DecompValue b, add());
      bool eq = renderDecompValue(a) == renderDecompValue(b);
      return DecompValue(int64_t(op[0] == '=' ? eq : !eq));
    }
    return a;
  }

  Result<DecompValue> add() {
    SP_ASSIGN(DecompValue a, mul());
    while (true) {
      char op = eat("+") ? '+' : eat("-") ? '-' : 0;
      if (!op) return a;
      SP_ASSIGN(DecompValue b, mul());
      SP_ASSIGN(a, arith(a, b, op));
    }
  }

  Result<DecompValue> mul() {
    SP_ASSIGN(DecompValue a, unary());
    while (true) {
      char op = eat("*") ? '*' : eat("/") ? '/' : eat("%") ? '%' : 0;
      if (!op) return a;
      SP_ASSIGN(DecompValue b, unary());
      SP_ASSIGN(a, arith(a, b, op));
    }
  }

  static Result<DecompValue> arith(const DecompValue& a, const DecompValue& b, char op) {
    std::string what = std::string("'") + op + "'";
    if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
      int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
      if ((op == '/' || op == '%') && y == 0) return exprError("division by zero");
      if ((op == '/' || op == '%') && y == -1) {
        if (op == '%') return DecompValue(int64_t(0));
        if (x == INT64_MIN) return overflow(x, op, y);  // the one quotient that does not fit
      }
      if (op == '/' && x % y != 0)
        return exprError(std::to_string(x) + " is not divisible by " + std::to_string(y));
      switch (op) {
        case '+':
        case '-':
        case '*': {
          SP_ASSIGN(int64_t v, checked(x, op, y));
          return DecompValue(v);
        }
        case '/': return DecompValue(x / y);
        default: return DecompValue(x % y);
      }
    }
    SP_ASSIGN(double x, asNum(a, what));
    SP_ASSIGN(double y, asNum(b, what));
    switch (op) {
      case '+': return DecompValue(x + y);
      case '-': return DecompValue(x - y);
      case '*': return DecompValue(x * y);
      case '/': return DecompValue(x / y);
      default: return exprError("'%' needs integers");
    }
  }

  // Counts one level of nesting while alive.
  struct Nest {
    explicit Nest(int& d) : d_(d) { ++d_; }
    ~Nest() { --d_; }
    int& d_;
  };
  Status deeper() const {
    if (depth_ > kMaxDepth)
      return exprError("expression nested deeper than " + std::to_string(kMaxDepth) + " levels in '" +
                       s_.substr(0, 40) + (s_.size() > 40 ? "..." : "") + "'");
    return okStatus();
  }

  Result<DecompValue> unary() {
    if (eat("-")) {
      Nest n(depth_);
      SP_TRY(deeper());
      SP_ASSIGN(DecompValue v, unary());
      return arith(DecompValue(int64_t(0)), v, '-');
    }
    return primary();
  }

  Result<DecompValue> primary() {
    skip();
    Nest nest(depth_);
    SP_TRY(deeper());
    if (eat("(")) {
      SP_ASSIGN(DecompValue v, cmp());
      if (!eat(")")) return exprError("missing ')' in '" + s_ + "'");
      return v;
    }
    if (eat("[")) {
      std::vector<int64_t> items;
      if (eat("]")) return DecompValue(items);
      do {
        SP_ASSIGN(DecompValue v, cmp());
        SP_ASSIGN(int64_t i, asInt(v, "a list item"));
        items.push_back(i);
      } while (eat(","));
      if (!eat("]")) return exprError("missing ']' in '" + s_ + "'");
      return DecompValue(items);
    }
    size_t b = p_;
    if (p_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p_])) || s_[p_] == '.')) {
      while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '.' ||
                                ((s_[p_] == '-' || s_[p_] == '+') && (s_[p_ - 1] == 'e' || s_[p_ - 1] == 'E'))))
        ++p_;
      std::string t = s_.substr(b, p_ - b);
      if (t.find_first_of(".eE") == std::string::npos) {
        int64_t i = 0;
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), i);
        if (ec == std::errc::result_out_of_range) return exprError("integer " + t + " is out of range (64 bits)");
        if (ec != std::errc() || end != t.data() + t.size()) return exprError("bad number '" + t + "'");
        return DecompValue(i);
      }
      char* end = nullptr;
      double d = std::strtod(t.c_str(), &end);
      if (*end) return exprError("bad number '" + t + "'");
      return DecompValue(d);
    }
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_')) ++p_;
    std::string name = s_.substr(b, p_ - b);
    if (name.empty()) return exprError("expected a value in '" + s_ + "'");
    if (eat("(")) return call(name);
    if (name == "inf") return DecompValue(INFINITY);
    if (name == "None") return DecompValue(std::string("None"));
    auto it = env_.scalars.find(name);
    if (it == env_.scalars.end()) return exprError("unknown argument '" + name + "'");
    return it->second;
  }

  Result<TRef> tensorArg() {
    skip();
    size_t b = p_;
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_')) ++p_;
    std::string name = s_.substr(b, p_ - b);
    auto it = env_.tensors.find(name);
    if (it == env_.tensors.end()) return exprError("'" + name + "' is not a tensor argument");
    return it->second;
  }

  Result<int64_t> concreteDim(const TRef& t, int64_t d) {
    int64_t r = t.rank();
    if (d < -r || d >= r) return exprError("dim " + std::to_string(d) + " is out of range for " + t.type.str());
    const ir::Dim& dim = t.type.shape[size_t(d < 0 ? d + r : d)];
    if (!dim.isConcrete()) return exprError("dim " + std::to_string(d) + " of " + t.type.str() + " is symbolic");
    return dim.value();
  }

  Result<DecompValue> call(const std::string& fn) {
    DecompValue v;
    if (fn == "len" || fn == "prod") {
      SP_ASSIGN(DecompValue l, cmp());
      auto* xs = std::get_if<std::vector<int64_t>>(&l);
      if (!xs) return exprError(fn + "() needs a list");
      int64_t p = 1;
      for (int64_t x : *xs) {
        if (fn != "prod") break;
        SP_ASSIGN(p, checked(p, '*', x));
      }
      v = fn == "len" ? int64_t(xs->size()) : p;
    } else if (fn == "group") {
      SP_ASSIGN(DecompValue g, cmp());
      auto* name = std::get_if<std::string>(&g);
      if (!name || !env_.group) return exprError("group() needs a c10d group name");
      SP_ASSIGN(std::string ir, env_.group(*name));
      v = "\"" + ir + "\"";
    } else if (fn == "rank" || fn == "shape" || fn == "numel" || fn == "dtype" || fn == "dim" ||
               fn == "trailing") {
      SP_ASSIGN(TRef t, tensorArg());
      if (fn == "rank") v = t.rank();
      if (fn == "dtype") v = std::string(ir::dtypeName(t.dtype()));
      if (fn == "shape" || fn == "numel") {
        std::vector<int64_t> dims;
        int64_t n = 1;
        for (int64_t d = 0; d < t.rank(); ++d) {
          SP_ASSIGN(int64_t k, concreteDim(t, d));
          dims.push_back(k);
          SP_ASSIGN(n, checked(n, '*', k));
        }
        v = fn == "shape" ? DecompValue(dims) : DecompValue(n);
      }
      if (fn == "dim" || fn == "trailing") {
        if (!eat(",")) return exprError(fn + "() needs two arguments");
        SP_ASSIGN(DecompValue a, cmp());
        SP_ASSIGN(int64_t k, asInt(a, fn + "()"));
        if (fn == "dim") {
          SP_ASSIGN(int64_t n, concreteDim(t, k));
          v = n;
        } else {
          if (k < 0 || k > t.rank()) return exprError("trailing(" + t.type.str() + ", " + std::to_string(k) + ")");
          std::vector<int64_t> axes;
          for (int64_t d = t.rank() - k; d < t.rank(); ++d) axes.push_back(d);
          v = axes;
        }
      }
    } else {
      return exprError("unknown function '" + fn + "'");
    }
    if (!eat(")")) return exprError("missing ')' after " + fn + "(");
    return v;
  }

  const std::string& s_;
  const DecompEnv& env_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<DecompValue> evalDecompExpr(const std::string& text, const DecompEnv& env) {
  return Parser(text, env).parse();
}

std::string renderDecompValue(const DecompValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return "nan";
    if (std::isinf(*d)) return *d > 0 ? "inf" : "-inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
  }
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    std::string s = "[";
    for (size_t k = 0; k < l->size(); ++k) s += (k ? ", " : "") + std::to_string((*l)[k]);
    return s + "]";
  }
  return std::get<std::string>(v);
}

Result<DecompValue> decompValueOf(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Int: return DecompValue(e.i);
    case Expr::Kind::Bool: return DecompValue(int64_t(e.b));
    case Expr::Kind::Float: return DecompValue(e.f);
    case Expr::Kind::Str: return DecompValue(e.s);
    case Expr::Kind::None: return DecompValue(std::string("None"));
    case Expr::Kind::Dotted:
    case Expr::Kind::Name:
      if (auto t = dtypeFromTorchName(e.s)) return DecompValue(std::string(ir::dtypeName(*t)));
      // An enum token such as tex.DType.kFloat32, compared as text; a bare
      // name is an FX value, not a Python constant.
      if (e.kind == Expr::Kind::Dotted) return DecompValue(e.s);
      break;
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::vector<int64_t> xs;
      for (const auto& it : e.items) {
        if (it.kind != Expr::Kind::Int) return exprError("list " + e.str() + " must hold integers");
        xs.push_back(it.i);
      }
      return DecompValue(xs);
    }
    default: break;
  }
  return exprError("argument " + e.str() + " is not a number, int list, string or dtype");
}

}  // namespace sp::frontend::fx
