// Printer of the text IR. The output is canonical: printing a parsed graph
// reproduces the printed text byte for byte (docs/text-ir.md).
#include <bit>
#include <charconv>
#include <cmath>

#include "ir/text.h"
#include "ir/text_lexer.h"

namespace sp::ir {

namespace {

using text::quote;

// Shortest text that reads back to the same value; always recognizably a
// float ("1.0", not "1").
template <typename F>
std::string shortestFloat(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  SP_ASSERT(ec == std::errc(), "to_chars failed");
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string formatName(const std::string& n) { return text::isIdentifier(n) ? n : quote(n); }

std::string formatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::F32: return shortestFloat(t.data<float>()[i]);
    case DType::F64: return shortestFloat(t.data<double>()[i]);
    case DType::F16: return shortestFloat(halfToFloat(t.data<uint16_t>()[i]));
    case DType::BF16: return shortestFloat(bf16ToFloat(t.data<uint16_t>()[i]));
    case DType::I64: return std::to_string(t.data<int64_t>()[i]);
    case DType::I32: return std::to_string(t.data<int32_t>()[i]);
    case DType::I16: return std::to_string(t.data<int16_t>()[i]);
    case DType::I8: return std::to_string(t.data<int8_t>()[i]);
    case DType::U8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::Bool: return t.data<uint8_t>()[i] ? "true" : "false";
  }
  return "?";
}

std::string formatElements(const Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) out += ", ";
    out += formatElement(t, i);
  }
  return out + "]";
}

template <typename T, typename Fn>
std::string formatList(const std::vector<T>& v, Fn fn) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += fn(v[i]);
  }
  return out + "]";
}

bool sameBits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

// Equality that distinguishes -0.0 from 0.0, so omitting a default never
// changes a value.
bool sameAttr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) return sameBits(*x, std::get<double>(b));
  if (auto* x = std::get_if<std::vector<double>>(&a)) {
    const auto& y = std::get<std::vector<double>>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i)
      if (!sameBits((*x)[i], y[i])) return false;
    return true;
  }
  if (auto* x = std::get_if<Tensor>(&a)) return x->identical(std::get<Tensor>(b));
  if (auto* x = std::get_if<Shape>(&a)) return *x == std::get<Shape>(b);
  if (auto* x = std::get_if<int64_t>(&a)) return *x == std::get<int64_t>(b);
  if (auto* x = std::get_if<std::string>(&a)) return *x == std::get<std::string>(b);
  if (auto* x = std::get_if<std::vector<int64_t>>(&a)) return *x == std::get<std::vector<int64_t>>(b);
  return std::get<DType>(a) == std::get<DType>(b);
}

// A node's name when the text gives none: its first output, or op_<index>.
std::string defaultNodeName(const Node& n, const Graph& g, size_t index) {
  if (!n.outputs.empty()) return g.value(n.outputs[0]).name;
  return std::string(opName(n.op)) + "_" + std::to_string(index);
}

void printLocSuffix(std::string& out, const SourceLoc& loc) {
  std::string l = formatLoc(loc);
  if (!l.empty()) out += "  " + l;
}

void printNode(std::string& out, const Graph& g, const Node& n, size_t index,
               const std::string& indent) {
  out += indent;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Value& v = g.value(n.outputs[k]);
    out += (k ? ", " : "") + formatValueName(v.name) + ": " + formatType(v.type);
  }
  if (!n.outputs.empty()) out += " = ";
  out += std::string(opName(n.op)) + "(";
  for (size_t k = 0; k < n.inputs.size(); ++k)
    out += (k ? ", " : "") + formatValueName(g.value(n.inputs[k]).name);
  out += ")";
  out += formatAttrs(n.op, n.attrs);
  if (n.name != defaultNodeName(n, g, index)) out += " as " + quote(n.name);
  printLocSuffix(out, n.loc);
  out += "\n";
}

void printBody(std::string& out, const Graph& g, const std::string& indent) {
  for (ValueId id = 0; id < ValueId(g.values().size()); ++id) {
    const Value& v = g.value(id);
    if (v.kind == ValueKind::NodeOutput) continue;
    bool param = v.kind == ValueKind::Param;
    out += indent + (param ? "param " : "input ") + formatValueName(v.name) + ": " +
           formatType(v.type);
    if (param) {
      if (const Tensor* data = g.paramData(id))
        out += " = dense<" + formatElements(*data) + ">";
    }
    printLocSuffix(out, v.loc);
    out += "\n";
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) printNode(out, g, g.nodes()[i], i, indent);
  for (ValueId id : g.outputs()) out += indent + "output " + formatValueName(g.value(id).name) + "\n";
}

}  // namespace

std::string formatFloat(double v) { return shortestFloat(v); }

