#pragma once
// Tokens of the Python subset torch.fx prints. Newlines inside brackets are
// dropped, so one logical line is one statement list. Lexing never fails: a
// character or string it cannot read becomes an Error token (text = the
// message), which the parser reports only if it reaches it, so text it skips
// (a `class <lambda>(torch.nn.Module):` header, other methods) cannot stop
// an import and an earlier parse error is reported first.
#include <string>
#include <vector>

namespace sp::frontend::fx {

struct Token {
  enum class Kind { Name, Int, Float, Str, Punct, Newline, Comment, Error, End };
  Kind kind;
  std::string text;  // Name, Str (unescaped), Punct, Comment (after '#'), number text, Error message
  int line;
  int col;
};

// Ends with Newline, End. Operators: ( ) [ ] { } , : = . ... ; -> and the
// arithmetic and comparison operators of SymInt expressions.
std::vector<Token> lex(const std::string& text);

}  // namespace sp::frontend::fx
