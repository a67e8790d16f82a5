#include "frontend/fx_lexer.h"

#include <cctype>
#include <optional>
#include <string_view>

namespace sp::frontend::fx {

namespace {

class Lexer {
 public:
  explicit Lexer(const std::string& text) : t_(text) {}

  std::vector<Token> run() {
    std::vector<Token>& out = out_;
    int depth = 0;
    while (pos_ < t_.size()) {
      char c = t_[pos_];
      int line = line_, col = col_;
      if (c == '\n') {
        if (depth == 0) out.push_back({Token::Kind::Newline, "", line, col});
        advance();
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        advance();
      } else if (c == '\\' && peek(1) == '\n') {
        advance();
        advance();
      } else if (c == '#') {
        size_t end = t_.find('\n', pos_);
        if (end == std::string::npos) end = t_.size();
        std::string text = t_.substr(pos_ + 1, end - pos_ - 1);
        while (pos_ < end) advance();
        if (depth == 0) out.push_back({Token::Kind::Comment, text, line, col});
      } else if (std::isalpha(uchar(c)) || c == '_') {
        size_t start = pos_;
        while (pos_ < t_.size() && (std::isalnum(uchar(t_[pos_])) || t_[pos_] == '_')) advance();
        out.push_back({Token::Kind::Name, t_.substr(start, pos_ - start), line, col});
      } else if (std::isdigit(uchar(c)) || (c == '.' && std::isdigit(uchar(peek(1))))) {
        size_t start = pos_;
        bool isFloat = false;
        while (pos_ < t_.size()) {
          char d = t_[pos_];
          if (std::isdigit(uchar(d)) || d == '_') {
            advance();
          } else if (d == '.') {
            isFloat = true;
            advance();
          } else if ((d == 'e' || d == 'E') &&
                     (std::isdigit(uchar(peek(1))) ||
                      ((peek(1) == '-' || peek(1) == '+') && std::isdigit(uchar(peek(2)))))) {
            isFloat = true;
            advance();
            if (t_[pos_] == '-' || t_[pos_] == '+') advance();
          } else {
            break;
          }
        }
        if (pos_ < t_.size() && (std::isalpha(uchar(t_[pos_])) || t_[pos_] == '_')) {
          error(line_, col_, "malformed number '" + t_.substr(start, pos_ - start + 1) + "'");
          while (pos_ < t_.size() && (std::isalnum(uchar(t_[pos_])) || t_[pos_] == '_')) advance();
          continue;
        }
        out.push_back({isFloat ? Token::Kind::Float : Token::Kind::Int,
                       t_.substr(start, pos_ - start), line, col});
      } else if (c == '\'' || c == '"') {
        if (auto s = lexString(c)) out.push_back({Token::Kind::Str, std::move(*s), line, col});
      } else if (c == '.' && peek(1) == '.' && peek(2) == '.') {
        // `...` (Ellipsis, as in `x[..., 0]`)
        advance();
        advance();
        advance();
        out.push_back({Token::Kind::Punct, "...", line, col});
      } else if (std::string op = twoCharOp(); !op.empty()) {
        advance();
        advance();
        out.push_back({Token::Kind::Punct, op, line, col});
      } else if (std::string_view("()[]{},:=.;-+*@/%<>~&|^").find(c) != std::string_view::npos) {
        advance();
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') {
          if (depth == 0) {
            error(line, col, std::string("unmatched '") + c + "'");
            continue;
          }
          --depth;
        }
        out.push_back({Token::Kind::Punct, std::string(1, c), line, col});
      } else {
        error(line, col, std::string("unexpected character '") + c + "'");
        advance();
      }
    }
    if (depth != 0) error(line_, col_, "unclosed bracket at end of file");
    out.push_back({Token::Kind::Newline, "", line_, col_});
    out.push_back({Token::Kind::End, "", line_, col_});
    return std::move(out_);
  }

 private:
  static unsigned char uchar(char c) { return static_cast<unsigned char>(c); }
  char peek(size_t k) const { return pos_ + k < t_.size() ? t_[pos_ + k] : '\0'; }
  void advance() {
    if (t_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void error(int line, int col, const std::string& msg) { out_.push_back({Token::Kind::Error, msg, line, col}); }
  std::string twoCharOp() const {
    static const char* kOps[] = {"->", "<=", ">=", "==", "!=", "//", "**"};
    for (const char* op : kOps)
      if (t_[pos_] == op[0] && peek(1) == op[1]) return op;
    return "";
  }
  // The string's text, or nullopt after an Error token (the rest of the line
  // is skipped).
  std::optional<std::string> lexString(char quote) {
    int line = line_, col = col_;
    advance();
    std::string s;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') {
        error(line, col, "unterminated string");
        return std::nullopt;
      }
      char c = t_[pos_];
      if (c == quote) {
        advance();
        return s;
      }
      if (c == '\\' && pos_ + 1 < t_.size()) {
        advance();
        char e = t_[pos_];
        s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        advance();
        continue;
      }
      s += c;
      advance();
    }
  }

  const std::string& t_;
  std::vector<Token> out_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

std::vector<Token> lex(const std::string& text) { return Lexer(text).run(); }

}  // namespace sp::frontend::fx
