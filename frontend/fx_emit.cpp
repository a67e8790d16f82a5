#include "frontend/fx_emit.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

Emitter::Emitter(const Module& m, const FxOptions& o, int64_t r) : opts(o), rank(r) {
  for (const auto& p : m.params) names_.insert(p.name);
  for (const auto& s : m.body)
    if (s.kind == Stmt::Kind::Assign) names_.insert(s.target);
}

std::string Emitter::fresh(const std::string& base) {
  std::string n = base;
  for (int k = 1; names_.count(n); ++k) n = base + "_" + std::to_string(k);
  names_.insert(n);
  return n;
}

Error Emitter::error(const std::string& id, const std::string& msg) const {
  return makeError(id, op + " '" + nodeName + "': " + msg, captureLoc);
}

// ---------------------------------------------------------------- arguments

const Expr* Emitter::arg(size_t i, const char* kw) const {
  if (i < call->items.size()) return &call->items[i];
  if (kw)
    for (const auto& [k, v] : call->kwargs)
      if (k == kw) return &v;
  return nullptr;
}

bool Emitter::has(size_t i, const char* kw) const {
  const Expr* e = arg(i, kw);
  return e && e->kind != Expr::Kind::None;
}

static std::string argName(size_t i, const char* kw) {
  return kw ? std::string("argument '") + kw + "'" : "argument " + std::to_string(i);
}

Result<TRef> Emitter::tensorOf(const Expr& e) {
  if (e.kind != Expr::Kind::Name) return error("fx-arg", "expected a tensor, got " + e.str());
  auto it = env.find(e.s);
  if (it != env.end()) return it->second;
  if (syms.count(e.s))
    return error("fx-arg", "value '" + e.s + "' is the symbolic size Sym(" + syms.at(e.s) + "), not a tensor");
  if (attrs.count(e.s))
    return error("fx-attr-type", "the type of 'self." + attrs.at(e.s) +
                                     "' is unknown: it is used before an identity-like op declares it");
  return error("fx-undefined", "value '" + e.s + "' is not defined");
}

Result<TRef> Emitter::tensor(size_t i, const char* kw) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) return error("fx-arg", "missing tensor " + argName(i, kw));
  return tensorOf(*e);
}

Result<std::optional<TRef>> Emitter::optTensor(size_t i, const char* kw) {
  if (!has(i, kw)) return std::optional<TRef>();
  SP_ASSIGN(TRef t, tensor(i, kw));
  return std::optional<TRef>(std::move(t));
}

Result<std::vector<std::optional<TRef>>> Emitter::tensorList(size_t i, const char* kw) {
  const Expr* e = arg(i, kw);
  if (!e || (e->kind != Expr::Kind::List && e->kind != Expr::Kind::Tuple))
    return error("fx-arg", argName(i, kw) + " must be a list of tensors");
  std::vector<std::optional<TRef>> out;
  for (const auto& item : e->items) {
    if (item.kind == Expr::Kind::None) {
      out.emplace_back();
      continue;
    }
    SP_ASSIGN(TRef t, tensorOf(item));
    out.emplace_back(std::move(t));
  }
  return out;
}

// A SymInt node whose value is a known integer (`Sym(8)`).
static std::optional<int64_t> knownSym(const std::map<std::string, std::string>& syms, const Expr& e) {
  if (e.kind != Expr::Kind::Name || !syms.count(e.s)) return std::nullopt;
  const std::string& t = syms.at(e.s);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

// " (the symbolic size Sym(s0) ...)" when e names a SymInt node.
static std::string symNote(const std::map<std::string, std::string>& syms, const Expr& e) {
  if (e.kind != Expr::Kind::Name || !syms.count(e.s)) return "";
  return " ('" + e.s + "' is the symbolic size Sym(" + syms.at(e.s) +
         "); sizes passed as arguments must be known integers)";
}

Result<int64_t> Emitter::integer(size_t i, const char* kw, std::optional<int64_t> dflt) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) {
    if (dflt) return *dflt;
    return error("fx-arg", "missing integer " + argName(i, kw));
  }
  if (e->kind == Expr::Kind::Int) return e->i;
  if (e->kind == Expr::Kind::Bool) return int64_t(e->b);
  if (auto v = knownSym(syms, *e)) return *v;
  if (!symNote(syms, *e).empty()) return error("fx-arg", argName(i, kw) + " must be an integer" + symNote(syms, *e));
  return error("fx-arg", argName(i, kw) + " must be an integer, got " + e->str());
}

