// x[index] = value (operator.setitem) as a functional update: x's new value
// built from x and value with ATen ops of the table, in torch's order.
// Torch takes the basic items of the index (ints, slices, None, Ellipsis)
// as views of x, the region, then writes into the region: through an
// advanced item (a boolean mask, a 1-d integer tensor, a list of ints) with
// index_put, else over all of it with copy_ (value cast to x's dtype and
// broadcast). The region's new value is then written back through the
// views, innermost first: a select as slice_scatter of the value
// unsqueezed, a slice as slice_scatter, None as squeeze. Only x's value
// changes here; which other names see it is the in-place machinery's
// (fx_mutation.h).
#include <cmath>
#include <set>

#include "frontend/fx_ops.h"
#include "frontend/fx_torch_ops.h"

namespace sp::frontend::fx {

namespace {

// The steps of the translation, each typed here but the last: the
// statement's value, typed by the capture (x's type).
class Steps {
 public:
  Steps(Emitter& e, const std::string& target, const Expr& at) : e_(e), target_(target), at_(at) {}

  TRef add(const std::string& op, std::vector<Expr> args, const ir::TensorType& type, const char* tag) {
    AtenStep st;
    st.op = op;
    st.call = atenCallExpr(op, std::move(args), {}, at_);
    st.target = e_.fresh(target_ + "_" + tag);
    st.type = type;
    steps_.push_back(std::move(st));
    return TRef{steps_.back().target, type};
  }

  std::vector<AtenStep> finish() {
    SP_ASSERT(!steps_.empty(), "setitem lowering produced no step");
    steps_.back().target.clear();
    steps_.back().type.reset();
    return std::move(steps_);
  }

