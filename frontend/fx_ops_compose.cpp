// ATen ops the IR has no op for, lowered exactly to compositions of IR ops:
// cumsum, constant_pad_nd, one_hot, index_add (einsum: fx_ops_einsum.cpp).
#include <limits>
#include <optional>

#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

Result<int64_t> dimOf(Emitter& e, int64_t d, int64_t rank) {
  auto r = ir::normAxis(d, std::max<int64_t>(rank, 1), e.op);
  if (!r) return e.error("fx-dim", "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(rank));
  return *r;
}

Result<int64_t> concrete(Emitter& e, const TRef& x, int64_t d, const char* why) {
  const ir::Dim& dim = x.type.shape[size_t(d)];
  if (!dim.isConcrete())
    return e.error("fx-symbolic", "dim " + std::to_string(d) + " of " + x.type.str() + " must be concrete (" + why + ")");
  return dim.value();
}

// [0, 1, ..., n-1] (i64) reshaped to `shape`.
TRef positions(Emitter& e, int64_t n, const ir::Shape& shape, const std::string& tag) {
  TRef r = e.emit(OpKind::Range, {}, {{"start", int64_t(0)}, {"limit", n}, {"delta", int64_t(1)}, {"dtype", DType::I64}},
                  TensorType{DType::I64, {ir::Dim(n)}}, tag);
  return e.reshape(r, shape);
}

}  // namespace

// cumsum(x, dim, dtype=None): out[.., j, ..] = Σ_{i <= j} x[.., i, ..].
// Exactly, without a scan op: x with a new dim j after dim i, zero where
// i > j (a where on the triangular mask i <= j of two ranges, so an inf or
// nan stays where torch keeps it, unlike a matmul with a triangular ones
// matrix whose 0 * inf is nan), summed over i. Integer and bool inputs sum
// in i64, as torch.
Status mapCumsum(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(int64_t d0, e.integer(1, "dim"));
  SP_ASSIGN(int64_t d, dimOf(e, d0, x.rank()));
  SP_ASSIGN(std::optional<DType> dt, e.dtypeArg(2, "dtype"));
  const DType want = dt ? *dt : ir::isFloat(x.dtype()) ? x.dtype() : DType::I64;
  if (t.dtype != want)
    return e.error("type-mismatch", "cumsum of " + x.type.str() + " is " + std::string(ir::dtypeName(want)) +
                                        " but the result is declared " + std::string(ir::dtypeName(t.dtype)));
  if (x.rank() == 0) return e.outValue(0, e.cast(x, t.dtype));
  SP_ASSIGN(int64_t n, concrete(e, x, d, "the length of the summed dim"));
  TRef xc = e.cast(x, t.dtype);
  ir::Shape wide = x.type.shape;  // [.., n (i), n (j), ..]
  wide.insert(wide.begin() + d + 1, ir::Dim(n));
  ir::Shape iShape(size_t(x.rank()) + 1, ir::Dim(1)), jShape = iShape;
  iShape[size_t(d)] = ir::Dim(n);
  jShape[size_t(d) + 1] = ir::Dim(n);
  TRef i = positions(e, n, iShape, "cumsum_i"), j = positions(e, n, jShape, "cumsum_j");
  ir::Shape maskShape = iShape;
  maskShape[size_t(d) + 1] = ir::Dim(n);
  TRef keep = e.emit(OpKind::Le, {i, j}, {}, TensorType{DType::Bool, maskShape}, "cumsum_mask");
  TRef xi = e.unsqueeze(xc, {d + 1});
  TRef terms = e.emit(OpKind::Where, {keep, xi, e.constant(t.dtype, 0)}, {}, TensorType{t.dtype, wide}, "cumsum_terms");
  return e.out(0, OpKind::ReduceSum, {terms}, {{"axes", std::vector<int64_t>{d}}, {"keepdims", int64_t(0)}});
}

