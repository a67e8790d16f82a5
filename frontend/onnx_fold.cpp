// ONNX tensor and type conversions, and the symbolic folding of the shape
// arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) that
// dynamic-axes exports put in front of Reshape, Expand and friends.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

#include "frontend/onnx_context.h"

namespace sp::frontend::onnx_detail {

using ir::Dim;
using ir::DType;
using ir::Tensor;

bool KnownInts::concrete() const {
  for (const Dim& d : vals)
    if (!d.isConcrete()) return false;
  return true;
}

Result<DType> dtypeFromOnnx(int32_t t, const std::string& what) {
  using TP = onnx::TensorProto;
  switch (t) {
    case TP::FLOAT:
      return DType::F32;
    case TP::DOUBLE:
      return DType::F64;
    case TP::FLOAT16:
      return DType::F16;
    case TP::BFLOAT16:
      return DType::BF16;
    case TP::INT64:
      return DType::I64;
    case TP::INT32:
      return DType::I32;
    case TP::INT16:
      return DType::I16;
    case TP::INT8:
      return DType::I8;
    case TP::UINT8:
      return DType::U8;
    case TP::BOOL:
      return DType::Bool;
    default:
      break;
  }
  std::string name = onnx::TensorProto_DataType_IsValid(t)
                         ? onnx::TensorProto_DataType_Name(onnx::TensorProto_DataType(t))
                         : std::to_string(t);
  return makeError("onnx-unsupported-dtype", what + ": element type " + name + " is not supported");
}

Result<Tensor> tensorFromProto(const onnx::TensorProto& t, const std::string& what) {
  SP_ASSIGN(DType dt, dtypeFromOnnx(t.data_type(), what));
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > ir::kMaxElements)
      return makeError("bad-dim",
                       what + ": dim " + std::to_string(d) + " is out of range [0, 2^48]");
    if (d != 0 && numel > ir::kMaxElements / d)
      return makeError("bad-dim", what + ": more than 2^48 elements");
    numel *= d;
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return makeError("onnx-external-data", what + ": external data was not resolved");
  size_t esize = ir::dtypeSize(dt);
  auto sizeErr = [&](size_t have) {
    return makeError("onnx-bad-tensor", what + ": " + std::to_string(numel) + " elements of " +
                                            std::string(ir::dtypeName(dt)) +
                                            " expected, data has " + std::to_string(have));
  };
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != size_t(numel) * esize) return sizeErr(raw.size() / esize);
    Tensor out(dt, dims);
    if (!raw.empty()) std::memcpy(out.mutableRaw(), raw.data(), raw.size());
    return out;
  }
  auto fill = [&](const auto& field, auto conv) -> Result<Tensor> {
    if (int64_t(field.size()) != numel) return sizeErr(size_t(field.size()));
    Tensor out(dt, dims);
    for (int64_t i = 0; i < numel; ++i) conv(out, i, field.Get(int(i)));
    return out;
  };
  auto setD = [](Tensor& o, int64_t i, auto v) { o.setFromDouble(i, double(v)); };
  switch (dt) {
    case DType::F32:
      return fill(t.float_data(), setD);
    case DType::F64:
      return fill(t.double_data(), setD);
    case DType::I64:
      return fill(t.int64_data(),
                  [](Tensor& o, int64_t i, int64_t v) { o.mutableData<int64_t>()[i] = v; });
    case DType::F16:
    case DType::BF16:
      // Stored as bit patterns in int32_data.
      return fill(t.int32_data(), [](Tensor& o, int64_t i, int32_t v) {
        o.mutableData<uint16_t>()[i] = uint16_t(v);
      });
    default:
      return fill(t.int32_data(), setD);
  }
}

Result<ir::TensorType> typeFromOnnx(const onnx::TypeProto& t, const std::string& what,
                                    const std::string& symPrefix) {
  if (!t.has_tensor_type())
    return makeError("onnx-unsupported-type", what + ": only tensor types are supported");
  const auto& tt = t.tensor_type();
  SP_ASSIGN(DType dt, dtypeFromOnnx(tt.elem_type(), what));
  ir::TensorType out{dt, {}};
  if (!tt.has_shape()) return makeError("onnx-unknown-rank", what + ": the rank is unknown");
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      out.shape.push_back(Dim(d.dim_value()));
    } else {
      std::string s = d.has_dim_param() && !d.dim_param().empty()
                          ? d.dim_param()
                          : symPrefix + "_" + std::to_string(i);
      for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
      if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "d" + s;
      out.shape.push_back(Dim::sym(s));
    }
  }
  SP_TRY(ir::checkType(out, what));
  return out;
}

