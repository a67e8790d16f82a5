// The shrunk witness (rewrite/witness/witness_shrink.h): row labels over S, the
// relations and D, and the rebuilt programs.
#include "rewrite/witness/witness_shrink.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "ir/collective_order.h"
#include "ir/program_edit.h"
#include <spdlog/spdlog.h>

namespace sp::rewrite {

bool RowLabels::any() const {
  return std::any_of(dims.begin(), dims.end(), [](const RowLabel& l) { return l.on(); });
}

namespace {

using ir::OpKind;

std::string istr(int64_t v) { return std::to_string(v); }

// The first reason an extent does not shrink; the analysis stops there.
struct Stop {
  std::string why;
};

// Labels and shapes of a node's operands, its full output shapes, and the
// rewritten attributes of its shrunk copy.
struct Ctx {
  int64_t n;
  const ir::Node& node;
  std::vector<const ir::TensorType*> inTypes;
  std::vector<const RowLabels*> in;
  std::vector<const ir::TensorType*> outTypes;
  ir::AttrMap attrs;  // starts as the node's; rewritten where needed
  bool rewrote = false;
};

[[noreturn]] void stop(const Ctx& c, const std::string& why) {
  throw Stop{std::string(ir::opName(c.node.op)) + " '" + c.node.name + "'" + (c.node.loc.empty() ? "" : " (" + c.node.loc.str() + ")") +
             ": " + why};
}

int64_t extentOf(const ir::TensorType& t, size_t d) { return t.shape[d].value(); }

ir::Shape shrunkShape(const ir::TensorType& t, const RowLabels& l) {
  ir::Shape s = t.shape;
  for (size_t d = 0; d < s.size() && d < l.dims.size(); ++d)
    if (l.dims[d].on()) s[d] = ir::Dim(l.dims[d].outer * l.dims[d].inner);
  return s;
}

RowLabels unlabeled(const ir::TensorType& t, int k = 0) {
  RowLabels l;
  l.dims.assign(t.shape.size(), RowLabel{});
  l.k = k;
  return l;
}

int64_t normAxis(const Ctx& c, int64_t a, size_t rank) {
  int64_t r = int64_t(rank);
  if (a < 0) a += r;
  if (a < 0 || a >= r) stop(c, "axis out of range");
  return a;
}

// Numpy broadcasting of the operands onto the output: per output dim, the
// operands that hold it at full extent must agree on its label (a labeled
// row dim meeting an unlabeled dim of the same extent is not a row dim).
RowLabels broadcast(const Ctx& c, const std::vector<size_t>& operands, const ir::TensorType& out) {
  RowLabels l = unlabeled(out);
  size_t rank = out.shape.size();
  for (size_t j = 0; j < rank; ++j) {
    bool labeled = false, plain = false;
    RowLabel lab;
    for (size_t i : operands) {
      const ir::TensorType& t = *c.inTypes[i];
      size_t r = t.shape.size();
      if (r + j < rank) continue;
      size_t d = j + r - rank;
      if (extentOf(t, d) == 1) continue;
      const RowLabel& x = c.in[i]->dims[d];
      if (x.on()) {
        if (labeled && !(x == lab)) stop(c, "operands repeat their rows differently along dim " + istr(int64_t(j)));
        labeled = true;
        lab = x;
      } else {
        plain = true;
      }
    }
    if (labeled && plain) stop(c, "a row dim meets a dim of the same extent that is not one (dim " + istr(int64_t(j)) + ")");
    if (labeled) l.dims[j] = lab;
  }
  return l;
}

void requireK0(const Ctx& c, size_t i, const char* what) {
  if (c.in[i]->k != 0) stop(c, std::string(what) + " of a value scaled by a sum over rows");
}

void requireSameK(const Ctx& c, const std::vector<size_t>& ops) {
  for (size_t i : ops)
    if (c.in[i]->k != c.in[ops[0]]->k) stop(c, "operands scaled differently by sums over rows");
}

// Splits the row-major atoms of `in` (a labeled dim is outer, N, inner) into
// the dims of `out`; a labeled dim's N must land whole in one output dim.
RowLabels reshapeLabels(const Ctx& c, const ir::TensorType& in, const RowLabels& li, const ir::TensorType& out) {
  struct Atom {
    int64_t v;
    bool row;
  };
  std::deque<Atom> atoms;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (li.dims[d].on()) {
      if (li.dims[d].outer > 1) atoms.push_back({li.dims[d].outer, false});
      atoms.push_back({c.n, true});
      if (li.dims[d].inner > 1) atoms.push_back({li.dims[d].inner, false});
    } else if (extentOf(in, d) != 1) {
      atoms.push_back({extentOf(in, d), false});
    }
  }
  RowLabels l = unlabeled(out, li.k);
  for (size_t j = 0; j < out.shape.size(); ++j) {
    int64_t e = extentOf(out, j), prod = 1, outer = 1, inner = 1;
    bool row = false;
    while (prod < e) {
      if (atoms.empty()) stop(c, "element counts do not factor");
      Atom a = atoms.front();
      atoms.pop_front();
      if (a.row) {
        if (row) stop(c, "two row dims merged into one");
        if (e % (prod * a.v) != 0) stop(c, "a row dim split by the target shape");
        prod *= a.v;
        row = true;
        continue;
      }
      int64_t take = a.v;
      if (e % (prod * a.v) != 0) {
        if (e % prod != 0 || a.v % (e / prod) != 0) stop(c, "target shape does not factor the input's dims");
        take = e / prod;
        atoms.push_front({a.v / take, false});
      }
      prod *= take;
      (row ? inner : outer) *= take;
    }
    if (prod != e) stop(c, "target shape does not factor the input's dims");
    if (row) l.dims[j] = RowLabel{outer, inner};
  }
  if (!atoms.empty()) stop(c, "element counts do not factor");
  return l;
}

std::vector<int64_t> reduceAxes(const Ctx& c, const ir::TensorType& t) {
  std::vector<int64_t> axes = ir::attrInts(c.node.attrs, "axes");
  if (axes.empty())
    for (size_t d = 0; d < t.shape.size(); ++d) axes.push_back(int64_t(d));
  for (auto& a : axes) a = normAxis(c, a, t.shape.size());
  return axes;
}

// A cut [b, e) of a row dim of extent outer·n·inner: whole blocks of n·inner
// rows (the data-parallel rank's batch), or the whole dim. The cut's label
// and its bounds in the shrunk dim (outer·inner).
struct BlockCut {
  RowLabel label;
  int64_t start, end;
};
// One rule for ops (slice, split) and relations (slice): nullopt when the
// cut falls inside a block.
std::optional<BlockCut> cutBlocks(int64_t n, const RowLabel& x, int64_t b, int64_t e) {
  int64_t block = n * x.inner;
  if (b < 0 || e <= b || b % block != 0 || e % block != 0) return std::nullopt;
  return BlockCut{RowLabel{(e - b) / block, x.inner}, b / n, e / n};
}
BlockCut blockCut(const Ctx& c, const RowLabel& x, int64_t b, int64_t e) {
  auto cut = cutBlocks(c.n, x, b, e);
  if (!cut) stop(c, "a cut of a row dim inside its repeated rows");
  return *cut;
}
// Parts joined along a dim: all plain, or all row dims repeating alike
// (whole blocks of n·inner rows each), their blocks in order.
RowLabel joinBlocks(const Ctx& c, const std::vector<RowLabel>& parts) {
  bool any = std::any_of(parts.begin(), parts.end(), [](const RowLabel& p) { return p.on(); });
  if (!any) return RowLabel{};
  int64_t outer = 0;
  for (const auto& p : parts) {
    if (!p.on() || p.inner != parts[0].inner) stop(c, "a join of parts that repeat their rows differently");
    outer += p.outer;
  }
  return RowLabel{outer, parts[0].inner};
}

// The transfer rule of one op: output labels, and c.attrs rewritten for the
// shrunk node.
std::vector<RowLabels> transfer(Ctx& c) {
  const ir::Node& nd = c.node;
  const auto& ins = c.in;
  const ir::TensorType& out0 = *c.outTypes.at(0);
  switch (ir::opInfo(nd.op).category) {
    case ir::OpCategory::Unary: {
      RowLabels l = *ins[0];
      switch (nd.op) {
        case OpKind::Neg: case OpKind::Identity: case OpKind::Abs: case OpKind::Relu:
          break;  // positively homogeneous: n^k passes through
        case OpKind::Cast:
          if (!ir::isFloat(ir::attrType(nd.attrs, "to"))) requireK0(c, 0, "an integer cast");
          break;
        case OpKind::Sign:
          l.k = 0;
          break;
        default:
          requireK0(c, 0, "a nonlinear op");
      }
      return {l};
    }
    case ir::OpCategory::Binary:
    case ir::OpCategory::Compare: {
      RowLabels l = broadcast(c, {0, 1}, out0);
      if (nd.op == OpKind::Mul) {
        l.k = ins[0]->k + ins[1]->k;
      } else if (nd.op == OpKind::Div) {
        l.k = ins[0]->k - ins[1]->k;
      } else if (nd.op == OpKind::Add || nd.op == OpKind::Sub || nd.op == OpKind::Max || nd.op == OpKind::Min) {
        requireSameK(c, {0, 1});
        l.k = ins[0]->k;
      } else if (ir::opInfo(nd.op).category == ir::OpCategory::Compare && nd.op != OpKind::And &&
                 nd.op != OpKind::Or && nd.op != OpKind::Xor) {
        requireSameK(c, {0, 1});  // n^k x < n^k y iff x < y
        l.k = 0;
      } else {
        requireK0(c, 0, "a nonlinear op");
        requireK0(c, 1, "a nonlinear op");
      }
      return {l};
    }
    case ir::OpCategory::Ternary: {  // where(cond, x, y)
      RowLabels l = broadcast(c, {0, 1, 2}, out0);
      requireK0(c, 0, "a condition");
      requireSameK(c, {1, 2});
      l.k = ins[1]->k;
      return {l};
    }
    case ir::OpCategory::Linear: {
      if (nd.op == OpKind::Gemm) {
        bool ta = ir::attrInt(nd.attrs, "trans_a") != 0, tb = ir::attrInt(nd.attrs, "trans_b") != 0;
        RowLabel m = ins[0]->dims[ta ? 1 : 0], ka = ins[0]->dims[ta ? 0 : 1];
        RowLabel kb = ins[1]->dims[tb ? 1 : 0], nn = ins[1]->dims[tb ? 0 : 1];
        if (!(ka == kb)) stop(c, "contraction over a row dim of one operand only");
        RowLabels l = unlabeled(out0, ins[0]->k + ins[1]->k + (ka.on() ? 1 : 0));
        l.dims[0] = m;
        l.dims[1] = nn;
        if (ins.size() > 2) {
          RowLabels bias = broadcast(c, {2}, out0);
          for (size_t d = 0; d < 2; ++d)
            if (bias.dims[d].on() && !(bias.dims[d] == l.dims[d])) stop(c, "bias rows differ from the product's");
          if (ir::attrFloat(nd.attrs, "beta") != 0 && ins[2]->k != l.k) stop(c, "bias scaled differently");
        }
        return {l};
      }
      const ir::TensorType &a = *c.inTypes[0], &b = *c.inTypes[1];
      RowLabels la = *ins[0], lb = *ins[1];
      ir::TensorType ta = a, tb = b;
      bool vecA = a.shape.size() == 1, vecB = b.shape.size() == 1;
      if (vecA) { ta.shape.insert(ta.shape.begin(), ir::Dim(1)); la.dims.insert(la.dims.begin(), RowLabel{}); }
      if (vecB) { tb.shape.push_back(ir::Dim(1)); lb.dims.push_back(RowLabel{}); }
      RowLabel ka = la.dims.back(), kb = lb.dims[lb.dims.size() - 2];
      if (!(ka == kb)) stop(c, "contraction over a row dim of one operand only");
      // Batch dims broadcast like an elementwise op.
      ir::TensorType batchA{ta.dtype, ir::Shape(ta.shape.begin(), ta.shape.end() - 2)};
      ir::TensorType batchB{tb.dtype, ir::Shape(tb.shape.begin(), tb.shape.end() - 2)};
      RowLabels bla{std::vector<RowLabel>(la.dims.begin(), la.dims.end() - 2), 0};
      RowLabels blb{std::vector<RowLabel>(lb.dims.begin(), lb.dims.end() - 2), 0};
      size_t batchRank = out0.shape.size() - (vecA ? 0 : 1) - (vecB ? 0 : 1);
      ir::TensorType batchOut{out0.dtype, ir::Shape(out0.shape.begin(), out0.shape.begin() + int64_t(batchRank))};
      Ctx bc{c.n, nd, {&batchA, &batchB}, {&bla, &blb}, {&batchOut}, {}, false};
      RowLabels l = broadcast(bc, {0, 1}, batchOut);
      if (!vecA) l.dims.push_back(la.dims[la.dims.size() - 2]);
      if (!vecB) l.dims.push_back(lb.dims.back());
      l.k = ins[0]->k + ins[1]->k + (ka.on() ? 1 : 0);
      return {l};
    }
    case ir::OpCategory::Reduce: {
      const ir::TensorType& t = *c.inTypes[0];
      RowLabels l = *ins[0];
      if (nd.op == OpKind::ArgMax || nd.op == OpKind::ArgMin) {
        int64_t a = normAxis(c, ir::attrInt(nd.attrs, "axis"), t.shape.size());
        if (l.dims[size_t(a)].on()) stop(c, "an index along a row dim");
        if (ir::attrInt(nd.attrs, "keepdims") != 0) l.dims[size_t(a)] = RowLabel{};
        else l.dims.erase(l.dims.begin() + a);
        l.k = 0;
        return {l};
      }
      std::vector<int64_t> axes = reduceAxes(c, t);
      bool keep = ir::attrInt(nd.attrs, "keepdims") != 0;
      if (nd.op == OpKind::ReduceProd) requireK0(c, 0, "a product");
      RowLabels o;
      o.k = l.k;
      for (size_t d = 0; d < l.dims.size(); ++d) {
        bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
        if (!reduced) { o.dims.push_back(l.dims[d]); continue; }
        if (l.dims[d].on()) {
          if (nd.op == OpKind::ReduceProd) stop(c, "a product over a row dim");
          if (nd.op == OpKind::ReduceSum) ++o.k;  // mean, max, min of equal rows: the row
        }
        if (keep) o.dims.push_back(RowLabel{});
      }
      return {o};
    }
    case ir::OpCategory::Norm: {
      const ir::TensorType& t = *c.inTypes[0];
      // Over a row dim, each shrunk element appears n times: the mean and
      // variance of the repeated row are the row's, so a layer or RMS norm
      // is the repeated norm (its scale and bias must repeat alike), and a
      // softmax is the repeated softmax over n (k = -1: attention's
      // product with the values then sums the n copies back, k = 0). A
      // log-softmax is shifted by log n: no transfer.
      requireK0(c, 0, "a normalization");
      int64_t a = normAxis(c, ir::attrInt(nd.attrs, "axis"), t.shape.size());
      bool trailing = nd.op == OpKind::LayerNorm || nd.op == OpKind::RmsNorm;
      bool overRows = false;
      for (size_t d = size_t(a); d < (trailing ? t.shape.size() : size_t(a) + 1); ++d)
        overRows = overRows || ins[0]->dims[d].on();
      if (overRows && nd.op != OpKind::LayerNorm && nd.op != OpKind::RmsNorm && nd.op != OpKind::Softmax)
        stop(c, "a normalization over a row dim");
      for (size_t i = 1; i < ins.size(); ++i) {
        requireK0(c, i, "a normalization's scale or bias");
        const RowLabels& w = *ins[i];
        for (size_t k = 1; k <= w.dims.size(); ++k) {
          const RowLabel in = k <= ins[0]->dims.size() ? ins[0]->dims[ins[0]->dims.size() - k] : RowLabel{};
          if (!(w.dims[w.dims.size() - k] == in))
            stop(c, "a normalization's scale or bias repeating rows other than its input's");
        }
      }
      RowLabels l = *ins[0];
      if (overRows && nd.op == OpKind::Softmax) l.k = -1;
      return {l};
    }
    case ir::OpCategory::Layout:
      break;
    case ir::OpCategory::Index:
      break;
    case ir::OpCategory::Source: {
      return {unlabeled(out0)};
    }
    case ir::OpCategory::Loss: {  // cross_entropy(logits [N, C, d...], target [N, d...], weight [C])
      requireK0(c, 0, "a loss");
      if (ins[0]->dims.size() > 1 && ins[0]->dims[1].on()) stop(c, "a loss over classes on a row dim");
      if (ins.size() > 2 && ins[2]->any()) stop(c, "class weights with row dims");
      // The target's dims are the logits' without the class dim.
      for (size_t d = 0; d < ins[1]->dims.size(); ++d) {
        const RowLabel& lt = ins[1]->dims[d];
        const RowLabel& ll = ins[0]->dims[d == 0 ? 0 : d + 1];
        if (!(lt == ll)) stop(c, "logits and targets repeat their rows differently");
      }
      const std::string& red = ir::attrStr(nd.attrs, "reduction");
      if (red == "none") return {*ins[1]};
      RowLabels l = unlabeled(out0);
      if (red == "sum")
        for (const auto& d : ins[1]->dims) l.k += d.on() ? 1 : 0;
      return {l};
    }
    case ir::OpCategory::Random: {  // dropout(x, stream): elementwise, linear in x
      RowLabels l = broadcast(c, {0, 1}, out0);
      requireK0(c, 1, "a random stream");
      RowLabels mask = l;
      mask.k = 0;
      l.k = ins[0]->k;
      return {l, mask};
    }
    case ir::OpCategory::Collective:
      break;
  }
  // Layout, index and collective ops.
  switch (nd.op) {
    case OpKind::Reshape: {
      RowLabels l = reshapeLabels(c, *c.inTypes[0], *ins[0], out0);
      c.attrs["shape"] = shrunkShape(out0, l);
      c.rewrote = true;
      return {l};
    }
    case OpKind::Transpose: {
      std::vector<int64_t> perm = ir::attrInts(nd.attrs, "perm");
      if (perm.empty())
        for (int64_t i = int64_t(ins[0]->dims.size()) - 1; i >= 0; --i) perm.push_back(i);
      RowLabels l = *ins[0];
      for (size_t d = 0; d < perm.size(); ++d) l.dims[d] = ins[0]->dims[size_t(perm[d])];
      return {l};
    }
    case OpKind::Slice: {
      const ir::TensorType& t = *c.inTypes[0];
      std::vector<int64_t> axes = ir::attrInts(nd.attrs, "axes");
      std::vector<int64_t> starts = ir::attrInts(nd.attrs, "starts"), ends = ir::attrInts(nd.attrs, "ends");
      std::vector<int64_t> steps = ir::attrInts(nd.attrs, "steps");
      if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
      RowLabels l = *ins[0];
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(normAxis(c, axes[i], t.shape.size()));
        if (!ins[0]->dims[a].on()) continue;
        int64_t e = extentOf(t, a);
        if (!steps.empty() && steps[i] != 1) stop(c, "a strided slice of a row dim");
        int64_t b = std::clamp<int64_t>(starts[i] < 0 ? starts[i] + e : starts[i], 0, e);
        int64_t en = std::clamp<int64_t>(ends[i] < 0 ? ends[i] + e : ends[i], 0, e);
        auto cut = blockCut(c, ins[0]->dims[a], b, en);
        l.dims[a] = cut.label;
        starts[i] = cut.start;
        ends[i] = cut.end;
      }
      c.attrs["starts"] = starts;
      c.attrs["ends"] = ends;
      c.rewrote = true;
      return {l};
    }
    case OpKind::Concat: {
      std::vector<size_t> all;
      for (size_t i = 0; i < ins.size(); ++i) all.push_back(i);
      size_t a = size_t(normAxis(c, ir::attrInt(nd.attrs, "axis"), out0.shape.size()));
      requireSameK(c, all);
      RowLabels l = *ins[0];
      std::vector<RowLabel> parts;
      for (size_t i = 0; i < ins.size(); ++i) {
        parts.push_back(ins[i]->dims[a]);
        for (size_t d = 0; d < ins[i]->dims.size(); ++d)
          if (d != a && !(ins[i]->dims[d] == ins[0]->dims[d])) stop(c, "parts repeat their rows differently");
      }
      l.dims[a] = joinBlocks(c, parts);
      return {l};
    }
    case OpKind::Split: {
      size_t a = size_t(normAxis(c, ir::attrInt(nd.attrs, "axis"), c.inTypes[0]->shape.size()));
      if (!ins[0]->dims[a].on()) return std::vector<RowLabels>(nd.outputs.size(), *ins[0]);
      std::vector<int64_t> sizes = ir::attrInts(nd.attrs, "sizes");
      std::vector<RowLabels> outs;
      int64_t at = 0;
      for (int64_t& z : sizes) {
        auto cut = blockCut(c, ins[0]->dims[a], at, at + z);
        at += z;
        RowLabels l = *ins[0];
        l.dims[a] = cut.label;
        outs.push_back(l);
        z = cut.end - cut.start;
      }
      c.attrs["sizes"] = sizes;
      c.rewrote = true;
      return outs;
    }
    case OpKind::Expand: {
      // Rows of the input stay rows; a dim broadcast from 1 to the row
      // extent becomes one (its copies are equal: repeated rows).
      const ir::TensorType& t = *c.inTypes[0];
      RowLabels l = unlabeled(out0, ins[0]->k);
      size_t r = t.shape.size(), rank = out0.shape.size();
      for (size_t j = 0; j < rank; ++j) {
        bool broadcastDim = r + j < rank || extentOf(t, j + r - rank) == 1;
        if (!broadcastDim) l.dims[j] = ins[0]->dims[j + r - rank];
        else if (extentOf(out0, j) == c.n) l.dims[j] = RowLabel{1, 1};
      }
      c.attrs["shape"] = shrunkShape(out0, l);
      c.rewrote = true;
      return {l};
    }
    case OpKind::Squeeze: {
      const ir::TensorType& t = *c.inTypes[0];
      std::vector<int64_t> axes = ir::attrInts(nd.attrs, "axes");
      RowLabels l;
      l.k = ins[0]->k;
      std::vector<int64_t> squeezed;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        bool listed = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end() ||
                      std::find(axes.begin(), axes.end(), int64_t(d) - int64_t(t.shape.size())) != axes.end();
        bool gone = axes.empty() ? extentOf(t, d) == 1 : listed;
        if (gone) squeezed.push_back(int64_t(d));
        else l.dims.push_back(ins[0]->dims[d]);
      }
      c.attrs["axes"] = squeezed;  // explicit: a shrunk row dim of extent 1 stays
      c.rewrote = true;
      return {l};
    }
    case OpKind::Unsqueeze: {
      std::vector<int64_t> axes = ir::attrInts(nd.attrs, "axes");
      RowLabels l = unlabeled(out0, ins[0]->k);
      for (auto& a : axes) a = normAxis(c, a, out0.shape.size());
      size_t src = 0;
      for (size_t d = 0; d < out0.shape.size(); ++d)
        if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end()) l.dims[d] = ins[0]->dims[src++];
      return {l};
    }
    case OpKind::Gather: {  // data[:axis] + indices.shape + data[axis+1:]
      size_t a = size_t(normAxis(c, ir::attrInt(nd.attrs, "axis"), c.inTypes[0]->shape.size()));
      if (ins[0]->dims[a].on()) stop(c, "a gather along a row dim");
      requireK0(c, 1, "indices");
      RowLabels l;
      l.k = ins[0]->k;
      for (size_t d = 0; d < a; ++d) l.dims.push_back(ins[0]->dims[d]);
      for (const auto& d : ins[1]->dims) l.dims.push_back(d);
      for (size_t d = a + 1; d < ins[0]->dims.size(); ++d) l.dims.push_back(ins[0]->dims[d]);
      return {l};
    }
    case OpKind::GatherElements:
    case OpKind::ScatterElements: {
      size_t a = size_t(normAxis(c, ir::attrInt(nd.attrs, "axis"), c.inTypes[0]->shape.size()));
      requireK0(c, 1, "indices");
      for (size_t i = 0; i < ins.size(); ++i)
        if (ins[i]->dims[a].on()) stop(c, "indexing along a row dim");
      for (size_t d = 0; d < ins[0]->dims.size(); ++d)
        for (size_t i = 1; i < ins.size(); ++i) {
          bool same = ins[i]->dims[d] == ins[0]->dims[d] && extentOf(*c.inTypes[i], d) == extentOf(*c.inTypes[0], d);
          if (d != a && (ins[i]->dims[d].on() || ins[0]->dims[d].on()) && !same)
            stop(c, "operands repeat their rows differently");
        }
      if (nd.op == OpKind::ScatterElements) {
        requireSameK(c, {0, 2});
        if (ir::attrStr(nd.attrs, "reduction") == "mul") requireK0(c, 0, "a product");
        return {*ins[0]};
      }
      RowLabels l = *ins[1];
      l.k = ins[0]->k;
      return {l};
    }
    case OpKind::Trilu: {
      size_t r = ins[0]->dims.size();
      if (r >= 2 && (ins[0]->dims[r - 1].on() || ins[0]->dims[r - 2].on())) stop(c, "a triangle over a row dim");
      return {*ins[0]};
    }
    case OpKind::TopK: {
      size_t a = size_t(normAxis(c, ir::attrInt(nd.attrs, "axis"), c.inTypes[0]->shape.size()));
      if (ins[0]->dims[a].on()) stop(c, "top-k along a row dim");
      RowLabels idx = *ins[0];
      idx.k = 0;
      return {*ins[0], idx};
    }
    case OpKind::OneHot: {
      requireK0(c, 0, "indices");
      RowLabels l = unlabeled(out0);
      int64_t a = normAxis(c, ir::attrInt(nd.attrs, "axis"), out0.shape.size());
      size_t src = 0;
      for (size_t d = 0; d < out0.shape.size(); ++d)
        if (int64_t(d) != a) l.dims[d] = ins[0]->dims[src++];
      return {l};
    }
    case OpKind::AllReduce: {
      const std::string& red = ir::attrStr(nd.attrs, "reduce");
      if (red != "sum" && red != "avg" && red != "max" && red != "min") stop(c, "reduce '" + red + "'");
      return {*ins[0]};
    }
    case OpKind::Broadcast:
      return {*ins[0]};
    case OpKind::AllGather:
    case OpKind::ReduceScatter: {
      size_t a = size_t(normAxis(c, ir::attrInt(nd.attrs, "dim"), c.inTypes[0]->shape.size()));
      RowLabels l = *ins[0];
      const RowLabel& x = ins[0]->dims[a];
      if (x.on()) {
        // The group's pieces along a dim of whole blocks: a gather joins
        // them (each member's blocks in group order), a scatter cuts them.
        int64_t in = extentOf(*c.inTypes[0], a), out = extentOf(out0, a);
        if (nd.op == OpKind::AllGather) l.dims[a] = RowLabel{x.outer * (out / in), x.inner};
        else if (x.outer % (in / out) == 0) l.dims[a] = RowLabel{x.outer / (in / out), x.inner};
        else stop(c, "a scatter cutting repeated rows");
      }
      return {l};
    }
    case OpKind::AllToAll: {
      size_t r = c.inTypes[0]->shape.size();
      size_t s = size_t(normAxis(c, ir::attrInt(nd.attrs, "split_dim"), r));
      size_t d = size_t(normAxis(c, ir::attrInt(nd.attrs, "concat_dim"), r));
      if (ins[0]->dims[s].on() || ins[0]->dims[d].on()) stop(c, "an all_to_all along a row dim");
      return {*ins[0]};
    }
    default:
      stop(c, "no row rule for this op");
  }
}