// constant_pad_nd(x, pad, value=0): pad = (before, after) pairs from the
// last dim backwards. Per dim: a negative amount slices that side off, a
// positive one concatenates a block of `value` there.
Status mapConstantPad(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(std::vector<int64_t> pad, e.ints(1, "pad"));
  SP_ASSIGN(double value, e.number(2, "value", 0.0));
  if (pad.size() % 2 != 0 || int64_t(pad.size()) > 2 * x.rank())
    return e.error("fx-arg", "pad has " + std::to_string(pad.size()) + " entries; it needs pairs (before, after) for "
                                 "at most the " + std::to_string(x.rank()) + " dims of " + x.type.str());
  TRef cur = x;
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    int64_t d = x.rank() - 1 - int64_t(k), before = pad[2 * k], after = pad[2 * k + 1];
    if (before == 0 && after == 0) continue;
    SP_ASSIGN(int64_t n, concrete(e, cur, d, "a padded dim"));
    if (before < 0 || after < 0) {
      int64_t start = std::max<int64_t>(0, -before), end = n - std::max<int64_t>(0, -after);
      if (end < start)
        return e.error("fx-arg", "pad (" + std::to_string(before) + ", " + std::to_string(after) + ") removes more "
                                     "than the " + std::to_string(n) + " entries of dim " + std::to_string(d));
      ir::Shape s = cur.type.shape;
      s[size_t(d)] = ir::Dim(end - start);
      cur = e.emit(OpKind::Slice, {cur},
                   {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                    {"axes", std::vector<int64_t>{d}}, {"steps", std::vector<int64_t>{1}}},
                   TensorType{x.dtype(), s}, "pad_slice");
    }
    std::vector<TRef> parts;
    auto block = [&](int64_t len) {
      ir::Shape s = cur.type.shape;
      s[size_t(d)] = ir::Dim(len);
      return e.expand(e.reshape(e.constant(x.dtype(), value), ir::Shape(s.size(), ir::Dim(1))), s);
    };
    if (before > 0) parts.push_back(block(before));
    parts.push_back(cur);
    if (after > 0) parts.push_back(block(after));
    if (parts.size() == 1) continue;
    ir::Shape s = cur.type.shape;
    s[size_t(d)] = ir::Dim(s[size_t(d)].value() + std::max<int64_t>(0, before) + std::max<int64_t>(0, after));
    cur = e.emit(OpKind::Concat, parts, {{"axis", d}}, TensorType{x.dtype(), s}, "pad");
  }
  return e.outValue(0, cur);
}

// one_hot(x, num_classes): OneHot over a new last dim, i64 ones and zeros.
// num_classes = -1 (the largest value + 1) depends on the values.
Status mapOneHot(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t n, e.integer(1, "num_classes", -1));
  if (n < 0)
    return makeError("fx-data-dependent",
                     e.op + " '" + e.nodeName + "': num_classes = " + std::to_string(n) +
                         " takes the number of classes from the largest value, so the result's size depends on "
                         "tensor values; pass num_classes",
                     e.captureLoc);
  SP_ASSIGN(TensorType t, e.outType(0));
  if (t.dtype != DType::I64)
    return e.error("type-mismatch", "one_hot is i64 but the result is declared " + std::string(ir::dtypeName(t.dtype)));
  return e.out(0, OpKind::OneHot, {x},
               {{"depth", n}, {"axis", int64_t(-1)}, {"dtype", t.dtype}, {"on", 1.0}, {"off", 0.0}});
}

// index_add(self, dim, index, source, alpha=1): self with alpha * source[.., i, ..]
// added at [.., index[i], ..]; a scatter_elements with reduction add, the
// index broadcast over source's other dims (repeated indices add up).
Status mapIndexAdd(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d0, e.integer(1, "dim"));
  SP_ASSIGN(TRef idx, e.tensor(2, "index"));
  SP_ASSIGN(TRef src, e.tensor(3, "source"));
  SP_ASSIGN(double alpha, e.number(4, "alpha", 1.0));
  SP_ASSIGN(int64_t d, dimOf(e, d0, x.rank()));
  if (idx.rank() > 1 || src.rank() != x.rank())
    return e.error("fx-arg", "index " + idx.type.str() + " must be 1-d and source " + src.type.str() +
                                 " of the rank of self " + x.type.str());
  if (ir::isFloat(idx.dtype()) || idx.dtype() == DType::Bool)
    return e.error("fx-arg", "index " + idx.type.str() + " must be an integer tensor");
  if (src.dtype() != x.dtype())
    return e.error("type-mismatch", "source " + src.type.str() + " and self " + x.type.str() +
                                        " have different dtypes (torch requires the same)");
  ir::Shape col(size_t(x.rank()), ir::Dim(1));
  col[size_t(d)] = src.type.shape[size_t(d)];
  TRef ix = e.expand(e.reshape(e.cast(idx, DType::I64), col), src.type.shape);
  TRef upd = src;
  if (alpha != 1.0) upd = e.binary(OpKind::Mul, upd, e.constant(x.dtype(), alpha));
  return e.out(0, OpKind::ScatterElements, {x, ix, upd}, {{"axis", d}, {"reduction", std::string("add")}});
}

}  // namespace sp::frontend::fx
