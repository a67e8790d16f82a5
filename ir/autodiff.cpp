// Reverse-mode differentiation of graphs and SPMD programs (autodiff.h).
#include "ir/autodiff.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <tuple>

#include "ir/infer_util.h"
#include "ir/program_edit.h"

namespace sp::ir {

namespace {

using Axes = uint64_t;  // bit i: mesh axis i

Error unsupported(const Node& n, const std::string& why) {
  std::string where = n.loc.empty() ? "" : " at " + n.loc.str();
  return makeError("autodiff-unsupported",
                   "autodiff: " + std::string(opName(n.op)) + " '" + n.name + "'" + where + ": " + why);
}

// The mesh axes a group name stands for (axes joined by '+').
Result<Axes> axesOf(const Mesh& mesh, const std::string& group) {
  Axes a = 0;
  size_t at = 0;
  while (at <= group.size()) {
    size_t plus = group.find('+', at);
    std::string part = group.substr(at, plus == std::string::npos ? std::string::npos : plus - at);
    bool found = false;
    for (size_t i = 0; i < mesh.axes.size(); ++i)
      if (mesh.axes[i].name == part) a |= Axes(1) << i, found = true;
    if (!found)
      return makeError("autodiff-unsupported",
                       "autodiff: group '" + group + "' is not made of mesh axes (named groups are not supported)");
    if (plus == std::string::npos) break;
    at = plus + 1;
  }
  return a;
}

// Where the forward of one rank sits in its program (absent for S).
struct RankCtx {
  const Program* prog = nullptr;
  int64_t rank = 0;
  std::vector<Axes> varies;  // per forward value
  GroupSizeFn groupSize;
  // What the backward read of the rank beyond its graph and typing: its
  // position in a group (then it is the rank's own), group sizes (then it
  // serves the ranks that see the same sizes).
  bool usedRank = false;
  std::map<std::string, int64_t> sizes;
};

class Differ {
 public:
  Differ(const Graph& g, const GradOptions& o, RankCtx* rc) : g_(g), o_(o), rc_(rc), out_(graphSpec(g)) {
    for (const Value& v : g.values()) used_.insert(v.name), types_[v.name] = v.type;
    acc_.resize(g.values().size());
  }

  Result<GraphSpec> run();

 private:
  struct Piece {
    int64_t lo, len;
    std::string grad;
  };
  struct Acc {
    std::vector<std::string> exact;
    std::map<Axes, std::vector<std::string>> partial;  // summed, then all-reduced over the axes
    // Gradients of slices along one axis, (axis, partial axes) -> pieces:
    // concatenated where they tile the axis (rotary halves, q/k/v of a
    // fused projection), zeros only in the gaps.
    std::map<std::pair<int64_t, Axes>, std::vector<Piece>> pieces;
    bool empty() const { return exact.empty() && partial.empty() && pieces.empty(); }
  };

  const Graph& g_;
  const GradOptions& o_;
  RankCtx* rc_;
  GraphSpec out_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> nextSuffix_;
  std::map<std::string, TensorType> types_;
  std::map<std::string, int> uses_;
  std::map<std::pair<int, double>, std::string> constants_;
  std::vector<Acc> acc_;
  std::vector<bool> needs_;
  std::vector<bool> data_;  // per forward value: depends on an input leaf or a recv
  std::set<std::string> emitted_;
  SourceLoc loc_;  // the forward node being differentiated

  Axes varies(ValueId v) const { return rc_ ? rc_->varies[size_t(v)] : 0; }
  const std::string& nameOf(ValueId v) const { return g_.value(v).name; }
  const TensorType& type(const std::string& n) const { return types_.at(n); }

  // base, else base_k for the least k not taken (names only accumulate, so
  // the search resumes where the last one for this base stopped).
  std::string fresh(const std::string& hint) {
    std::string base = "bw_" + hint, n = base;
    int& k = nextSuffix_[base];
    if (used_.count(n))
      do n = base + "_" + std::to_string(++k);
      while (used_.count(n));
    used_.insert(n);
    return n;
  }

  Result<std::string> emit(OpKind op, std::vector<std::string> in, AttrMap attrs, const std::string& hint) {
    SP_ASSIGN(AttrMap full, completeAttrs(op, attrs));
    std::vector<TensorType> ts;
    for (const auto& i : in) ts.push_back(type(i));
    InferCtx ctx{op, full, ts, rc_ ? &rc_->groupSize : nullptr};
    SP_ASSIGN(std::vector<TensorType> outT, opInfo(op).infer(ctx));
    std::string name = fresh(hint);
    for (const auto& i : in) ++uses_[i];
    out_.nodes.push_back(NodeSpec{op, "", std::move(in), {name}, std::move(attrs), loc_});
    types_[name] = outT.empty() ? TensorType{} : outT[0];
    emitted_.insert(name);
    return name;
  }
  Status emitSend(const std::string& x, int64_t peer, int64_t tag, const std::string& group) {
    ++uses_[x];
    AttrMap attrs{{"peer", peer}, {"tag", tag}};
    if (!group.empty()) attrs["group"] = group;
    out_.nodes.push_back(NodeSpec{OpKind::Send, fresh("send"), {x}, {}, std::move(attrs), loc_});
    return okStatus();
  }

  // ---- expression helpers (errors propagate through Result) ----
  Result<std::string> cst(double v, DType dt) {
    auto key = std::pair{int(dt), v};
    if (auto it = constants_.find(key); it != constants_.end()) return it->second;
    SP_ASSIGN(std::string n, emit(OpKind::Constant, {}, {{"value", Tensor::scalar(dt, v)}}, "c"));
    constants_[key] = n;
    return n;
  }
  Result<std::string> bin(OpKind k, const std::string& a, const std::string& b, const char* hint) {
    return emit(k, {a, b}, {}, hint);
  }
  Result<std::string> un(OpKind k, const std::string& a, const char* hint) { return emit(k, {a}, {}, hint); }
  Result<std::string> zeros(const TensorType& t) {
    SP_ASSIGN(std::string z, cst(0.0, t.dtype));
    if (t.shape.empty()) return z;
    return emit(OpKind::Expand, {z}, {{"shape", t.shape}}, "zeros");
  }
  Result<std::string> reshape(const std::string& x, const Shape& s) {
    if (type(x).shape == s) return x;
    return emit(OpKind::Reshape, {x}, {{"shape", s}}, "reshape");
  }
  Result<std::string> reduceSum(const std::string& x, std::vector<int64_t> axes, bool keep) {
    if (axes.empty()) return x;
    return emit(OpKind::ReduceSum, {x}, {{"axes", axes}, {"keepdims", int64_t(keep)}}, "sum");
  }
  // The sum of a broadcast result back to an operand's shape (numpy rules).
  Result<std::string> sumTo(const std::string& x, const TensorType& t) {
    const Shape &from = type(x).shape, &to = t.shape;
    if (from == to) return x;
    if (to.size() > from.size()) return makeError("autodiff-internal", "autodiff: cannot sum " + shapeStr(from) + " to " + shapeStr(to));
    size_t lead = from.size() - to.size();
    std::vector<int64_t> axes;
    for (size_t i = 0; i < from.size(); ++i)
      if (i < lead || (to[i - lead] == Dim(1) && from[i] != Dim(1))) axes.push_back(int64_t(i));
    SP_ASSIGN(std::string s, reduceSum(x, axes, true));
    return reshape(s, to);
  }
  Result<std::string> sum(const std::vector<std::string>& parts) {
    std::string s = parts.at(0);
    for (size_t i = 1; i < parts.size(); ++i) { SP_ASSIGN(s, bin(OpKind::Add, s, parts[i], "acc")); }
    return s;
  }
  Result<std::string> allReduce(std::string x, Axes axes) {
    // one all_reduce per axis, innermost first (sequence parallel's tp, then dp)
    const Mesh& m = rc_->prog->mesh();
    for (size_t i = m.axes.size(); i-- > 0;) {
      if (!(axes & (Axes(1) << i))) continue;
      SP_ASSIGN(x, emit(OpKind::AllReduce, {x}, {{"group", m.axes[i].name}}, "allreduce"));
    }
    return x;
  }