// The analysis of one candidate extent, and the programs it rebuilds.
class Shrinker {
 public:
  // Which of a leaf's several dims of extent n are rows: all, or only the
  // first or the last (the rest, of the same extent by chance, are not).
  enum class Which { All, First, Last };
  Shrinker(const ir::Graph& seq, const ir::Program& dist, const ir::CollectiveOrder& order,
           const std::vector<CheckedInput>& inputs, int64_t n, bool paramsToo, bool multiples, Which which = Which::All)
      : seq_(seq), dist_(dist), order_(order), inputs_(inputs), n_(n), paramsToo_(paramsToo), multiples_(multiples),
        which_(which) {}

  // Labels every value; throws Stop.
  void analyze();
  std::map<std::string, RowLabels> seqLabels() const;
  std::vector<std::map<std::string, RowLabels>> distLabels() const;
  Result<ir::Graph> rebuildSeq() const { return ir::buildGraph(shrunkSpec(seq_, seqLab_, seqAttrs_)); }
  Result<ir::Program> rebuildDist() const;
  // Rebuilt types must be the labels' shrunk shapes.
  Status checkShapes(const ir::Graph& full, const std::vector<RowLabels>& labs, const ir::Graph& shrunk) const;
  const std::vector<RowLabels>& seqLab() const { return seqLab_; }
  const std::vector<std::vector<RowLabels>>& distLab() const { return distLab_; }
  std::vector<std::string> labeledInputs() const;
  // Elements of S's nodes' outputs the shrink removes: the ranking of
  // candidate extents.
  double saved() const;

