#include "ir/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace sp::ir {

static_assert(std::endian::native == std::endian::little,
              ".npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

Error npyError(const std::string& id, const std::string& what, const std::string& msg) {
  return makeError(id, what + ": " + msg);
}

// The header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// This is a small recursive-descent parser for exactly the literals numpy
// writes there: strings, True/False, integers and tuples of integers.
struct HeaderValue {
  enum class Kind { Str, Bool, Int, Tuple } kind = Kind::Str;
  std::string str;
  bool b = false;
  int64_t i = 0;
  std::vector<int64_t> tuple;
};

class HeaderParser {
 public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  Result<std::map<std::string, HeaderValue>> parse() {
    std::map<std::string, HeaderValue> out;
    skipWs();
    if (!eat('{')) return err("expected '{'");
    skipWs();
    while (!peekIs('}')) {
      SP_ASSIGN(std::string key, parseString());
      skipWs();
      if (!eat(':')) return err("expected ':' after key '" + key + "'");
      skipWs();
      SP_ASSIGN(HeaderValue v, parseValue());
      if (!out.emplace(key, std::move(v)).second) return err("key '" + key + "' appears twice");
      skipWs();
      if (eat(',')) {
        skipWs();
        continue;
      }
      if (!peekIs('}')) return err("expected ',' or '}'");
    }
    eat('}');
    skipWs();
    if (pos_ != s_.size()) return err("unexpected text after the dict");
    return out;
  }

 private:
  Error err(const std::string& msg) const {
    return makeError("npy-header", msg + " at offset " + std::to_string(pos_));
  }
  void skipWs() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peekIs(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  bool eat(char c) {
    if (!peekIs(c)) return false;
    ++pos_;
    return true;
  }
  bool eatWord(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }

  Result<std::string> parseString() {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return err("expected a string");
    char q = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') return err("escapes are not supported in header strings");
      out += s_[pos_++];
    }
    if (!eat(q)) return err("unterminated string");
    return out;
  }

  Result<int64_t> parseInt() {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + (s_[pos_] - '0');
      if (v > kMaxElements) return err("integer exceeds 2^48");
      ++pos_;
    }
    if (pos_ == start) return err("expected an integer");
    eat('L');  // Python 2 long suffix, written by old numpy
    return v;
  }

  Result<HeaderValue> parseValue() {
    HeaderValue v;
    if (peekIs('\'') || peekIs('"')) {
      v.kind = HeaderValue::Kind::Str;
      SP_ASSIGN(v.str, parseString());
      return v;
    }
    if (eatWord("True")) {
      v.kind = HeaderValue::Kind::Bool;
      v.b = true;
      return v;
    }
    if (eatWord("False")) {
      v.kind = HeaderValue::Kind::Bool;
      return v;
    }
    if (eat('(')) {
      v.kind = HeaderValue::Kind::Tuple;
      skipWs();
      while (!peekIs(')')) {
        SP_ASSIGN(int64_t d, parseInt());
        v.tuple.push_back(d);
        skipWs();
        if (eat(',')) {
          skipWs();
          continue;
        }
        if (!peekIs(')')) return err("expected ',' or ')' in shape");
      }
      eat(')');
      return v;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v.kind = HeaderValue::Kind::Int;
      SP_ASSIGN(v.i, parseInt());
      return v;
    }
    return err("unsupported value in header");
  }

  const std::string& s_;
  size_t pos_ = 0;
};

Result<DType> dtypeFromDescr(const std::string& d, const std::string& what) {
  if (d.size() < 2)
    return npyError("npy-dtype", what, "unsupported dtype '" + d + "'");
  char order = d[0];
  std::string code = d.substr(1);
  static const std::map<std::string, DType> kCodes = {
      {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"i8", DType::I64},
      {"i4", DType::I32}, {"i2", DType::I16}, {"i1", DType::I8},  {"u1", DType::U8},
      {"b1", DType::Bool}};
  auto it = kCodes.find(code);
  if (it == kCodes.end())
    return npyError("npy-dtype", what,
                    "unsupported dtype '" + d +
                        "' (supported: <f4 <f8 <f2 <i8 <i4 <i2 |i1 |u1 |b1)");
  bool oneByte = dtypeSize(it->second) == 1;
  if (order == '>' && !oneByte)
    return npyError("npy-dtype", what, "big-endian dtype '" + d + "' is not supported");
  if (order == '<' || order == '|' || (order == '>' && oneByte)) {
    if (order == '|' && !oneByte)
      return npyError("npy-dtype", what, "dtype '" + d + "' has no byte order");
    return it->second;
  }
  return npyError("npy-dtype", what, "unsupported byte order in dtype '" + d + "'");
}

std::string descrOf(DType t) {
  switch (t) {
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
    case DType::F16: return "<f2";
    case DType::BF16: return "<f4";  // written as f32
    case DType::I64: return "<i8";
    case DType::I32: return "<i4";
    case DType::I16: return "<i2";
    case DType::I8: return "|i1";
    case DType::U8: return "|u1";
    case DType::Bool: return "|b1";
  }
  return "<f4";
}

uint32_t readLE(const std::string& b, size_t off, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(static_cast<unsigned char>(b[off + i])) << (8 * i);
  return v;
}

}  // namespace

