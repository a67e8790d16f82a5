// Shape functions: helpers, elementwise, linear algebra, reductions and
// normalization. Layout/index ops are in infer_layout.cpp; sources, losses,
// randomness and collectives in infer_misc.cpp. Messages do not name the op:
// GraphBuilder prefixes the op and node name.
#include <algorithm>

#include "ir/infer_util.h"

namespace sp::ir {

std::string intsStr(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + istr(v[i]);
  return out + "]";
}

Result<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim one(1);
    const Dim& da = i < r - a.size() ? one : a[i - (r - a.size())];
    const Dim& db = i < r - b.size() ? one : b[i - (r - b.size())];
    if (da == db || db == one) out[i] = da;
    else if (da == one) out[i] = db;
    else
      return makeError("shape-mismatch",
                       "cannot broadcast " + shapeStr(a) + " with " + shapeStr(b));
  }
  return out;
}

static Status dtypeError(const TensorType& t, const std::string& what, const char* want) {
  return makeError("dtype-mismatch", what + " must be " + want + ", got " +
                                         std::string(dtypeName(t.dtype)));
}
Status requireFloat(const TensorType& t, const std::string& what) {
  return isFloat(t.dtype) ? okStatus() : dtypeError(t, what, "a float type");
}
Status requireNumeric(const TensorType& t, const std::string& what) {
  return isFloat(t.dtype) || isInteger(t.dtype) ? okStatus() : dtypeError(t, what, "numeric");
}
Status requireInteger(const TensorType& t, const std::string& what) {
  return isInteger(t.dtype) ? okStatus() : dtypeError(t, what, "an integer type");
}
Status requireBool(const TensorType& t, const std::string& what) {
  return t.dtype == DType::Bool ? okStatus() : dtypeError(t, what, "bool");
}
Status requireSameDType(const TensorType& a, const TensorType& b, const std::string& what) {
  if (a.dtype == b.dtype) return okStatus();
  return makeError("dtype-mismatch", what + " have different dtypes " +
                                         std::string(dtypeName(a.dtype)) + " and " +
                                         std::string(dtypeName(b.dtype)));
}

Result<std::vector<int64_t>> normAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank)
      return makeError("bad-axis", "axis " + istr(a) + " is out of range for rank " + istr(rank));
    if (std::find(out.begin(), out.end(), n) != out.end())
      return makeError("bad-axis", "axis " + istr(a) + " is repeated in " + intsStr(axes));
    out.push_back(n);
  }
  return out;
}

Result<Types> inferTensors(OpKind op, const AttrMap& attrs, std::span<const Tensor> in) {
  Types types;
  types.reserve(in.size());
  for (const Tensor& t : in) types.push_back(t.type());
  InferCtx ctx{op, attrs, types, nullptr};
  return opInfo(op).infer(ctx);
}

// ---- elementwise ----

Result<Types> inferUnary(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  switch (c.op) {
    case OpKind::Neg: case OpKind::Abs: case OpKind::Sign: case OpKind::Relu:
    case OpKind::Clip:
      SP_TRY(requireNumeric(x, "input"));
      break;
    case OpKind::Not: SP_TRY(requireBool(x, "input")); break;
    case OpKind::Identity: case OpKind::Broadcast: break;
    case OpKind::Trilu:
      if (x.shape.size() < 2)
        return makeError("bad-rank", "input must have rank >= 2, got " + x.str());
      break;
    case OpKind::AllReduce: {
      const std::string& r = attrStr(c.attrs, "reduce");
      if (r != "sum" && r != "avg" && r != "max" && r != "min")
        return makeError("bad-attr", "reduce must be sum, avg, max or min, got '" + r + "'");
      SP_TRY(requireNumeric(x, "input"));
      break;
    }
    case OpKind::Softmax: case OpKind::LogSoftmax:
      SP_TRY(requireFloat(x, "input"));
      SP_TRY(normAxis(attrInt(c.attrs, "axis"), int64_t(x.shape.size()), "softmax"));
      break;
    default:
      SP_TRY(requireFloat(x, "input"));
      break;
  }
  if (c.op == OpKind::Gelu) {
    const std::string& a = attrStr(c.attrs, "approximate");
    if (a != "none" && a != "tanh")
      return makeError("bad-attr", "approximate must be 'none' or 'tanh', got '" + a + "'");
  }
  if ((c.op == OpKind::AllReduce || c.op == OpKind::Broadcast) && c.groupSize) {
    SP_ASSIGN(int64_t g, (*c.groupSize)(attrStr(c.attrs, "group")));
    if (c.op == OpKind::Broadcast) {
      int64_t root = attrInt(c.attrs, "root");
      if (root < 0 || root >= g)
        return makeError("bad-attr", "root " + istr(root) + " is out of range for group size " + istr(g));
    }
  }
  return Types{x};
}

Result<Types> inferCast(const InferCtx& c) {
  return Types{{attrType(c.attrs, "to"), c.inputs[0].shape}};
}

Result<Types> inferBinary(const InferCtx& c) {
  const TensorType& a = c.inputs[0];
  const TensorType& b = c.inputs[1];
  SP_TRY(requireNumeric(a, "lhs"));
  SP_TRY(requireNumeric(b, "rhs"));
  if (c.op != OpKind::Pow) SP_TRY(requireSameDType(a, b, "operands"));
  if (c.op == OpKind::Mod) {
    int64_t f = attrInt(c.attrs, "fmod");
    if (f != 0 && f != 1) return makeError("bad-attr", "fmod must be 0 or 1, got " + istr(f));
    if (f == 0 && isFloat(a.dtype))
      return makeError("bad-attr", "fmod must be 1 for float operands");
  }
  SP_ASSIGN(Shape s, broadcastShapes(a.shape, b.shape));
  return Types{{a.dtype, std::move(s)}};
}