 private:
  // Output labels; `attrs` set where the shrunk node's attributes differ.
  std::vector<RowLabels> runNode(const ir::Graph& g, const std::vector<RowLabels>& labs, const ir::Node& nd,
                                 std::optional<ir::AttrMap>& attrs) const;
  ir::GraphSpec shrunkSpec(const ir::Graph& g, const std::vector<RowLabels>& labs,
                           const std::map<ir::NodeId, ir::AttrMap>& attrs) const;
  const ir::Graph& seq_;
  const ir::Program& dist_;
  const ir::CollectiveOrder& order_;
  const std::vector<CheckedInput>& inputs_;
  int64_t n_;
  bool paramsToo_;
  bool multiples_;  // dims of a multiple k·n of the extent: k blocks of n repeated rows
  Which which_;
  // Does some D input's relation cut S leaf `name` along dim d in slices of
  // n (a data-parallel rank's batch)? Those dims get blocks in multiples_.
  bool cutInBlocks(const std::string& name, int64_t d) const {
    std::function<bool(const Rel&)> cuts = [&](const Rel& r) {
      if (r.op == RelOp::Slice && r.args[0]->op == RelOp::Seq && r.args[0]->name == name) {
        auto b = r.start.eval({}, nullptr), e = r.end.eval({}, nullptr);
        int64_t dim = r.dim < 0 ? r.dim + int64_t(seq_.value(*seq_.findValue(name)).type.shape.size()) : r.dim;
        if (dim == d && b.ok() && e.ok() && *e - *b == n_) return true;
      }
      return std::any_of(r.args.begin(), r.args.end(), [&](const RelPtr& a) { return cuts(*a); });
    };
    return std::any_of(inputs_.begin(), inputs_.end(), [&](const CheckedInput& c) { return cuts(*c.expr); });
  }
  std::vector<RowLabels> seqLab_;
  std::vector<std::vector<RowLabels>> distLab_;
  std::map<ir::NodeId, ir::AttrMap> seqAttrs_;
  std::vector<std::map<ir::NodeId, ir::AttrMap>> distAttrs_;
  std::vector<CheckedInput> shrunkInputs_;  // each D input's relation at the shrunk sizes

