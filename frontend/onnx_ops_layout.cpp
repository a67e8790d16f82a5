// Layout and source ops whose ONNX tensor inputs (shape, starts/ends, axes,
// sizes, range bounds) become IR attributes, and the folding of the integer
// shape arithmetic that feeds them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "frontend/onnx_ops_util.h"

namespace sp::frontend::onnx_detail {

using ir::AttrMap;
using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

namespace {
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxConstElements = int64_t(1) << 16;

Result<std::vector<int64_t>> axesOf(Importer& im, size_t inputIdx, int64_t rank) {
  std::vector<int64_t> axes;
  if (im.opset() >= 13 || (im.node().op_type() == "Slice" && im.opset() >= 10)) {
    if (im.hasInput(inputIdx)) {
      SP_ASSIGN(axes, im.constInts(inputIdx, "axes"));
    }
  } else {
    axes = attrInts(im, "axes");
  }
  for (auto& a : axes) {
    SP_ASSIGN(a, normAxisAt(im, a, rank));
  }
  return axes;
}
}  // namespace

Result<bool> foldShapeArithmetic(Importer& im) {
  static const std::set<std::string> kOps{
      "Shape",   "Size", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Cast", "Identity",
      "Reshape", "Add",  "Sub",    "Mul",   "Div",    "Equal",     "Max",     "Min",  "Where"};
  const std::string& op = im.node().op_type();
  if (!kOps.count(op)) return false;
  auto k = foldKnown(op, im);
  if (!k) return false;
  DType dt = DType::I64;
  if (op == "Equal") {
    dt = DType::Bool;
  } else if (op == "Cast") {
    SP_ASSIGN(dt, dtypeFromOnnx(int32_t(attrInt(im, "to", 0)), "Cast 'to'"));
    if (dt == DType::Bool)
      for (Dim& d : k->vals) d = Dim(d.isConcrete() ? int64_t(d.coef != 0) : 1);
  } else if (op == "Where") {
    dt = im.val(*im.input(1)).type.dtype;
  } else if (op != "Shape" && op != "Size") {
    dt = im.val(*im.input(0)).type.dtype;
  }
  Val v;
  v.type = {dt, k->scalar ? Shape{} : Shape{Dim(int64_t(k->vals.size()))}};
  if (k->concrete()) {
    std::vector<int64_t> ints;
    for (const Dim& d : k->vals) ints.push_back(d.coef);
    v.konst = tensorFromInts(ints, k->scalar, dt);
  }
  v.known = std::move(k);
  SP_TRY(im.define(im.output(0), std::move(v)));
  return true;
}

Status reshape(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  SP_ASSIGN(KnownInts k, im.knownInts(1, "shape"));
  const Shape& in = im.val(x).type.shape;
  bool allowZero = attrInt(im, "allowzero", 0) != 0;
  Shape out;
  int64_t inferIdx = -1;
  for (size_t i = 0; i < k.vals.size(); ++i) {
    const Dim& d = k.vals[i];
    if (d.isConcrete() && d.coef == 0 && !allowZero) {
      if (i >= in.size())
        return im.err("onnx-bad-reshape", "Reshape: 0 at position " + std::to_string(i) +
                                              " copies a dim the input " + ir::shapeStr(in) +
                                              " lacks");
      out.push_back(in[i]);
    } else if (d.isConcrete() && d.coef == -1) {
      if (inferIdx >= 0)
        return im.err("onnx-bad-reshape", "Reshape: more than one -1 in the target shape");
      inferIdx = int64_t(i);
      out.push_back(Dim(1));
    } else if (d.coef < 0) {
      return im.err("onnx-bad-reshape",
                    "Reshape: negative dim " + d.str() + " in the target shape");
    } else {
      out.push_back(d);
    }
  }
  if (inferIdx >= 0) {
    auto total = ir::numElements(in);
    Dim rest = product(out, 0, int64_t(out.size()));
    auto q = total ? ir::exactDiv(*total, rest) : std::nullopt;
    if (!q)
      return im.err("onnx-bad-reshape", "Reshape: cannot infer -1 reshaping " + ir::shapeStr(in) +
                                            " to " + ir::shapeStr(out) + " with -1 at " +
                                            std::to_string(inferIdx));
    out[size_t(inferIdx)] = *q;
  }
  SP_TRY(im.emit1(OpKind::Reshape, {x}, {{"shape", out}}, im.output(0)));
  return okStatus();
}

Status expand(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  SP_ASSIGN(KnownInts k, im.knownInts(1, "shape"));
  const Shape& in = im.val(x).type.shape;
  size_t r = std::max(in.size(), k.vals.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    Dim a = i < r - in.size() ? Dim(1) : in[i - (r - in.size())];
    Dim b = i < r - k.vals.size() ? Dim(1) : k.vals[i - (r - k.vals.size())];
    if (a == b || b == Dim(1))
      out[i] = a;
    else if (a == Dim(1))
      out[i] = b;
    else
      return im.err("onnx-bad-expand", "Expand: cannot broadcast " + ir::shapeStr(in) + " to " +
                                           ir::shapeStr(Shape(k.vals)));
  }
  SP_TRY(im.emit1(OpKind::Expand, {x}, {{"shape", out}}, im.output(0)));
  return okStatus();
}

Status squeeze(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  const Shape& in = im.val(x).type.shape;
  SP_ASSIGN(auto axes, axesOf(im, 1, int64_t(in.size())));
  bool given = !axes.empty();
  if (!given)
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] == Dim(1)) axes.push_back(int64_t(i));
  for (int64_t a : axes)
    if (in[size_t(a)] != Dim(1))
      return im.err("onnx-bad-squeeze",
                    "Squeeze: dim " + std::to_string(a) + " of " + ir::shapeStr(in) + " is not 1");
  std::sort(axes.begin(), axes.end());
  if (axes.empty()) return im.alias(im.output(0), x);
  SP_TRY(im.emit1(OpKind::Squeeze, {x}, {{"axes", axes}}, im.output(0)));
  return okStatus();
}