Result<Types> inferCompare(const InferCtx& c) {
  const TensorType& a = c.inputs[0];
  const TensorType& b = c.inputs[1];
  SP_TRY(requireSameDType(a, b, "operands"));
  switch (c.op) {
    case OpKind::And: case OpKind::Or: case OpKind::Xor: SP_TRY(requireBool(a, "operands")); break;
    case OpKind::Eq: case OpKind::Ne: break;
    default: SP_TRY(requireNumeric(a, "operands")); break;
  }
  SP_ASSIGN(Shape s, broadcastShapes(a.shape, b.shape));
  return Types{{DType::Bool, std::move(s)}};
}

Result<Types> inferWhere(const InferCtx& c) {
  SP_TRY(requireBool(c.inputs[0], "condition"));
  SP_TRY(requireSameDType(c.inputs[1], c.inputs[2], "branches"));
  SP_ASSIGN(Shape s, broadcastShapes(c.inputs[0].shape, c.inputs[1].shape));
  SP_ASSIGN(Shape s2, broadcastShapes(s, c.inputs[2].shape));
  return Types{{c.inputs[1].dtype, std::move(s2)}};
}

// ---- linear algebra ----

Result<Types> inferMatMul(const InferCtx& c) {
  const TensorType& a = c.inputs[0];
  const TensorType& b = c.inputs[1];
  SP_TRY(requireNumeric(a, "lhs"));
  SP_TRY(requireSameDType(a, b, "operands"));
  if (a.shape.empty() || b.shape.empty())
    return makeError("bad-rank", "operands must have rank >= 1, got " + a.str() + " and " + b.str());
  Shape sa = a.shape, sb = b.shape;
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA) sa.insert(sa.begin(), Dim(1));
  if (vecB) sb.push_back(Dim(1));
  const Dim& ka = sa[sa.size() - 1];
  const Dim& kb = sb[sb.size() - 2];
  if (ka != kb)
    return makeError("shape-mismatch", "contraction dims differ: " + a.str() + " @ " + b.str());
  SP_ASSIGN(Shape batch, broadcastShapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2)));
  if (!vecA) batch.push_back(sa[sa.size() - 2]);
  if (!vecB) batch.push_back(sb[sb.size() - 1]);
  return Types{{a.dtype, std::move(batch)}};
}

Result<Types> inferGemm(const InferCtx& c) {
  const TensorType& a = c.inputs[0];
  const TensorType& b = c.inputs[1];
  SP_TRY(requireNumeric(a, "A"));
  SP_TRY(requireSameDType(a, b, "A and B"));
  if (a.shape.size() != 2 || b.shape.size() != 2)
    return makeError("bad-rank", "A and B must have rank 2, got " + a.str() + " and " + b.str());
  bool ta = attrInt(c.attrs, "trans_a") != 0, tb = attrInt(c.attrs, "trans_b") != 0;
  Dim m = a.shape[ta ? 1 : 0], ka = a.shape[ta ? 0 : 1];
  Dim kb = b.shape[tb ? 1 : 0], n = b.shape[tb ? 0 : 1];
  if (ka != kb)
    return makeError("shape-mismatch", "contraction dims differ: " + ka.str() + " and " + kb.str() +
                                           " (A " + a.str() + ", B " + b.str() + ")");
  Shape out{m, n};
  if (c.inputs.size() == 3) {
    const TensorType& ct = c.inputs[2];
    SP_TRY(requireSameDType(a, ct, "A and C"));
    auto s = broadcastShapes(ct.shape, out);
    if (!s.ok() || *s != out)
      return makeError("shape-mismatch", "C " + ct.str() + " is not broadcastable to " + shapeStr(out));
  }
  return Types{{a.dtype, std::move(out)}};
}

// ---- reductions ----

Result<Types> inferReduce(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_TRY(requireNumeric(x, "input"));
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(auto axes, normAxes(attrInts(c.attrs, "axes"), rank));
  if (attrInts(c.attrs, "axes").empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  bool keep = attrInt(c.attrs, "keepdims") != 0;
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(x.shape[size_t(i)]);
    else if (keep) out.push_back(Dim(1));
  }
  return Types{{x.dtype, std::move(out)}};
}

Result<Types> inferArg(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_TRY(requireNumeric(x, "input"));
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), rank, std::string(opName(c.op))));
  if (x.shape[size_t(axis)] == Dim(0))
    return makeError("shape-mismatch", "cannot reduce over empty axis " + istr(axis) + " of " + x.str());
  Shape out = x.shape;
  if (attrInt(c.attrs, "keepdims") != 0) out[size_t(axis)] = Dim(1);
  else out.erase(out.begin() + axis);
  return Types{{DType::I64, std::move(out)}};
}

// ---- normalization ----

Result<Types> inferNorm(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_TRY(requireFloat(x, "input"));
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), rank, std::string(opName(c.op))));
  if (attrFloat(c.attrs, "epsilon") < 0)
    return makeError("bad-attr", "epsilon must be >= 0, got " + std::to_string(attrFloat(c.attrs, "epsilon")));
  Shape normShape(x.shape.begin() + axis, x.shape.end());
  const char* names[] = {"input", "scale", "bias"};
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const TensorType& p = c.inputs[i];
    SP_TRY(requireSameDType(x, p, std::string("input and ") + names[i]));
    auto s = broadcastShapes(p.shape, normShape);
    if (p.shape.size() > normShape.size() || !s.ok() || *s != normShape)
      return makeError("shape-mismatch", std::string(names[i]) + " " + p.str() +
                                             " does not broadcast to the normalized shape " +
                                             shapeStr(normShape));
  }
  return Types{x};
}

}  // namespace sp::ir
