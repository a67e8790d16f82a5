#include "rewrite/relation/lexer.h"

#include <cstdlib>

namespace sp::rewrite {

Result<std::vector<Token>> lexLine(const std::string& line, const std::string& file, int lineNo) {
  std::vector<Token> out;
  size_t i = 0, n = line.size();
  auto err = [&](size_t at, const std::string& msg) {
    return makeError("parse-error", msg, file + ":" + std::to_string(lineNo) + ":" + std::to_string(at + 1));
  };
  while (i < n) {
    char c = line[i];
    if (c == '#') break;
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    Token t;
    t.col = int(i) + 1;
    auto identChar = [&](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '?') {
      size_t j = i + (c == '?' ? 1 : 0);
      size_t s = j;
      while (j < n && identChar(line[j])) ++j;
      if (j == s) return err(i, "expected a name after '?'");
      t.kind = c == '?' ? Token::Kind::Var : Token::Kind::Ident;
      t.text = line.substr(s, j - s);
      i = j;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < n && line[j] != '"') {
        if (line[j] == '\\' && j + 1 < n) ++j;
        t.text += line[j++];
      }
      if (j >= n) return err(i, "unterminated quoted name");
      t.kind = Token::Kind::Str;
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < n && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
      bool isFloat = false;
      if (j + 1 < n && line[j] == '.' && std::isdigit(static_cast<unsigned char>(line[j + 1]))) {
        isFloat = true;
        ++j;
        while (j < n && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
      }
      if (j < n && (line[j] == 'e' || line[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (line[k] == '-' || line[k] == '+')) ++k;
        if (k < n && std::isdigit(static_cast<unsigned char>(line[k]))) {
          isFloat = true;
          j = k;
          while (j < n && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
        }
      }
      t.text = line.substr(i, j - i);
      if (isFloat) {
        t.kind = Token::Kind::Float;
        t.floatValue = std::strtod(t.text.c_str(), nullptr);
      } else {
        t.kind = Token::Kind::Int;
        if (t.text.size() > 18) return err(i, "integer " + t.text + " is too large");
        t.intValue = std::stoll(t.text);
      }
      i = j;
    } else {
      static const char* two[] = {"..", "=>", "==", "!=", "<=", ">=", "&&"};
      t.kind = Token::Kind::Punct;
      for (const char* p : two)
        if (line.compare(i, 2, p) == 0) t.text = p;
      if (t.text.empty()) {
        if (std::string("()[],.=:*+-/%<>").find(c) == std::string::npos)
          return err(i, std::string("unexpected character '") + c + "'");
        t.text = std::string(1, c);
      }
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.col = int(n) + 1;
  out.push_back(end);
  return out;
}

}  // namespace sp::rewrite
