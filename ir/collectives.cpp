#include "ir/collectives.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace sp::ir {

Result<ReduceOp> parseReduceOp(const std::string& name) {
  if (name == "sum") return ReduceOp::Sum;
  if (name == "avg") return ReduceOp::Avg;
  if (name == "max") return ReduceOp::Max;
  if (name == "min") return ReduceOp::Min;
  return makeError("bad-attr", "reduce must be sum, avg, max or min, got '" + name + "'");
}

namespace {

template <typename F>
F floatMax(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  return b > a ? b : a;
}
template <typename F>
F floatMin(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  return b < a ? b : a;
}

// Accumulate float vectors of type F in member order.
template <typename F>
void accumulate(std::vector<F>& acc, const F* x, ReduceOp op) {
  size_t n = acc.size();
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      for (size_t i = 0; i < n; ++i) acc[i] += x[i];
      break;
    case ReduceOp::Max:
      for (size_t i = 0; i < n; ++i) acc[i] = floatMax(acc[i], x[i]);
      break;
    case ReduceOp::Min:
      for (size_t i = 0; i < n; ++i) acc[i] = floatMin(acc[i], x[i]);
      break;
  }
}

template <typename F>
std::vector<F> reduceFloat(std::span<const Tensor> ts, ReduceOp op,
                           std::vector<F> (*load)(const Tensor&)) {
  std::vector<F> acc = load(ts[0]);
  for (size_t m = 1; m < ts.size(); ++m) {
    std::vector<F> x = load(ts[m]);
    accumulate(acc, x.data(), op);
  }
  if (op == ReduceOp::Avg)
    for (F& v : acc) v /= F(ts.size());
  return acc;
}

template <typename T>
std::vector<T> loadAs(const Tensor& t) {
  std::vector<T> v(size_t(t.numel()));
  if (t.numel()) std::memcpy(v.data(), t.raw(), t.nbytes());
  return v;
}

std::vector<float> loadF32(const Tensor& t) { return t.toFloatVector(); }

template <typename T>
Tensor reduceInt(std::span<const Tensor> ts, ReduceOp op) {
  const Tensor& first = ts[0];
  size_t n = size_t(first.numel());
  std::vector<uint64_t> acc(n);  // two's complement, wraps without UB
  const T* x0 = first.data<T>();
  for (size_t i = 0; i < n; ++i) acc[i] = uint64_t(int64_t(x0[i]));
  for (size_t m = 1; m < ts.size(); ++m) {
    const T* x = ts[m].data<T>();
    for (size_t i = 0; i < n; ++i) {
      int64_t a = int64_t(acc[i]), b = int64_t(x[i]);
      switch (op) {
        case ReduceOp::Sum: acc[i] += uint64_t(b); break;
        case ReduceOp::Max: acc[i] = uint64_t(b > a ? b : a); break;
        case ReduceOp::Min: acc[i] = uint64_t(b < a ? b : a); break;
        case ReduceOp::Avg: break;  // rejected by the caller
      }
    }
  }
  Tensor out(first.dtype(), first.dims());
  T* o = out.mutableData<T>();
  for (size_t i = 0; i < n; ++i) o[i] = T(acc[i]);  // modular conversion (C++20)
  return out;
}

Tensor reduceBool(std::span<const Tensor> ts, ReduceOp op) {
  Tensor out(DType::Bool, ts[0].dims());
  uint8_t* o = out.mutableData<uint8_t>();
  size_t n = size_t(out.numel());
  if (n) std::memcpy(o, ts[0].raw(), n);
  for (size_t m = 1; m < ts.size(); ++m) {
    const uint8_t* x = ts[m].data<uint8_t>();
    for (size_t i = 0; i < n; ++i) o[i] = op == ReduceOp::Min ? (o[i] && x[i]) : (o[i] || x[i]);
  }
  return out;
}

Status checkSameTypes(std::span<const Tensor> ts, const char* what) {
  if (ts.empty()) return makeError("empty-group", std::string(what) + ": no members");
  for (size_t m = 1; m < ts.size(); ++m)
    if (ts[m].dtype() != ts[0].dtype() || ts[m].dims() != ts[0].dims())
      return makeError("collective-type-mismatch",
                       std::string(what) + ": member " + std::to_string(m) + " has " +
                           ts[m].type().str() + " but member 0 has " + ts[0].type().str());
  return okStatus();
}

// Sizes of the copy loops for a concat/split along `dim`.
struct Blocks {
  int64_t outer = 1;       // product of dims before `dim`
  size_t innerBytes = 0;   // bytes of one index step along `dim`
};
Blocks blocksOf(const std::vector<int64_t>& dims, int64_t dim, DType dt) {
  Blocks b;
  for (int64_t i = 0; i < dim; ++i) b.outer *= dims[size_t(i)];
  int64_t inner = 1;
  for (size_t i = size_t(dim) + 1; i < dims.size(); ++i) inner *= dims[i];
  b.innerBytes = size_t(inner) * dtypeSize(dt);
  return b;
}

}  // namespace

