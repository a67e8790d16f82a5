// Inputs of an interpreter run: symbol binding from given tensors, checks
// against declared types, and deterministic random fill.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "ir/interpreter.h"
#include "ir/interpreter_impl.h"
#include "ir/kernel_util.h"

namespace sp::ir {

namespace {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::optional<int64_t> evalDim(const Dim& d, const Bindings& b) {
  int64_t v = d.coef;
  for (const auto& s : d.syms) {
    auto it = b.find(s);
    if (it == b.end()) return std::nullopt;
    v *= it->second;
  }
  return v;
}

std::string leafWhat(const Value& v) {
  return (v.kind == ValueKind::Param ? "parameter '" : "input '") + v.name + "'";
}

}  // namespace

Tensor randomTensor(const TensorType& type, const Bindings& symbols, uint64_t seed,
                    const std::string& name, int64_t intHigh, bool isParam) {
  auto dims = bindShape(type.shape, symbols);
  SP_ASSERT(dims.ok(), "randomTensor: " + (dims.ok() ? std::string() : dims.error().message));
  Tensor t(type.dtype, *dims);
  // Element i takes the i-th output of a SplitMix64 stream: a function of
  // (key, i) alone, so chunks fill in parallel with the same result.
  const uint64_t key = splitmix64(fnv1a64(name) ^ splitmix64(seed));
  auto bits = [key](int64_t i) { return splitmix64(key + uint64_t(i) * 0x9e3779b97f4a7c15ull); };
  const int64_t n = t.numel();
  constexpr int64_t kChunk = int64_t(1) << 16;
  if (isFloat(type.dtype)) {
    // Matrices are scaled by 1/sqrt(the smaller of their last two dims):
    // the fan-in of x @ W [in, out] and of torch's W [out, in] alike, when
    // out >= in, and within sqrt(out/in) otherwise, so activations stay of
    // order one through a stack. Vectors (norm gains, biases) are not: a gain
    // of 1/64 made a Llama MLP's output ~1e-5 of the residual, and a missing
    // all_reduce after it invisible to the witness.
    double scale = 1.0;
    if (isParam && dims->size() >= 2) {
      int64_t in = std::min((*dims)[dims->size() - 1], (*dims)[dims->size() - 2]);
      if (in > 0) scale = 1.0 / std::sqrt(double(in));
    }
    auto at = [&](int64_t i) { return (2.0 * (double(bits(i) >> 11) * 0x1.0p-53) - 1.0) * scale; };
    if (type.dtype == DType::F32) {
      float* p = t.mutableData<float>();
      parallelFor(n, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) p[i] = float(at(i)); }, kChunk);
    } else {
      parallelFor(n, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) t.setFromDouble(i, at(i)); },
                  kChunk);
    }
  } else if (type.dtype == DType::Bool) {
    uint8_t* p = t.mutableData<uint8_t>();
    parallelFor(n, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) p[i] = uint8_t(bits(i) >> 63); },
                kChunk);
  } else {
    uint64_t hi = uint64_t(intHigh > 0 ? intHigh : 2);
    parallelFor(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        t.setFromDouble(i, double(uint64_t((static_cast<unsigned __int128>(bits(i)) * hi) >> 64)));
    }, kChunk);
  }
  return t;
}