 public:
  const std::vector<CheckedInput>& shrunkInputs() const { return shrunkInputs_; }
  int64_t n() const { return n_; }
};

std::vector<RowLabels> Shrinker::runNode(const ir::Graph& g, const std::vector<RowLabels>& labs, const ir::Node& nd,
                                         std::optional<ir::AttrMap>& attrs) const {
  Ctx c{n_, nd, {}, {}, {}, nd.attrs, false};
  for (ir::ValueId v : nd.inputs) {
    c.inTypes.push_back(&g.value(v).type);
    c.in.push_back(&labs[size_t(v)]);
  }
  for (ir::ValueId v : nd.outputs) c.outTypes.push_back(&g.value(v).type);
  if (nd.outputs.empty()) return {};
  std::vector<RowLabels> out = transfer(c);
  if (c.rewrote) attrs = std::move(c.attrs);
  return out;
}

// A relation term over S values (D input relations) or D values (expect
// lines), concretized (no comprehension left): its labels, and the term
// that computes the shrunk value from shrunk leaves (slices of row dims at
// whole blocks of repeated rows cut at the shrunk bounds).
struct ShrunkRel {
  RelPtr rel;
  RowLabels labels;
};
std::optional<ShrunkRel> shrinkRel(const Rel& r, int64_t n, const std::function<const RowLabels*(const Rel&)>& leaf,
                                   std::string* why) {
  auto no = [&](const std::string& w) -> std::optional<ShrunkRel> {
    if (why && why->empty()) *why = w;
    return std::nullopt;
  };
  auto constant = [](const IntExpr& e) -> std::optional<int64_t> {
    auto v = e.eval({}, nullptr);
    if (!v.ok()) return std::nullopt;
    return *v;
  };
  switch (r.op) {
    case RelOp::Seq:
    case RelOp::Dist: {
      const RowLabels* l = leaf(r);
      if (!l) return no("no labels for " + str(r));
      return ShrunkRel{std::make_shared<const Rel>(r), *l};
    }
    case RelOp::Scale:
    case RelOp::Permute:
    case RelOp::Slice:
    case RelOp::Reshape: {
      auto x = shrinkRel(*r.args[0], n, leaf, why);
      if (!x) return x;
      int64_t rank = int64_t(x->labels.dims.size());
      RowLabels l = x->labels;
      if (r.op == RelOp::Scale) return ShrunkRel{Rel::scale(x->rel, r.factor), l};
      if (r.op == RelOp::Permute) {
        for (size_t d = 0; d < r.perm.size() && d < l.dims.size(); ++d) l.dims[d] = x->labels.dims[size_t(r.perm[d])];
        return ShrunkRel{Rel::permute(x->rel, r.perm), l};
      }
      if (r.op == RelOp::Slice) {
        int64_t d = r.dim < 0 ? r.dim + rank : r.dim;
        if (d < 0 || d >= rank) return no("relation slice out of range: " + str(r));
        const RowLabel& lab = x->labels.dims[size_t(d)];
        if (!lab.on()) return ShrunkRel{Rel::slice(x->rel, r.dim, r.start, r.end), l};
        // Whole blocks of n * inner repeated rows (a data-parallel rank's
        // batch): the shrunk slice takes their shrunk rows.
        auto b = constant(r.start), e = constant(r.end);
        auto cut = b && e ? cutBlocks(n, lab, *b, *e) : std::nullopt;
        if (!cut) return no("relation slices a row dim inside its repeated rows: " + str(r));
        l.dims[size_t(d)] = cut->label;
        return ShrunkRel{Rel::slice(x->rel, r.dim, IntExpr::constant(cut->start), IntExpr::constant(cut->end)), l};
      }
      if (x->labels.any()) return no("relation reshapes a value with row dims: " + str(r));
      l.dims.assign(r.shape.size(), RowLabel{});
      return ShrunkRel{Rel::reshape(x->rel, r.shape), l};
    }
    case RelOp::Concat:
    case RelOp::Sum: {
      std::vector<ShrunkRel> xs;
      std::vector<RelPtr> parts;
      for (const auto& arg : r.args) {
        auto x = shrinkRel(*arg, n, leaf, why);
        if (!x) return x;
        parts.push_back(x->rel);
        xs.push_back(std::move(*x));
      }
      if (xs.empty()) return no("empty relation term");
      RowLabels out = xs[0].labels;
      int64_t rank = int64_t(out.dims.size());
      int64_t d = r.op == RelOp::Concat ? (r.dim < 0 ? r.dim + rank : r.dim) : -1;
      if (r.op == RelOp::Concat && (d < 0 || d >= rank)) return no("relation concat out of range: " + str(r));
      // Parts agree on every other dim; along a concat's dim, all plain or
      // all whole blocks of rows repeating alike (their blocks in order).
      int64_t outer = 0;
      for (const auto& x : xs) {
        RowLabels a = x.labels, b0 = xs[0].labels;
        if (d >= 0 && size_t(d) < a.dims.size()) {
          const RowLabel& ad = a.dims[size_t(d)];
          const RowLabel& bd = b0.dims[size_t(d)];
          if (ad.on() != bd.on() || (ad.on() && ad.inner != bd.inner))
            return no("relation parts repeat their rows differently: " + str(r));
          outer += ad.outer;
          a.dims[size_t(d)] = b0.dims[size_t(d)] = RowLabel{};
        }
        if (!(a == b0)) return no("relation parts repeat their rows differently: " + str(r));
      }
      if (d >= 0 && out.dims[size_t(d)].on()) out.dims[size_t(d)] = RowLabel{outer, out.dims[size_t(d)].inner};
      return ShrunkRel{r.op == RelOp::Concat ? Rel::concat(r.dim, parts) : Rel::sum(parts), out};
    }
    case RelOp::For:
      return no("relation not concretized");
  }
  return no("unknown relation op");
}