Result<Tensor> reduceTensors(std::span<const Tensor> ts, ReduceOp op) {
  SP_TRY(checkSameTypes(ts, "reduce"));
  const Tensor& first = ts[0];
  DType dt = first.dtype();
  if (op == ReduceOp::Avg && !isFloat(dt))
    return makeError("bad-reduce", "reduce avg needs a float dtype, got " + std::string(dtypeName(dt)));
  switch (dt) {
    case DType::F32: {
      auto acc = reduceFloat<float>(ts, op, &loadAs<float>);
      return Tensor::fromFloats(dt, first.dims(), acc);
    }
    case DType::F16:
    case DType::BF16: {
      auto acc = reduceFloat<float>(ts, op, &loadF32);
      return Tensor::fromFloats(dt, first.dims(), acc);
    }
    case DType::F64: {
      auto acc = reduceFloat<double>(ts, op, &loadAs<double>);
      Tensor out(dt, first.dims());
      if (!acc.empty()) std::memcpy(out.mutableRaw(), acc.data(), out.nbytes());
      return out;
    }
    case DType::I64: return reduceInt<int64_t>(ts, op);
    case DType::I32: return reduceInt<int32_t>(ts, op);
    case DType::I16: return reduceInt<int16_t>(ts, op);
    case DType::I8: return reduceInt<int8_t>(ts, op);
    case DType::U8: return reduceInt<uint8_t>(ts, op);
    case DType::Bool: return reduceBool(ts, op);
  }
  SP_ASSERT(false, "unreachable dtype");
  return Tensor();
}

Result<Tensor> concatTensors(std::span<const Tensor> ts, int64_t dim) {
  if (ts.empty()) return makeError("empty-group", "concat: no tensors");
  const Tensor& first = ts[0];
  SP_ASSIGN(int64_t d, normAxis(dim, first.rank(), "concat"));
  std::vector<int64_t> outDims = first.dims();
  outDims[size_t(d)] = 0;
  for (size_t m = 0; m < ts.size(); ++m) {
    const Tensor& t = ts[m];
    bool ok = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int64_t i = 0; ok && i < t.rank(); ++i)
      ok = i == d || t.dims()[size_t(i)] == first.dims()[size_t(i)];
    if (!ok)
      return makeError("collective-type-mismatch",
                       "concat along dim " + std::to_string(d) + ": member " + std::to_string(m) +
                           " has " + t.type().str() + " but member 0 has " + first.type().str());
    outDims[size_t(d)] += t.dims()[size_t(d)];
  }
  Tensor out(first.dtype(), outDims);
  Blocks ob = blocksOf(outDims, d, first.dtype());
  size_t outRow = size_t(outDims[size_t(d)]) * ob.innerBytes;
  size_t offset = 0;
  for (const Tensor& t : ts) {
    size_t row = size_t(t.dims()[size_t(d)]) * ob.innerBytes;
    if (row)
      for (int64_t o = 0; o < ob.outer; ++o)
        std::memcpy(out.mutableRaw() + size_t(o) * outRow + offset, t.raw() + size_t(o) * row, row);
    offset += row;
  }
  return out;
}

Result<std::vector<Tensor>> splitTensor(const Tensor& t, int64_t dim, int64_t parts) {
  SP_ASSIGN(int64_t d, normAxis(dim, t.rank(), "split"));
  int64_t extent = t.dims()[size_t(d)];
  if (parts < 1 || extent % parts != 0)
    return makeError("bad-split", "dim " + std::to_string(d) + " of " + t.type().str() +
                                      " (extent " + std::to_string(extent) +
                                      ") does not divide into " + std::to_string(parts) + " parts");
  std::vector<int64_t> chunkDims = t.dims();
  chunkDims[size_t(d)] = extent / parts;
  Blocks b = blocksOf(t.dims(), d, t.dtype());
  size_t inRow = size_t(extent) * b.innerBytes;
  size_t row = size_t(chunkDims[size_t(d)]) * b.innerBytes;
  std::vector<Tensor> out;
  for (int64_t p = 0; p < parts; ++p) {
    Tensor c(t.dtype(), chunkDims);
    if (row)
      for (int64_t o = 0; o < b.outer; ++o)
        std::memcpy(c.mutableRaw() + size_t(o) * row, t.raw() + size_t(o) * inRow + size_t(p) * row,
                    row);
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<Tensor>> execCollective(OpKind op, const AttrMap& attrs,
                                           std::span<const Tensor> in) {
  std::string what(opName(op));
  SP_TRY(checkSameTypes(in, what.c_str()));
  size_t g = in.size();
  switch (op) {
    case OpKind::AllReduce: {
      SP_ASSIGN(ReduceOp r, parseReduceOp(attrStr(attrs, "reduce")));
      SP_ASSIGN(Tensor sum, reduceTensors(in, r));
      return std::vector<Tensor>(g, sum);
    }
    case OpKind::AllGather: {
      SP_ASSIGN(Tensor cat, concatTensors(in, attrInt(attrs, "dim")));
      return std::vector<Tensor>(g, cat);
    }
    case OpKind::ReduceScatter: {
      SP_ASSIGN(ReduceOp r, parseReduceOp(attrStr(attrs, "reduce")));
      SP_ASSIGN(Tensor sum, reduceTensors(in, r));
      return splitTensor(sum, attrInt(attrs, "dim"), int64_t(g));
    }
    case OpKind::AllToAll: {
      std::vector<std::vector<Tensor>> chunks;
      for (const Tensor& t : in) {
        SP_ASSIGN(auto c, splitTensor(t, attrInt(attrs, "split_dim"), int64_t(g)));
        chunks.push_back(std::move(c));
      }
      std::vector<Tensor> out;
      for (size_t j = 0; j < g; ++j) {
        std::vector<Tensor> recv;
        for (size_t i = 0; i < g; ++i) recv.push_back(chunks[i][j]);
        SP_ASSIGN(Tensor cat, concatTensors(recv, attrInt(attrs, "concat_dim")));
        out.push_back(std::move(cat));
      }
      return out;
    }
    case OpKind::Broadcast: {
      int64_t root = attrInt(attrs, "root");
      if (root < 0 || root >= int64_t(g))
        return makeError("bad-root", "broadcast: root " + std::to_string(root) +
                                         " is outside the group of size " + std::to_string(g));
      return std::vector<Tensor>(g, in[size_t(root)]);
    }
    default:
      return makeError("not-a-group-collective", what + " is not a group collective");
  }
}

}  // namespace sp::ir
