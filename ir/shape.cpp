#include "ir/shape.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace sp::ir {

std::string Dim::str() const {
  if (syms.empty()) return std::to_string(coef);
  std::string out;
  if (coef != 1) out = std::to_string(coef) + "*";
  for (size_t i = 0; i < syms.size(); ++i) {
    if (i) out += "*";
    out += syms[i];
  }
  return out;
}

Dim operator*(const Dim& a, const Dim& b) {
  Dim r(a.coef * b.coef);
  if (r.coef == 0) return r;
  r.syms = a.syms;
  r.syms.insert(r.syms.end(), b.syms.begin(), b.syms.end());
  std::sort(r.syms.begin(), r.syms.end());
  return r;
}

std::optional<Dim> exactDiv(const Dim& a, const Dim& b) {
  if (b.coef == 0 || a.coef % b.coef != 0) return std::nullopt;
  std::vector<std::string> rest = a.syms;
  for (const auto& s : b.syms) {
    auto it = std::find(rest.begin(), rest.end(), s);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  Dim r(a.coef / b.coef);
  r.syms = std::move(rest);
  return r;
}

std::optional<Dim> addDims(const Dim& a, const Dim& b) {
  if (a.coef == 0) return b;
  if (b.coef == 0) return a;
  if (a.syms != b.syms) return std::nullopt;
  Dim r(a.coef + b.coef);
  r.syms = a.syms;
  return r;
}

Result<Dim> parseDim(const std::string& text) {
  Dim d(1);
  std::stringstream ss(text);
  std::string part;
  bool any = false;
  while (std::getline(ss, part, '*')) {
    any = true;
    if (part.empty()) return makeError("bad-dim", "malformed dim '" + text + "'");
    if (std::isdigit(static_cast<unsigned char>(part[0])) || part[0] == '-') {
      size_t pos = 0;
      long long v = 0;
      try {
        v = std::stoll(part, &pos);
      } catch (...) {
        return makeError("bad-dim", "dim '" + text + "' is out of range");
      }
      if (pos != part.size()) return makeError("bad-dim", "malformed dim '" + text + "'");
      if (v < 0 || v > kMaxElements)
        return makeError("bad-dim", "dim " + part + " is out of range [0, 2^48]");
      d.coef *= v;
    } else {
      for (char c : part)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
          return makeError("bad-dim", "malformed dim '" + text + "'");
      d.syms.push_back(part);
    }
  }
  if (!any) return makeError("bad-dim", "empty dim");
  std::sort(d.syms.begin(), d.syms.end());
  return d;
}

std::string shapeStr(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i].str();
  }
  return out + "]";
}

bool isConcrete(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](const Dim& d) { return d.isConcrete(); });
}

std::optional<Dim> numElements(const Shape& s) {
  Dim n(1);
  for (const Dim& d : s) {
    // Both factors are at most 2^48 here, so check before multiplying.
    if (d.coef < 0 || d.coef > kMaxElements) return std::nullopt;
    if (d.coef != 0 && n.coef > kMaxElements / d.coef) return std::nullopt;
    n = n * d;
  }
  return n;
}

std::vector<int64_t> concreteDims(const Shape& s) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const Dim& d : s) out.push_back(d.value());
  return out;
}

Shape shapeOf(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

Result<std::vector<int64_t>> bindShape(const Shape& s, const Bindings& b) {
  std::vector<int64_t> out;
  for (const Dim& d : s) {
    int64_t v = d.coef;
    for (const auto& sym : d.syms) {
      auto it = b.find(sym);
      if (it == b.end()) return makeError("unbound-dim", "symbolic dim '" + sym + "' has no value");
      v *= it->second;
    }
    out.push_back(v);
  }
  return out;
}

Result<int64_t> normAxis(int64_t axis, int64_t rank, const std::string& what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return makeError("bad-axis", what + ": axis " + std::to_string(axis) +
                                     " is out of range for rank " + std::to_string(rank));
  return a;
}

}  // namespace sp::ir