void Shrinker::analyze() {
  // S: every leaf dim of the chosen extent is a row dim (parameters too when
  // asked; a parameter with data is a fixed tensor, never repeated rows).
  seqLab_.assign(seq_.values().size(), RowLabels{});
  auto leaves = [](const ir::Graph& g) {
    std::vector<ir::ValueId> l = g.inputs();
    l.insert(l.end(), g.params().begin(), g.params().end());
    return l;
  };
  for (ir::ValueId v : leaves(seq_)) {
    const ir::Value& val = seq_.value(v);
    RowLabels l = unlabeled(val.type);
    bool fixed = val.kind == ir::ValueKind::Param && (seq_.paramData(v) || !paramsToo_);
    if (!fixed) {
      std::vector<size_t> exact;  // dims of extent n
      for (size_t d = 0; d < val.type.shape.size(); ++d) {
        int64_t e = val.type.shape[d].value();
        if (e == n_) exact.push_back(d);
        else if (multiples_ && e > n_ && e % n_ == 0 && cutInBlocks(val.name, int64_t(d))) l.dims[d] = RowLabel{e / n_, 1};
      }
      // A leaf with several dims of extent n (seq = hidden = 2048 in
      // [s, b, h]): all of them, or only its first or last one.
      if (exact.size() >= 2 && which_ == Which::First) exact.resize(1);
      if (exact.size() >= 2 && which_ == Which::Last) exact.erase(exact.begin(), exact.end() - 1);
      for (size_t d : exact) l.dims[d] = RowLabel{1, 1};
    }
    seqLab_[size_t(v)] = l;
  }
  for (size_t i = 0; i < seq_.nodes().size(); ++i) {
    const ir::Node& nd = seq_.nodes()[i];
    std::optional<ir::AttrMap> attrs;
    auto outs = runNode(seq_, seqLab_, nd, attrs);
    for (size_t o = 0; o < nd.outputs.size(); ++o) seqLab_[size_t(nd.outputs[o])] = outs[o];
    if (attrs) seqAttrs_[ir::NodeId(i)] = std::move(*attrs);
  }
  // D inputs: their relations over S.
  distLab_.assign(size_t(dist_.worldSize()), {});
  distAttrs_.assign(size_t(dist_.worldSize()), {});
  std::vector<std::vector<bool>> known(size_t(dist_.worldSize()));
  for (int64_t r = 0; r < dist_.worldSize(); ++r) {
    distLab_[size_t(r)].assign(dist_.rank(r).values().size(), RowLabels{});
    known[size_t(r)].assign(dist_.rank(r).values().size(), false);
  }
  auto seqLeaf = [&](const Rel& l) -> const RowLabels* {
    auto v = l.op == RelOp::Seq ? seq_.findValue(l.name) : std::nullopt;
    return v ? &seqLab_[size_t(*v)] : nullptr;
  };
  for (const auto& in : inputs_) {
    const ir::Graph& g = dist_.rank(in.rank);
    auto v = g.findValue(in.name);
    if (!v) throw Stop{"D input '" + in.name + "' not found"};
    std::string why;
    auto sr = shrinkRel(*in.expr, n_, seqLeaf, &why);
    if (!sr) throw Stop{"rank " + istr(in.rank) + " input '" + in.name + "': " + why};
    if (sr->labels.dims.size() != g.value(*v).type.shape.size()) throw Stop{"input '" + in.name + "': rank differs"};
    distLab_[size_t(in.rank)][size_t(*v)] = sr->labels;
    known[size_t(in.rank)][size_t(*v)] = true;
    shrunkInputs_.push_back({in.rank, in.name, sr->rel, in.location});
  }
  for (int64_t r = 0; r < dist_.worldSize(); ++r)
    for (ir::ValueId v : leaves(dist_.rank(r)))
      if (!known[size_t(r)][size_t(v)]) throw Stop{"rank " + istr(r) + " input '" + dist_.rank(r).value(v).name + "' has no relation"};
  // D nodes in the program's one order: a rank runs until it waits at a
  // collective whose members' operands are not labeled yet, or a recv whose
  // send's operand is not.
  const ir::CollectiveOrder* order = &order_;
  std::vector<size_t> cursor(size_t(dist_.worldSize()), 0);
  auto ready = [&](int64_t r, ir::NodeId id) -> bool {
    const ir::Node& nd = dist_.rank(r).node(id);
    if (nd.op == OpKind::Recv) {
      const auto& m = order->messages[size_t(order->messageOf[size_t(r)].at(id))];
      const ir::Node& s = dist_.rank(m.src).node(m.send);
      return known[size_t(m.src)][size_t(s.inputs[0])];
    }
    if (ir::opInfo(nd.op).category != ir::OpCategory::Collective || nd.op == OpKind::Send) return true;
    const auto& step = order->colls[size_t(order->collOf[size_t(r)].at(id))];
    for (size_t i = 0; i < step.members.size(); ++i) {
      const ir::Node& m = dist_.rank(step.members[i]).node(step.nodes[i]);
      for (ir::ValueId in : m.inputs)
        if (!known[size_t(step.members[i])][size_t(in)]) return false;
    }
    return true;
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t r = 0; r < dist_.worldSize(); ++r) {
      const ir::Graph& g = dist_.rank(r);
      auto& labs = distLab_[size_t(r)];
      while (cursor[size_t(r)] < g.nodes().size()) {
        ir::NodeId id = ir::NodeId(cursor[size_t(r)]);
        const ir::Node& nd = g.node(id);
        if (!ready(r, id)) break;
        std::optional<ir::AttrMap> attrs;
        std::vector<RowLabels> outs;
        if (nd.op == OpKind::Recv) {
          const auto& m = order->messages[size_t(order->messageOf[size_t(r)].at(id))];
          const ir::Graph& sg = dist_.rank(m.src);
          ir::ValueId sent = sg.node(m.send).inputs[0];
          outs = {distLab_[size_t(m.src)][size_t(sent)]};
          attrs = nd.attrs;
          (*attrs)["shape"] = shrunkShape(sg.value(sent).type, outs[0]);
        } else {
          outs = runNode(g, labs, nd, attrs);
          if (ir::opInfo(nd.op).category == ir::OpCategory::Collective && nd.op != OpKind::Send) {
            const auto& step = order->colls[size_t(order->collOf[size_t(r)].at(id))];
            for (size_t i = 0; i < step.members.size(); ++i) {
              const ir::Node& m = dist_.rank(step.members[i]).node(step.nodes[i]);
              for (size_t k = 0; k < m.inputs.size() && k < nd.inputs.size(); ++k)
                if (!(distLab_[size_t(step.members[i])][size_t(m.inputs[k])] == labs[size_t(nd.inputs[k])]))
                  throw Stop{"rank " + istr(r) + " " + std::string(ir::opName(nd.op)) + " '" + nd.name +
                             "': members' operands repeat their rows differently"};
            }
          }
        }
        for (size_t o = 0; o < nd.outputs.size(); ++o) {
          labs[size_t(nd.outputs[o])] = outs[o];
          known[size_t(r)][size_t(nd.outputs[o])] = true;
        }
        if (attrs) distAttrs_[size_t(r)][id] = std::move(*attrs);
        ++cursor[size_t(r)];
        moved = true;
      }
    }
  }
  for (int64_t r = 0; r < dist_.worldSize(); ++r)
    if (cursor[size_t(r)] < dist_.rank(r).nodes().size()) throw Stop{"rank " + istr(r) + " never finishes"};
}

