#pragma once
// Token-level reading for the text IR parser: cursor, diagnostics and the
// literal grammar (dims, types, dense tensors, attribute values by schema
// kind). Internal to ir/text_parser.cpp and its tests.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op.h"
#include "ir/text_lexer.h"

namespace sp::ir::text {

// " (did you mean 'x'?)" for the closest candidate, or "".
std::string suggest(std::string_view word, const std::vector<std::string_view>& candidates);

class TokenReader {
 public:
  TokenReader(std::vector<Token> toks, std::string file)
      : toks_(std::move(toks)), file_(std::move(file)) {
    if (toks_.empty()) toks_.push_back(Token{});
  }

  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  std::string where(const Token& t) const {
    return file_ + ":" + std::to_string(t.line) + ":" + std::to_string(t.col);
  }
  Error err(const Token& t, std::string id, std::string msg) const {
    return makeError(std::move(id), std::move(msg), where(t));
  }
  Error unexpected(const Token& t, const std::string& expected) const {
    return err(t, t.kind == Tok::Eof ? "unexpected-eof" : "unexpected-token",
               "expected " + expected + ", got " + describe(t));
  }
  bool accept(std::string_view p) {
    if (!peek().isPunct(p)) return false;
    next();
    return true;
  }
  Status expect(std::string_view p) {
    if (accept(p)) return okStatus();
    return unexpected(peek(), "'" + std::string(p) + "'");
  }


  Result<std::string> name(const std::string& what);
  Result<std::string> valueName();
  Result<int64_t> integer(const std::string& what);
  // A float literal: an integer, a decimal, inf, -inf or nan.
  std::optional<double> floatToken(const Token& t) const;
  Result<Dim> dim();
  Result<DType> dtype();
  Result<TensorType> type();
  // `[e, ...]` elements of a tensor of type `tt`, then '>'.
  Result<Tensor> tensorElements(const Token& at, const TensorType& tt);
  Status setElement(Tensor& t, int64_t i, const Token& tok);
  // After 'dense': `<type, [...]>`, or `<[...]>` when `declared` gives the type.
  Result<Tensor> dense(const std::optional<TensorType>& declared);
  Result<AttrValue> attrValue(const AttrSpec& spec, std::string_view op);
  // After '{': `name = value, ...}` checked against the schema of `op`.
  Status attrBlock(OpKind op, AttrMap& attrs);
  // A required attribute of `op` missing from `attrs` is an error at `at`.
  Status requireAttrs(const Token& at, OpKind op, const AttrMap& attrs) const;
  // Optional `@ "file":line node "detail"`; nullopt when there is no '@'.
  Result<std::optional<SourceLoc>> sourceLoc();
  // An op name (an identifier of ir/ops.def), with a suggestion when unknown.
  Result<OpKind> readOp();
  // `(%a, %b, ...)`, possibly empty.
  Result<std::vector<std::string>> operands();

 protected:
  std::vector<Token> toks_;
  std::string file_;
  size_t pos_ = 0;
};

}  // namespace sp::ir::text