std::string formatDim(const Dim& d) {
  std::string out;
  if (d.syms.empty() || d.coef != 1) out = std::to_string(d.coef);
  for (const auto& s : d.syms) out += (out.empty() ? "" : "*") + formatName(s);
  return out;
}

std::string formatType(const TensorType& t) {
  return std::string(dtypeName(t.dtype)) + formatList(t.shape, formatDim);
}

std::string formatValueName(const std::string& n) {
  return "%" + (text::isBareValueName(n) ? n : quote(n));
}

std::string formatAttr(const AttrValue& v) {
  switch (kindOf(v)) {
    case AttrKind::Int: return std::to_string(std::get<int64_t>(v));
    case AttrKind::Float: return formatFloat(std::get<double>(v));
    case AttrKind::String: return quote(std::get<std::string>(v));
    case AttrKind::Ints:
      return formatList(std::get<std::vector<int64_t>>(v), [](int64_t x) { return std::to_string(x); });
    case AttrKind::Floats: return formatList(std::get<std::vector<double>>(v), formatFloat);
    case AttrKind::Dims: return formatList(std::get<Shape>(v), formatDim);
    case AttrKind::Type: return std::string(dtypeName(std::get<DType>(v)));
    case AttrKind::Tensor: {
      const Tensor& t = std::get<Tensor>(v);
      return "dense<" + formatType(t.type()) + ", " + formatElements(t) + ">";
    }
  }
  return "?";
}

std::string formatAttrs(OpKind op, const AttrMap& attrs) {
  std::string out;
  for (const AttrSpec& spec : opInfo(op).attrs) {
    auto it = attrs.find(spec.name);
    if (it == attrs.end()) continue;
    if (spec.defaultValue && sameAttr(*spec.defaultValue, it->second)) continue;
    out += (out.empty() ? "" : ", ") + spec.name + " = " + formatAttr(it->second);
  }
  return out.empty() ? out : " {" + out + "}";
}

std::string formatLoc(const SourceLoc& loc) {
  // A location with a column and no detail is a text IR position: the
  // parser derives it from where the node is written, so it is not printed.
  if (loc.col > 0 && loc.detail.empty()) return "";
  if (loc.empty()) return "";
  std::string out = "@";
  if (!loc.file.empty() || loc.line > 0) {
    out += " " + quote(loc.file);
    if (loc.line > 0) out += ":" + std::to_string(loc.line);
  }
  if (!loc.detail.empty()) out += " node " + quote(loc.detail);
  return out;
}

std::string printGraph(const Graph& g) {
  std::string out = "graph " + formatName(g.name()) + " {\n";
  printBody(out, g, "  ");
  return out + "}\n";
}

std::string printProgram(const Program& p) {
  std::string name = p.worldSize() > 0 ? p.rank(0).name() : "";
  std::string out = "program " + formatName(name) + " {\n";
  out += "  world " + std::to_string(p.worldSize()) + "\n";
  const auto& axes = p.mesh().axes;
  bool implicitMesh = axes.size() == 1 && axes[0].name == "world" && axes[0].size == p.worldSize();
  if (!implicitMesh) {
    out += "  mesh [";
    for (size_t i = 0; i < axes.size(); ++i)
      out += (i ? ", " : "") + formatName(axes[i].name) + " = " + std::to_string(axes[i].size);
    out += "]\n";
  }
  for (const auto& [gname, part] : p.namedGroups()) {
    out += "  group " + formatName(gname) + " = [";
    for (size_t i = 0; i < part.size(); ++i)
      out += (i ? ", " : "") +
             formatList(part[i], [](int64_t r) { return std::to_string(r); });
    out += "]\n";
  }
  // Consecutive ranks with identical bodies print once as `rank a..b`.
  // A rank class's body prints once.
  std::vector<std::string> classBody(size_t(p.numClasses()));
  for (int64_t c = 0; c < p.numClasses(); ++c) {
    const Graph& g = p.classGraph(c);
    std::string b;
    if (g.name() != name) b = " " + formatName(g.name());
    b += " {\n";
    printBody(b, g, "    ");
    classBody[size_t(c)] = b + "  }\n";
  }
  auto body = [&](size_t r) -> const std::string& { return classBody[size_t(p.classOf(int64_t(r)))]; };
  size_t world = size_t(p.worldSize());
  for (size_t r = 0; r < world;) {
    size_t e = r + 1;
    while (e < world && (p.sameClass(int64_t(e), int64_t(r)) || body(e) == body(r))) ++e;
    out += "  rank " + std::to_string(r);
    if (e - r > 1) out += ".." + std::to_string(e - 1);
    out += body(r);
    r = e;
  }
  return out + "}\n";
}

std::string printModule(const Module& m) {
  if (auto* g = std::get_if<Graph>(&m)) return printGraph(*g);
  return printProgram(std::get<Program>(m));
}

}  // namespace sp::ir