 private:
  Emitter& e_;
  const std::string& target_;
  const Expr& at_;
  std::vector<AtenStep> steps_;
};

// A basic item as the view it takes of `base` (an FX name and its type).
struct View {
  enum class Kind { Select, Slice, Unsqueeze };
  Kind kind = Kind::Unsqueeze;
  int64_t dim = 0;
  SliceBounds b;  // Select: b.start is the (non-negative) index
  TRef base;
};

struct Region {
  TRef value;                    // x seen through the basic items
  std::vector<View> views;       // outermost first
  std::optional<Expr> advanced;  // the advanced item, if any
  int64_t at = 0;                // its first dim in the region
};

Expr listOf(std::vector<Expr> items) {
  Expr l;
  l.kind = Expr::Kind::List;
  l.items = std::move(items);
  return l;
}

bool isAdvanced(const Emitter& e, const Expr& i) { return isTensorValue(e, i) || i.kind == Expr::Kind::List; }

// The dims of x an item indexes: a boolean mask all of its own, None and
// Ellipsis none (Ellipsis: the rest, counted apart).
Result<int64_t> dimsTaken(Emitter& e, const Expr& i) {
  if (isEllipsisItem(i) || i.kind == Expr::Kind::None) return int64_t(0);
  if (!isTensorValue(e, i)) return int64_t(1);
  SP_ASSIGN(TRef t, e.tensorOf(i));
  return t.dtype() == ir::DType::Bool ? t.rank() : int64_t(1);
}

// The view a basic item (None, int, slice) takes of the region at dim d,
// appended to r; d moves past the dims it indexes.
Status takeView(Emitter& e, const Expr& i, const Expr& idx, int64_t& d, Region& r, Steps& st) {
  const TRef base = r.value;
  ir::TensorType t = base.type;
  View v{View::Kind::Unsqueeze, d, {}, base};
  if (i.kind == Expr::Kind::None) {
    t.shape.insert(t.shape.begin() + d, ir::Dim(1));
    r.value = st.add("aten.unsqueeze.default", {nameExpr(base.name), intExpr(d)}, t, "unsqueeze");
    ++d;
  } else if (i.kind == Expr::Kind::Int) {
    v.kind = View::Kind::Select;
    SP_ASSIGN(v.b.start, selectIndex(e, i.i, idx, t.shape[size_t(d)], d));
    t.shape.erase(t.shape.begin() + d);
    r.value = st.add("aten.select.int", {nameExpr(base.name), intExpr(d), intExpr(v.b.start)}, t, "select");
  } else if (isSliceItem(i)) {
    SP_ASSIGN(auto b, sliceBounds(e, i, idx, t.shape[size_t(d)]));
    ++d;
    if (!b) return okStatus();  // the whole dim: no view
    v.kind = View::Kind::Slice;
    v.b = *b;
    t.shape[size_t(v.dim)] = ir::Dim(b->length);
    r.value = st.add("aten.slice.Tensor",
                     {nameExpr(base.name), intExpr(v.dim), intExpr(b->start), intExpr(b->end), intExpr(b->step)}, t,
                     "slice");
  } else {
    return e.error("fx-unsupported", "index item " + i.str() + " of " + idx.str() +
                                         " is not supported in subscript assignment (ints, slice(a, b, c) with "
                                         "constant bounds, None, Ellipsis, a tensor or a list of ints)");
  }
  r.views.push_back(std::move(v));
  return okStatus();
}

// The region x[index] denotes: the views of its basic items, and where the
// advanced item (at most one, and with no int: torch would broadcast those
// together) indexes it.
Result<Region> takeRegion(Emitter& e, const TRef& x, const Expr& idx, Steps& st) {
  const std::vector<Expr> items = idx.kind == Expr::Kind::Tuple ? idx.items : std::vector<Expr>{idx};
  int64_t consumed = 0, ellipses = 0, advanced = 0, ints = 0;
  for (const auto& i : items) {
    SP_ASSIGN(int64_t n, dimsTaken(e, i));
    consumed += n;
    ellipses += isEllipsisItem(i);
    advanced += isAdvanced(e, i);
    ints += i.kind == Expr::Kind::Int;
  }
  if (ellipses > 1) return e.error("fx-arg", "index " + idx.str() + " has more than one Ellipsis");
  if (advanced > 1 || (advanced && ints))
    return e.error("fx-unsupported", "index " + idx.str() +
                                         " combines a tensor or list index with other tensor, list or integer "
                                         "indices (advanced indexing); only one with slices, None and Ellipsis is "
                                         "supported");
  if (consumed > x.rank())
    return e.error("fx-index", "index " + idx.str() + " indexes " + std::to_string(consumed) + " dims of a " +
                                   std::to_string(x.rank()) + "-d tensor");
  Region r{x, {}, std::nullopt, 0};
  int64_t d = 0;
  for (const auto& i : items) {
    if (isEllipsisItem(i)) {
      d += x.rank() - consumed;
    } else if (isAdvanced(e, i)) {
      r.advanced = i;
      r.at = d;
      SP_ASSIGN(int64_t n, dimsTaken(e, i));
      d += n;
    } else {
      SP_TRY(takeView(e, i, idx, d, r, st));
    }
  }
  return r;
}

// The largest finite magnitude of a float dtype (torch raises an overflow
// error converting a larger one).
double floatMax(ir::DType t) {
  switch (t) {
    case ir::DType::F16: return 65504.0;
    case ir::DType::BF16: return 3.3895313892515355e38;
    case ir::DType::F32: return 3.4028234663852886e38;
    default: return HUGE_VAL;
  }
}

// [lowest, max] of an integer dtype, as doubles (2^63 for i64's max: the
// bound is exclusive there).
std::pair<double, double> intRange(ir::DType t) {
  switch (t) {
    case ir::DType::I32: return {-2147483648.0, 2147483647.0};
    case ir::DType::I16: return {-32768.0, 32767.0};
    case ir::DType::I8: return {-128.0, 127.0};
    case ir::DType::U8: return {0.0, 255.0};
    default: return {-9223372036854775808.0, 9223372036854775808.0};
  }
}

// A Python number written into a tensor of dtype t, converted as torch
// converts it (to an integer dtype truncated toward zero, to bool nonzero),
// or fx-type where torch raises an overflow error instead.
Result<Expr> numberFor(Emitter& e, const Expr& v, ir::DType t) {
  const double x = v.number();
  const std::string into = " cannot be written into a tensor of dtype " + std::string(ir::dtypeName(t)) +
                           " (torch raises an overflow error)";
  if (t == ir::DType::Bool) return intExpr(x != 0);  // nan is nonzero, as in torch
  if (ir::isInteger(t)) {
    if (v.kind == Expr::Kind::Int && t == ir::DType::I64) return v;
    const auto [lo, hi] = intRange(t);
    const double w = std::trunc(x);
    bool fits = std::isfinite(w) && w >= lo && (t == ir::DType::I64 ? w < hi : w <= hi);
    if (!fits) return e.error("fx-type", "value " + v.str() + into);
    return intExpr(int64_t(w));
  }
  if (std::isfinite(x) && std::abs(x) > floatMax(t)) return e.error("fx-type", "value " + v.str() + into);
  return v;
}

Result<TRef> valueTensor(Emitter& e, const Expr& value) {
  if (!isTensorValue(e, value))
    return e.error("fx-unsupported", "value " + value.str() + " of subscript assignment must be a tensor or a "
                                     "Python number");
  return e.tensorOf(value);
}

Status broadcastsTo(Emitter& e, const TRef& v, const Expr& value, const ir::Shape& s, const std::string& shown) {
  auto b = broadcastShapes(v.type.shape, s);
  if (b && *b == s) return okStatus();
  return e.error("fx-type", "value '" + value.str() + "' of type " + v.type.str() +
                                " does not broadcast to the indexed region's shape " + shown);
}

// Over the whole region: value cast to its dtype and broadcast (copy_), or
// a number filled in.
Result<TRef> copyInto(Emitter& e, const TRef& region, const Expr& value, Steps& st) {
  if (value.isNumber()) {
    SP_ASSIGN(Expr n, numberFor(e, value, region.dtype()));
    return st.add("aten.fill.Scalar", {nameExpr(region.name), n}, region.type, "fill");
  }
  SP_ASSIGN(TRef v, valueTensor(e, value));
  SP_TRY(broadcastsTo(e, v, value, region.type.shape, ir::shapeStr(region.type.shape)));
  return st.add("aten.copy.default", {nameExpr(region.name), value}, region.type, "copy");
}

// The value of an advanced write (index_put): a number as a scalar tensor of
// the region's dtype; a tensor must have that dtype already (torch's
// index_put does not convert) and broadcast to `sel`, the written elements'
// shape (`shown` in messages).
Result<Expr> putValue(Emitter& e, const TRef& region, const Expr& value, const ir::Shape& sel,
                      const std::string& shown, Steps& st) {
  if (value.isNumber()) {
    SP_ASSIGN(Expr n, numberFor(e, value, region.dtype()));
    TRef s = st.add("aten.scalar_tensor.default", {n}, ir::TensorType{region.dtype(), {}}, "value");
    return nameExpr(s.name);
  }
  SP_ASSIGN(TRef v, valueTensor(e, value));
  if (v.dtype() != region.dtype())
    return e.error("fx-type", "value '" + value.str() + "' is " + std::string(ir::dtypeName(v.dtype())) +
                                  " but the indexed tensor is " + std::string(ir::dtypeName(region.dtype())) +
                                  ": torch's index_put does not convert it");
  SP_TRY(broadcastsTo(e, v, value, sel, shown));
  return value;
}

// region[..., mask, ...] = value: index_put (where on the mask), value
// broadcast to the selected elements for any count n of them.
Result<TRef> putMask(Emitter& e, const Region& r, const TRef& mask, const Expr& value, Steps& st) {
  const TRef& region = r.value;
  const int64_t rank = mask.rank();
  if (rank == 0)
    return e.error("fx-unsupported",
                   "a 0-d boolean index ('" + r.advanced->str() + "') in subscript assignment is not supported");
  const std::string dims = rank == 1 ? "dim " + std::to_string(r.at)
                                      : "dims " + std::to_string(r.at) + ".." + std::to_string(r.at + rank - 1);
  for (int64_t d = 0; d < rank; ++d)
    if (mask.type.shape[size_t(d)] != region.type.shape[size_t(r.at + d)])
      return e.error("fx-index", "the mask '" + r.advanced->str() + "' " + mask.type.str() + " does not match " +
                                     dims + " of the indexed " + region.type.str());
  ir::Shape one(region.type.shape.begin(), region.type.shape.begin() + r.at);
  one.push_back(ir::Dim(1));
  one.insert(one.end(), region.type.shape.begin() + r.at + rank, region.type.shape.end());
  SP_ASSIGN(Expr v, putValue(e, region, value, one, maskedShapeStr(region.type.shape, r.at, rank), st));
  std::vector<Expr> list(size_t(r.at), Expr{});
  list.push_back(*r.advanced);
  return st.add("aten.index_put.default", {nameExpr(region.name), listOf(std::move(list)), v}, region.type,
                "index_put");
}

// region[..., idx, ...] = value with a 1-d integer tensor: index_put (a
// scatter along the dim).
Result<TRef> putIndex(Emitter& e, const Region& r, const TRef& ix, const Expr& value, Steps& st) {
  const TRef& region = r.value;
  const std::string name = r.advanced->str();
  if (ix.dtype() == ir::DType::U8)
    return e.error("fx-unsupported", "the u8 index '" + name + "' (torch reads it as a mask, deprecated) is not "
                                     "supported in subscript assignment; a b8 mask is");
  if (!ir::isInteger(ix.dtype()))
    return e.error("fx-unsupported", "indexing with a " + std::string(ir::dtypeName(ix.dtype())) + " tensor ('" +
                                         name + "') is not supported (integer indices only)");
  if (ix.rank() != 1)
    return e.error("fx-unsupported", "the integer index '" + name + "' " + ix.type.str() +
                                         " in subscript assignment must be 1-d");
  ir::Shape us = region.type.shape;
  us[size_t(r.at)] = ix.type.shape[0];
  SP_ASSIGN(Expr v, putValue(e, region, value, us, ir::shapeStr(us), st));
  std::vector<Expr> list(size_t(r.at), Expr{});
  list.push_back(*r.advanced);
  return st.add("aten.index_put.default", {nameExpr(region.name), listOf(std::move(list)), v}, region.type,
                "index_put");
}

// region[..., [p0, p1, ...], ...] = value: the value broadcast to the
// written elements, entry j written over position p_j by slice_scatter.
// Repeated positions are rejected: torch leaves which write wins undefined.
Result<TRef> putList(Emitter& e, const Region& r, const Expr& value, Steps& st) {
  const Expr& list = *r.advanced;
  const int64_t p = r.at;
  const ir::Dim& dim = r.value.type.shape[size_t(p)];
  if (list.items.empty()) return e.error("fx-unsupported", "an empty index list in subscript assignment");
  std::vector<int64_t> pos;
  std::set<int64_t> seen;
  for (const auto& v : list.items) {
    if (v.kind != Expr::Kind::Int)
      return e.error("fx-unsupported", "index list " + list.str() + " is not supported (a list of integers only)");
    SP_ASSIGN(int64_t k, selectIndex(e, v.i, list, dim, p));
    if (!seen.insert(k).second)
      return e.error("fx-unsupported", "index list " + list.str() + " writes position " + std::to_string(k) +
                                           " twice (torch leaves which write wins undefined)");
    pos.push_back(k);
  }
  ir::TensorType us = r.value.type;
  us.shape[size_t(p)] = ir::Dim(int64_t(pos.size()));
  SP_ASSIGN(Expr v, putValue(e, r.value, value, us.shape, ir::shapeStr(us.shape), st));
  std::vector<Expr> sizes;
  for (const auto& d : us.shape) sizes.push_back(intExpr(d.isConcrete() ? d.value() : -1));
  TRef all = st.add("aten.expand.default", {v, listOf(std::move(sizes))}, us, "expand");
  ir::TensorType one = us;
  one.shape[size_t(p)] = ir::Dim(1);
  TRef cur = r.value;
  for (size_t j = 0; j < pos.size(); ++j) {
    TRef piece = st.add("aten.slice.Tensor",
                        {nameExpr(all.name), intExpr(p), intExpr(int64_t(j)), intExpr(int64_t(j) + 1), intExpr(1)},
                        one, "piece");
    cur = st.add("aten.slice_scatter.default",
                 {nameExpr(cur.name), nameExpr(piece.name), intExpr(p), intExpr(pos[j]), intExpr(pos[j] + 1),
                  intExpr(1)},
                 r.value.type, "scatter");
  }
  return cur;
}

// The region's new value: value written where the advanced item selects,
// or over all of the region.
Result<TRef> writeRegion(Emitter& e, const Region& r, const Expr& value, Steps& st) {
  if (!r.advanced) return copyInto(e, r.value, value, st);
  if (r.advanced->kind == Expr::Kind::List) return putList(e, r, value, st);
  SP_ASSIGN(TRef ix, e.tensorOf(*r.advanced));
  if (ix.dtype() == ir::DType::Bool) return putMask(e, r, ix, value, st);
  return putIndex(e, r, ix, value, st);
}

// Each view's base with the view's new value written in, innermost first:
// x's new value.
void writeBack(const Region& r, TRef value, Steps& st) {
  for (size_t k = r.views.size(); k-- > 0;) {
    const View& v = r.views[k];
    const Expr base = nameExpr(v.base.name);
    if (v.kind == View::Kind::Unsqueeze) {
      value = st.add("aten.squeeze.dim", {nameExpr(value.name), intExpr(v.dim)}, v.base.type, "squeeze");
      continue;
    }
    SliceBounds b = v.b;
    if (v.kind == View::Kind::Select) {
      ir::TensorType one = v.base.type;
      one.shape[size_t(v.dim)] = ir::Dim(1);
      value = st.add("aten.unsqueeze.default", {nameExpr(value.name), intExpr(v.dim)}, one, "unsqueeze");
      b.end = b.start + 1;
      b.step = 1;
    }
    value = st.add("aten.slice_scatter.default",
                   {base, nameExpr(value.name), intExpr(v.dim), intExpr(b.start), intExpr(b.end), intExpr(b.step)},
                   v.base.type, "scatter");
  }
}

}  // namespace

Result<std::vector<AtenStep>> lowerSetItem(Emitter& e, const Expr& in, const Expr& idx, const Expr& value,
                                           const std::string& target, const Expr& at) {
  SP_ASSIGN(TRef x, e.tensorOf(in));
  Steps st(e, target, at);
  SP_ASSIGN(Region r, takeRegion(e, TRef{in.s, x.type}, idx, st));
  SP_ASSIGN(TRef region, writeRegion(e, r, value, st));
  writeBack(r, region, st);
  return st.finish();
}

}  // namespace sp::frontend::fx