Result<std::optional<int64_t>> Emitter::optInteger(size_t i, const char* kw) {
  if (!has(i, kw)) return std::optional<int64_t>();
  SP_ASSIGN(int64_t v, integer(i, kw));
  return std::optional<int64_t>(v);
}

Result<double> Emitter::number(size_t i, const char* kw, std::optional<double> dflt) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) {
    if (dflt) return *dflt;
    return error("fx-arg", "missing number " + argName(i, kw));
  }
  if (e->isNumber()) return e->number();
  return error("fx-arg", argName(i, kw) + " must be a number, got " + e->str());
}

Result<std::vector<int64_t>> Emitter::ints(size_t i, const char* kw,
                                           std::optional<std::vector<int64_t>> dflt) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) {
    if (dflt) return *dflt;
    return error("fx-arg", "missing integer list " + argName(i, kw));
  }
  if (e->kind == Expr::Kind::Int) return std::vector<int64_t>{e->i};
  if (e->kind != Expr::Kind::List && e->kind != Expr::Kind::Tuple)
    return error("fx-arg", argName(i, kw) + " must be a list of integers, got " + e->str());
  std::vector<int64_t> out;
  for (const auto& item : e->items) {
    if (auto v = knownSym(syms, item)) {
      out.push_back(*v);
      continue;
    }
    if (item.kind != Expr::Kind::Int) {
      std::string note;
      if (item.kind == Expr::Kind::Name) note = symNote(syms, item);
      if (item.kind == Expr::Kind::Name && note.empty()) note = " (symbolic sizes are not supported)";
      return error("fx-arg", argName(i, kw) + " must be a list of integers, got " + e->str() + note);
    }
    out.push_back(item.i);
  }
  return out;
}

Result<std::string> Emitter::string(size_t i, const char* kw, std::optional<std::string> dflt) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) {
    if (dflt) return *dflt;
    return error("fx-arg", "missing string " + argName(i, kw));
  }
  if (e->kind == Expr::Kind::Str) return e->s;
  return error("fx-arg", argName(i, kw) + " must be a string, got " + e->str());
}

Result<bool> Emitter::boolean(size_t i, const char* kw, bool dflt) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) return dflt;
  if (e->kind == Expr::Kind::Bool) return e->b;
  if (e->kind == Expr::Kind::Int) return e->i != 0;
  return error("fx-arg", argName(i, kw) + " must be a bool, got " + e->str());
}

Result<std::optional<DType>> Emitter::dtypeArg(size_t i, const char* kw) {
  const Expr* e = arg(i, kw);
  if (!e || e->kind == Expr::Kind::None) return std::optional<DType>();
  if (e->kind == Expr::Kind::Dotted || e->kind == Expr::Kind::Name) {
    if (auto t = dtypeFromTorchName(e->s)) return std::optional<DType>(*t);
  }
  return error("fx-dtype", "unsupported dtype " + e->str());
}

Result<Emitter::Operand> Emitter::operand(size_t i, const char* kw) {
  const Expr* e = arg(i, kw);
  if (!e) return error("fx-arg", "missing " + argName(i, kw));
  Operand o;
  if (e->isNumber()) {
    o.value = e->number();
    o.isInt = e->kind == Expr::Kind::Int;
    o.isBool = e->kind == Expr::Kind::Bool;
    return o;
  }
  SP_ASSIGN(TRef t, tensorOf(*e));
  o.t = std::move(t);
  return o;
}

// ---------------------------------------------------------------- outputs

Result<TensorType> Emitter::outType(size_t k) const {
  if (k >= outTypes.size() || !outTypes[k])
    return error("fx-untyped", "output " + std::to_string(k) + " has no declared type");
  return *outTypes[k];
}