  // The gradient of forward value v, every contribution summed ("" if none).
  Result<std::string> materialize(ValueId v) {
    Acc& a = acc_[size_t(v)];
    if (a.empty()) return std::string();
    SP_TRY(joinPieces(v));
    std::vector<std::string> parts = a.exact;
    for (auto& [axes, list] : a.partial) {
      SP_ASSIGN(std::string s, sum(list));
      SP_ASSIGN(s, allReduce(s, axes));
      parts.push_back(s);
    }
    SP_ASSIGN(std::string s, sum(parts));
    a = Acc{};
    a.exact = {s};
    return s;
  }
  // When every contribution to v's gradient is partial over the same axes,
  // their sum, not yet reduced, and the axes (*mask); else materialize(v)
  // and *mask 0. A consumer whose adjoint shrinks the gradient (an
  // expand's sum) reduces after it: the same total, a smaller all_reduce,
  // and a value S computes (the reduced expanded gradient is a sum of
  // head blocks, which no layout of S's gradient describes).
  Result<std::string> materializePartial(ValueId v, Axes* mask) {
    *mask = 0;
    Acc& a = acc_[size_t(v)];
    if (a.empty()) return std::string();
    SP_TRY(joinPieces(v));
    if (!a.exact.empty() || a.partial.size() != 1) return materialize(v);
    Axes m = a.partial.begin()->first;
    SP_ASSIGN(std::string s, sum(a.partial.begin()->second));
    a = Acc{};
    *mask = m;
    return s;
  }
  // Concatenates the slice pieces of v's gradient into exact or partial parts.
  Status joinPieces(ValueId v) {
    Acc& a = acc_[size_t(v)];
    auto pieces = std::move(a.pieces);
    a.pieces.clear();
    for (auto& [key, list] : pieces) {
      const int64_t axis = key.first;  // (no structured bindings: clang 14 cannot capture them)
      const Axes mask = key.second;
      std::stable_sort(list.begin(), list.end(), [](const Piece& x, const Piece& y) { return x.lo < y.lo; });
      // layers of pieces that do not overlap, each one concat
      std::vector<std::vector<Piece>> layers;
      for (const Piece& pc : list) {
        auto it = std::find_if(layers.begin(), layers.end(),
                               [&](const std::vector<Piece>& l) { return l.back().lo + l.back().len <= pc.lo; });
        if (it == layers.end()) layers.push_back({pc});
        else it->push_back(pc);
      }
      const TensorType& vt = g_.value(v).type;
      const int64_t extent = vt.shape[size_t(axis)].value();
      for (const auto& layer : layers) {
        std::vector<std::string> parts;
        int64_t at = 0;
        auto gap = [&](int64_t to) -> Status {
          if (to <= at) return okStatus();
          TensorType zt = vt;
          zt.shape[size_t(axis)] = Dim(to - at);
          SP_ASSIGN(auto z, zeros(zt));
          parts.push_back(z);
          return okStatus();
        };
        for (const Piece& pc : layer) {
          SP_TRY(gap(pc.lo));
          parts.push_back(pc.grad);
          at = pc.lo + pc.len;
        }
        SP_TRY(gap(extent));
        std::string t = parts[0];
        if (parts.size() > 1) { SP_ASSIGN(t, emit(OpKind::Concat, parts, {{"axis", axis}}, "slices")); }
        (mask ? a.partial[mask] : a.exact).push_back(t);
      }
    }
    return okStatus();
  }

  void contribute(ValueId in, const std::string& c, Axes from) {
    if (c.empty() || !needs_[size_t(in)]) return;
    Axes partial = from & ~varies(in);
    if (partial) acc_[size_t(in)].partial[partial].push_back(c);
    else acc_[size_t(in)].exact.push_back(c);
  }