Status unsqueeze(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  const Shape& in = im.val(x).type.shape;
  size_t n = im.opset() >= 13 ? 0 : attrInts(im, "axes").size();
  if (im.opset() >= 13) {
    SP_ASSIGN(auto raw, im.constInts(1, "axes"));
    n = raw.size();
  }
  SP_ASSIGN(auto axes, axesOf(im, 1, int64_t(in.size() + n)));
  std::sort(axes.begin(), axes.end());
  SP_TRY(im.emit1(OpKind::Unsqueeze, {x}, {{"axes", axes}}, im.output(0)));
  return okStatus();
}

Status split(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  const Shape& in = im.val(x).type.shape;
  SP_ASSIGN(int64_t axis, normAxisAt(im, attrInt(im, "axis", 0), int64_t(in.size())));
  std::vector<int64_t> sizes;
  size_t n = im.numOutputs();
  if (im.opset() >= 13 && im.hasInput(1)) {
    SP_ASSIGN(sizes, im.constInts(1, "split"));
  } else if (im.opset() < 13 && hasAttr(im, "split")) {
    sizes = attrInts(im, "split");
  } else {
    const Dim& e = in[size_t(axis)];
    if (!e.isConcrete())
      return im.err("onnx-not-constant",
                    "Split: equal split of symbolic dim " + e.str() + " is not supported");
    if (hasAttr(im, "num_outputs")) n = size_t(attrInt(im, "num_outputs", int64_t(n)));
    int64_t chunk = n == 0 ? 0 : (e.coef + int64_t(n) - 1) / int64_t(n);
    for (size_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, e.coef - chunk * int64_t(i))));
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < im.numOutputs(); ++i) outs.push_back(im.output(i));
  SP_TRY(im.emit(OpKind::Split, {x}, {{"axis", axis}, {"sizes", sizes}}, outs));
  return okStatus();
}

Status slice(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  const Shape& in = im.val(x).type.shape;
  int64_t rank = int64_t(in.size());
  KnownInts starts, ends;
  std::vector<int64_t> axes, steps;
  if (im.opset() < 10) {
    for (int64_t v : attrInts(im, "starts")) starts.vals.push_back(Dim(v));
    for (int64_t v : attrInts(im, "ends")) ends.vals.push_back(Dim(v));
    axes = attrInts(im, "axes");
  } else {
    SP_ASSIGN(starts, im.knownInts(1, "starts"));
    SP_ASSIGN(ends, im.knownInts(2, "ends"));
    if (im.hasInput(3)) {
      SP_ASSIGN(axes, im.constInts(3, "axes"));
    }
    if (im.hasInput(4)) {
      SP_ASSIGN(steps, im.constInts(4, "steps"));
    }
  }
  size_t n = starts.vals.size();
  if (ends.vals.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n))
    return im.err("onnx-bad-slice", "Slice: starts, ends, axes and steps have different lengths");
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(n, 1);
  std::vector<int64_t> cs, ce, ca, cst;
  std::vector<std::pair<int64_t, Dim>> gathers;  // axis, symbolic end
  for (size_t i = 0; i < n; ++i) {
    SP_ASSIGN(int64_t a, normAxisAt(im, axes[i], rank));
    const Dim& s = starts.vals[i];
    const Dim& e = ends.vals[i];
    if (!s.isConcrete())
      return im.err("onnx-not-constant", "Slice: symbolic start " + s.str() + " is not supported");
    if (e.isConcrete()) {
      cs.push_back(s.coef), ce.push_back(e.coef), ca.push_back(a), cst.push_back(steps[i]);
    } else if (e == in[size_t(a)] && steps[i] > 0) {
      cs.push_back(s.coef), ce.push_back(kInt64Max), ca.push_back(a), cst.push_back(steps[i]);
    } else if (s.coef == 0 && steps[i] == 1) {
      gathers.emplace_back(a, e);
    } else {
      return im.err("onnx-not-constant", "Slice: symbolic end " + e.str() + " with start " +
                                             s.str() + " and step " + std::to_string(steps[i]) +
                                             " is not supported");
    }
  }
  std::string cur = x;
  if (!cs.empty()) {
    AttrMap a{{"starts", cs}, {"ends", ce}, {"axes", ca}, {"steps", cst}};
    SP_ASSIGN(cur, im.emit1(OpKind::Slice, {x}, a, gathers.empty() ? im.output(0) : ""));
  }
  for (size_t g = 0; g < gathers.size(); ++g) {
    SP_ASSIGN(std::string idx, symbolicArange(im, gathers[g].second));
    bool last = g + 1 == gathers.size();
    SP_ASSIGN(cur, im.emit1(OpKind::Gather, {cur, idx}, {{"axis", gathers[g].first}},
                            last ? im.output(0) : ""));
  }
  if (cs.empty() && gathers.empty()) return im.alias(im.output(0), x);
  return okStatus();
}