int64_t intHighFor(const Graph& g, ValueId v, const Bindings& symbols) {
  std::optional<int64_t> best;
  auto consider = [&](const Dim& d) {
    if (auto x = evalDim(d, symbols)) best = best ? std::min(*best, *x) : *x;
  };
  auto dimAt = [&](ValueId data, int64_t axis) {
    const Shape& s = g.value(data).type.shape;
    int64_t r = int64_t(s.size());
    int64_t a = axis < 0 ? axis + r : axis;
    if (a >= 0 && a < r) consider(s[size_t(a)]);
  };
  // The ids reach their lookup through integer plumbing: casts, layout ops,
  // an offset (Megatron's `target - vocab_start`), a masked replacement
  // (`where(mask, 0, target)`). Follow integer values through those to the
  // gathers, one-hots and cross entropies they index.
  auto carries = [&](const Node& n, size_t k) {
    if (n.outputs.size() != 1 || !isInteger(g.value(n.outputs[0]).type.dtype)) return false;
    switch (n.op) {
      case OpKind::Identity:
      case OpKind::Cast:
      case OpKind::Reshape:
      case OpKind::Transpose:
      case OpKind::Squeeze:
      case OpKind::Unsqueeze:
      case OpKind::Expand:
      case OpKind::Slice:
      case OpKind::Concat:
      case OpKind::Add:
      case OpKind::Sub:
        return true;
      case OpKind::Where:
        return k > 0;
      default:
        return false;
    }
  };
  std::vector<ValueId> work{v};
  std::set<ValueId> seen{v};
  while (!work.empty()) {
    ValueId x = work.back();
    work.pop_back();
    for (NodeId nid : g.users(x)) {
      const Node& n = g.node(nid);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] != x) continue;
        if (carries(n, k) && seen.insert(n.outputs[0]).second && seen.size() <= 64) work.push_back(n.outputs[0]);
        switch (n.op) {
          case OpKind::Gather:
          case OpKind::GatherElements:
          case OpKind::ScatterElements:
            if (k == 1) dimAt(n.inputs[0], attrInt(n.attrs, "axis"));
            break;
          case OpKind::CrossEntropy:
            if (k == 1) dimAt(n.inputs[0], 1);
            break;
          case OpKind::OneHot:
            consider(Dim(attrInt(n.attrs, "depth")));
            break;
          default:
            break;
        }
      }
    }
  }
  if (!best) {
    for (ValueId p : g.params()) {
      const TensorType& t = g.value(p).type;
      if (t.shape.size() == 2 && isFloat(t.dtype)) consider(t.shape[0]);
    }
  }
  return std::max<int64_t>(1, best.value_or(2));
}