Status Emitter::out(size_t k, OpKind o, std::vector<TRef> in, ir::AttrMap a) {
  SP_ASSERT(wanted(k), "output not wanted");
  SP_ASSIGN(TensorType t, outType(k));
  PendingOp p{o, {}, {outNames[k]}, std::move(a), src, {t}, captureLoc};
  for (const auto& x : in) p.inputs.push_back(x.name);
  ops.push_back(std::move(p));
  env[outNames[k]] = TRef{outNames[k], t};
  outBound[k] = true;
  return okStatus();
}

Status Emitter::outValue(size_t k, const TRef& v) {
  SP_ASSIGN(TensorType t, outType(k));
  if (!(t == v.type)) return out(k, OpKind::Identity, {v});  // the builder reports the mismatch
  // A value re-bound at another framework source line than the op that
  // computed it (a clone or copy standing where a collective was, a clone in
  // another module) keeps that line on an identity node: reports then name
  // the last source line that wrote the value, not only the first.
  if (const PendingOp* p = producer(v.name); p && !src.file.empty() && !p->loc.file.empty() &&
                                              (p->loc.file != src.file || p->loc.line != src.line))
    return out(k, OpKind::Identity, {v});
  env[outNames[k]] = v;
  outBound[k] = true;
  return okStatus();
}

Status Emitter::outAll(OpKind o, std::vector<TRef> in, ir::AttrMap a, size_t n) {
  PendingOp p{o, {}, {}, std::move(a), src, {}, captureLoc};
  for (const auto& x : in) p.inputs.push_back(x.name);
  for (size_t k = 0; k < n; ++k) {
    std::optional<TensorType> t = k < outTypes.size() ? outTypes[k] : std::nullopt;
    if (wanted(k)) {
      if (!t) return error("fx-untyped", "output " + std::to_string(k) + " has no declared type");
      p.outputs.push_back(outNames[k]);
      env[outNames[k]] = TRef{outNames[k], *t};
      outBound[k] = true;
    } else {
      p.outputs.push_back(fresh(nodeName + "_" + std::to_string(k)));
    }
    p.declared.push_back(t);
  }
  ops.push_back(std::move(p));
  return okStatus();
}

Result<TRef> Emitter::bind(size_t k, OpKind o, std::vector<TRef> in, ir::AttrMap a, TensorType type) {
  SP_ASSIGN(TensorType want, outType(k));
  if (want == type) {
    SP_TRY(out(k, o, std::move(in), std::move(a)));
    return env.at(outNames[k]);
  }
  TRef v = emit(o, std::move(in), std::move(a), type);
  if (want.shape == v.type.shape) {
    SP_TRY(out(k, OpKind::Cast, {v}, {{"to", want.dtype}}));
  } else {
    SP_TRY(out(k, OpKind::Reshape, {cast(v, want.dtype)}, {{"shape", want.shape}}));
  }
  return env.at(outNames[k]);
}

// ---------------------------------------------------------------- intermediates

TRef Emitter::emit(OpKind o, std::vector<TRef> in, ir::AttrMap a, TensorType type,
                   const std::string& tag) {
  std::string name = fresh(nodeName + "_" + (tag.empty() ? std::string(ir::opName(o)) : tag));
  PendingOp p{o, {}, {name}, std::move(a), src, {type}, captureLoc};
  for (const auto& x : in) p.inputs.push_back(x.name);
  ops.push_back(std::move(p));
  return TRef{name, std::move(type)};
}

TRef Emitter::constantTensor(const ir::Tensor& t) {
  return emit(OpKind::Constant, {}, {{"value", t}}, t.type(), "const");
}

TRef Emitter::constant(DType t, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto key = std::make_pair(int(t), std::to_string(bits));
  if (auto it = constants_.find(key); it != constants_.end()) return it->second;
  TRef c = constantTensor(ir::Tensor::scalar(t, v));
  constants_.emplace(key, c);
  return c;
}