ir::GraphSpec Shrinker::shrunkSpec(const ir::Graph& g, const std::vector<RowLabels>& labs,
                                   const std::map<ir::NodeId, ir::AttrMap>& attrs) const {
  ir::GraphSpec s = ir::graphSpec(g);
  for (auto& leaf : s.leaves) {
    auto v = g.findValue(leaf.name);
    leaf.type.shape = shrunkShape(g.value(*v).type, labs[size_t(*v)]);
  }
  // graphSpec keeps the graph's node order: node i is spec node i.
  for (const auto& [id, a] : attrs) s.nodes[size_t(id)].attrs = a;
  return s;
}

Result<ir::Program> Shrinker::rebuildDist() const {
  ir::ProgramSpec p = ir::toSpec(dist_);
  for (int64_t r = 0; r < dist_.worldSize(); ++r)
    p.ranks[size_t(r)] = shrunkSpec(dist_.rank(r), distLab_[size_t(r)], distAttrs_[size_t(r)]);
  return ir::buildProgram(p);
}

Status Shrinker::checkShapes(const ir::Graph& full, const std::vector<RowLabels>& labs, const ir::Graph& shrunk) const {
  for (size_t v = 0; v < full.values().size(); ++v) {
    const ir::Value& val = full.value(ir::ValueId(v));
    auto s = shrunk.findValue(val.name);
    if (!s) return makeError("shrink", "'" + val.name + "' lost in the rebuilt graph");
    if (shrunk.value(*s).type.shape != shrunkShape(val.type, labs[v]))
      return makeError("shrink", "'" + val.name + "' rebuilt as " + shrunk.value(*s).type.str() + ", labels say " +
                                     ir::shapeStr(shrunkShape(val.type, labs[v])));
  }
  return okStatus();
}