Result<Tensor> parseNpy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    return npyError("npy-magic", what, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    return npyError("npy-version", what,
                    "unsupported format version " + std::to_string(major) + "." +
                        std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t preamble = kMagicLen + 2 + lenBytes;
  if (bytes.size() < preamble)
    return npyError("npy-header", what, "truncated before the header length");
  size_t headerLen = readLE(bytes, kMagicLen + 2, lenBytes);
  if (bytes.size() - preamble < headerLen)
    return npyError("npy-header", what,
                    "truncated header: " + std::to_string(headerLen) + " bytes declared, " +
                        std::to_string(bytes.size() - preamble) + " present");
  std::string header = bytes.substr(preamble, headerLen);
  auto dict = HeaderParser(header).parse();
  if (!dict) return npyError("npy-header", what, "bad header: " + dict.error().message);
  auto field = [&](const char* key, HeaderValue::Kind kind) -> Result<const HeaderValue*> {
    auto it = dict->find(key);
    if (it == dict->end())
      return npyError("npy-header", what, std::string("header has no '") + key + "'");
    if (it->second.kind != kind)
      return npyError("npy-header", what, std::string("header field '") + key + "' has the wrong type");
    return &it->second;
  };
  SP_ASSIGN(const HeaderValue* descr, field("descr", HeaderValue::Kind::Str));
  SP_ASSIGN(const HeaderValue* fortran, field("fortran_order", HeaderValue::Kind::Bool));
  SP_ASSIGN(const HeaderValue* shape, field("shape", HeaderValue::Kind::Tuple));
  if (dict->size() != 3)
    return npyError("npy-header", what, "header has " + std::to_string(dict->size()) +
                                            " keys, expected descr, fortran_order and shape");
  SP_ASSIGN(DType dtype, dtypeFromDescr(descr->str, what));
  // Each d <= 2^48 (the header parser): the product is checked before each
  // multiplication, over the non-zero dims too (strides of a shape with a
  // zero dim must not overflow either, and an overflow must not wrap to an
  // empty array that needs no data).
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : shape->tuple) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > kMaxElements / d)
      return npyError("npy-size", what, "shape " + shapeStr(shapeOf(shape->tuple)) + " has more than 2^48 elements" +
                                            (std::count(shape->tuple.begin(), shape->tuple.end(), 0) ? " in its non-zero dims" : ""));
    nonzero *= d;
  }
  int64_t numel = empty ? 0 : nonzero;
  if (fortran->b)
    return npyError("npy-fortran", what, "fortran_order arrays are not supported (use C order)");
  size_t have = bytes.size() - preamble - headerLen;
  size_t need = size_t(numel) * dtypeSize(dtype);
  TensorType type{dtype, shapeOf(shape->tuple)};
  if (have != need)
    return npyError("npy-size", what, "data is " + std::to_string(have) + " bytes but " +
                                          std::string(descr->str) + " " + shapeStr(type.shape) +
                                          " needs " + std::to_string(need));
  Tensor t(dtype, shape->tuple);
  if (need) std::memcpy(t.mutableRaw(), bytes.data() + preamble + headerLen, need);
  if (dtype == DType::Bool) {
    uint8_t* p = t.mutableData<uint8_t>();
    for (int64_t i = 0; i < numel; ++i) p[i] = p[i] ? 1 : 0;
  }
  return t;
}

Result<Tensor> readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return npyError("npy-io", path, "cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return npyError("npy-io", path, "read error");
  return parseNpy(ss.str(), path);
}

std::string serializeNpy(const Tensor& src) {
  Tensor t = src.dtype() == DType::BF16 ? src.castTo(DType::F32) : src;
  std::string shape = "(";
  for (size_t i = 0; i < t.dims().size(); ++i)
    shape += std::to_string(t.dims()[i]) + (t.dims().size() == 1 ? "," : i + 1 < t.dims().size() ? ", " : "");
  shape += ")";
  std::string dict = "{'descr': '" + descrOf(t.dtype()) + "', 'fortran_order': False, 'shape': " +
                     shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; end with '\n'.
  auto build = [&](int major) {
    size_t lenBytes = major == 1 ? 2 : 4;
    size_t pre = kMagicLen + 2 + lenBytes;
    size_t total = pre + dict.size() + 1;
    size_t padded = (total + 63) / 64 * 64;
    std::string header = dict + std::string(padded - total, ' ') + "\n";
    std::string out(kMagic, kMagicLen);
    out += char(major);
    out += char(0);
    for (size_t i = 0; i < lenBytes; ++i) out += char((header.size() >> (8 * i)) & 0xff);
    return out + header;
  };
  std::string out = build(1);
  if (out.size() > 65535 + 10) out = build(2);
  if (t.nbytes()) out.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

// Written to PATH.tmp and renamed: a failure (a full disk, no memory for
// the bytes) leaves no half-written PATH.
Status writeNpy(const std::string& path, const Tensor& t) {
  std::string bytes = serializeNpy(t);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return npyError("npy-io", path, "cannot open for writing");
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return npyError("npy-io", path, "write error");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return npyError("npy-io", path, "cannot rename the written file into place");
  }
  return okStatus();
}

}  // namespace sp::ir
