#include "ir/text_lexer.h"

#include <cctype>
#include <charconv>

namespace sp::ir::text {

namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string byteStr(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& file) : src_(src), file_(file) {}

  Result<std::vector<Token>> run() {
    std::vector<Token> out;
    out.reserve(src_.size() / 5 + 16);  // about one token per 5 bytes of IR text: no regrowth on large programs
    while (true) {
      skipSpaceAndComments();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= src_.size()) {
        t.kind = Tok::Eof;
        out.push_back(std::move(t));
        return out;
      }
      char c = src_[pos_];
      if (isIdentStart(c)) {
        size_t start = pos_;
        while (pos_ < src_.size() && isIdentChar(src_[pos_])) advance();
        t.kind = Tok::Ident;
        t.text = std::string(src_.substr(start, pos_ - start));
      } else if (isDigit(c) || (c == '-' && pos_ + 1 < src_.size() && isDigit(src_[pos_ + 1]))) {
        SP_TRY(number(t));
      } else if (c == '-' && src_.substr(pos_, 4) == "-inf" &&
                 (pos_ + 4 >= src_.size() || !isIdentChar(src_[pos_ + 4]))) {
        for (int i = 0; i < 4; ++i) advance();
        t.kind = Tok::Float;
        t.text = "-inf";
      } else if (c == '"') {
        t.kind = Tok::String;
        SP_ASSIGN(t.text, string(t.line, t.col));
      } else if (c == '%') {
        SP_TRY(valueName(t));
      } else if (c == '.' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '.') {
        advance();
        advance();
        t.kind = Tok::Punct;
        t.text = "..";
      } else if (std::string_view("{}()[]<>,=:;@*").find(c) != std::string_view::npos) {
        advance();
        t.kind = Tok::Punct;
        t.text = std::string(1, c);
      } else {
        return err(line_, col_, "unexpected-char", "unexpected character " + byteStr(c));
      }
      out.push_back(std::move(t));
    }
  }

 private:
  Error err(int line, int col, std::string id, std::string msg) const {
    return makeError(std::move(id), std::move(msg),
                     file_ + ":" + std::to_string(line) + ":" + std::to_string(col));
  }

  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skipSpaceAndComments() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      } else {
        return;
      }
    }
  }

  Status number(Token& t) {
    size_t start = pos_;
    bool isFloat = false;
    if (src_[pos_] == '-') advance();
    while (pos_ < src_.size() && isDigit(src_[pos_])) advance();
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && isDigit(src_[pos_ + 1])) {
      isFloat = true;
      advance();
      while (pos_ < src_.size() && isDigit(src_[pos_])) advance();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && isDigit(src_[k])) {
        isFloat = true;
        while (pos_ < k) advance();
        while (pos_ < src_.size() && isDigit(src_[pos_])) advance();
      }
    }
    // "3x" or "1.5.2" is one malformed token, not two.
    bool malformed = false;
    while (pos_ < src_.size() && (isIdentChar(src_[pos_]) || src_[pos_] == '.') &&
           !(src_[pos_] == '.' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '.')) {
      advance();
      malformed = true;
    }
    t.text = std::string(src_.substr(start, pos_ - start));
    if (malformed) return err(t.line, t.col, "bad-number", "malformed number '" + t.text + "'");
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (!isFloat) {
      auto [p, ec] = std::from_chars(b, e, t.intValue);
      if (ec == std::errc::result_out_of_range)
        return err(t.line, t.col, "int-range",
                   "integer literal " + t.text + " is out of range for 64-bit integers");
      if (ec != std::errc() || p != e)
        return err(t.line, t.col, "bad-number", "malformed number '" + t.text + "'");
      t.kind = Tok::Int;
      return okStatus();
    }
    double d = 0;
    auto [p, ec] = std::from_chars(b, e, d);
    if (ec == std::errc::result_out_of_range)
      return err(t.line, t.col, "float-range", "float literal " + t.text + " is out of range");
    if (ec != std::errc() || p != e)
      return err(t.line, t.col, "bad-number", "malformed number '" + t.text + "'");
    t.kind = Tok::Float;
    return okStatus();
  }

  Result<std::string> string(int line, int col) {
    advance();  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= src_.size() || src_[pos_] == '\n')
        return err(line, col, "unterminated-string", "unterminated string");
      char c = src_[pos_];
      if (c == '"') {
        advance();
        return out;
      }
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      int escLine = line_, escCol = col_;
      advance();
      if (pos_ >= src_.size()) return err(line, col, "unterminated-string", "unterminated string");
      char e = src_[pos_];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          int v = 0;
          for (int i = 0; i < 2; ++i) {
            size_t k = pos_ + 1 + size_t(i);
            char h = k < src_.size() ? src_[k] : '\0';
            int d = isDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0)
              return err(escLine, escCol, "bad-escape", "'\\x' must be followed by two hex digits");
            v = v * 16 + d;
          }
          advance();
          advance();
          out += char(v);
          break;
        }
        default:
          return err(escLine, escCol, "bad-escape", "unknown escape '\\" + std::string(1, e) + "'");
      }
      advance();
    }
  }

  Status valueName(Token& t) {
    advance();  // '%'
    t.kind = Tok::Value;
    if (pos_ < src_.size() && src_[pos_] == '"') {
      SP_ASSIGN(t.text, string(line_, col_));
      if (t.text.empty()) return err(t.line, t.col, "bad-name", "empty value name");
      return okStatus();
    }
    size_t start = pos_;
    size_t end = pos_;
    while (end < src_.size() && isBareNameChar(src_[end])) ++end;
    while (end > start && src_[end - 1] == ':') --end;
    if (end == start) return err(t.line, t.col, "bad-name", "expected a value name after '%'");
    while (pos_ < end) advance();
    t.text = std::string(src_.substr(start, end - start));
    return okStatus();
  }

  std::string_view src_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

Result<std::vector<Token>> lex(std::string_view src, const std::string& file) {
  return Lexer(src, file).run();
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Eof: return "end of file";
    case Tok::Int:
    case Tok::Float: return t.text;
    case Tok::String: {
      std::string q = quote(t.text);
      return "string " + (q.size() > 40 ? q.substr(0, 36) + "...\"" : q);
    }
    case Tok::Value: return "'%" + (isBareValueName(t.text) ? t.text : quote(t.text)) + "'";
    case Tok::Ident:
    case Tok::Punct: return "'" + t.text + "'";
  }
  return "?";
}

bool isBareNameChar(char c) {
  return isIdentChar(c) || c == '.' || c == ':' || c == '/' || c == '-';
}

bool isBareValueName(std::string_view name) {
  if (name.empty() || name.back() == ':') return false;
  for (char c : name)
    if (!isBareNameChar(c)) return false;
  return true;
}

bool isIdentifier(std::string_view name) {
  if (name.empty() || !isIdentStart(name[0])) return false;
  for (char c : name)
    if (!isIdentChar(c)) return false;
  return true;
}

std::string quote(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\\x";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace sp::ir::text
