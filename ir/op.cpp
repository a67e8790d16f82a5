#include "ir/op.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace sp::ir {

std::string_view attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "str";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
    case AttrKind::Dims: return "dims";
    case AttrKind::Type: return "dtype";
    case AttrKind::Tensor: return "tensor";
  }
  return "?";
}

namespace {

double parseDouble(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::stod(s);
}

// Parses the schema column of ops.def. It is static data, so a malformed
// schema is an internal error caught by the first test that loads the table.
std::vector<AttrSpec> parseSchema(std::string_view op, const char* schema) {
  std::vector<AttrSpec> out;
  std::stringstream ss(schema);
  std::string item;
  while (ss >> item) {
    size_t colon = item.find(':');
    SP_ASSERT(colon != std::string::npos, std::string(op) + ": bad attr schema " + item);
    AttrSpec spec;
    spec.name = item.substr(0, colon);
    std::string rest = item.substr(colon + 1);
    size_t eq = rest.find('=');
    std::string kind = rest.substr(0, eq);
    std::optional<std::string> def;
    if (eq != std::string::npos) def = rest.substr(eq + 1);
    bool found = false;
    for (int k = 0; k <= int(AttrKind::Tensor); ++k)
      if (attrKindName(AttrKind(k)) == kind) { spec.kind = AttrKind(k); found = true; }
    SP_ASSERT(found, std::string(op) + ": unknown attr kind " + kind);
    if (def) {
      switch (spec.kind) {
        case AttrKind::Int: spec.defaultValue = int64_t(std::stoll(*def)); break;
        case AttrKind::Float: spec.defaultValue = parseDouble(*def); break;
        case AttrKind::String: spec.defaultValue = *def; break;
        case AttrKind::Ints:
          SP_ASSERT(*def == "[]", "only empty list defaults are supported");
          spec.defaultValue = std::vector<int64_t>{};
          break;
        case AttrKind::Floats:
          SP_ASSERT(*def == "[]", "only empty list defaults are supported");
          spec.defaultValue = std::vector<double>{};
          break;
        case AttrKind::Type: {
          auto t = parseDType(*def);
          SP_ASSERT(t.has_value(), "bad dtype default " + *def);
          spec.defaultValue = *t;
          break;
        }
        default: SP_ASSERT(false, std::string(op) + ": no default allowed for " + spec.name);
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<OpInfo> buildTable() {
  std::vector<OpInfo> t;
#define OP(E, NAME, MININ, MAXIN, NOUT, CAT, SHAPE, KERNEL, ATTRS)                          \
  t.push_back(OpInfo{OpKind::E, NAME, MININ, MAXIN, NOUT, OpCategory::CAT, &SHAPE, &KERNEL, \
                     parseSchema(NAME, ATTRS)});
#include "ir/ops.def"
#undef OP
  return t;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = buildTable();
  return t;
}

}  // namespace

const AttrSpec* OpInfo::attr(std::string_view n) const {
  for (const auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

const OpInfo& opInfo(OpKind k) { return table()[size_t(k)]; }
std::string_view opName(OpKind k) { return opInfo(k).name; }
std::span<const OpInfo> allOps() { return table(); }

std::optional<OpKind> opByName(std::string_view name) {
  for (const auto& info : table())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

Result<AttrMap> completeAttrs(OpKind k, AttrMap attrs) {
  const OpInfo& info = opInfo(k);
  for (const auto& [name, value] : attrs) {
    const AttrSpec* spec = info.attr(name);
    if (!spec)
      return makeError("unknown-attr", std::string(info.name) + ": unknown attribute '" + name + "'");
    AttrKind have = kindOf(value);
    if (have != spec->kind) {
      // An int literal is accepted where a float is expected.
      if (spec->kind == AttrKind::Float && have == AttrKind::Int) continue;
      return makeError("attr-kind", std::string(info.name) + ": attribute '" + name + "' must be " +
                                        std::string(attrKindName(spec->kind)) + ", got " +
                                        std::string(attrKindName(have)));
    }
  }
  for (auto& [name, value] : attrs) {
    if (info.attr(name)->kind == AttrKind::Float && kindOf(value) == AttrKind::Int)
      value = double(std::get<int64_t>(value));
  }
  for (const auto& spec : info.attrs) {
    if (attrs.count(spec.name)) continue;
    if (!spec.defaultValue)
      return makeError("missing-attr", std::string(info.name) + ": missing required attribute '" +
                                           spec.name + "'");
    attrs.emplace(spec.name, *spec.defaultValue);
  }
  return attrs;
}

template <typename T>
static const T& getAttr(const AttrMap& a, const std::string& name) {
  auto it = a.find(name);
  SP_ASSERT(it != a.end(), "attribute '" + name + "' absent");
  const T* v = std::get_if<T>(&it->second);
  SP_ASSERT(v != nullptr, "attribute '" + name + "' has another kind");
  return *v;
}

int64_t attrInt(const AttrMap& a, const std::string& n) { return getAttr<int64_t>(a, n); }
double attrFloat(const AttrMap& a, const std::string& n) { return getAttr<double>(a, n); }
const std::string& attrStr(const AttrMap& a, const std::string& n) { return getAttr<std::string>(a, n); }
const std::vector<int64_t>& attrInts(const AttrMap& a, const std::string& n) {
  return getAttr<std::vector<int64_t>>(a, n);
}
const std::vector<double>& attrFloats(const AttrMap& a, const std::string& n) {
  return getAttr<std::vector<double>>(a, n);
}
const Shape& attrDims(const AttrMap& a, const std::string& n) { return getAttr<Shape>(a, n); }
DType attrType(const AttrMap& a, const std::string& n) { return getAttr<DType>(a, n); }
const Tensor& attrTensor(const AttrMap& a, const std::string& n) { return getAttr<Tensor>(a, n); }

Status kernelCollective(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) {
  return makeError("collective-outside-program",
                   std::string(opName(op)) + ": collectives run only inside a distributed program");
}

}  // namespace sp::ir