  Status computeNeeds();
  Status vjp(const Node& n);
  Status vjpMatMul(const Node& n, const std::string& g, Axes from);
  Status vjpNorm(const Node& n, const std::string& g, Axes from);
  Status vjpAllGather(const Node& n);
};

Status Differ::computeNeeds() {
  std::set<std::string> wrt(o_.wrt.begin(), o_.wrt.end());
  if (wrt.empty())
    for (ValueId p : g_.params())
      if (isFloat(g_.value(p).type.dtype)) wrt.insert(nameOf(p));
  std::vector<bool> fwd(g_.values().size(), false), reach(g_.values().size(), false);
  for (ValueId v = 0; v < ValueId(g_.values().size()); ++v)
    if (g_.value(v).kind != ValueKind::NodeOutput && wrt.count(nameOf(v))) fwd[size_t(v)] = true;
  for (const Node& n : g_.nodes()) {
    bool any = n.op == OpKind::Recv;  // a received activation carries its sender's gradient back
    for (ValueId i : n.inputs) any = any || fwd[size_t(i)];
    for (ValueId o : n.outputs) fwd[size_t(o)] = any && isFloat(g_.value(o).type.dtype);
  }
  for (ValueId o : g_.outputs()) reach[size_t(o)] = true;
  for (auto it = g_.nodes().rbegin(); it != g_.nodes().rend(); ++it) {
    bool any = it->op == OpKind::Send;
    for (ValueId o : it->outputs) any = any || reach[size_t(o)];
    if (any)
      for (ValueId i : it->inputs) reach[size_t(i)] = true;
  }
  needs_.assign(g_.values().size(), false);
  for (size_t v = 0; v < needs_.size(); ++v) needs_[v] = fwd[v] && reach[v];
  // what depends on the data: an input leaf or a received activation
  data_.assign(g_.values().size(), false);
  for (ValueId v = 0; v < ValueId(g_.values().size()); ++v) data_[size_t(v)] = g_.value(v).kind == ValueKind::Input;
  for (const Node& n : g_.nodes()) {
    bool any = n.op == OpKind::Recv;
    for (ValueId i : n.inputs) any = any || data_[size_t(i)];
    for (ValueId o : n.outputs) data_[size_t(o)] = any;
  }
  return okStatus();
}

Result<GraphSpec> Differ::run() {
  SP_TRY(computeNeeds());
  // tangents of the outputs that depend on a differentiated leaf
  std::set<ValueId> seeded;
  for (ValueId o : g_.outputs()) {
    if (!needs_[size_t(o)] || !seeded.insert(o).second) continue;
    std::string t = o_.tangentPrefix + nameOf(o);
    if (used_.count(t)) return makeError("autodiff-name", "autodiff: tangent name '" + t + "' is taken");
    used_.insert(t);
    types_[t] = g_.value(o).type;
    out_.leaves.push_back(LeafSpec{t, g_.value(o).type, false, std::nullopt});
    acc_[size_t(o)].exact.push_back(t);
  }
  for (auto it = g_.nodes().rbegin(); it != g_.nodes().rend(); ++it) {
    loc_ = it->loc;
    SP_TRY(vjp(*it));
  }
  std::set<std::string> wrt(o_.wrt.begin(), o_.wrt.end());
  std::vector<ValueId> leaves = g_.params();
  if (!wrt.empty()) {
    leaves = g_.inputs();
    leaves.insert(leaves.end(), g_.params().begin(), g_.params().end());
  }
  for (ValueId l : leaves) {
    const std::string& n = nameOf(l);
    if (wrt.empty() ? !isFloat(g_.value(l).type.dtype) : !wrt.count(n)) continue;
    std::string want = o_.gradPrefix + n;
    if (used_.count(want)) return makeError("autodiff-name", "autodiff: gradient name '" + want + "' is taken");
    SP_ASSIGN(std::string gr, materialize(l));
    if (gr.empty()) { SP_ASSIGN(gr, zeros(g_.value(l).type)); }
    if (emitted_.count(gr) && !uses_[gr]) {
      for (NodeSpec& ns : out_.nodes)
        if (!ns.outputs.empty() && ns.outputs[0] == gr) ns.outputs[0] = want;
      for (auto& [k, c] : constants_)
        if (c == gr) c = want;
    } else {
      loc_ = {};
      ++uses_[gr];
      out_.nodes.push_back(NodeSpec{OpKind::Identity, "", {gr}, {want}, {}, {}});
    }
    used_.insert(want);
    out_.outputs.push_back(want);
  }
  return std::move(out_);
}

Status Differ::vjp(const Node& n) {
  Axes from = 0;
  for (ValueId o : n.outputs) from |= varies(o);
  for (ValueId i : n.inputs) from |= varies(i);
  auto in = [&](size_t i) { return nameOf(n.inputs[i]); };
  auto inT = [&](size_t i) -> const TensorType& { return g_.value(n.inputs[i]).type; };
  auto need = [&](size_t i) { return i < n.inputs.size() && needs_[size_t(n.inputs[i])]; };
  // the axes the gradients given below are still partial over (slices,
  // concats and splits pass a partial gradient through unreduced)
  Axes partialOut = 0;
  auto give = [&](size_t i, const std::string& c) { if (need(i)) contribute(n.inputs[i], c, from | partialOut); };
  auto exact = [&](size_t i, const std::string& c) { if (need(i)) contribute(n.inputs[i], c, varies(n.inputs[i])); };

  // Send: the gradient of the sent value comes back from the peer.
  if (n.op == OpKind::Send) {
    const TensorType& t = inT(0);
    if (!rc_ || !isFloat(t.dtype)) return okStatus();
    AttrMap attrs{{"peer", attrInt(n.attrs, "peer")},
                  {"tag", attrInt(n.attrs, "tag") + o_.gradTagOffset},
                  {"dtype", t.dtype},
                  {"shape", t.shape}};
    if (!attrStr(n.attrs, "group").empty()) attrs["group"] = attrStr(n.attrs, "group");  // the same peer
    SP_ASSIGN(std::string r, emit(OpKind::Recv, {}, std::move(attrs), "recv"));
    exact(0, r);
    return okStatus();
  }
  if (n.op == OpKind::Recv) {
    ValueId y = n.outputs[0];
    if (!isFloat(g_.value(y).type.dtype)) return okStatus();
    SP_ASSIGN(std::string gr, materialize(y));
    if (gr.empty()) { SP_ASSIGN(gr, zeros(g_.value(y).type)); }
    return emitSend(gr, attrInt(n.attrs, "peer"), attrInt(n.attrs, "tag") + o_.gradTagOffset, attrStr(n.attrs, "group"));
  }
  bool anyIn = false;
  for (size_t i = 0; i < n.inputs.size(); ++i) anyIn = anyIn || need(i);
  if (!anyIn) return okStatus();
  if (n.op == OpKind::AllGather) return vjpAllGather(n);
  if (n.op == OpKind::Expand) {  // summed back to the input's shape before any all_reduce
    Axes mask = 0;
    SP_ASSIGN(std::string ge, materializePartial(n.outputs[0], &mask));
    if (ge.empty()) return okStatus();
    SP_ASSIGN(auto r, sumTo(ge, inT(0)));
    contribute(n.inputs[0], r, from | mask);
    return okStatus();
  }
  // Layout ops, and an all_to_all over a group crossing the axes a
  // gradient is partial over, are linear and act on each member's value
  // alike: a partial gradient goes through them unreduced (the sum over
  // the partial axes commutes with them), so it reaches the all_gather
  // whose backward reduce-scatters it (MoE under sequence parallel: the
  // gates' and tokens' gradients, partial over tp, through the expert
  // dispatch's all_to_all over ep and the reshapes around it) instead of
  // being all-reduced and then sliced per rank.
  if (n.inputs.size() == 1 && n.outputs.size() == 1 &&
      (n.op == OpKind::Reshape || n.op == OpKind::Squeeze || n.op == OpKind::Unsqueeze ||
       n.op == OpKind::Transpose || n.op == OpKind::Identity || n.op == OpKind::AllToAll)) {
    Axes mask = 0;
    SP_ASSIGN(std::string ge, materializePartial(n.outputs[0], &mask));
    if (ge.empty()) return okStatus();
    std::string r;
    Axes base = from;
    if (n.op == OpKind::AllToAll) {
      if (mask) {  // (a partial gradient exists only in a rank's graph: rc_ is set)
        SP_ASSIGN(Axes ga, axesOf(rc_->prog->mesh(), attrStr(n.attrs, "group")));
        if (mask & ga) {  // partial over the exchanging group itself: reduce first
          SP_ASSIGN(ge, allReduce(ge, mask));
          mask = 0;
        }
      }
      SP_ASSIGN(r, emit(OpKind::AllToAll, {ge},
                        {{"group", attrStr(n.attrs, "group")},
                         {"split_dim", attrInt(n.attrs, "concat_dim")},
                         {"concat_dim", attrInt(n.attrs, "split_dim")}},
                        "alltoall"));
      base = varies(n.inputs[0]);
    } else if (n.op == OpKind::Transpose) {
      const auto& perm = attrInts(n.attrs, "perm");
      std::vector<int64_t> inv(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
      SP_ASSIGN(r, emit(OpKind::Transpose, {ge}, {{"perm", inv}}, "transpose"));
    } else if (n.op == OpKind::Identity) {
      r = ge;
    } else {
      SP_ASSIGN(r, reshape(ge, inT(0).shape));
    }
    contribute(n.inputs[0], r, base | mask);
    return okStatus();
  }

  std::vector<std::string> go;
  bool anyOut = false;
  // Slices, concats and splits move elements, linearly and alike on every
  // member: gradients partial over one set of axes go through unreduced
  // (a gather's backward then reduce-scatters them: load-balanced context
  // parallel chunks put back in order); partial over different sets, each
  // is reduced first.
  const bool moves = n.op == OpKind::Slice || n.op == OpKind::Concat || n.op == OpKind::Split;
  std::vector<Axes> masks;
  for (ValueId o : n.outputs) {
    Axes m = 0;
    std::string s;
    if (moves) { SP_ASSIGN(s, materializePartial(o, &m)); }
    else { SP_ASSIGN(s, materialize(o)); }
    anyOut = anyOut || !s.empty();
    go.push_back(s);
    masks.push_back(s.empty() ? Axes(0) : m);
  }
  if (!anyOut) return okStatus();
  if (moves) {
    Axes common = 0;
    bool one = true;
    for (size_t o = 0; o < go.size(); ++o) {
      if (go[o].empty()) continue;
      if (masks[o] == 0 || (common && masks[o] != common)) one = false;
      common = masks[o];
    }
    if (one) {
      partialOut = common;
    } else {
      for (size_t o = 0; o < go.size(); ++o)
        if (!go[o].empty() && masks[o]) { SP_ASSIGN(go[o], allReduce(go[o], masks[o])); }
    }
  }
  const std::string g = go.empty() ? "" : go[0];
  const std::string y = n.outputs.empty() ? "" : nameOf(n.outputs[0]);
  DType dt = n.outputs.empty() ? DType::F32 : g_.value(n.outputs[0]).type.dtype;
  auto c = [&](double v) { return cst(v, dt); };
  switch (n.op) {
    case OpKind::Neg: { SP_ASSIGN(auto r, un(OpKind::Neg, g, "neg")); give(0, r); return okStatus(); }
    case OpKind::Exp: { SP_ASSIGN(auto r, bin(OpKind::Mul, g, y, "exp")); give(0, r); return okStatus(); }
    case OpKind::Log: { SP_ASSIGN(auto r, bin(OpKind::Div, g, in(0), "log")); give(0, r); return okStatus(); }
    case OpKind::Sqrt: {
      SP_ASSIGN(auto two, c(2.0));
      SP_ASSIGN(auto d, bin(OpKind::Mul, two, y, "sqrt"));
      SP_ASSIGN(auto r, bin(OpKind::Div, g, d, "sqrt"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Rsqrt: {  // d/dx x^-1/2 = -1/2 y^3
      SP_ASSIGN(auto h, c(-0.5));
      SP_ASSIGN(auto y2, bin(OpKind::Mul, y, y, "rsqrt"));
      SP_ASSIGN(auto y3, bin(OpKind::Mul, y2, y, "rsqrt"));
      SP_ASSIGN(auto k, bin(OpKind::Mul, h, y3, "rsqrt"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, k, "rsqrt"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Reciprocal: {
      SP_ASSIGN(auto y2, bin(OpKind::Mul, y, y, "recip"));
      SP_ASSIGN(auto m, bin(OpKind::Mul, g, y2, "recip"));
      SP_ASSIGN(auto r, un(OpKind::Neg, m, "recip"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Tanh: {
      SP_ASSIGN(auto one, c(1.0));
      SP_ASSIGN(auto y2, bin(OpKind::Mul, y, y, "tanh"));
      SP_ASSIGN(auto d, bin(OpKind::Sub, one, y2, "tanh"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, d, "tanh"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Sigmoid: {
      SP_ASSIGN(auto one, c(1.0));
      SP_ASSIGN(auto d, bin(OpKind::Sub, one, y, "sigmoid"));
      SP_ASSIGN(auto e, bin(OpKind::Mul, y, d, "sigmoid"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, e, "sigmoid"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Relu: {
      SP_ASSIGN(auto zero, c(0.0));
      SP_ASSIGN(auto pos, bin(OpKind::Gt, in(0), zero, "relu"));
      SP_ASSIGN(auto r, emit(OpKind::Where, {pos, g, zero}, {}, "relu"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Silu: {  // sigma(x) (1 + x (1 - sigma(x)))
      SP_ASSIGN(auto one, c(1.0));
      SP_ASSIGN(auto s, un(OpKind::Sigmoid, in(0), "silu"));
      SP_ASSIGN(auto a, bin(OpKind::Sub, one, s, "silu"));
      SP_ASSIGN(auto b, bin(OpKind::Mul, in(0), a, "silu"));
      SP_ASSIGN(auto d, bin(OpKind::Add, one, b, "silu"));
      SP_ASSIGN(auto e, bin(OpKind::Mul, s, d, "silu"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, e, "silu"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Gelu: {
      const std::string& approx = attrStr(n.attrs, "approximate");
      const std::string x = in(0);
      std::string d;
      if (approx == "none") {  // Phi(x) + x phi(x)
        SP_ASSIGN(auto half, c(0.5));
        SP_ASSIGN(auto one, c(1.0));
        SP_ASSIGN(auto k1, c(M_SQRT1_2));
        SP_ASSIGN(auto xs, bin(OpKind::Mul, x, k1, "gelu"));
        SP_ASSIGN(auto er, un(OpKind::Erf, xs, "gelu"));
        SP_ASSIGN(auto e1, bin(OpKind::Add, one, er, "gelu"));
        SP_ASSIGN(auto cdf, bin(OpKind::Mul, half, e1, "gelu"));
        SP_ASSIGN(auto mh, c(-0.5));
        SP_ASSIGN(auto x2, bin(OpKind::Mul, x, x, "gelu"));
        SP_ASSIGN(auto ex, bin(OpKind::Mul, mh, x2, "gelu"));
        SP_ASSIGN(auto ee, un(OpKind::Exp, ex, "gelu"));
        SP_ASSIGN(auto k2, c(0.5 * M_2_SQRTPI * M_SQRT1_2));
        SP_ASSIGN(auto pdf, bin(OpKind::Mul, ee, k2, "gelu"));
        SP_ASSIGN(auto xp, bin(OpKind::Mul, x, pdf, "gelu"));
        SP_ASSIGN(d, bin(OpKind::Add, cdf, xp, "gelu"));
      } else if (approx == "tanh") {
        const double k = std::sqrt(2.0 / M_PI), cc = 0.044715;
        SP_ASSIGN(auto one, c(1.0));
        SP_ASSIGN(auto half, c(0.5));
        SP_ASSIGN(auto kc, c(k));
        SP_ASSIGN(auto ccc, c(cc));
        SP_ASSIGN(auto c3, c(3 * cc));
        SP_ASSIGN(auto x2, bin(OpKind::Mul, x, x, "gelu"));
        SP_ASSIGN(auto x3, bin(OpKind::Mul, x2, x, "gelu"));
        SP_ASSIGN(auto a, bin(OpKind::Mul, ccc, x3, "gelu"));
        SP_ASSIGN(auto b, bin(OpKind::Add, x, a, "gelu"));
        SP_ASSIGN(auto inner, bin(OpKind::Mul, kc, b, "gelu"));
        SP_ASSIGN(auto th, un(OpKind::Tanh, inner, "gelu"));
        SP_ASSIGN(auto e, bin(OpKind::Mul, c3, x2, "gelu"));
        SP_ASSIGN(auto f, bin(OpKind::Add, one, e, "gelu"));
        SP_ASSIGN(auto dinner, bin(OpKind::Mul, kc, f, "gelu"));
        SP_ASSIGN(auto t1, bin(OpKind::Add, one, th, "gelu"));
        SP_ASSIGN(auto left, bin(OpKind::Mul, half, t1, "gelu"));
        SP_ASSIGN(auto th2, bin(OpKind::Mul, th, th, "gelu"));
        SP_ASSIGN(auto s1, bin(OpKind::Sub, one, th2, "gelu"));
        SP_ASSIGN(auto hx, bin(OpKind::Mul, half, x, "gelu"));
        SP_ASSIGN(auto s2, bin(OpKind::Mul, s1, dinner, "gelu"));
        SP_ASSIGN(auto right, bin(OpKind::Mul, hx, s2, "gelu"));
        SP_ASSIGN(d, bin(OpKind::Add, left, right, "gelu"));
      } else {
        return unsupported(n, "gelu approximation '" + approx + "'");
      }
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, d, "gelu"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Erf: {
      SP_ASSIGN(auto x2, bin(OpKind::Mul, in(0), in(0), "erf"));
      SP_ASSIGN(auto nx2, un(OpKind::Neg, x2, "erf"));
      SP_ASSIGN(auto e, un(OpKind::Exp, nx2, "erf"));
      SP_ASSIGN(auto k, c(M_2_SQRTPI));
      SP_ASSIGN(auto d, bin(OpKind::Mul, k, e, "erf"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, d, "erf"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Sin: {
      SP_ASSIGN(auto d, un(OpKind::Cos, in(0), "sin"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, g, d, "sin"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Cos: {
      SP_ASSIGN(auto d, un(OpKind::Sin, in(0), "cos"));
      SP_ASSIGN(auto m, bin(OpKind::Mul, g, d, "cos"));
      SP_ASSIGN(auto r, un(OpKind::Neg, m, "cos"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Cast: {
      if (!isFloat(inT(0).dtype)) return okStatus();
      SP_ASSIGN(auto r, emit(OpKind::Cast, {g}, {{"to", inT(0).dtype}}, "cast"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Add:
    case OpKind::Sub: {
      if (need(0)) { SP_ASSIGN(auto r, sumTo(g, inT(0))); give(0, r); }
      if (need(1)) {
        std::string h = g;
        if (n.op == OpKind::Sub) { SP_ASSIGN(h, un(OpKind::Neg, g, "sub")); }
        SP_ASSIGN(auto r, sumTo(h, inT(1)));
        give(1, r);
      }
      return okStatus();
    }
    case OpKind::Mul: {
      if (need(0)) {
        SP_ASSIGN(auto m, bin(OpKind::Mul, g, in(1), "mul"));
        SP_ASSIGN(auto r, sumTo(m, inT(0)));
        give(0, r);
      }
      if (need(1)) {
        SP_ASSIGN(auto m, bin(OpKind::Mul, g, in(0), "mul"));
        SP_ASSIGN(auto r, sumTo(m, inT(1)));
        give(1, r);
      }
      return okStatus();
    }
    case OpKind::Div: {
      if (need(0)) {
        SP_ASSIGN(auto m, bin(OpKind::Div, g, in(1), "div"));
        SP_ASSIGN(auto r, sumTo(m, inT(0)));
        give(0, r);
      }
      if (need(1)) {  // -g y / b
        SP_ASSIGN(auto q, bin(OpKind::Div, y, in(1), "div"));
        SP_ASSIGN(auto m, bin(OpKind::Mul, g, q, "div"));
        SP_ASSIGN(auto ng, un(OpKind::Neg, m, "div"));
        SP_ASSIGN(auto r, sumTo(ng, inT(1)));
        give(1, r);
      }
      return okStatus();
    }
    case OpKind::Pow: {
      if (need(1)) return unsupported(n, "the gradient of an exponent");
      SP_ASSIGN(auto one, c(1.0));
      SP_ASSIGN(auto e1, bin(OpKind::Sub, in(1), one, "pow"));
      SP_ASSIGN(auto p, bin(OpKind::Pow, in(0), e1, "pow"));
      SP_ASSIGN(auto d, bin(OpKind::Mul, in(1), p, "pow"));
      SP_ASSIGN(auto m, bin(OpKind::Mul, g, d, "pow"));
      SP_ASSIGN(auto r, sumTo(m, inT(0)));
      give(0, r);
      return okStatus();
    }
    case OpKind::Where: {
      SP_ASSIGN(auto zero, c(0.0));
      if (need(1)) {
        SP_ASSIGN(auto w, emit(OpKind::Where, {in(0), g, zero}, {}, "where"));
        SP_ASSIGN(auto r, sumTo(w, inT(1)));
        give(1, r);
      }
      if (need(2)) {
        SP_ASSIGN(auto w, emit(OpKind::Where, {in(0), zero, g}, {}, "where"));
        SP_ASSIGN(auto r, sumTo(w, inT(2)));
        give(2, r);
      }
      return okStatus();
    }
    case OpKind::MatMul: return vjpMatMul(n, g, from);
    case OpKind::ReduceSum:
    case OpKind::ReduceMean: {
      const Shape& xs = inT(0).shape;
      int64_t rank = int64_t(xs.size());
      std::vector<int64_t> axes = attrInts(n.attrs, "axes");
      if (axes.empty())
        for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
      SP_ASSIGN(axes, normAxes(axes, rank));
      Shape kept = xs;
      Dim count(1);
      for (int64_t a : axes) count = count * xs[size_t(a)], kept[size_t(a)] = Dim(1);
      SP_ASSIGN(std::string r, reshape(g, kept));
      if (kept != xs) { SP_ASSIGN(r, emit(OpKind::Expand, {r}, {{"shape", xs}}, "expand")); }
      if (n.op == OpKind::ReduceMean) {
        if (!count.isConcrete()) return unsupported(n, "a mean over symbolic dims");
        SP_ASSIGN(auto k, c(1.0 / double(count.value())));
        SP_ASSIGN(r, bin(OpKind::Mul, r, k, "mean"));
      }
      give(0, r);
      return okStatus();
    }
    case OpKind::Softmax: {  // y (g - sum(g y))
      int64_t axis = attrInt(n.attrs, "axis");
      SP_ASSIGN(auto gy, bin(OpKind::Mul, g, y, "softmax"));
      SP_ASSIGN(auto s, reduceSum(gy, {axis}, true));
      SP_ASSIGN(auto d, bin(OpKind::Sub, g, s, "softmax"));
      SP_ASSIGN(auto r, bin(OpKind::Mul, y, d, "softmax"));
      give(0, r);
      return okStatus();
    }
    case OpKind::LogSoftmax: {  // g - exp(y) sum(g)
      int64_t axis = attrInt(n.attrs, "axis");
      SP_ASSIGN(auto s, reduceSum(g, {axis}, true));
      SP_ASSIGN(auto e, un(OpKind::Exp, y, "logsoftmax"));
      SP_ASSIGN(auto m, bin(OpKind::Mul, e, s, "logsoftmax"));
      SP_ASSIGN(auto r, bin(OpKind::Sub, g, m, "logsoftmax"));
      give(0, r);
      return okStatus();
    }
    case OpKind::LayerNorm:
    case OpKind::RmsNorm: return vjpNorm(n, g, from);
    case OpKind::Slice: {
      // zeros around the slice, one sliced axis at a time (outermost last)
      const Shape& xs = inT(0).shape;
      int64_t rank = int64_t(xs.size());
      const auto& starts = attrInts(n.attrs, "starts");
      const auto& ends = attrInts(n.attrs, "ends");
      const auto& axesA = attrInts(n.attrs, "axes");
      const auto& steps = attrInts(n.attrs, "steps");
      std::string r = g;
      if (starts.size() == 1 && (steps.empty() || steps[0] == 1)) {  // one axis: a piece (materialize)
        SP_ASSIGN(int64_t a, normAxis(axesA.empty() ? 0 : axesA[0], rank, "slice"));
        if (xs[size_t(a)].isConcrete()) {
          auto [lo, len] = sliceRange(starts[0], ends[0], 1, xs[size_t(a)].value());
          acc_[size_t(n.inputs[0])].pieces[{a, from & ~varies(n.inputs[0])}].push_back(Piece{lo, len, g});
          return okStatus();
        }
      }
      for (size_t i = 0; i < starts.size(); ++i) {
        if (!steps.empty() && steps[i] != 1) return unsupported(n, "a slice with steps");
        SP_ASSIGN(int64_t a, normAxis(axesA.empty() ? int64_t(i) : axesA[i], rank, "slice"));
        if (!xs[size_t(a)].isConcrete()) return unsupported(n, "a slice of a symbolic dim");
        auto [lo, len] = sliceRange(starts[i], ends[i], 1, xs[size_t(a)].value());
        int64_t hi = xs[size_t(a)].value() - lo - len;
        std::vector<std::string> parts;
        TensorType pad = type(r);
        if (lo > 0) {
          pad.shape[size_t(a)] = Dim(lo);
          SP_ASSIGN(auto z, zeros(pad));
          parts.push_back(z);
        }
        parts.push_back(r);
        if (hi > 0) {
          pad.shape[size_t(a)] = Dim(hi);
          SP_ASSIGN(auto z, zeros(pad));
          parts.push_back(z);
        }
        if (parts.size() > 1) { SP_ASSIGN(r, emit(OpKind::Concat, parts, {{"axis", a}}, "slice")); }
      }
      give(0, r);
      return okStatus();
    }
    case OpKind::Concat: {
      int64_t rank = int64_t(inT(0).shape.size());
      SP_ASSIGN(int64_t a, normAxis(attrInt(n.attrs, "axis"), rank, "concat"));
      Dim at(0);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const Dim& e = inT(i).shape[size_t(a)];
        if (!e.isConcrete() || !at.isConcrete()) return unsupported(n, "a concat along a symbolic dim");
        if (need(i)) {
          SP_ASSIGN(auto r, emit(OpKind::Slice, {g},
                                 {{"starts", std::vector<int64_t>{at.value()}},
                                  {"ends", std::vector<int64_t>{at.value() + e.value()}},
                                  {"axes", std::vector<int64_t>{a}}},
                                 "concat"));
          give(i, r);
        }
        at = Dim(at.value() + e.value());
      }
      return okStatus();
    }
    case OpKind::Split: {
      std::vector<std::string> parts;
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (!go[i].empty()) { parts.push_back(go[i]); continue; }
        SP_ASSIGN(auto z, zeros(g_.value(n.outputs[i]).type));
        parts.push_back(z);
      }
      SP_ASSIGN(auto r, emit(OpKind::Concat, parts, {{"axis", attrInt(n.attrs, "axis")}}, "split"));
      give(0, r);
      return okStatus();
    }
    case OpKind::Trilu: {
      SP_ASSIGN(auto r, emit(OpKind::Trilu, {g}, n.attrs, "trilu"));
      give(0, r);
      return okStatus();
    }
    case OpKind::AllReduce: {
      const std::string& red = attrStr(n.attrs, "reduce");
      std::string r = g;
      if (red == "avg") {
        SP_ASSIGN(int64_t size, rc_->groupSize(attrStr(n.attrs, "group")));
        SP_ASSIGN(auto k, c(1.0 / double(size)));
        SP_ASSIGN(r, bin(OpKind::Mul, g, k, "avg"));
      } else if (red != "sum") {
        return unsupported(n, "an all_reduce with reduce '" + red + "'");
      }
      exact(0, r);
      return okStatus();
    }
    case OpKind::ReduceScatter: {
      if (attrStr(n.attrs, "reduce") != "sum") return unsupported(n, "a reduce_scatter that is not a sum");
      SP_ASSIGN(auto r, emit(OpKind::AllGather, {g},
                             {{"group", attrStr(n.attrs, "group")}, {"dim", attrInt(n.attrs, "dim")}}, "allgather"));
      exact(0, r);
      return okStatus();
    }
    default:
      break;
  }
  switch (opInfo(n.op).category) {
    case OpCategory::Compare:
      return okStatus();  // no gradient flows through a comparison
    default:
      break;
  }
  switch (n.op) {
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Sign:
    case OpKind::Not:
      return okStatus();  // piecewise constant
    default:
      return unsupported(n, "no gradient rule");
  }
}

// numpy matmul, both operands of rank >= 2: dA = g B^T, dB = A^T g, each
// summed to its operand's shape (a weight [k, n] read by [s, b, k]: batched
// over b, summed over it). Not ATen's flattened
// [s*b, k]^T [s*b, n]: with the batch split over data-parallel ranks that
// reshape interleaves the shards, while the batched form is a contraction
// or a sum over the split dim.
Status Differ::vjpMatMul(const Node& n, const std::string& g, Axes from) {
  const std::string a = nameOf(n.inputs[0]), b = nameOf(n.inputs[1]);
  const TensorType &at = g_.value(n.inputs[0]).type, &bt = g_.value(n.inputs[1]).type;
  if (at.shape.size() < 2 || bt.shape.size() < 2) return unsupported(n, "a matmul with a 1-D operand");
  auto swapLast = [&](const std::string& x) -> Result<std::string> {
    size_t r = type(x).shape.size();
    std::vector<int64_t> perm;
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(i));
    std::swap(perm[r - 1], perm[r - 2]);
    return emit(OpKind::Transpose, {x}, {{"perm", perm}}, "t");
  };
  if (needs_[size_t(n.inputs[0])]) {
    SP_ASSIGN(auto bT, swapLast(b));
    SP_ASSIGN(auto m, emit(OpKind::MatMul, {g, bT}, {}, "dA"));
    SP_ASSIGN(auto r, sumTo(m, at));
    contribute(n.inputs[0], r, from);
  }
  if (needs_[size_t(n.inputs[1])]) {
    std::string r;
    const Shape& as = at.shape;
    // A weight broadcast over a batch dim c of A (absent from B, or 1 there:
    // Megatron's [s, b, k] rows against [k, n]; an expert bank [E, 1, k, n]
    // against tokens [E, s, b, k]): c joins the contraction and A's rows m
    // become a batch dim summed after, so no [..., c, k, n] intermediate is
    // built (2^40 elements for Llama 3 405B at seq 8192, 2^43 for
    // DeepSeek-V3's experts). c is the last batch position where B is absent
    // or 1, read off B's shape alone and by position, never A's sizes: S and
    // D must take the same form where their batch, seq or local expert
    // counts differ. Only for a weight (B computed from parameters alone),
    // whose broadcast dims are the tokens' and whose rows are few; an
    // activation broadcast over heads (GQA's keys against [.., group, s, d]
    // queries) keeps the plain form, where the rows are the long dim.
    const size_t ra = as.size(), rb = bt.shape.size();
    std::optional<size_t> c;
    if (ra >= 3 && rb <= ra && ((ra == 3 && rb == 2) || !data_[size_t(n.inputs[1])]))
      for (size_t i = 0; i + 2 < ra; ++i)
        if (i + rb < ra || bt.shape[i + rb - ra] == Dim(1)) c = i;
    if (c) {
      std::vector<int64_t> pa, pg;  // [batch \ c, m, k, c] and [batch \ c, m, c, n]
      for (size_t i = 0; i + 2 < ra; ++i)
        if (i != *c) pa.push_back(int64_t(i)), pg.push_back(int64_t(i));
      const int64_t m = int64_t(ra - 2), k = int64_t(ra - 1), cc = int64_t(*c);
      pa.insert(pa.end(), {m, k, cc});
      pg.insert(pg.end(), {m, cc, k});
      SP_ASSIGN(auto aP, emit(OpKind::Transpose, {a}, {{"perm", pa}}, "t"));
      SP_ASSIGN(auto gP, emit(OpKind::Transpose, {g}, {{"perm", pg}}, "t"));
      SP_ASSIGN(auto mm, emit(OpKind::MatMul, {aP, gP}, {}, "dB"));
      SP_ASSIGN(r, reduceSum(mm, {int64_t(ra - 3)}, false));  // over the rows m
      // B has position c (as a 1): put it back so sumTo aligns the rest
      if (*c + rb >= ra) { SP_ASSIGN(r, emit(OpKind::Unsqueeze, {r}, {{"axes", std::vector<int64_t>{cc}}}, "u")); }
      SP_ASSIGN(r, sumTo(r, bt));
    } else {
      SP_ASSIGN(auto aT, swapLast(a));
      SP_ASSIGN(auto m, emit(OpKind::MatMul, {aT, g}, {}, "dB"));
      SP_ASSIGN(r, sumTo(m, bt));
    }
    contribute(n.inputs[1], r, from);
  }
  return okStatus();
}

// layer_norm / rms_norm over dims [axis, rank): the statistics recomputed,
//   n = (x - mean) r (layer) or x r (rms), r = rsqrt(var or mean(x^2) + eps)
//   d scale = sum over the leading dims of g n; d bias = sum of g
//   dn = g scale; dx = r (dn - mean(dn) - n mean(dn n)) (rms: no mean(dn))
Status Differ::vjpNorm(const Node& n, const std::string& g, Axes from) {
  const bool layer = n.op == OpKind::LayerNorm;
  const std::string x = nameOf(n.inputs[0]);
  const TensorType& xt = g_.value(n.inputs[0]).type;
  int64_t rank = int64_t(xt.shape.size());
  SP_ASSIGN(int64_t axis, normAxis(attrInt(n.attrs, "axis"), rank, std::string(opName(n.op))));
  std::vector<int64_t> axes, lead;
  for (int64_t a = 0; a < rank; ++a) (a >= axis ? axes : lead).push_back(a);
  Dim count(1);
  for (int64_t a : axes) count = count * xt.shape[size_t(a)];
  if (!count.isConcrete()) return unsupported(n, "a norm over symbolic dims");
  auto c = [&](double v) { return cst(v, xt.dtype); };
  SP_ASSIGN(auto inv, c(1.0 / double(count.value())));
  auto mean = [&](const std::string& v) -> Result<std::string> {
    SP_ASSIGN(auto s, reduceSum(v, axes, true));
    return bin(OpKind::Mul, s, inv, "norm");
  };
  std::string centered = x;
  if (layer) {
    SP_ASSIGN(auto mu, mean(x));
    SP_ASSIGN(centered, bin(OpKind::Sub, x, mu, "norm"));
  }
  SP_ASSIGN(auto sq, bin(OpKind::Mul, centered, centered, "norm"));
  SP_ASSIGN(auto var, mean(sq));
  SP_ASSIGN(auto eps, c(attrFloat(n.attrs, "epsilon")));
  SP_ASSIGN(auto ve, bin(OpKind::Add, var, eps, "norm"));
  SP_ASSIGN(auto r, un(OpKind::Rsqrt, ve, "norm"));
  SP_ASSIGN(auto nrm, bin(OpKind::Mul, centered, r, "norm"));
  std::string dn = g;
  if (n.inputs.size() > 1) {
    if (needs_[size_t(n.inputs[1])]) {
      SP_ASSIGN(auto gn, bin(OpKind::Mul, g, nrm, "dscale"));
      SP_ASSIGN(auto s, sumTo(gn, g_.value(n.inputs[1]).type));
      contribute(n.inputs[1], s, from);
    }
    SP_ASSIGN(dn, bin(OpKind::Mul, g, nameOf(n.inputs[1]), "norm"));
  }
  if (n.inputs.size() > 2 && needs_[size_t(n.inputs[2])]) {
    SP_ASSIGN(auto s, sumTo(g, g_.value(n.inputs[2]).type));
    contribute(n.inputs[2], s, from);
  }
  if (!needs_[size_t(n.inputs[0])]) return okStatus();
  SP_ASSIGN(auto dnn, bin(OpKind::Mul, dn, nrm, "norm"));
  SP_ASSIGN(auto m2, mean(dnn));
  SP_ASSIGN(auto t2, bin(OpKind::Mul, nrm, m2, "norm"));
  SP_ASSIGN(auto d, bin(OpKind::Sub, dn, t2, "norm"));
  if (layer) {
    SP_ASSIGN(auto m1, mean(dn));
    SP_ASSIGN(d, bin(OpKind::Sub, d, m1, "norm"));
  }
  SP_ASSIGN(auto dx, bin(OpKind::Mul, r, d, "norm"));
  contribute(n.inputs[0], dx, from);
  return okStatus();
}

// all_gather over G: the rank's chunk of the output's gradient; what is
// still partial over exactly G is reduce-scattered instead (sum and chunk in
// one collective, sequence parallelism's backward).
Status Differ::vjpAllGather(const Node& n) {
  ValueId y = n.outputs[0], x = n.inputs[0];
  const std::string& group = attrStr(n.attrs, "group");
  int64_t rank = int64_t(g_.value(x).type.shape.size());
  SP_ASSIGN(int64_t dim, normAxis(attrInt(n.attrs, "dim"), rank, "all_gather"));
  SP_ASSIGN(Axes ga, axesOf(rc_->prog->mesh(), group));
  Acc& a = acc_[size_t(y)];
  if (a.empty()) return okStatus();
  std::vector<std::string> scattered;
  if (auto it = a.partial.find(ga); it != a.partial.end()) {
    scattered = it->second;
    a.partial.erase(it);
  }
  std::vector<std::string> parts;
  if (!scattered.empty()) {
    SP_ASSIGN(auto s, sum(scattered));
    SP_ASSIGN(auto r, emit(OpKind::ReduceScatter, {s}, {{"group", group}, {"dim", dim}}, "reducescatter"));
    parts.push_back(r);
  }
  if (!a.empty()) {
    SP_ASSIGN(auto full, materialize(y));
    const Dim& e = g_.value(x).type.shape[size_t(dim)];
    if (!e.isConcrete()) return unsupported(n, "an all_gather along a symbolic dim");
    rc_->usedRank = true;
    SP_ASSIGN(int64_t idx, groupIndex(rc_->prog->mesh(), rc_->prog->namedGroups(), group, rc_->rank));
    SP_ASSIGN(auto r, emit(OpKind::Slice, {full},
                           {{"starts", std::vector<int64_t>{idx * e.value()}},
                            {"ends", std::vector<int64_t>{(idx + 1) * e.value()}},
                            {"axes", std::vector<int64_t>{dim}}},
                           "chunk"));
    parts.push_back(r);
  }
  acc_[size_t(y)] = Acc{};
  SP_ASSIGN(auto r, sum(parts));
  contribute(x, r, varies(x));
  return okStatus();
}

// Forward typing of one rank: the axes over which each value differs.
// Returns false when a recv's sender has not been typed yet.
Result<bool> typeRank(const Program& p, int64_t rank, const GradOptions& o,
                      std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Axes>& sent, std::vector<Axes>& out) {
  const Graph& g = p.rank(rank);
  out.assign(g.values().size(), 0);
  for (ValueId v = 0; v < ValueId(g.values().size()); ++v) {
    if (g.value(v).kind == ValueKind::NodeOutput) continue;
    auto it = o.varies.find(g.value(v).name);
    if (it == o.varies.end())
      return makeError("autodiff-varies", "autodiff: rank " + std::to_string(rank) + ": no replication given for '" +
                                              g.value(v).name + "' (the mesh axes over which it differs)");
    for (const std::string& ax : it->second) {
      SP_ASSIGN(Axes a, axesOf(p.mesh(), ax));
      out[size_t(v)] |= a;
    }
  }
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> nth;  // (peer, tag, dir) -> count
  bool complete = true;
  // What depends on a recv whose sender is not typed yet: not typed either,
  // and never sent on (a receiver would take a typing that a later pass
  // changes: the interleaved schedule's last stage feeds the first).
  std::vector<bool> unknown(g.values().size(), false);
  for (const Node& n : g.nodes()) {
    Axes a = 0;
    bool unk = false;
    for (ValueId i : n.inputs) a |= out[size_t(i)], unk = unk || unknown[size_t(i)];
    switch (n.op) {
      case OpKind::AllReduce:
      case OpKind::AllGather:
      case OpKind::Broadcast: {
        SP_ASSIGN(Axes ga, axesOf(p.mesh(), attrStr(n.attrs, "group")));
        a &= ~ga;
        break;
      }
      case OpKind::ReduceScatter:
      case OpKind::AllToAll: {
        SP_ASSIGN(Axes ga, axesOf(p.mesh(), attrStr(n.attrs, "group")));
        a |= ga;
        break;
      }
      case OpKind::Send: {
        SP_ASSIGN(int64_t peer, p.peerOf(rank, n));
        int64_t tag = attrInt(n.attrs, "tag");
        int64_t k = nth[{peer, tag, 0}]++;
        if (!unk) sent[{rank, peer, tag, k}] = a;
        break;
      }
      case OpKind::Recv: {
        SP_ASSIGN(int64_t peer, p.peerOf(rank, n));
        int64_t tag = attrInt(n.attrs, "tag");
        int64_t k = nth[{peer, tag, 1}]++;
        auto it = sent.find({peer, rank, tag, k});
        if (it == sent.end()) complete = false, unk = true;
        else a = it->second;
        break;
      }
      default:
        break;
    }
    for (ValueId v : n.outputs) out[size_t(v)] = a, unknown[size_t(v)] = unk;
  }
  return complete;
}

}  // namespace

Result<Graph> differentiate(const Graph& forward, const GradOptions& options) {
  Differ d(forward, options, nullptr);
  SP_ASSIGN(GraphSpec spec, d.run());
  return buildGraph(spec);
}

Result<Program> differentiate(const Program& forward, const GradOptions& options) {
  const int64_t world = forward.worldSize();
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Axes> sent;
  std::vector<std::vector<Axes>> varies(static_cast<size_t>(world));
  std::vector<bool> done(size_t(world), false);
  // Recv values take their sender's typing: repeat until every rank is typed
  // (about one pass per time the transfers wrap to an earlier stage: the
  // interleaved schedule's chunks); a pass that types no further send and
  // no further rank never will.
  for (int64_t left = world; left > 0;) {
    const size_t before = sent.size() + size_t(left);
    for (int64_t r = 0; r < world; ++r) {
      if (done[size_t(r)]) continue;
      SP_ASSIGN(bool ok, typeRank(forward, r, options, sent, varies[size_t(r)]));
      if (ok) done[size_t(r)] = true, --left;
    }
    if (left > 0 && sent.size() + size_t(left) == before)
      return makeError("autodiff-varies", "autodiff: a recv whose sender never sends (or a cycle of sends)");
  }
  // Once per rank class and typing: a rank of the class whose forward values
  // vary over the same axes, and that sees the same group sizes, shares a
  // backward that read nothing else of its rank.
  ProgramSpec spec;
  spec.worldSize = world;
  spec.mesh = forward.mesh();
  spec.groups = forward.namedGroups();
  spec.ranks.resize(size_t(world));
  spec.sameAs.assign(size_t(world), -1);
  for (int64_t c = 0; c < forward.numClasses(); ++c) {
    std::vector<std::pair<int64_t, std::map<std::string, int64_t>>> shareable;  // (rank, sizes it saw)
    for (int64_t r : forward.classRanks(c)) {
      GroupSizeFn sizeOf = groupSizeFor(forward.mesh(), forward.namedGroups(), r);
      for (const auto& [from, sizes] : shareable) {
        bool same = varies[size_t(r)] == varies[size_t(from)];
        for (auto it = sizes.begin(); same && it != sizes.end(); ++it) {
          auto n = sizeOf(it->first);
          same = n.ok() && *n == it->second;
        }
        if (same) {
          spec.sameAs[size_t(r)] = from;
          break;
        }
      }
      if (spec.sameAs[size_t(r)] >= 0) continue;
      RankCtx rc{&forward, r, varies[size_t(r)], {}};
      rc.groupSize = [&rc, sizeOf](const std::string& g) -> Result<int64_t> {
        SP_ASSIGN(int64_t n, sizeOf(g));
        rc.sizes[g] = n;
        return n;
      };
      Differ d(forward.rank(r), options, &rc);
      auto g = d.run();
      if (!g) return makeError(g.error().id, "rank " + std::to_string(r) + ": " + g.error().message);
      spec.ranks[size_t(r)] = std::move(*g);
      spec.sameAs[size_t(r)] = r;
      if (!rc.usedRank) shareable.emplace_back(r, rc.sizes);
    }
  }
  return buildProgram(spec);
}

}  // namespace sp::ir
