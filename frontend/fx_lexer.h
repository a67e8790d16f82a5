#pragma once
// Tokens of the Python subset torch.fx prints. Newlines inside brackets are
// dropped, so one logical line is one statement list.
#include <string>
#include <vector>

#include "ir/support.h"

namespace sp::frontend::fx {

struct Token {
  enum class Kind { Name, Int, Float, Str, Punct, Newline, Comment, End };
  Kind kind;
  std::string text;  // Name, Str (unescaped), Punct, Comment (after '#'), number text
  int line;
  int col;
};

// Errors: id "fx-syntax" with location "path:line:col".
Result<std::vector<Token>> lex(const std::string& text, const std::string& path);

}  // namespace sp::frontend::fx