TRef Emitter::cast(const TRef& x, DType t) {
  if (x.dtype() == t) return x;
  return emit(OpKind::Cast, {x}, {{"to", t}}, TensorType{t, x.type.shape}, "cast");
}

TRef Emitter::scalarOrCast(const Operand& o, DType t) {
  if (o.t) return cast(*o.t, t);
  return constant(t, o.value);
}

TRef Emitter::reshape(const TRef& x, const ir::Shape& s) {
  if (x.type.shape == s) return x;
  return emit(OpKind::Reshape, {x}, {{"shape", s}}, TensorType{x.dtype(), s}, "reshape");
}

TRef Emitter::expand(const TRef& x, const ir::Shape& s) {
  if (x.type.shape == s) return x;
  return emit(OpKind::Expand, {x}, {{"shape", s}}, TensorType{x.dtype(), s}, "expand");
}

TRef Emitter::unsqueeze(const TRef& x, std::vector<int64_t> axes) {
  if (axes.empty()) return x;
  ir::Shape s = x.type.shape;
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) s.insert(s.begin() + a, ir::Dim(1));
  return emit(OpKind::Unsqueeze, {x}, {{"axes", axes}}, TensorType{x.dtype(), s}, "unsqueeze");
}

TRef Emitter::binary(OpKind o, const TRef& a, const TRef& b) {
  // Shapes that do not broadcast (a malformed capture) keep a's shape here;
  // shape inference then reports them at the capture line.
  auto s = broadcastShapes(a.type.shape, b.type.shape);
  if (!s) s = a.type.shape;
  ir::OpCategory cat = ir::opInfo(o).category;
  DType t = cat == ir::OpCategory::Compare ? DType::Bool : a.dtype();
  return emit(o, {a, b}, {}, TensorType{t, *s});
}

TRef Emitter::unary(OpKind o, const TRef& a) { return emit(o, {a}, {}, a.type); }

TRef Emitter::reduce(OpKind o, const TRef& x, std::vector<int64_t> axes, bool keep) {
  ir::Shape s;
  std::vector<bool> red(size_t(x.rank()), axes.empty());
  for (int64_t a : axes) red[size_t(a)] = true;
  for (size_t d = 0; d < red.size(); ++d) {
    if (!red[d]) s.push_back(x.type.shape[d]);
    else if (keep) s.push_back(ir::Dim(1));
  }
  return emit(o, {x}, {{"axes", axes}, {"keepdims", int64_t(keep)}}, TensorType{x.dtype(), s});
}

// ---------------------------------------------------------------- state

Result<TRef> Emitter::resolveAttr(const std::string& fxName, const TensorType& type) {
  const std::string attr = attrs.at(fxName);
  attrs.erase(fxName);
  TRef r{attr, type};
  env[fxName] = r;
  if (auto it = opts.tensorConstants.find(attr); it != opts.tensorConstants.end()) {
    if (!(it->second.type() == type))
      return error("fx-constant-type", "tensor constant 'self." + attr + "' is given as " +
                                           it->second.type().str() + " but used as " + type.str());
    leaves.push_back({attr, type, true, it->second, src});
    return r;
  }
  int line = std::stoi(captureLoc.substr(captureLoc.rfind(':') + 1));
  FxConstantNote note{capturePath, line, attr, type, std::nullopt, ""};
  std::optional<std::pair<double, std::string>> v;
  if (type.shape.empty()) {
    if (!sites_) {
      sites_.emplace();
      if (!opts.constantSites.empty()) { SP_ASSIGN(*sites_, loadConstantSites(opts.constantSites)); }
    }
    v = resolveConstant({capturePath, attr, type, src, code}, opts, *sites_, note.origin);
  } else {
    note.origin = "only scalar constants can be given";
  }
  if (v) {
    note.value = v->first;
    note.origin = v->second;
    PendingOp p{OpKind::Constant, {}, {attr}, {{"value", ir::Tensor::scalar(type.dtype, v->first)}},
                src, {type}, captureLoc};
    ops.push_back(std::move(p));
  } else {
    note.origin += "; pass --fx-constant " + attr + "=VALUE";
    leaves.push_back({attr, type, true, std::nullopt, src});
  }
  if (opts.constantNotes) opts.constantNotes->push_back(std::move(note));
  return r;
}

