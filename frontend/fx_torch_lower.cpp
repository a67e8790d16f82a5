// The torch-level callables that become several ATen steps (the table's
// `@` targets, fx_torch_ops.cpp): tensor subscripts and the NLL losses.
#include <algorithm>

#include "frontend/fx_torch_ops.h"

namespace sp::frontend::fx {

Expr intExpr(int64_t v) {
  Expr x;
  x.kind = Expr::Kind::Int;
  x.i = v;
  return x;
}

Expr nameExpr(const std::string& n) {
  Expr x;
  x.kind = Expr::Kind::Name;
  x.s = n;
  return x;
}

bool isEllipsisItem(const Expr& i) { return i.kind == Expr::Kind::Name && i.s == "Ellipsis"; }

bool isSliceItem(const Expr& i) {
  return i.kind == Expr::Kind::Call && i.s == "slice" && i.kwargs.empty() && i.items.size() <= 3;
}

Result<std::optional<SliceBounds>> sliceBounds(Emitter& e, const Expr& i, const Expr& idx, const ir::Dim& dim) {
  std::optional<int64_t> bound[3];
  for (size_t k = 0; k < i.items.size(); ++k) {
    if (i.items[k].kind == Expr::Kind::None) continue;
    if (i.items[k].kind != Expr::Kind::Int)
      return e.error("fx-arg", "slice bound " + i.items[k].str() + " in " + idx.str() + " must be an integer");
    bound[k] = i.items[k].i;
  }
  // slice(stop) is slice(None, stop, None)
  if (i.items.size() == 1) std::swap(bound[0], bound[1]);
  int64_t step = bound[2].value_or(1);
  if (step <= 0) return e.error("fx-arg", "slice step " + std::to_string(step) + " must be positive");
  if (!bound[0].value_or(0) && !bound[1] && step == 1) return std::optional<SliceBounds>();
  if (!dim.isConcrete())
    return e.error("fx-unsupported", "slicing the symbolic dim " + dim.str() + " (" + idx.str() + ")");
  int64_t n = dim.value();
  auto clampTo = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  SliceBounds b;
  b.start = clampTo(bound[0].value_or(0));
  b.end = bound[1] ? clampTo(*bound[1]) : n;
  b.step = step;
  b.length = b.end > b.start ? (b.end - b.start + step - 1) / step : 0;
  return std::optional<SliceBounds>(b);
}

Result<int64_t> selectIndex(Emitter& e, int64_t i, const Expr& idx, const ir::Dim& dim, int64_t d) {
  if (!dim.isConcrete())
    return e.error("fx-unsupported", "selecting in the symbolic dim " + dim.str() + " (" + idx.str() + ")");
  const int64_t n = dim.value();
  if (i < -n || i >= n)
    return e.error("fx-index", "index " + std::to_string(i) + " in " + idx.str() + " is out of range for dim " +
                                   std::to_string(d) + " of size " + std::to_string(n));
  return i < 0 ? i + n : i;
}

bool isTensorValue(const Emitter& e, const Expr& x) {
  return x.kind == Expr::Kind::Name && (e.env.count(x.s) || e.attrs.count(x.s));
}

Expr atenCallExpr(const std::string& op, std::vector<Expr> items, std::vector<Kwarg> kws, const Expr& at) {
  Expr c;
  c.kind = Expr::Kind::Call;
  c.s = "torch.ops." + op;
  c.items = std::move(items);
  c.kwargs = std::move(kws);
  c.line = at.line;
  c.col = at.col;
  return c;
}

// x[index]: ints select, slice(a, b, c) slices, None unsqueezes, Ellipsis
// stands for the dims no other item takes, an integer tensor gathers, a
// list of ints gathers too (one slice per entry, concatenated); one ATen
// view per item, left to right. A boolean mask is data-dependent.
Result<std::vector<AtenStep>> lowerTensorIndex(Emitter& e, const Expr& in, const Expr& idx, const std::string& target,
                                               const Expr& at) {
  SP_ASSIGN(TRef x, e.tensorOf(in));
  std::vector<Expr> items = idx.kind == Expr::Kind::Tuple ? idx.items : std::vector<Expr>{idx};
  int64_t consumed = 0, ellipses = 0;
  for (const auto& i : items) {
    if (isEllipsisItem(i)) ++ellipses;
    else if (i.kind != Expr::Kind::None) ++consumed;
  }
  if (ellipses > 1) return e.error("fx-arg", "index " + idx.str() + " has more than one Ellipsis");
  // An integer tensor indexes its dim as a gather; with other tensors or
  // ints (advanced indices broadcast together, their dims moved first when
  // apart) it would not: only slices, None and Ellipsis may join it.
  int64_t tensors = 0, ints = 0;
  for (const auto& i : items) {
    tensors += isTensorValue(e, i) || i.kind == Expr::Kind::List;
    ints += i.kind == Expr::Kind::Int;
  }
  if (tensors > 1 || (tensors == 1 && ints > 0))
    return e.error("fx-unsupported", "index " + idx.str() +
                                         " combines a tensor index with other tensor or integer indices (advanced "
                                         "indexing); only one tensor index with slices, None and Ellipsis is supported");
  if (consumed > x.rank())
    return e.error("fx-index", "index " + idx.str() + " indexes " + std::to_string(consumed) + " dims of a " +
                                   std::to_string(x.rank()) + "-d tensor");
  std::vector<AtenStep> steps;
  std::string cur = in.s;
  ir::TensorType t = x.type;
  int64_t d = 0;
  auto add = [&](const std::string& op, std::vector<Expr> args, ir::Shape s, const char* tag) {
    AtenStep st;
    st.op = op;
    args.insert(args.begin(), nameExpr(cur));
    st.call = atenCallExpr(op, std::move(args), {}, at);
    st.target = e.fresh(target + "_" + tag);
    t.shape = std::move(s);
    st.type = t;
    cur = st.target;
    steps.push_back(std::move(st));
  };
  for (const auto& i : items) {
    if (isEllipsisItem(i)) {
      d += x.rank() - consumed;
      continue;
    }
    if (i.kind == Expr::Kind::None) {
      ir::Shape s = t.shape;
      s.insert(s.begin() + d, ir::Dim(1));
      add("aten.unsqueeze.default", {intExpr(d)}, s, "unsqueeze");
      ++d;
      continue;
    }
    if (i.kind == Expr::Kind::Int) {
      ir::Shape s = t.shape;
      s.erase(s.begin() + d);
      add("aten.select.int", {intExpr(d), i}, s, "select");
      continue;
    }
    if (isSliceItem(i)) {
      SP_ASSIGN(auto b, sliceBounds(e, i, idx, t.shape[size_t(d)]));
      if (b) {
        ir::Shape s = t.shape;
        s[size_t(d)] = ir::Dim(b->length);
        add("aten.slice.Tensor", {intExpr(d), intExpr(b->start), intExpr(b->end), intExpr(b->step)}, s, "slice");
      }
      ++d;
      continue;
    }
    if (i.kind == Expr::Kind::List) {
      // a constant list of positions: the slices of one entry each, concatenated
      const ir::Dim& dim = t.shape[size_t(d)];
      for (const auto& v : i.items)
        if (v.kind != Expr::Kind::Int)
          return e.error("fx-unsupported", "index list " + i.str() + " in " + idx.str() +
                                               " is not supported (a list of integers only)");
      if (i.items.empty()) return e.error("fx-unsupported", "an empty index list in " + idx.str() + " is not supported");
      if (!dim.isConcrete())
        return e.error("fx-unsupported", "indexing the symbolic dim " + dim.str() + " with a list (" + idx.str() + ")");
      std::vector<Expr> pieces;
      ir::TensorType one = t;
      one.shape[size_t(d)] = ir::Dim(1);
      for (const auto& v : i.items) {
        SP_ASSIGN(int64_t p, selectIndex(e, v.i, idx, dim, d));
        AtenStep st;
        st.op = "aten.slice.Tensor";
        st.call = atenCallExpr(st.op, {nameExpr(cur), intExpr(d), intExpr(p), intExpr(p + 1), intExpr(1)}, {}, at);
        st.target = e.fresh(target + "_pick");
        st.type = one;
        pieces.push_back(nameExpr(st.target));
        steps.push_back(std::move(st));
      }
      Expr list;
      list.kind = Expr::Kind::List;
      list.items = std::move(pieces);
      AtenStep c;
      c.op = "aten.cat.default";
      c.call = atenCallExpr(c.op, {list, intExpr(d)}, {}, at);
      c.target = e.fresh(target + "_gather");
      t.shape[size_t(d)] = ir::Dim(int64_t(i.items.size()));
      c.type = t;
      cur = c.target;
      steps.push_back(std::move(c));
      ++d;
      continue;
    }
    if (isTensorValue(e, i)) {
      SP_ASSIGN(TRef ix, e.tensorOf(i));
      if (ix.dtype() == ir::DType::Bool)
        return makeError("fx-data-dependent",
                         "operator.getitem (node '" + target + "'): the boolean mask index '" + i.s + "' in " +
                             idx.str() + " selects as many elements as it has true values, a size that depends on "
                             "tensor values, not on input shapes, so S and D cannot be related",
                         e.captureLoc);
      if (ir::isFloat(ix.dtype()))
        return e.error("fx-unsupported", "indexing with a " + std::string(ir::dtypeName(ix.dtype())) +
                                             " tensor ('" + i.s + "') is not supported (integer indices only)");
      ir::Shape s(t.shape.begin(), t.shape.begin() + d);
      s.insert(s.end(), ix.type.shape.begin(), ix.type.shape.end());
      s.insert(s.end(), t.shape.begin() + d + 1, t.shape.end());
      Expr list;
      list.kind = Expr::Kind::List;
      list.items.assign(size_t(d), Expr{});
      list.items.push_back(i);
      add("aten.index.Tensor", {list}, s, "index");
      d += ix.rank();
      continue;
    }
    return e.error("fx-unsupported", "index item " + i.str() + " of " + idx.str() + " is not supported");
  }
  if (steps.empty()) add("aten.alias.default", {}, t.shape, "alias");
  steps.back().target.clear();
  steps.back().type.reset();
  return steps;
}

// cross_entropy: log_softmax over the classes, then nll_loss_forward (as
// F.cross_entropy decomposes); nll_loss: nll_loss_forward alone.
Result<std::vector<AtenStep>> lowerNllLoss(Emitter& e, const NllArgs& b, bool logSoftmax, const std::string& target,
                                           const Expr& at) {
  const Expr& in = b.input;
  SP_ASSIGN(TRef x, e.tensorOf(in));
  if (x.rank() != 1 && x.rank() != 2)
    return e.error("fx-unsupported", "input of rank " + std::to_string(x.rank()) +
                                         " (only [N, C] and [C] inputs are supported)");
  const Expr& r = b.reduction;
  if (r.kind != Expr::Kind::Str || (r.s != "none" && r.s != "mean" && r.s != "sum"))
    return e.error("fx-arg", "reduction " + r.str() + " (none, mean or sum)");
  int64_t reduction = r.s == "none" ? 0 : r.s == "mean" ? 1 : 2;
  std::vector<AtenStep> steps;
  std::string logits = in.s;
  if (logSoftmax) {
    AtenStep ls;
    ls.op = "aten._log_softmax.default";
    ls.target = e.fresh(target + "_log_softmax");
    ls.type = x.type;
    Expr f;
    f.kind = Expr::Kind::Bool;
    ls.call = atenCallExpr(ls.op, {in, intExpr(x.rank() - 1), f}, {}, at);
    logits = ls.target;
    steps.push_back(std::move(ls));
  }
  AtenStep nll;
  nll.op = "aten.nll_loss_forward.default";
  nll.call = atenCallExpr(nll.op, {nameExpr(logits), b.target, b.weight, intExpr(reduction), b.ignoreIndex}, {}, at);
  nll.pick = 0;
  steps.push_back(std::move(nll));
  return steps;
}

}  // namespace sp::frontend::fx