Tensor tensorFromInts(const std::vector<int64_t>& v, bool scalar, DType dt) {
  Tensor t(dt, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.setFromDouble(int64_t(i), double(v[i]));
  if (dt == DType::I64)
    for (size_t i = 0; i < v.size(); ++i) t.mutableData<int64_t>()[i] = v[i];
  return t;
}

std::vector<int64_t> intsOfTensor(const Tensor& t) {
  std::vector<int64_t> out(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    out[size_t(i)] = t.dtype() == DType::I64 ? t.data<int64_t>()[i] : int64_t(t.getAsDouble(i));
  return out;
}

std::optional<KnownInts> knownOfTensor(const Tensor& t) {
  if (ir::isFloat(t.dtype()) || t.rank() > 1 || t.numel() > 64) return std::nullopt;
  KnownInts k;
  k.scalar = t.rank() == 0;
  for (int64_t v : intsOfTensor(t)) k.vals.push_back(Dim(v));
  return k;
}

namespace {

std::optional<KnownInts> knownOf(const Importer& im, size_t i) {
  if (!im.hasInput(i)) return std::nullopt;
  const Val& v = im.val(*im.input(i));
  if (v.known) return v.known;
  if (v.konst) return knownOfTensor(*v.konst);
  return std::nullopt;
}

int64_t intAttr(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return def;
}

Dim neg(const Dim& d) {
  Dim r = d;
  r.coef = -r.coef;
  return r;
}

std::optional<Dim> binop(const std::string& op, const Dim& a, const Dim& b) {
  if (a.isConcrete() && b.isConcrete()) {
    int64_t x = a.coef, y = b.coef;
    if (op == "Add") return Dim(x + y);
    if (op == "Sub") return Dim(x - y);
    if (op == "Mul") return Dim(x * y);
    if (op == "Div") return y == 0 ? std::nullopt : std::optional<Dim>(Dim(x / y));
    if (op == "Max") return Dim(std::max(x, y));
    if (op == "Min") return Dim(std::min(x, y));
    if (op == "Equal") return Dim(x == y ? 1 : 0);
    return std::nullopt;
  }
  if (op == "Add") return ir::addDims(a, b);
  if (op == "Sub") return ir::addDims(a, neg(b));
  if (op == "Mul") return a * b;
  if (op == "Div") return ir::exactDiv(a, b);
  if (op == "Equal") {
    if (a == b) return Dim(1);
    // Symbolic dims are positive extents: they never equal 0 or a negative.
    const Dim& c = a.isConcrete() ? a : b;
    if (c.isConcrete() && c.coef <= 0) return Dim(0);
    return std::nullopt;
  }
  return std::nullopt;
}

// Elementwise with numpy broadcasting of rank <= 1 values.
std::optional<KnownInts> broadcast2(
    const KnownInts& a, const KnownInts& b,
    const std::function<std::optional<Dim>(const Dim&, const Dim&)>& f) {
  size_t n = std::max(a.vals.size(), b.vals.size());
  if (a.vals.size() != n && a.vals.size() != 1) return std::nullopt;
  if (b.vals.size() != n && b.vals.size() != 1) return std::nullopt;
  KnownInts r;
  r.scalar = a.scalar && b.scalar;
  for (size_t i = 0; i < n; ++i) {
    auto d = f(a.vals[a.vals.size() == 1 ? 0 : i], b.vals[b.vals.size() == 1 ? 0 : i]);
    if (!d) return std::nullopt;
    r.vals.push_back(*d);
  }
  return r;
}

int64_t clampIndex(int64_t v, int64_t n, int64_t lo, int64_t hi) {
  if (v < 0) v += n;
  return std::max(lo, std::min(hi, v));
}

}  // namespace

std::optional<KnownInts> foldKnown(const std::string& op, Importer& im) {
  const auto& node = im.node();
  if (op == "Shape" || op == "Size") {
    if (!im.hasInput(0)) return std::nullopt;
    const ir::Shape& s = im.val(*im.input(0)).type.shape;
    int64_t r = int64_t(s.size());
    if (op == "Size") {
      auto n = ir::numElements(s);
      if (!n) return std::nullopt;
      return KnownInts{{*n}, true};
    }
    int64_t start = clampIndex(intAttr(node, "start", 0), r, 0, r);
    int64_t end = clampIndex(intAttr(node, "end", r), r, 0, r);
    KnownInts k;
    for (int64_t i = start; i < end; ++i) k.vals.push_back(s[size_t(i)]);
    return k;
  }
  auto a = knownOf(im, 0);
  if (!a) return std::nullopt;
  if (op == "Identity") return a;
  if (op == "Cast") {
    int64_t to = intAttr(node, "to", 0);
    auto dt = dtypeFromOnnx(int32_t(to), "");
    // Integer values stay exact in float (shape arithmetic is far below 2^24).
    if (!dt) return std::nullopt;
    return a;
  }
  if (op == "Unsqueeze" && a->scalar) return KnownInts{a->vals, false};
  if (op == "Squeeze" && !a->scalar && a->vals.size() == 1) return KnownInts{a->vals, true};
  if (op == "Reshape" && a->scalar == false) {
    auto shape = knownOf(im, 1);
    if (!shape || !shape->concrete()) return std::nullopt;
    if (shape->vals.empty() && a->vals.size() == 1) return KnownInts{a->vals, true};
    if (shape->vals.size() == 1 &&
        (shape->vals[0].coef == -1 || shape->vals[0].coef == int64_t(a->vals.size())))
      return KnownInts{a->vals, false};
    return std::nullopt;
  }
  if (op == "Gather") {
    auto idx = knownOf(im, 1);
    if (a->scalar || !idx || !idx->concrete() || intAttr(node, "axis", 0) != 0) return std::nullopt;
    KnownInts r;
    r.scalar = idx->scalar;
    int64_t n = int64_t(a->vals.size());
    for (const Dim& d : idx->vals) {
      int64_t i = d.coef < 0 ? d.coef + n : d.coef;
      if (i < 0 || i >= n) return std::nullopt;
      r.vals.push_back(a->vals[size_t(i)]);
    }
    return r;
  }
  if (op == "Slice") {
    if (a->scalar) return std::nullopt;
    auto st = knownOf(im, 1), en = knownOf(im, 2);
    if (!st || !en || !st->concrete() || !en->concrete() || st->vals.size() != 1 ||
        en->vals.size() != 1)
      return std::nullopt;
    int64_t step = 1;
    if (im.hasInput(4)) {
      auto s = knownOf(im, 4);
      if (!s || !s->concrete() || s->vals.size() != 1) return std::nullopt;
      step = s->vals[0].coef;
    }
    if (step == 0) return std::nullopt;
    int64_t n = int64_t(a->vals.size());
    int64_t b0 = st->vals[0].coef, e0 = en->vals[0].coef;
    KnownInts r;
    if (step > 0) {
      b0 = clampIndex(b0, n, 0, n);
      e0 = clampIndex(e0, n, 0, n);
      for (int64_t i = b0; i < e0; i += step) r.vals.push_back(a->vals[size_t(i)]);
    } else {
      b0 = clampIndex(b0, n, -1, n - 1);
      e0 = clampIndex(e0, n, -1, n - 1);
      for (int64_t i = b0; i > e0; i += step) r.vals.push_back(a->vals[size_t(i)]);
    }
    return r;
  }
  if (op == "Concat") {
    KnownInts r;
    for (size_t i = 0; i < im.numInputs(); ++i) {
      auto k = knownOf(im, i);
      if (!k || k->scalar) return std::nullopt;
      r.vals.insert(r.vals.end(), k->vals.begin(), k->vals.end());
    }
    return r;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Equal" || op == "Max" ||
      op == "Min") {
    auto b = knownOf(im, 1);
    if (!b) return std::nullopt;
    return broadcast2(*a, *b, [&](const Dim& x, const Dim& y) { return binop(op, x, y); });
  }
  if (op == "Where") {
    auto x = knownOf(im, 1), y = knownOf(im, 2);
    if (!a->concrete() || !x || !y) return std::nullopt;
    size_t n = std::max({a->vals.size(), x->vals.size(), y->vals.size()});
    auto pick = [&](const KnownInts& k, size_t i) -> std::optional<Dim> {
      if (k.vals.size() == 1) return k.vals[0];
      if (k.vals.size() == n) return k.vals[i];
      return std::nullopt;
    };
    KnownInts r;
    r.scalar = a->scalar && x->scalar && y->scalar;
    for (size_t i = 0; i < n; ++i) {
      auto ci = pick(*a, i), xi = pick(*x, i), yi = pick(*y, i);
      if (!ci || !xi || !yi) return std::nullopt;
      r.vals.push_back(ci->coef != 0 ? *xi : *yi);
    }
    return r;
  }
  return std::nullopt;
}

}  // namespace sp::frontend::onnx_detail