Result<TensorMap> prepareInputs(const Graph& g, const TensorMap& given, const RunOptions& opts,
                                Bindings* boundOut) {
  for (const auto& [name, t] : given) {
    auto id = g.findValue(name);
    if (!id || g.value(*id).kind == ValueKind::NodeOutput)
      return makeError("unknown-input", "given tensor '" + name +
                                            "' is not an input or parameter of graph '" +
                                            g.name() + "'");
    if (!t.defined())
      return makeError("undefined-tensor", "given tensor '" + name + "' has no data");
  }
  Bindings b;
  std::map<std::string, std::string> origin;  // symbol -> where its value came from
  for (const auto& [sym, val] : opts.symbols) {
    if (val < 0 || val > kMaxElements)
      return makeError("bad-symbol", "symbol '" + sym + "' = " + std::to_string(val) +
                                         " is out of range [0, 2^48]");
    b[sym] = val;
    origin[sym] = "the run options";
  }
  std::vector<ValueId> leaves = g.inputs();
  leaves.insert(leaves.end(), g.params().begin(), g.params().end());
  // Symbolic dims of given tensors, bound as they become solvable.
  struct Pending {
    ValueId v;
    size_t axis;
    int64_t actual;
  };
  std::vector<Pending> pending;
  for (ValueId v : leaves) {
    const Value& val = g.value(v);
    auto it = given.find(val.name);
    if (it == given.end()) continue;
    const Tensor& t = it->second;
    std::string what = leafWhat(val);
    if (t.dtype() != val.type.dtype)
      return makeError("input-dtype", what + ": dtype is " + std::string(dtypeName(t.dtype())) +
                                          " but the graph declares " + val.type.str());
    if (size_t(t.rank()) != val.type.shape.size())
      return makeError("input-rank", what + ": rank is " + std::to_string(t.rank()) + " (" +
                                         t.type().str() + ") but the graph declares " +
                                         val.type.str());
    for (size_t i = 0; i < val.type.shape.size(); ++i) {
      const Dim& d = val.type.shape[i];
      int64_t actual = t.dims()[i];
      if (d.isConcrete() && d.coef != actual)
        return makeError("input-dim", what + ": dim " + std::to_string(i) + " is " +
                                          std::to_string(actual) + " but the graph declares " +
                                          val.type.str());
      if (!d.isConcrete()) pending.push_back({v, i, actual});
    }
  }
  auto check = [&](const Pending& p, bool final) -> Result<bool> {
    const Value& val = g.value(p.v);
    const Dim& d = val.type.shape[p.axis];
    std::set<std::string> unbound;
    for (const auto& s : d.syms)
      if (!b.count(s)) unbound.insert(s);
    std::string what = leafWhat(val);
    if (unbound.empty()) {
      int64_t expect = *evalDim(d, b);
      if (expect == p.actual) return true;
      std::string from;
      for (const auto& s : std::set<std::string>(d.syms.begin(), d.syms.end()))
        from += (from.empty() ? "" : ", ") + s + " = " + std::to_string(b[s]) + " from " + origin[s];
      return makeError("symbol-conflict", what + ": dim '" + d.str() + "' is " +
                                              std::to_string(p.actual) + " here but " +
                                              std::to_string(expect) + " elsewhere (" + from + ")");
    }
    std::string sym = *unbound.begin();
    if (unbound.size() > 1 || std::count(d.syms.begin(), d.syms.end(), sym) > 1) {
      SP_ASSERT(!final, "symbols left unbound after defaults");
      return false;  // not solvable yet
    }
    int64_t rest = d.coef;
    for (const auto& s : d.syms)
      if (s != sym) rest *= b[s];
    if (rest == 0 ? p.actual != 0 : p.actual % rest != 0)
      return makeError("symbol-conflict", what + ": dim " + std::to_string(p.axis) + " is " +
                                              std::to_string(p.actual) + ", which does not fit '" +
                                              d.str() + "'");
    b[sym] = rest == 0 ? opts.defaultSymbolValue : p.actual / rest;
    origin[sym] = what + " dim " + std::to_string(p.axis);
    return true;
  };
  std::vector<bool> done(pending.size(), false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (done[i]) continue;
      SP_ASSIGN(bool ok, check(pending[i], false));
      if (ok) done[i] = progress = true;
    }
  }
  // Every symbol of the graph gets a value; then the rest of the given dims
  // (products of several unbound symbols) are checked.
  for (const Value& val : g.values())
    for (const Dim& d : val.type.shape)
      for (const auto& s : d.syms)
        if (!b.count(s)) {
          b[s] = opts.defaultSymbolValue;
          origin[s] = "the default symbol value";
        }
  for (size_t i = 0; i < pending.size(); ++i)
    if (!done[i]) SP_TRY(check(pending[i], true));

  // Drawing polls the deadline between chunks (parallelFor under a kernel
  // context): large models draw hundreds of millions of elements.
  constexpr int64_t kLargeDraw = int64_t(1) << 20;
  KernelContext ctx;
  ctx.deadline = opts.deadline;
  KernelContextScope scope(&ctx);
  TensorMap out;
  for (ValueId v : leaves) {
    const Value& val = g.value(v);
    if (auto it = given.find(val.name); it != given.end()) {
      out.emplace(val.name, it->second);
      continue;
    }
    if (const Tensor* data = g.paramData(v)) {
      out.emplace(val.name, *data);
      continue;
    }
    if (!opts.fillMissing)
      return makeError("missing-input", leafWhat(val) + " (" + val.type.str() +
                                            ") was not given and has no data in the model");
    SP_ASSIGN(auto dims, bindShape(val.type.shape, b));
    TensorType concrete{val.type.dtype, shapeOf(dims)};
    SP_TRY(checkType(concrete, leafWhat(val)));
    int64_t hi = isInteger(val.type.dtype) ? intHighFor(g, v, b) : 0;
    // A large draw checks the clock first (small ones take microseconds).
    if (std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<>()) >= kLargeDraw && detail::pastDeadline(opts.deadline))
      return makeError("time-limit", "drawing random " + leafWhat(val));
    Tensor t = randomTensor(val.type, b, opts.seed, val.name, hi, val.kind == ValueKind::Param);
    if (ctx.interrupted) return makeError("time-limit", "drawing random " + leafWhat(val));
    out.emplace(val.name, std::move(t));
  }
  if (boundOut) *boundOut = std::move(b);
  return out;
}

}  // namespace sp::ir
