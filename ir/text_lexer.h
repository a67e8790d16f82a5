#pragma once
// Lexer of the text IR (internal to ir/text_parser.cpp and its tests).
// Tokens carry their 1-based line and column; the lexer never fails silently:
// a bad byte, an unterminated string or an out-of-range number is an Error
// located "file:line:col".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/support.h"

namespace sp::ir::text {

enum class Tok : uint8_t {
  Eof,
  Ident,   // [A-Za-z_][A-Za-z0-9_]*: keywords, op names, dtypes, symbols
  Int,     // -?[0-9]+ within int64
  Float,   // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with '.' or exponent, or -inf
  String,  // "..." with escapes \" \\ \n \t \r \xHH; text holds the decoded bytes
  Value,   // %name or %"quoted name"; text holds the name
  Punct,   // { } ( ) [ ] < > , = : ; @ * ..
};

struct Token {
  Tok kind = Tok::Eof;
  std::string text;  // identifier, decoded string, value name, punctuation, number text
  int64_t intValue = 0;
  int line = 1;
  int col = 1;

  bool is(Tok k, std::string_view t) const { return kind == k && text == t; }
  bool isPunct(std::string_view p) const { return is(Tok::Punct, p); }
  bool isIdent(std::string_view w) const { return is(Tok::Ident, w); }
};

// Splits `src` into tokens ending with one Eof token. `file` names the source
// in error locations.
Result<std::vector<Token>> lex(std::string_view src, const std::string& file);

// How a token is named in diagnostics: "'matmul'", "'%x'", "'{'", "end of file".
std::string describe(const Token& t);

// Characters allowed in an unquoted value name (after '%'); a trailing ':'
// is never part of an unquoted name.
bool isBareNameChar(char c);
// Whether a value name prints without quotes: %name.
bool isBareValueName(std::string_view name);
// Whether a name prints as an identifier (graph, group, axis and symbol names).
bool isIdentifier(std::string_view name);
// `"..."` with the lexer's escapes.
std::string quote(std::string_view s);

}  // namespace sp::ir::text