std::map<std::string, RowLabels> Shrinker::seqLabels() const {
  std::map<std::string, RowLabels> m;
  for (size_t v = 0; v < seqLab_.size(); ++v) m[seq_.value(ir::ValueId(v)).name] = seqLab_[v];
  return m;
}

std::vector<std::map<std::string, RowLabels>> Shrinker::distLabels() const {
  std::vector<std::map<std::string, RowLabels>> out(distLab_.size());
  for (size_t r = 0; r < distLab_.size(); ++r)
    for (size_t v = 0; v < distLab_[r].size(); ++v) out[r][dist_.rank(int64_t(r)).value(ir::ValueId(v)).name] = distLab_[r][v];
  return out;
}

std::vector<std::string> Shrinker::labeledInputs() const {
  std::vector<std::string> out;
  std::vector<ir::ValueId> leaves = seq_.inputs();
  leaves.insert(leaves.end(), seq_.params().begin(), seq_.params().end());
  for (ir::ValueId v : leaves) {
    std::string dims;
    for (size_t d = 0; d < seqLab_[size_t(v)].dims.size(); ++d)
      if (seqLab_[size_t(v)].dims[d].on()) dims += (dims.empty() ? "" : ",") + istr(int64_t(d));
    if (!dims.empty()) out.push_back(seq_.value(v).name + " dim " + dims);
  }
  return out;
}

double Shrinker::saved() const {
  double s = 0;
  for (size_t v = 0; v < seqLab_.size(); ++v) {
    if (!seqLab_[v].any()) continue;
    double full = 1, small = 1;
    const ir::TensorType& t = seq_.value(ir::ValueId(v)).type;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      full *= double(t.shape[d].value());
      small *= seqLab_[v].dims[d].on() ? double(seqLab_[v].dims[d].outer * seqLab_[v].dims[d].inner)
                                      : double(t.shape[d].value());
    }
    s += full - small;
  }
  return s;
}

bool concrete(const ir::Graph& g) {
  for (const auto& v : g.values())
    if (!ir::isConcrete(v.type.shape)) return false;
  return true;
}


// One shrink of (seq, dist): the best extent that goes through, with the
// input relations and expect lines at the shrunk sizes.
struct OneShrink {
  ir::Graph seq;
  ir::Program dist;
  int64_t n;
  std::map<std::string, RowLabels> seqLabels;
  std::vector<std::map<std::string, RowLabels>> distLabels;
  std::string inputs;
  RelationFile rel;
  std::map<std::string, RelPtr> expected;
  std::map<std::string, bool> expectOk;  // S value and expect line carry the same rows and k
};

