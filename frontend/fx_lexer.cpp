#include "frontend/fx_lexer.h"

#include <string_view>

namespace sp::frontend::fx {

namespace {

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& path) : t_(text), path_(path) {}

  Result<std::vector<Token>> run() {
    std::vector<Token> out;
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
        if (pos_ < t_.size() && (std::isalpha(uchar(t_[pos_])) || t_[pos_] == '_'))
          return err(line_, col_, "malformed number '" + t_.substr(start, pos_ - start + 1) + "'");
        out.push_back({isFloat ? Token::Kind::Float : Token::Kind::Int,
                       t_.substr(start, pos_ - start), line, col});
      } else if (c == '\'' || c == '"') {
        SP_ASSIGN(std::string s, lexString(c));
        out.push_back({Token::Kind::Str, std::move(s), line, col});
      } else if (c == '-' && peek(1) == '>') {
        advance();
        advance();
        out.push_back({Token::Kind::Punct, "->", line, col});
      } else if (std::string_view("()[]{},:=.;-+*@").find(c) != std::string_view::npos) {
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') {
          if (depth == 0) return err(line, col, std::string("unmatched '") + c + "'");
          --depth;
        }
        advance();
        out.push_back({Token::Kind::Punct, std::string(1, c), line, col});
      } else {
        return err(line, col, std::string("unexpected character '") + c + "'");
      }
    }
    if (depth != 0) return err(line_, col_, "unclosed bracket at end of file");
    out.push_back({Token::Kind::Newline, "", line_, col_});
    out.push_back({Token::Kind::End, "", line_, col_});
    return out;
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
  Error err(int line, int col, const std::string& msg) const {
    return makeError("fx-syntax", msg, path_ + ":" + std::to_string(line) + ":" + std::to_string(col));
  }
  Result<std::string> lexString(char quote) {
    int line = line_, col = col_;
    advance();
    std::string s;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') return err(line, col, "unterminated string");
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
  const std::string& path_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

Result<std::vector<Token>> lex(const std::string& text, const std::string& path) {
  return Lexer(text, path).run();
}

}  // namespace sp::frontend::fx
