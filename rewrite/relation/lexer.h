#pragma once
// A small line-oriented lexer shared by the relation and lemma parsers.
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/support.h"

namespace sp::rewrite {

struct Token {
  enum class Kind : uint8_t { Ident, Var, Int, Float, Punct, Str, End };
  Kind kind = Kind::End;
  std::string text;  // Var: without the '?'; Str: without the quotes, unescaped
  int64_t intValue = 0;
  double floatValue = 0;
  int col = 1;
};

// Tokenizes one line (comments from '#' are dropped). `"..."` is a Str token
// (a tensor name that is not an identifier, such as ONNX's "fc1.weight";
// \" and \\ escape). Errors carry file:line:col.
Result<std::vector<Token>> lexLine(const std::string& line, const std::string& file, int lineNo);

// Cursor over one line's tokens with error helpers.
class Cursor {
 public:
  Cursor(std::vector<Token> toks, std::string file, int line)
      : toks_(std::move(toks)), file_(std::move(file)), line_(line) {}
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  Token next() { Token t = peek(); if (pos_ + 1 < toks_.size()) ++pos_; return t; }
  bool atEnd() const { return peek().kind == Token::Kind::End; }
  bool isPunct(const char* p, size_t k = 0) const {
    return peek(k).kind == Token::Kind::Punct && peek(k).text == p;
  }
  bool isIdent(const char* w, size_t k = 0) const {
    return peek(k).kind == Token::Kind::Ident && peek(k).text == w;
  }
  bool accept(const char* p) { if (isPunct(p)) { next(); return true; } return false; }
  Status expect(const char* p) {
    if (accept(p)) return okStatus();
    return error("expected '" + std::string(p) + "', found " + describe(peek()));
  }
  Error error(const std::string& msg) const { return errorAt(peek(), msg); }
  Error errorAt(const Token& t, const std::string& msg) const {
    return makeError("parse-error", msg, location(t));
  }
  std::string location(const Token& t) const {
    return file_ + ":" + std::to_string(line_) + ":" + std::to_string(t.col);
  }
  std::string lineLocation() const { return file_ + ":" + std::to_string(line_); }
  static std::string describe(const Token& t) {
    if (t.kind == Token::Kind::End) return "end of line";
    if (t.kind == Token::Kind::Var) return "'?" + t.text + "'";
    if (t.kind == Token::Kind::Str) return "'\"" + t.text + "\"'";
    return "'" + t.text + "'";
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::string file_;
  int line_;
};

}  // namespace sp::rewrite