const PendingOp* Emitter::producer(const std::string& name) const {
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    for (const auto& o : it->outputs)
      if (o == name) return &*it;
  return nullptr;
}

std::optional<double> Emitter::uniformValue(const TRef& x) const {
  std::string name = x.name;
  for (int hops = 0; hops < 64; ++hops) {
    const PendingOp* p = producer(name);
    if (!p) return std::nullopt;
    switch (p->op) {
      case OpKind::Constant: {
        const ir::Tensor& v = ir::attrTensor(p->attrs, "value");
        if (v.numel() != 1) return std::nullopt;
        return v.getAsDouble(0);
      }
      case OpKind::Expand: case OpKind::Reshape: case OpKind::Squeeze: case OpKind::Unsqueeze:
      case OpKind::Identity:
        if (p->inputs.empty()) return std::nullopt;
        name = p->inputs[0];
        break;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- promotion

static int category(DType t) { return t == DType::Bool ? 0 : ir::isFloat(t) ? 2 : 1; }

DType promoteTypes(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
    return ir::dtypeSize(a) >= ir::dtypeSize(b) ? a : b;
  }
  // Integers: u8 with a signed type needs a wider signed type.
  if (a == DType::U8 || b == DType::U8) {
    DType s = a == DType::U8 ? b : a;
    return s == DType::I8 ? DType::I16 : s;
  }
  return ir::dtypeSize(a) >= ir::dtypeSize(b) ? a : b;
}

ir::DType resultType(const std::vector<Emitter::Operand>& ops) {
  // torch.result_type: dimensioned tensors, then zero-dim tensors, then
  // Python numbers; a lower group only matters when its category is higher.
  std::optional<DType> groups[3];
  for (const auto& o : ops) {
    int g;
    DType t;
    if (o.t) {
      g = o.t->rank() > 0 ? 0 : 1;
      t = o.t->dtype();
    } else {
      g = 2;
      t = o.isBool ? DType::Bool : o.isInt ? DType::I64 : DType::F32;
    }
    groups[g] = groups[g] ? promoteTypes(*groups[g], t) : t;
  }
  auto combine = [](std::optional<DType> hi, std::optional<DType> lo) -> std::optional<DType> {
    if (!hi) return lo;
    if (!lo) return hi;
    if (category(*hi) >= category(*lo)) return hi;
    return promoteTypes(*hi, *lo);
  };
  auto r = combine(groups[0], combine(groups[1], groups[2]));
  return r ? *r : DType::F32;
}

bool canCast(DType from, DType to) {
  if (ir::isFloat(from) && (ir::isInteger(to) || to == DType::Bool)) return false;
  return from == DType::Bool || to != DType::Bool;
}

std::string torchTypeName(DType t) {
  switch (t) {
    case DType::F32: return "Float";
    case DType::F64: return "Double";
    case DType::F16: return "Half";
    case DType::BF16: return "BFloat16";
    case DType::I64: return "Long";
    case DType::I32: return "Int";
    case DType::I16: return "Short";
    case DType::I8: return "Char";
    case DType::U8: return "Byte";
    case DType::Bool: return "Bool";
  }
  return std::string(ir::dtypeName(t));
}

std::optional<ir::Shape> broadcastShapes(const ir::Shape& a, const ir::Shape& b) {
  size_t n = std::max(a.size(), b.size());
  ir::Shape out(n);
  for (size_t k = 0; k < n; ++k) {
    ir::Dim da = k < n - a.size() ? ir::Dim(1) : a[k - (n - a.size())];
    ir::Dim db = k < n - b.size() ? ir::Dim(1) : b[k - (n - b.size())];
    if (da == db || db == ir::Dim(1)) out[k] = da;
    else if (da == ir::Dim(1)) out[k] = db;
    else return std::nullopt;
  }
  return out;
}

}  // namespace sp::frontend::fx