Status constantOfShape(Importer& im) {
  Tensor value = Tensor::scalar(DType::F32, 0);
  for (const auto& a : im.node().attribute())
    if (a.name() == "value") {
      auto t = tensorFromProto(a.t(), "ConstantOfShape value");
      if (!t) return im.err(t.error().id, t.error().message);
      if (t->numel() != 1)
        return im.err("onnx-bad-attr", "ConstantOfShape: value must have one element, got " +
                                           std::to_string(t->numel()));
      value = t->reshaped({});
    }
  SP_ASSIGN(KnownInts k, im.knownInts(0, "shape"));
  if (k.concrete()) {
    std::vector<int64_t> dims;
    int64_t numel = 1;
    for (const Dim& d : k.vals) {
      if (d.coef < 0 || d.coef > ir::kMaxElements || (d.coef && numel > ir::kMaxElements / d.coef))
        return im.err("bad-dim",
                      "ConstantOfShape: shape " + ir::shapeStr(Shape(k.vals)) + " is out of range");
      dims.push_back(d.coef);
      numel *= d.coef;
    }
    if (numel <= kMaxConstElements) {
      Tensor t(value.dtype(), dims);
      for (int64_t i = 0; i < numel; ++i)
        std::memcpy(t.mutableRaw() + size_t(i) * ir::dtypeSize(value.dtype()), value.raw(),
                    ir::dtypeSize(value.dtype()));
      Val v;
      v.type = t.type();
      v.known = knownOfTensor(t);
      v.konst = std::move(t);
      return im.define(im.output(0), std::move(v));
    }
  }
  SP_ASSIGN(std::string c, im.constant(value, "value"));
  if (k.vals.empty()) return im.alias(im.output(0), c);
  SP_TRY(im.emit1(OpKind::Expand, {c}, {{"shape", Shape(k.vals)}}, im.output(0)));
  return okStatus();
}

Status range(Importer& im) {
  SP_ASSIGN(std::string s0, im.input(0));
  DType dt = im.val(s0).type.dtype;
  SP_ASSIGN(KnownInts lim, im.knownInts(1, "limit").ok() ? im.knownInts(1, "limit")
                                                         : Result<KnownInts>(KnownInts{}));
  if (lim.vals.size() == 1 && !lim.vals[0].isConcrete()) {
    SP_ASSIGN(double start, im.constScalar(0, "start"));
    SP_ASSIGN(double delta, im.constScalar(2, "delta"));
    if (start != 0 || delta != 1)
      return im.err("onnx-not-constant",
                    "Range: symbolic limit " + lim.vals[0].str() + " needs start 0 and delta 1");
    SP_ASSIGN(std::string r, symbolicArange(im, lim.vals[0]));
    if (dt == DType::I64) return im.alias(im.output(0), r);
    SP_TRY(im.emit1(OpKind::Cast, {r}, {{"to", dt}}, im.output(0)));
    return okStatus();
  }
  SP_ASSIGN(double start, im.constScalar(0, "start"));
  SP_ASSIGN(double limit, im.constScalar(1, "limit"));
  SP_ASSIGN(double delta, im.constScalar(2, "delta"));
  if (delta == 0) return im.err("onnx-bad-range", "Range: delta is 0");
  double steps = std::ceil((limit - start) / delta);
  int64_t n = steps > 0 ? int64_t(steps) : 0;
  if (n > kMaxConstElements) {
    AttrMap a{{"start", start}, {"limit", limit}, {"delta", delta}, {"dtype", dt}};
    SP_TRY(im.emit1(OpKind::Range, {}, a, im.output(0)));
    return okStatus();
  }
  Tensor t(dt, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (dt == DType::I64)
      t.mutableData<int64_t>()[i] = int64_t(start) + i * int64_t(delta);
    else if (dt == DType::F32)
      t.setFromDouble(i, double(float(start) + float(i) * float(delta)));
    else
      t.setFromDouble(i, start + double(i) * delta);
  }
  Val v;
  v.type = t.type();
  v.known = knownOfTensor(t);
  v.konst = std::move(t);
  return im.define(im.output(0), std::move(v));
}

}  // namespace sp::frontend::onnx_detail