std::optional<OneShrink> shrinkOnce(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                                    const std::map<std::string, RelPtr>& expected, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<OneShrink> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!concrete(seq)) return fail("S has symbolic dims");
  for (int64_t r = 0; r < dist.worldSize(); ++r)
    if (!concrete(dist.rank(r))) return fail("D has symbolic dims");
  if (!rel.unrelated.empty()) return fail("D has inputs without a relation to S");
  auto inputs = checkInputRelations(seq, dist, rel);
  if (!inputs.ok()) return fail(inputs.error().message);
  auto order = ir::orderCollectives(dist);
  if (!order.ok()) return fail(order.error().message);
  // Candidate extents: those of S's and D's leaf dims (a data-parallel
  // rank's batch divides S's), largest saving first.
  std::set<int64_t> extents;
  auto addLeaves = [&](const ir::Graph& g) {
    std::vector<ir::ValueId> leaves = g.inputs();
    leaves.insert(leaves.end(), g.params().begin(), g.params().end());
    for (ir::ValueId v : leaves)
      for (const auto& d : g.value(v).type.shape)
        if (d.value() >= 2) extents.insert(d.value());
  };
  addLeaves(seq);
  for (int64_t r = 0; r < dist.worldSize(); ++r) addLeaves(dist.rank(r));
  using Which = Shrinker::Which;
  struct Pick {
    double saved;
    int64_t n;
    bool paramsToo, multiples;
    Which which;
  };
  std::vector<Pick> picks;
  std::string firstWhy;
  for (int64_t n : extents)
    for (bool multiples : {false, true})
      for (bool paramsToo : {false, true})
        for (Which which : {Which::All, Which::First, Which::Last}) {
          Shrinker s(seq, dist, *order, *inputs, n, paramsToo, multiples, which);
          try {
            s.analyze();
          } catch (const Stop& st) {
            if (firstWhy.empty()) firstWhy = "extent " + istr(n) + ": " + st.why;
            spdlog::debug("shrink: extent {} multiples {} params {} dims {}: {}", n, multiples, paramsToo,
                          which == Which::All ? "all" : which == Which::First ? "first" : "last", st.why);
            continue;
          }
          if (double saved = s.saved(); saved > 0) picks.push_back({saved, n, paramsToo, multiples, which});
        }
  std::sort(picks.begin(), picks.end(), [](const Pick& a, const Pick& b) {
    return a.saved != b.saved ? a.saved > b.saved : a.n < b.n;
  });
  RankSpace ranks = RankSpace::of(dist);
  for (const Pick& p : picks) {
    Shrinker s(seq, dist, *order, *inputs, p.n, p.paramsToo, p.multiples, p.which);
    s.analyze();
    auto g = s.rebuildSeq();
    if (!g.ok()) continue;
    auto d = s.rebuildDist();
    if (!d.ok()) continue;
    if (!s.checkShapes(seq, s.seqLab(), *g).ok()) continue;
    bool ok = true;
    for (int64_t r = 0; ok && r < dist.worldSize(); ++r)
      ok = s.checkShapes(dist.rank(r), s.distLab()[size_t(r)], d->rank(r)).ok();
    if (!ok) continue;
    OneShrink out{std::move(*g), std::move(*d), p.n, s.seqLabels(), s.distLabels(), "", {}, {}, {}};
    for (const auto& i : s.labeledInputs()) out.inputs += (out.inputs.empty() ? "" : ", ") + i;
    for (const auto& c : s.shrunkInputs()) {
      InputRelation ir;
      ir.rank = IntExpr::constant(c.rank);
      ir.name = c.name;
      ir.expr = c.expr;
      ir.location = c.location;
      out.rel.inputs.push_back(std::move(ir));
    }
    // Expect lines: each rewritten for the shrunk sizes (else this extent
    // cannot compare that output as the user asked: the next one is tried).
    auto distLeaf = [&](const Rel& leaf) -> const RowLabels* {
      if (leaf.op != RelOp::Dist) return nullptr;
      auto rank = leaf.rank.eval({}, &ranks);
      if (!rank.ok() || *rank < 0 || *rank >= int64_t(out.distLabels.size())) return nullptr;
      auto it = out.distLabels[size_t(*rank)].find(leaf.name);
      return it == out.distLabels[size_t(*rank)].end() ? nullptr : &it->second;
    };
    for (const auto& [name, e] : expected) {
      auto sr = shrinkRel(*e, p.n, distLeaf, nullptr);
      if (!sr) {
        ok = false;
        break;
      }
      auto sl = out.seqLabels.find(name);
      out.expected[name] = sr->rel;
      out.expectOk[name] = sl != out.seqLabels.end() && sl->second == sr->labels;
      out.rel.outputs.push_back({name, sr->rel, ""});
    }
    if (!ok) continue;
    return out;
  }
  return fail(picks.empty() ? (firstWhy.empty() ? "no dim of S's inputs to shrink" : firstWhy)
                            : "no shrunk program rebuilt");
}

}  // namespace

std::vector<int64_t> ShrunkWitness::extents() const {
  std::vector<int64_t> e;
  for (const auto& l : levels_) e.push_back(l.n);
  return e;
}

std::optional<ShrunkWitness> ShrunkWitness::make(const ir::Graph& seq, const ir::Program& dist,
                                                 const RelationFile& rel,
                                                 const std::map<std::string, RelPtr>& expected, std::string* why) {
  auto first = shrinkOnce(seq, dist, rel, expected, why);
  if (!first) return std::nullopt;
  ShrunkWitness w;
  std::string dims;
  for (std::optional<OneShrink> s = std::move(first); s && w.levels_.size() < 3;) {
    w.levels_.push_back(Level{s->n, std::move(s->seqLabels), std::move(s->distLabels), std::move(s->expectOk)});
    dims += (dims.empty() ? "" : "; then ") + std::string("extent ") + istr(s->n) + " (" + s->inputs + ")";
    w.seq_ = std::move(s->seq);
    w.dist_ = std::move(s->dist);
    w.rel_ = std::move(s->rel);
    w.expected_ = std::move(s->expected);
    s = shrinkOnce(w.seq_, w.dist_, w.rel_, w.expected_, nullptr);
  }
  w.ranks_ = RankSpace::of(w.dist_);
  w.note_ = "the witness ran with S's row dims of " + dims +
            " shrunk to one row: every op of S and D was checked to treat those rows alike (or to reduce over "
            "them by a sum, mean, max or min, or normalize over them by a softmax or a layer or RMS norm), so "
            "the difference holds at full size on the inputs whose rows all repeat the witness's";
  return w;
}

bool ShrunkWitness::transfersExpected(const std::string& seqName) const {
  for (const Level& l : levels_) {
    auto it = l.expectOk.find(seqName);
    if (it == l.expectOk.end() || !it->second) return false;
  }
  return true;
}

bool ShrunkWitness::transfers(const std::string& seqName, const Candidate& c) const {
  std::vector<int64_t> members{c.rank};
  if (c.kind != Candidate::Kind::Tensor) {
    auto m = ranks_.members(c.group, c.rank);
    if (!m.ok()) return false;
    members = *m;
  }
  for (const Level& l : levels_) {
    auto s = l.seq.find(seqName);
    if (s == l.seq.end() || c.rank < 0 || c.rank >= int64_t(l.dist.size())) return false;
    for (int64_t r : members) {
      auto it = l.dist[size_t(r)].find(c.name);
      if (it == l.dist[size_t(r)].end()) return false;
      const RowLabels& lab = it->second;
      // A chunk, or a concat, along a row dim would pick other rows.
      int64_t along = c.kind == Candidate::Kind::Concat ? c.dim : c.chunkDim;
      if (along >= 0 && (along >= int64_t(lab.dims.size()) || lab.dims[size_t(along)].on())) return false;
      if (!(lab == s->second)) return false;
    }
  }
  return true;
}

}  // namespace sp::rewrite
