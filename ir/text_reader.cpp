#include "ir/text_reader.h"

#include <charconv>
#include <cmath>
#include <limits>


namespace sp::ir::text {

namespace {

// Levenshtein distance with adjacent transpositions ("inptu" is 1 from "input").
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

// " (did you mean 'x'?)" for the closest candidate within a third of the length.
std::string suggest(std::string_view word, const std::vector<std::string_view>& candidates) {
  size_t best = std::max<size_t>(1, word.size() / 3) + 1;
  std::string_view pick;
  for (auto c : candidates) {
    size_t d = editDistance(word, c);
    if (d < best) {
      best = d;
      pick = c;
    }
  }
  return pick.empty() ? "" : " (did you mean '" + std::string(pick) + "'?)";
}

Result<std::string> TokenReader::name(const std::string& what) {
  if (peek().kind == Tok::Ident || peek().kind == Tok::String) return next().text;
  return unexpected(peek(), what);
}
Result<std::string> TokenReader::valueName() {
  if (peek().kind == Tok::Value) return next().text;
  return unexpected(peek(), "a value name like %x");
}
Result<int64_t> TokenReader::integer(const std::string& what) {
  if (peek().kind == Tok::Int) return next().intValue;
  return unexpected(peek(), what);
}

// A float literal: an integer, a decimal, inf, -inf or nan.
std::optional<double> TokenReader::floatToken(const Token& t) const {
  if (t.kind == Tok::Int) return double(t.intValue);
  if (t.isIdent("inf")) return std::numeric_limits<double>::infinity();
  if (t.isIdent("nan")) return std::numeric_limits<double>::quiet_NaN();
  if (t.kind != Tok::Float) return std::nullopt;
  if (t.text == "-inf") return -std::numeric_limits<double>::infinity();
  double d = 0;
  std::from_chars(t.text.data(), t.text.data() + t.text.size(), d);
  return d;
}

Result<Dim> TokenReader::dim() {
  Dim d(1);
  do {
    const Token& t = peek();
    if (t.kind == Tok::Int) {
      if (t.intValue < 0 || t.intValue > kMaxElements)
        return err(t, "bad-dim", "dim " + t.text + " is out of range [0, 2^48]");
      if (d.coef != 0 && t.intValue > kMaxElements / d.coef)
        return err(t, "bad-dim", "dim product exceeds 2^48 at " + t.text);
      d.coef *= t.intValue;
    } else if (t.kind == Tok::Ident || (t.kind == Tok::String && !t.text.empty())) {
      d.syms.push_back(t.text);
    } else {
      return err(t, "bad-dim", "expected a dim (an integer or a symbol), got " + describe(t));
    }
    next();
  } while (accept("*"));
  std::sort(d.syms.begin(), d.syms.end());
  return d;
}

Result<DType> TokenReader::dtype() {
  const Token& t = peek();
  if (t.kind != Tok::Ident) return unexpected(t, "a dtype like f32");
  auto dt = parseDType(t.text);
  if (!dt) {
    std::vector<std::string_view> names;
    for (DType k : kAllDTypes) names.push_back(dtypeName(k));
    return err(t, "unknown-dtype", "unknown dtype '" + t.text + "'" + suggest(t.text, names));
  }
  next();
  return *dt;
}

Result<TensorType> TokenReader::type() {
  const Token& start = peek();
  TensorType tt;
  SP_ASSIGN(tt.dtype, dtype());
  SP_TRY(expect("["));
  if (!accept("]")) {
    do {
      SP_ASSIGN(Dim d, dim());
      tt.shape.push_back(std::move(d));
    } while (accept(","));
    SP_TRY(expect("]"));
  }
  // Element count within 2^48 (checked here without overflow: each dim
  // coefficient is at most 2^48, so a product can exceed int64).
  int64_t n = 1;
  for (const Dim& d : tt.shape) {
    if (d.coef == 0) {
      n = 0;
      break;
    }
    if (n > kMaxElements / d.coef)
      return err(start, "bad-dim", tt.str() + " has more than 2^48 elements");
    n *= d.coef;
  }
  return tt;
}

// `[e, ...]` elements of a tensor of type `tt`, then '>'.
Result<Tensor> TokenReader::tensorElements(const Token& at, const TensorType& tt) {
  if (!isConcrete(tt.shape))
    return err(at, "bad-tensor", "tensor data needs a concrete shape, got " + tt.str());
  SP_TRY(expect("["));
  std::vector<size_t> elems;
  if (!accept("]")) {
    do {
      elems.push_back(pos_);
      next();
    } while (accept(","));
    SP_TRY(expect("]"));
  }
  SP_TRY(expect(">"));
  int64_t numel = numElements(tt.shape)->coef;
  if (int64_t(elems.size()) != numel)
    return err(at, "bad-tensor", tt.str() + " has " + std::to_string(numel) + " elements, got " +
                                     std::to_string(elems.size()) + " values");
  Tensor t(tt.dtype, concreteDims(tt.shape));
  for (int64_t i = 0; i < numel; ++i) SP_TRY(setElement(t, i, toks_[elems[size_t(i)]]));
  return t;
}

Status TokenReader::setElement(Tensor& t, int64_t i, const Token& tok) {
  DType dt = t.dtype();
  std::string name(dtypeName(dt));
  if (isFloat(dt)) {
    auto v = floatToken(tok);
    if (!v) return err(tok, "bad-literal", "expected a " + name + " value, got " + describe(tok));
    if (dt == DType::F64) {
      t.mutableData<double>()[i] = *v;
      return okStatus();
    }
    float f = float(*v);
    if (tok.kind == Tok::Float && std::isfinite(*v)) {
      // Parse as float directly: no double rounding of shortest float text.
      auto [p, ec] = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), f);
      if (ec != std::errc())
        return err(tok, "bad-literal", tok.text + " is out of range for " + name);
    }
    if (dt == DType::F32) t.mutableData<float>()[i] = f;
    else if (dt == DType::F16) t.mutableData<uint16_t>()[i] = floatToHalf(f);
    else t.mutableData<uint16_t>()[i] = floatToBF16(f);
    return okStatus();
  }
  if (dt == DType::Bool) {
    if (tok.isIdent("true") || tok.isIdent("false") ||
        (tok.kind == Tok::Int && (tok.intValue == 0 || tok.intValue == 1))) {
      t.mutableData<uint8_t>()[i] = tok.isIdent("true") || tok.intValue == 1;
      return okStatus();
    }
    return err(tok, "bad-literal", "expected true or false, got " + describe(tok));
  }
  if (tok.kind != Tok::Int)
    return err(tok, "bad-literal", "expected an " + name + " value, got " + describe(tok));
  int64_t v = tok.intValue;
  auto fits = [&](int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  bool ok = dt == DType::I64 || (dt == DType::I32 && fits(INT32_MIN, INT32_MAX)) ||
            (dt == DType::I16 && fits(INT16_MIN, INT16_MAX)) ||
            (dt == DType::I8 && fits(INT8_MIN, INT8_MAX)) || (dt == DType::U8 && fits(0, 255));
  if (!ok) return err(tok, "bad-literal", tok.text + " is out of range for " + name);
  switch (dt) {
    case DType::I64: t.mutableData<int64_t>()[i] = v; break;
    case DType::I32: t.mutableData<int32_t>()[i] = int32_t(v); break;
    case DType::I16: t.mutableData<int16_t>()[i] = int16_t(v); break;
    case DType::I8: t.mutableData<int8_t>()[i] = int8_t(v); break;
    default: t.mutableData<uint8_t>()[i] = uint8_t(v); break;
  }
  return okStatus();
}

// After 'dense': `<type, [...]>`, or `<[...]>` when `declared` gives the type.
Result<Tensor> TokenReader::dense(const std::optional<TensorType>& declared) {
  const Token& at = peek();
  SP_TRY(expect("<"));
  if (declared && peek().isPunct("[")) return tensorElements(at, *declared);
  SP_ASSIGN(TensorType tt, type());
  SP_TRY(expect(","));
  return tensorElements(at, tt);
}

Result<AttrValue> TokenReader::attrValue(const AttrSpec& spec, std::string_view op) {
  const Token& t = peek();
  auto kindError = [&](const Token& at) {
    return err(at, "attr-kind", "attribute '" + spec.name + "' of " + std::string(op) + " must be " +
                                    std::string(attrKindName(spec.kind)) + ", got " + describe(at));
  };
  auto list = [&](auto elem) -> Status {
    if (!peek().isPunct("[")) return kindError(peek());
    next();
    if (accept("]")) return okStatus();
    do SP_TRY(elem());
    while (accept(","));
    return expect("]");
  };
  switch (spec.kind) {
    case AttrKind::Int:
      if (t.kind != Tok::Int) return kindError(t);
      return AttrValue(next().intValue);
    case AttrKind::Float: {
      auto v = floatToken(t);
      if (!v) return kindError(t);
      next();
      return AttrValue(*v);
    }
    case AttrKind::String:
      if (t.kind != Tok::String) return kindError(t);
      return AttrValue(next().text);
    case AttrKind::Ints: {
      std::vector<int64_t> v;
      SP_TRY(list([&]() -> Status {
        if (peek().kind != Tok::Int) return kindError(peek());
        v.push_back(next().intValue);
        return okStatus();
      }));
      return AttrValue(std::move(v));
    }
    case AttrKind::Floats: {
      std::vector<double> v;
      SP_TRY(list([&]() -> Status {
        auto f = floatToken(peek());
        if (!f) return kindError(peek());
        next();
        v.push_back(*f);
        return okStatus();
      }));
      return AttrValue(std::move(v));
    }
    case AttrKind::Dims: {
      Shape v;
      SP_TRY(list([&]() -> Status {
        SP_ASSIGN(Dim d, dim());
        v.push_back(std::move(d));
        return okStatus();
      }));
      return AttrValue(std::move(v));
    }
    case AttrKind::Type: {
      if (t.kind != Tok::Ident) return kindError(t);
      SP_ASSIGN(DType d, dtype());
      return AttrValue(d);
    }
    case AttrKind::Tensor: {
      if (!t.isIdent("dense")) return kindError(t);
      next();
      SP_ASSIGN(Tensor v, dense(std::nullopt));
      return AttrValue(std::move(v));
    }
  }
  return kindError(t);
}

Status TokenReader::attrBlock(OpKind op, AttrMap& attrs) {
  const OpInfo& info = opInfo(op);
  if (accept("}")) return okStatus();
  do {
    const Token& t = peek();
    if (t.kind != Tok::Ident) return unexpected(t, "an attribute name");
    const AttrSpec* spec = info.attr(t.text);
    if (!spec) {
      std::vector<std::string_view> names;
      for (const auto& a : info.attrs) names.push_back(a.name);
      std::string msg = "unknown attribute '" + t.text + "' for " + std::string(info.name);
      return err(t, "unknown-attr", msg + (names.empty() ? " (it takes none)" : suggest(t.text, names)));
    }
    if (attrs.count(t.text)) return err(t, "duplicate-attr", "attribute '" + t.text + "' is given twice");
    next();
    SP_TRY(expect("="));
    SP_ASSIGN(AttrValue v, attrValue(*spec, info.name));
    attrs.emplace(spec->name, std::move(v));
  } while (accept(","));
  return expect("}");
}

Status TokenReader::requireAttrs(const Token& at, OpKind op, const AttrMap& attrs) const {
  for (const AttrSpec& spec : opInfo(op).attrs)
    if (!spec.defaultValue && !attrs.count(spec.name))
      return err(at, "missing-attr",
                 std::string(ir::opName(op)) + ": missing required attribute '" + spec.name + "'");
  return okStatus();
}

Result<std::optional<SourceLoc>> TokenReader::sourceLoc() {
  if (!accept("@")) return std::optional<SourceLoc>();
  SourceLoc loc;
  bool any = false;
  if (peek().kind == Tok::String) {
    loc.file = next().text;
    any = true;
    if (accept(":")) {
      const Token& l = peek();
      SP_ASSIGN(int64_t line, integer("a line number"));
      if (line < 0 || line > std::numeric_limits<int>::max())
        return err(l, "bad-location", "line " + l.text + " is out of range");
      loc.line = int(line);
    }
  }
  if (peek().isIdent("node")) {
    next();
    if (peek().kind != Tok::String) return unexpected(peek(), "a quoted node name");
    loc.detail = next().text;
    any = true;
  }
  if (!any) return unexpected(peek(), "a location: \"file\":line or node \"name\"");
  return std::optional<SourceLoc>(std::move(loc));
}

Result<OpKind> TokenReader::readOp() {
  const Token& t = peek();
  if (t.kind != Tok::Ident) return unexpected(t, "an op name");
  auto op = opByName(t.text);
  if (!op) {
    std::vector<std::string_view> names;
    for (const auto& info : allOps()) names.push_back(info.name);
    return err(t, "unknown-op", "unknown op '" + t.text + "'" + suggest(t.text, names));
  }
  next();
  return *op;
}

Result<std::vector<std::string>> TokenReader::operands() {
  SP_TRY(expect("("));
  std::vector<std::string> out;
  if (accept(")")) return out;
  do {
    SP_ASSIGN(std::string in, valueName());
    out.push_back(std::move(in));
  } while (accept(","));
  SP_TRY(expect(")"));
  return out;
}

}  // namespace sp::ir::text
