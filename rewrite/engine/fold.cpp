// Rank folding: one symbolic rank for an SPMD program (rewrite/engine/fold.h).
#include "rewrite/engine/fold.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <cstdio>
#include <optional>
#include <set>
#include <unordered_set>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "ir/text.h"
#include "rewrite/engine/engine.h"
#include "rewrite/engine/engine_verify.h"

namespace sp::rewrite {
namespace {

using ir::Dim;
using ir::OpCategory;
using ir::OpKind;
using ir::Shape;
using ir::TensorType;

// A value of S's algebra: k * node, k a real factor pulled out of linear ops
// (a batch mean's 1/N against an averaging all_reduce's).
struct Val {
  int node = -1;
  double k = 1.0;
  bool operator==(const Val& o) const { return node == o.node && k == o.k; }
};

// RunSum: the group's members in runs of `inner` consecutive members, run j
// holding piece j of the dim's n / inner pieces as partial sums, one term
// on each member (the gradient of a KV head repeated over the query heads
// of its run, each member summing over its own query heads): S's piece j
// is the sum over run j. No blocks, inner dim, segments, zigzag, further
// groups or copies; only runSumRule reads it.
enum class Lay : uint8_t { None, Rep, Split, Sum, RunSum };

// The most groups folded at once besides the first (a [pp, edp, ep, tp]
// mesh folds three groups per stage).
constexpr size_t kMaxMoreGroups = 3;

// A segment of a segmented split (Fact::segs): local width, run length,
// and whether its members hold partial sums of their run's piece.
struct Seg {
  int64_t w = 0, inner = 1;
  bool runSum = false;
  bool operator==(const Seg& o) const = default;
};
bool hasRunSums(const std::vector<Seg>& segs) {
  return std::any_of(segs.begin(), segs.end(), [](const Seg& sg) { return sg.runSum; });
}

// What every rank's copy of one D value is, as a whole (rewrite/engine/fold.h).
struct Fact {
  Lay lay = Lay::None;
  int64_t dim = 0;  // Split
  Val v;
  // Split into `blocks` equal blocks along dim, each split over the group:
  // rank r holds the r-th piece of every block, concatenated (Megatron's
  // fused QKV column shard [q_r | k_r | v_r]); 1: a plain split. Ops acting
  // independently along dim commute with any selection of positions on it,
  // so such ops carry it like a plain split; reshapes, collectives and
  // outputs take only plain ones, and a split op into the blocks ends it.
  // A symbolic number of blocks (a dynamic batch merged with a split head
  // dim, [s0, heads, s, hd] -> [heads*s0, s, hd]) is a negative id of the
  // folder's symBlocks_; no rule computes with it but the reshapes that
  // make and end it.
  int64_t blocks = 1;
  // Two levels (GQA with more ranks than KV heads): the group's N ranks form
  // N / inner runs of `inner` consecutive ranks; rank position i holds piece
  // i / inner of `dim` (N / inner pieces) and, within its run, either that
  // whole piece (innerDim < 0: held by all `inner` ranks of the run) or
  // piece i % inner of innerDim. inner == 1: a plain split.
  int64_t inner = 1;
  int64_t innerDim = -1;
  // Segments along dim, each laid out its own way (vLLM's merged QKV
  // weight with KV heads held by runs of ranks: [q_r | k_{r/3} | v_{r/3}]):
  // per segment (local width w, inner): rank r holds piece r / inner of
  // the segment's n / inner pieces of width w (inner = n: the whole
  // segment on every rank); S's value is the segments concatenated. Ops
  // acting alike along dim carry it; a split into the segments ends it.
  // A segment of partial sums (runSum: a KV head's gradient on its run,
  // each member's term of the run's piece, as Lay::RunSum; inner = n: of
  // the whole segment, as Lay::Sum) is carried by linear ops only.
  // Empty: not segmented.
  std::vector<Seg> segs = {};
  // More groups (N-D folding: DP x TP, CP x TP, DP x CP x TP): the layout
  // over each further group k (rep, a plain split along dimB[k], or partial
  // sums), nested outside the first group's and the groups before it: E =
  // the sum or concat over the last group of ... over group 1 of what the
  // first group's layout combines. Groups splitting one dim nest in this
  // order (the first group's pieces innermost: sequence parallel inside
  // context parallel chunks).
  std::array<Lay, kMaxMoreGroups> layB{Lay::Rep, Lay::Rep, Lay::Rep};
  std::array<int64_t, kMaxMoreGroups> dimB{0, 0, 0};
  // Group k's split is into zigzag chunks (see `zig`): member j's chunk is
  // pieces j and 2N - 1 - j of 2N of the dim, concatenated; the inner
  // groups' pieces nest inside that chunk as inside a plain one (sequence
  // parallel's tokens of a load-balanced context parallel chunk).
  std::array<bool, kMaxMoreGroups> zigB{false, false, false};
  bool moreRep() const {
    return std::all_of(layB.begin(), layB.end(), [](Lay l) { return l == Lay::Rep; });
  }
  bool moreSplit(int64_t d) const {
    for (size_t k = 0; k < kMaxMoreGroups; ++k)
      if (layB[k] == Lay::Split && dimB[k] == d) return true;
    return false;
  }
  void moreRepAll() { layB.fill(Lay::Rep), dimB.fill(0), zigB.fill(false); }
  void moreAs(const Fact& o) { layB = o.layB, dimB = o.dimB, zigB = o.zigB; }
  // Micro-batches: copies of the step in one rank graph, each on its piece
  // of the batch, gradients added up across them. The layout over the
  // copies of C, what the group layouts above combine the members' values
  // into (the outermost layer): Rep, C = E; Split, C is piece idx3 of cnt3
  // even pieces of E along dim3; Sum, C = sum over m in terms3 of F(m),
  // where F (the term family fam3, an expression over pieces of E's
  // operands) sums to E over all m < cnt3. Copies run the same ops on
  // different pieces, so a layer costs the same at any count.
  Lay lay3 = Lay::Rep;
  int64_t dim3 = 0, idx3 = 0, cnt3 = 1;
  int fam3 = -1;
  std::vector<bool> terms3 = {};
  // Megatron's load-balanced context parallel chunks: the dim cut into 2N
  // even pieces, member i holding pieces i and 2N - 1 - i, concatenated
  // (plain splits only, one group). Ops acting alike on every position of
  // dim carry it (zigGate); an all_gather along dim gives S's value with
  // its pieces in that order, a reduce-scatter of that order gives it back.
  bool zig = false;
  bool plain() const { return blocks == 1 && inner == 1 && segs.empty(); }
  // The copy layout: o's, or the whole (over the copies, E itself).
  void copiesAs(const Fact& o) {
    lay3 = o.lay3, dim3 = o.dim3, idx3 = o.idx3, cnt3 = o.cnt3, fam3 = o.fam3, terms3 = o.terms3;
  }
  void whole() { copiesAs(Fact{}); }
  bool sameGroupLayout(const Fact& o) const {
    return lay == o.lay && dim == o.dim && blocks == o.blocks && inner == o.inner && innerDim == o.innerDim && segs == o.segs &&
           zig == o.zig && layB == o.layB && dimB == o.dimB && zigB == o.zigB;
  }
};

// One of f's layouts as a one-group fact (the rules and the collectives
// read a fact's first layout): the second group's, the micro-batch copies'.
Fact layoutView(Lay lay, int64_t dim, Val v) {
  Fact t;
  t.lay = lay;
  t.dim = dim;
  t.v = v;
  return t;
}
Fact secondaryView(const Fact& f, size_t k) {
  Fact t = layoutView(f.layB[k], f.dimB[k], f.v);
  t.zig = f.zigB[k];
  return t;
}
Fact microBatchView(const Fact& f) { return layoutView(f.lay3, f.dim3, f.v); }

// f * g and f / g stored exactly (the factor kept is the real product).
std::optional<double> exactTimes(double f, double g) {
  if (!exactProduct(f, g)) return std::nullopt;
  return f * g;
}
std::optional<double> exactOver(double f, double g) {
  if (g == 0) return std::nullopt;
  double q = f / g;
  if (!std::isfinite(q) || std::fma(q, g, -f) != 0.0) return std::nullopt;
  return q;
}

std::string factorText(double k) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", k);
  return buf;
}

std::string hexFactor(double k) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%a", k);
  return buf;
}

bool sameAttrs(const ir::AttrMap& a, const ir::AttrMap& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.index() != ib->second.index()) return false;
    bool same = std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          const T& y = std::get<T>(ib->second);
          if constexpr (std::is_same_v<T, ir::Tensor>) return x.identical(y);
          else return x == y;
        },
        ia->second);
    if (!same) return false;
  }
  return true;
}

// Rank graphs that are the same program: same values, nodes and attributes;
// with `bySlice`, slices may differ in their bounds (a rank picking its
// piece of a replicated value), and those slices are added to it.
bool sameGraph(const ir::Graph& a, const ir::Graph& b, std::set<ir::NodeId>* bySlice = nullptr) {
  if (a.values().size() != b.values().size() || a.nodes().size() != b.nodes().size() || a.outputs() != b.outputs() ||
      a.inputs() != b.inputs() || a.params() != b.params())
    return false;
  // Names matter where relations and reports name values (inputs, params,
  // outputs); an intermediate's is only a label (exporters number them
  // per file).
  std::vector<bool> named(a.values().size(), false);
  for (ir::ValueId v : a.outputs()) named[size_t(v)] = true;
  for (size_t i = 0; i < a.values().size(); ++i) {
    const auto& x = a.values()[i];
    const auto& y = b.values()[i];
    bool label = x.kind == ir::ValueKind::NodeOutput && !named[i];
    if ((!label && x.name != y.name) || !(x.type == y.type) || x.kind != y.kind) return false;
  }
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const auto& x = a.nodes()[i];
    const auto& y = b.nodes()[i];
    bool p2p = x.op == OpKind::Send || x.op == OpKind::Recv;
    auto strip = [&](ir::AttrMap m) {
      if (p2p) m.erase("peer");  // rank-relative: checked against the class layout (Folder::run)
      return m;
    };
    if (x.op != y.op || x.inputs != y.inputs || x.outputs != y.outputs) return false;
    if (p2p ? sameAttrs(strip(x.attrs), strip(y.attrs)) : sameAttrs(x.attrs, y.attrs)) continue;
    auto bounds = [](ir::AttrMap m) {
      m.erase("starts"), m.erase("ends");
      return m;
    };
    if (!bySlice || x.op != OpKind::Slice || !sameAttrs(bounds(x.attrs), bounds(y.attrs))) return false;
    bySlice->insert(ir::NodeId(i));
  }
  return true;
}

// Hash-consed expressions over S's inputs: the values S computes and the
// ones D's layouts name.
class Exprs {
 public:
  int intern(const std::string& key, const TensorType& t) {
    auto [it, fresh] = ids_.emplace(key + "|" + t.str(), int(types_.size()));
    if (fresh) {
      types_.push_back(t);
      scalars_.push_back(std::nullopt);
      uniforms_.push_back(std::nullopt);
    }
    return it->second;
  }
  // The one value every element of node n holds, where known (a constant
  // filled with it, and views of one).
  std::optional<double>& uniform(int n) { return uniforms_[size_t(n)]; }
  int uniformNode(double c, const TensorType& t) {
    int n = intern("uniform " + hexFactor(c), t);
    uniforms_[size_t(n)] = c;
    return n;
  }
  size_t size() const { return types_.size(); }
  int unique(const TensorType& t) { return intern("#" + std::to_string(types_.size()), t); }
  const TensorType& type(int n) const { return types_[size_t(n)]; }
  std::optional<double>& scalar(int n) { return scalars_[size_t(n)]; }
  int materialize(Val v) {
    if (v.k == 1.0) return v.node;
    return intern("scale " + hexFactor(v.k) + " " + std::to_string(v.node), types_[size_t(v.node)]);
  }

 private:
  std::unordered_map<std::string, int> ids_;
  // deques: a reference from type() or scalar() stays valid while interning
  // grows them (a rule holding one across intern or materialize).
  std::deque<TensorType> types_;
  std::deque<std::optional<double>> scalars_;
  std::deque<std::optional<double>> uniforms_;
};

// A slice of step 1 whose result has its operand's type takes every element.
bool wholeSlice(const ir::AttrMap& attrs, const TensorType& in, const TensorType& out) {
  if (!(in == out)) return false;
  if (attrs.count("steps"))
    for (int64_t st : ir::attrInts(attrs, "steps"))
      if (st != 1) return false;
  return true;
}

// Why a fold stops where the ranks along a folded axis run different
// graphs (pipeline stages).
constexpr const char* kDifferentGraphs = "ranks run different graphs";

bool reshapeLike(OpKind op) {
  return op == OpKind::Reshape || op == OpKind::Squeeze || op == OpKind::Unsqueeze;
}

// Ops acting alike on every position of any dim they do not reduce or
// normalize over: elementwise ops, norms, reductions, matmul rows and
// contraction.
bool actsAlikeAlongDims(OpKind op) {
  switch (ir::opInfo(op).category) {
    case OpCategory::Unary:
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Ternary:
    case OpCategory::Norm:
    case OpCategory::Reduce:
      return true;
    default:
      return op == OpKind::MatMul || op == OpKind::Identity;
  }
}

// The axes a slice node cuts (normalized; none given: the first len(starts)).
std::vector<int64_t> sliceAxes(const ir::Node& n, int64_t rank) {
  std::vector<int64_t> axes = n.attrs.count("axes") ? ir::attrInts(n.attrs, "axes") : std::vector<int64_t>{};
  if (!n.attrs.count("axes"))
    for (size_t k = 0; k < ir::attrInts(n.attrs, "starts").size(); ++k) axes.push_back(int64_t(k));
  for (auto& a : axes) a = a < 0 ? a + rank : a;
  return axes;
}

// The axes a reduction node sums (normalized attributes: `norm`), and
// where a dim it does not reduce lands (keepdims, or shifted past the
// reduced dims before it); nullopt for a reduced dim.
std::vector<int64_t> reducedAxes(const ir::AttrMap& norm) {
  if (auto it = norm.find("axes"); it != norm.end()) return std::get<std::vector<int64_t>>(it->second);
  return {};
}
std::optional<int64_t> afterReduce(const ir::Node& n, const std::vector<int64_t>& axes, int64_t d) {
  if (std::find(axes.begin(), axes.end(), d) != axes.end()) return std::nullopt;
  if (ir::attrInt(n.attrs, "keepdims")) return d;
  return d - int64_t(std::count_if(axes.begin(), axes.end(), [&](int64_t a) { return a < d; }));
}

// The layout schemas and the proven lemmas whose n-ary (folded) forms they
// are; a schema is used only when all its lemmas are proven.
const std::map<std::string, std::vector<std::string>>& schemaLemmas() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"unary-over-split", {"unary-over-concat"}},
      // Any operand order and rank (numpy broadcasting, aligned right): the
      // replicated operands never reach the split dim or have size 1 there,
      // the split ones are split alike on the aligned dim.
      {"binary-over-split", {"binary-over-concat", "binary-broadcast-over-concat", "binary-broadcast-unit-over-concat",
                             "binary-broadcast-low-unit-over-concat", "binary-broadcast-split-over-concat",
                             "binary-rank0-over-concat", "binary-rank0-left-over-concat", "binary-broadcast-left-over-concat",
                             "binary-broadcast-left-unit-over-concat", "binary-broadcast-left-split-over-concat"}},
      {"where-over-split", {"where-over-concat", "where-keep-over-concat", "where-split-mask-over-concat",
                            "where-keep-split-mask-over-concat", "where-low-mask-over-concat",
                            "where-keep-low-mask-over-concat", "where-low-split-mask-over-concat",
                            "where-keep-low-split-mask-over-concat"}},
      {"matmul-row-split", {"matmul-row-split-any-rank"}},
      // Any ranks on both sides (batched weights or gradients as well as a
      // rank-2 weight): the batched lemmas, proven up to rank 4.
      {"matmul-col-split", {"matmul-col-split-batched"}},
      {"matmul-batch-split", {"matmul-batch-split", "matmul-batch-dim-split"}},  // any batch dim, any rank
      {"matmul-contract-split", {"matmul-contract-split-batched"}},
      {"reduce-over-other-split", {"reduce-sum-keep-over-other-concat", "reduce-mean-keep-over-other-concat",
                                   "reduce-max-keep-over-other-concat"}},
      {"reduce-sum-over-split", {"reduce-sum-over-concat-drop", "reduce-sum-all-over-concat-first"}},
      {"all-reduce-of-unit-split", {"reduce-sum-own-over-concat", "reduce-sum-of-unit"}},
      // an all_reduce with max of each member's max over its piece
      {"max-over-split", {"reduce-max-own-over-concat", "reduce-max-own-over-concat-drop"}},
      {"reduce-mean-over-split", {"reduce-mean-over-concat-halves", "reduce-mean-all-over-concat-halves"}},
      {"softmax-over-split", {"softmax-over-concat", "log-softmax-over-concat"}},
      {"softmax-over-other-split", {"softmax-over-other-concat", "log-softmax-over-other-concat"}},
      {"norm-over-split", {"layer-norm-over-concat", "layer-norm-gain-over-concat", "layer-norm-affine-over-concat",
                           "rms-norm-over-concat", "rms-norm-affine-over-concat"}},
      {"permute-of-split", {"permute-of-concat", "transpose-of-concat"}},
      {"reshape-of-split", {"split-dims-first-of-concat-first", "merge-dims-first-of-concat-first"}},
      {"slice-of-split", {"slice-last-of-concat-first", "unary-over-slice"}},
      {"concat-of-splits", {"concat-last-of-concat-first", "concat-block-transpose"}},
      {"expand-of-split", {"binary-broadcast-unit-over-concat"}},
      // expand's own semantics (copies along a unit dim): no lemma
      {"expand-of-replicated", {}},
      // Partial sums over micro-batch copies added up: one sum over the union
      // of their terms (sums are associative and commutative).
      {"sum-of-terms", {"add-is-sum"}},
      // An input relation's slice read as a piece of its S tensor, one
      // micro-batch copy's: the relation's own semantics, no lemma.
      {"copies-of-pieces", {}},
      // A replicated operand added on every member of a sum: n times in the
      // sum (sum(a + c, b + c) = sum(a, b) + sum(c, c)).
      {"replicated-into-sum", {"add-of-sums"}},
      // Adds of one type as one n-ary sum of their terms, in any order and
      // grouping (the relation sum is n-ary, commutative and associative).
      {"sum-algebra", {"add-is-sum", "add-comm"}},
      // Chains of reshapes, transposes and expands compared by their index
      // maps (a normal form of the re-indexing): the ops' own semantics.
      {"view-algebra", {}},
      {"uniform-constants", {}},
      // topk on each row along its axis, one_hot on each index (a new
      // axis): a split on another dim carries over, both outputs of topk
      // alike. The ops' own semantics: the prover gives topk and one_hot
      // no meaning yet, so no lemma states it (listed in the report).
      {"rows-over-other-split", {}},
      // Runs of members sharing a piece, as a plain split of the block
      // repeat: expand's own semantics.
      {"runs-as-repeat", {}},
      // Partial sums within runs of members (a KV head's gradient summed by
      // each member of its run over its own query heads): made by a sum
      // over the inner dim of a two-level split, carried by ops linear in
      // them, ended by a sum over the dim or a contraction with the runs'
      // whole pieces (the n-ary forms, within each run and over the runs).
      {"run-partial-sums", {"reduce-sum-over-concat-drop", "add-of-sums", "mul-over-sum", "neg-over-sum",
                            "matmul-over-sum-left", "matmul-over-sum-right", "reduce-sum-of-sum", "concat-of-sums",
                            "slice-of-sum", "add-is-sum", "add-comm"}},
      // Several groups splitting one dim, their pieces nested in group
      // order: the inner group's adjacent pieces make the outer group's
      // piece, and the outer pieces the whole (the n-ary forms, by
      // induction over each group); ops and collectives then carry each
      // group's layout by its own schema with the others' held (nestedOk).
      {"nested-splits", {"concat-adjacent-slices", "slice-full"}},
      // Load-balanced chunks: pieces i and 2N - 1 - i of one dim on member
      // i, carried by ops acting alike on its positions (as nested splits
      // are), gathered and reduce-scattered in that order.
      {"zigzag-chunks", {"concat-adjacent-slices", "slice-full"}},
      // A value whose segments along a dim are split over the group each
      // its own way (vLLM's merged QKV with KV heads on runs of ranks): the
      // concat of its segments, each op acting alike along the dim applied
      // to each, a split into the segments their slices.
      {"segmented-split", {"concat-adjacent-slices", "slice-full"}},
      // Each member's slice of a value all hold, its piece: slice's own
      // semantics, no lemma.
      {"slice-by-rank", {}},
      // An all_to_all exchanging chunks along the dim it splits: a plain
      // split becomes the split blocked once per member and back (the
      // collective's own semantics, ir/collectives.h; no lemma).
      {"all-to-all-exchange", {}},
      {"linear-over-sum", {"add-of-sums", "mul-over-sum", "neg-over-sum", "scale-over-sum", "matmul-over-sum-left",
                           "matmul-over-sum-right", "reduce-sum-of-sum", "concat-of-sums", "sum-of-merged-first",
                           "slice-of-sum"}},
      {"scale-algebra", {"scale-through-add", "scale-through-concat", "matmul-scale-left", "matmul-scale-right",
                         "mul-scale-right", "scale-through-transpose"}},
  };
  return m;
}


// Layout views (reshape, squeeze, unsqueeze, transpose, expand): each a
// re-indexing of one tensor that is not itself a view. A view names the
// base's elements by atoms, runs of the base's row-major order; each result
// dim is a list of atoms, major first, or broadcasts (a copy of size n).
// Kept in normal form: atoms consecutive in the base and in one result dim
// are one atom, broadcasts next to each other one broadcast, size 1 gone;
// the identity is the base itself. Two chains of layout ops are the same
// tensor exactly when their normal forms are equal (their index maps are),
// so S's and D's expressions meet whatever order their layout ops took.
// Sizes are Dims: a symbolic size (a dynamic export's batch, seq) is an
// atom like any other, split only where a monomial divides it.
struct View {
  int base = -1;
  std::vector<Dim> atoms;                   // sizes (not 1), in the base's order
  std::vector<Dim> bcasts;                  // broadcast sizes, named by -(index + 1)
  std::vector<std::vector<int64_t>> dims;   // >= 0: an atom; < 0: a broadcast
};

int64_t newBroadcast(View& v, const Dim& size) {
  v.bcasts.push_back(size);
  return -int64_t(v.bcasts.size());
}

std::optional<View> identityView(int base, const Shape& shape) {
  View v;
  v.base = base;
  for (const Dim& d : shape) {
    v.dims.emplace_back();
    if (d != Dim(1)) {
      v.dims.back().push_back(int64_t(v.atoms.size()));
      v.atoms.push_back(d);
    }
  }
  return v;
}

const Dim& atomSize(const View& v, int64_t a) { return a >= 0 ? v.atoms[size_t(a)] : v.bcasts[size_t(-a - 1)]; }

// Whether size a is a proper factor of b (concrete: smaller).
bool properFactor(const Dim& a, const Dim& b) {
  if (a.isConcrete() && b.isConcrete()) return a.value() < b.value();
  return a != b && ir::exactDiv(b, a).has_value();
}

// Splits entry `at` of the flat list (atom or broadcast) into a major part
// of size `major` and the rest (major divides it).
void splitAtom(View& v, int64_t a, const Dim& major, std::vector<int64_t>& flat, size_t at) {
  Dim minor = *ir::exactDiv(atomSize(v, a), major);
  if (a < 0) {
    flat[at] = newBroadcast(v, major);
    flat.insert(flat.begin() + std::ptrdiff_t(at) + 1, newBroadcast(v, minor));
    return;
  }
  v.atoms[size_t(a)] = major;
  v.atoms.insert(v.atoms.begin() + a + 1, minor);
  for (auto& x : flat)
    if (x > a) ++x;
  flat.insert(flat.begin() + std::ptrdiff_t(at) + 1, a + 1);
}

// Row-major reshape to `shape`: the result dims take the atoms in order,
// splitting one where a dim ends inside it.
bool reshapeView(View& v, const Shape& shape) {
  std::vector<int64_t> flat;
  for (const auto& d : v.dims) flat.insert(flat.end(), d.begin(), d.end());
  std::vector<std::vector<int64_t>> dims;
  size_t at = 0;
  for (const Dim& s : shape) {
    dims.emplace_back();
    Dim have(1);
    while (properFactor(have, s)) {
      if (at >= flat.size()) return false;
      Dim z = atomSize(v, flat[at]);
      Dim next = have * z;
      if (next != s && !properFactor(next, s)) {  // the dim ends inside this atom
        auto rest = ir::exactDiv(s, have);
        if (!rest || !ir::exactDiv(z, *rest)) return false;
        splitAtom(v, flat[at], *rest, flat, at);
        z = *rest;
      }
      dims.back().push_back(flat[at++]);
      have = have * z;
    }
    if (have != s) return false;
  }
  if (at != flat.size()) return false;
  // atom ids may have shifted while splitting: re-read them from flat
  size_t k = 0;
  for (auto& d : dims)
    for (auto& x : d) x = flat[k++];
  v.dims = std::move(dims);
  return true;
}

// numpy broadcasting to `shape`: new leading dims and size-1 dims widened
// are broadcasts.
bool expandView(View& v, const Shape& shape) {
  if (shape.size() < v.dims.size()) return false;
  std::vector<std::vector<int64_t>> dims(shape.size() - v.dims.size());
  dims.insert(dims.end(), v.dims.begin(), v.dims.end());
  for (size_t i = 0; i < shape.size(); ++i) {
    Dim have(1);
    for (int64_t x : dims[i]) have = have * atomSize(v, x);
    if (have == shape[i]) continue;
    if (have != Dim(1)) return false;
    dims[i] = {newBroadcast(v, shape[i])};
  }
  v.dims = std::move(dims);
  return true;
}

void normalizeView(View& v) {
  for (bool merged = true; merged;) {
    merged = false;
    for (auto& d : v.dims)
      for (size_t i = 0; i + 1 < d.size() && !merged; ++i) {
        int64_t x = d[i], y = d[i + 1];
        if (x >= 0 && y == x + 1) {
          v.atoms[size_t(x)] = v.atoms[size_t(x)] * v.atoms[size_t(y)];
          v.atoms.erase(v.atoms.begin() + y);
          d.erase(d.begin() + std::ptrdiff_t(i) + 1);
          for (auto& e : v.dims)
            for (auto& z : e)
              if (z > y) --z;
          merged = true;
        } else if (x < 0 && y < 0) {
          d[i] = newBroadcast(v, atomSize(v, x) * atomSize(v, y));
          d.erase(d.begin() + std::ptrdiff_t(i) + 1);
          merged = true;
        }
      }
    for (auto& d : v.dims) {
      auto unit = std::remove_if(d.begin(), d.end(), [&](int64_t x) { return x < 0 && atomSize(v, x) == Dim(1); });
      if (unit != d.end()) d.erase(unit, d.end()), merged = true;
    }
  }
  // broadcasts renumbered in order of use: equal views, equal members
  std::vector<Dim> used;
  for (auto& d : v.dims)
    for (auto& x : d)
      if (x < 0) {
        used.push_back(atomSize(v, x));
        x = -int64_t(used.size());
      }
  v.bcasts = std::move(used);
}

std::string viewKey(const View& v) {
  std::string k = "view " + std::to_string(v.base) + " [";
  for (const Dim& a : v.atoms) k += a.str() + " ";
  k += "]";
  for (const auto& d : v.dims) {
    k += " (";
    for (int64_t x : d) k += (x >= 0 ? "a" + std::to_string(x) : "b" + atomSize(v, x).str()) + " ";
    k += ")";
  }
  return k;
}

// The box a relation cuts out of one S tensor (defined below).
std::optional<std::pair<std::string, std::map<int64_t, std::pair<int64_t, int64_t>>>> sliceBox(const Rel& r,
                                                                                               const ir::Graph& seq);

// r with every concat inside a concat along the same dim spliced into it
// (concat is associative) and every sum's terms in one order (sum is
// commutative): one form for relations that nest the pieces or order the
// terms differently.
RelPtr flatConcats(const RelPtr& r) {
  if (r->args.empty()) return r;
  std::vector<RelPtr> args;
  bool changed = false;
  for (const auto& a : r->args) {
    RelPtr f = flatConcats(a);
    changed = changed || f != a;
    if (r->op == RelOp::Concat && f->op == RelOp::Concat && f->dim == r->dim) {
      args.insert(args.end(), f->args.begin(), f->args.end());
      changed = true;
    } else {
      args.push_back(f);
    }
  }
  if (r->op == RelOp::Sum) {
    std::vector<std::pair<std::string, RelPtr>> keyed;
    for (auto& a : args) keyed.emplace_back(str(*a), a);
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t i = 0; i < keyed.size(); ++i) {
      changed = changed || keyed[i].second != args[i];
      args[i] = keyed[i].second;
    }
  }
  if (!changed) return r;
  auto out = std::make_shared<Rel>(*r);
  out->args = std::move(args);
  return out;
}

class Folder {
 public:
  // `more`: mesh axes folded as further groups although no collective
  // names them (a forward data-parallel program: each dp replica its
  // batch; a program with no collective at all, laid out over the mesh).
  explicit Folder(const FoldInput& in, std::vector<std::string> more = {})
      : in_(in), seq_(*in.seq), dist_(*in.dist), more_(std::move(more)) {}

  FoldOutcome run();

 private:
  bool use(const std::string& schema);
  std::string opKey(OpKind op, const ir::AttrMap& attrs, int64_t inRank, int out, const std::vector<int>& kids);
  Val canon(OpKind op, const ir::AttrMap& attrs, const std::vector<Val>& in, int out, const TensorType& t,
            int64_t inRank);
  // The node a layout op on `x` makes, in view normal form (nullopt: not a
  // view of concrete shapes).
  std::optional<int> viewNode(OpKind op, const ir::AttrMap& attrs, int x, const TensorType& t);
  std::optional<int> internView(View v, const TensorType& t);
  std::optional<View> viewOf(int node) const;  // its view, or the identity view of it
  int unbroadcastBatch(int node);
  std::unordered_map<int, View> views_;
  // Slices, splits and concats along one dim as runs of pieces of base
  // values (view-algebra): a slice of a run is its sub-runs, a concat the
  // runs joined, adjacent pieces of one base merged, one piece covering its
  // base the base. pieces_: a node made so -> its runs.
  struct Piece {
    int base;
    int64_t a, b;  // [a, b) along dim
  };
  struct Runs {
    int64_t dim;
    std::vector<Piece> parts;
  };
  std::unordered_map<int, Runs> pieces_;
  std::vector<Piece> runsOf(int node, int64_t dim);
  static std::vector<Piece> mergeRuns(const std::vector<Piece>& parts);
  std::optional<Val> fromRuns(int64_t dim, std::vector<Piece> parts, const TensorType& t, double k);
  std::optional<Val> runsCanon(OpKind op, const ir::AttrMap& attrs, const std::vector<Val>& in, int out,
                               const TensorType& t);
  // The zigzag order of base's 2n pieces of width c along dim (member i's
  // pieces i and 2n - 1 - i, in member order).
  std::vector<Piece> zigOrder(int base, int64_t c) const;
  // The base whose zigzag order, pieces of half of `local` along dim, node
  // holds (as runs of one type with it); nullopt: another value.
  std::optional<int> zigBase(int node, int64_t dim, const Dim& local);
  std::optional<Fact> zigInputFact(const std::vector<RelPtr>& rels, const TensorType& local);
  std::optional<Fact> segInputFact(const std::vector<RelPtr>& rels, const TensorType& local);
  struct SlicesOfOne {
    ir::ValueId v;
    TensorType whole;
    int64_t d;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> parts;  // per member, per part: [start, end)
  };
  std::optional<SlicesOfOne> slicesOfOne(const std::vector<RelPtr>& rels, const TensorType& local);
  std::vector<Fact> segRule(const ir::Node& n, const std::vector<Fact>& in);
  std::vector<Fact> zigGate(const ir::Node& n, const std::vector<Fact>& in, std::vector<Fact> outs);
  // A plain split of a value holding a base's pieces in zigzag order (a
  // gather sliced by rank: the backward of the gather) is the zigzag split
  // of the base.
  void asZig(Fact& f, const TensorType& local);
  // Nodes below sCount_ are S's (interned first, before any of D's): where
  // a rule sees several true layouts, it keeps the one S computes.
  int sCount_ = 0;
  bool sComputes(const std::vector<Fact>& outs) const {
    return std::all_of(outs.begin(), outs.end(), [&](const Fact& f) { return f.v.node >= 0 && f.v.node < sCount_; });
  }
  // Next best, where no reading is S's own value: a view of S's index map
  // with other unit dims (S reshapes tokens to [1, n, e, c, m] where D's
  // reading is [n, e, c, m]) is the value S computes in another shape, and
  // the reading that goes on from it meets S's values where the unit dims
  // go.
  std::unordered_set<std::string> sViewsUnitFree_;
  static std::string unitFreeKey(View v) {
    v.dims.erase(std::remove_if(v.dims.begin(), v.dims.end(), [](const std::vector<int64_t>& d) { return d.empty(); }),
                 v.dims.end());
    return viewKey(v);
  }
  // S's value, interned before the operand's (S interns in its own order):
  // a reading that goes back to an earlier value of S.
  bool readsBack(const std::vector<Fact>& outs, const Fact& operand) const {
    return sComputes(outs) && operand.v.node >= 0 && operand.v.node < sCount_ && outs[0].v.node < operand.v.node;
  }
  bool sComputesUpToUnitDims(const std::vector<Fact>& outs) const {
    return std::all_of(outs.begin(), outs.end(), [&](const Fact& f) {
      if (f.v.node < 0) return false;
      if (f.v.node < sCount_) return true;
      auto it = views_.find(f.v.node);
      return it != views_.end() && sViewsUnitFree_.count(unitFreeKey(it->second)) > 0;
    });
  }
  std::unordered_map<int, int> flatOf_;  // a reshape that is no view -> the node it reshapes
  // A split shared by runs of q members as a plain split of the block
  // repeat of its value (member i's piece i / q of E is piece i of E with
  // each of its N / q pieces repeated q times).
  std::optional<Fact> runsAsRepeat(const Fact& f, const TensorType& local);
  std::optional<TensorType> inferGlobal(OpKind op, const ir::AttrMap& attrs, const std::vector<TensorType>& ins,
                                        int out);
  // S's type of a D value: the local type scaled by each split (the second
  // group's too unless primaryOnly).
  TensorType globalOf(const TensorType& local, const Fact& f, bool primaryOnly = false) const;
  std::vector<Fact> transfer(const ir::Node& n);
  std::vector<std::string> partialSumOrigins(ir::ValueId v) const;
  // Fact::blocks as a Dim and back (symbolic counts interned as negative ids).
  std::vector<Dim> symBlocks_;
  Dim blockCount(int64_t b) const { return b >= 0 ? Dim(b) : symBlocks_[size_t(-b - 1)]; }
  int64_t blocksId(const Dim& d) {
    if (d.isConcrete()) return d.value();
    auto it = std::find(symBlocks_.begin(), symBlocks_.end(), d);
    if (it == symBlocks_.end()) it = symBlocks_.insert(symBlocks_.end(), d);
    return -int64_t(it - symBlocks_.begin()) - 1;
  }
  static bool isBlocked(int64_t b) { return b > 1 || b < 0; }
  std::vector<Fact> rules(const ir::Node& n, const std::vector<Fact>& in);
  // 2-D folding: each group's layout decided on its own, then one check of
  // S's types and one expression for the outputs.
  std::vector<Fact> transfer2(const ir::Node& n, const std::vector<Fact>& in);
  void uniformAsPartner(const ir::Node& n, std::vector<Fact>& in);
  std::vector<Fact> combine2(const ir::Node& n, const std::vector<Fact>& in, const std::vector<Fact>& pri,
                             const std::vector<std::vector<Fact>>& secs, double f1, double f2);
  bool nestedOk(const ir::Node& n, const std::vector<Fact>& in, const std::vector<Fact>& outs);
  bool reshapeReadingsAgree(const ir::Node& n, const std::vector<Fact>& in, const std::vector<Fact>& outs);
  // A dim split by two groups or more (nested-splits).
  bool isNested(const Fact& f) const {
    std::vector<int64_t> dims;
    if (f.lay == Lay::Split) dims.push_back(f.dim);
    for (size_t k = 0; k < nB_.size(); ++k)
      if (f.layB[k] == Lay::Split) dims.push_back(f.dimB[k]);
    std::sort(dims.begin(), dims.end());
    return std::adjacent_find(dims.begin(), dims.end()) != dims.end();
  }
  bool nestedAllowed(const Fact& f) { return !isNested(f) || use("nested-splits"); }
  // A further group's zigzag chunks are pieces of the whole dim: no outer
  // group (nor the copies) splits that dim around them.
  // One rank (a single-GPU program, its micro-batches folded as copies):
  // a member's piece of a split, or its term of a sum, over a group of
  // one is the whole value.
  Fact settled(Fact f) const {
    if (twoD_ || n_ != 1 || (f.lay != Lay::Split && f.lay != Lay::Sum)) return f;
    Fact whole = f;
    whole.lay = Lay::Rep, whole.dim = 0, whole.blocks = 1, whole.inner = 1, whole.innerDim = -1;
    whole.segs.clear(), whole.zig = false;
    return whole;
  }
  bool zigNestOk(const Fact& f) const {
    if (f.zig) {
      if (f.lay != Lay::Split || (f.lay3 == Lay::Split && f.dim3 == f.dim)) return false;
      for (size_t k = 0; k < nB_.size(); ++k)
        if (f.layB[k] == Lay::Split && f.dimB[k] == f.dim) return false;
    }
    for (size_t k = 0; k < nB_.size(); ++k) {
      if (!f.zigB[k]) continue;
      if (f.layB[k] != Lay::Split || (f.zig && f.dim == f.dimB[k]) || (f.lay3 == Lay::Split && f.dim3 == f.dimB[k]))
        return false;
      for (size_t b = k + 1; b < nB_.size(); ++b)
        if (f.layB[b] == Lay::Split && f.dimB[b] == f.dimB[k]) return false;
    }
    return true;
  }
  std::vector<Fact> collective2(const ir::Node& n, const std::vector<Fact>& in);
  std::vector<Fact> finalize(const ir::Node& n, const std::vector<Fact>& in, std::vector<Fact> outs, double factor);
  bool instancesAreGroups(const ir::Node& n, int axis);
  bool oneMemberEach(const ir::Node& n);
  std::string setupND(const std::vector<std::string>& groups);
  RelPtr rebuild2(const Fact& f, const std::string& name, const Shape& local) const;
  std::vector<Fact> collective(const ir::Node& n, const std::vector<Fact>& in, bool checkMembers = true);
  // Whether collective n runs over exactly the folded group's members.
  bool overFoldedGroup(const ir::Node& n);
  std::optional<Fact> maxOverSplit(const ir::Node& n);
  std::optional<Fact> accumulated(const ir::Node& n, const std::vector<Fact>& in);
  std::vector<Fact> splitRule(const ir::Node& n, const std::vector<Fact>& in);
  std::vector<Fact> sumRule(const ir::Node& n, const std::vector<Fact>& in);
  std::vector<Fact> runSumRule(const ir::Node& n, const std::vector<Fact>& in);
  std::vector<Fact> segConcat(const ir::Node& n, const std::vector<Fact>& in);
  // Each D input's checked relation, by name, then rank.
  using Bound = std::unordered_map<std::string, std::vector<RelPtr>>;
  std::optional<Fact> inputFact2(const std::string& name, const TensorType& local, const Bound& bound);
  std::optional<Fact> splitOverGroups(const std::vector<RelPtr>& rels, const TensorType& local);
  // The same with one further group's split into zigzag chunks, each
  // rank's relation compared as the pieces of S's tensor it selects.
  std::optional<Fact> zigSplitOverGroups(const std::vector<RelPtr>& rels, const TensorType& local);
  std::optional<Fact> inputFact(const std::string& name, const TensorType& local, const Bound& bound);
  std::optional<Fact> blockedInputFact(const std::vector<RelPtr>& rels, const TensorType& local);
  RelPtr wholeIfTiles(const RelPtr& r) const;
  std::optional<Fact> templateFact2(const InputRelation& t, const TensorType& local);
  std::optional<Fact> templateFact(const InputRelation& t, const TensorType& local, const std::string& group);

  // A micro-batch cut peeled off an input's relation (dim, index, count):
  // the readers then see one copy's piece of S's tensor.
  struct CopyCut {
    int64_t dim = 0, idx = 0, cnt = 1;
  };
  std::optional<CopyCut> cut_;
  int64_t copies_ = 1;  // the most micro-batch copies an input is cut into
  TensorType wholeType(ir::ValueId v) const {
    TensorType t = seq_.value(v).type;
    if (cut_ && size_t(cut_->dim) < t.shape.size() && t.shape[size_t(cut_->dim)].isConcrete())
      t.shape[size_t(cut_->dim)] = Dim(t.shape[size_t(cut_->dim)].value() / cut_->cnt);
    return t;
  }
  // S value n's shape, or its micro-batch copy's piece (piece: wholeType).
  std::optional<Shape> seqShapeOf(const std::string& n, bool piece) const {
    auto v = seq_.findValue(n);
    if (!v) return std::nullopt;
    return piece ? wholeType(*v).shape : seq_.value(*v).type.shape;
  }
  int seqNode(ir::ValueId v) { return ex_.intern("seq " + seq_.value(v).name, seq_.value(v).type); }
  std::optional<Fact> copyInputFact(const std::string& name, const TensorType& local, const Bound& bound);
  std::optional<Fact> copyTemplateFact(const InputRelation& t, const TensorType& local, const std::string& group);
  std::optional<Fact> withCut(std::optional<Fact> f, const CopyCut& c, const std::string& name, const TensorType& local);

  const FoldInput& in_;
  const ir::Graph& seq_;
  const ir::Program& dist_;
  std::vector<std::string> more_;
  const ir::Graph* g_ = nullptr;  // the folded rank graph (the group's first member's)
  std::vector<int64_t> members_;
  int64_t n_ = 1;
  Exprs ex_;
  std::unordered_map<int, std::vector<int>> sums_;  // sum-algebra nodes: their terms, sorted
  Interner interner_;
  std::vector<Fact>* facts_ = nullptr;  // per value of *g_
  // The ranks in classes: the parts of the collectives' group (pipeline
  // stages of a [pp, tp] mesh), each folded over its members; a class's
  // graph, facts and members are g_, facts_ and members_ while it runs.
  std::vector<std::vector<int64_t>> classes_;
  std::vector<std::pair<int64_t, int64_t>> where_;  // rank -> (class, position)
  std::vector<const ir::Graph*> graphs_;
  // Per class: the slices whose bounds differ between its members.
  std::map<size_t, std::set<ir::NodeId>> bySlice_;
  std::optional<Fact> sliceByRank(const ir::Node& n, const Fact& x);
  std::optional<Fact> sliceByRankB(const ir::Node& n, const Fact& x,
                                   const std::vector<std::pair<int64_t, int64_t>>& all, int64_t axis);
  std::vector<std::vector<Fact>> allFacts_;
  void enter(size_t c) {
    g_ = graphs_[c];
    facts_ = &allFacts_[c];
    members_ = classes_[c];
    cls_ = c;
    if (twoD_) grid_ = grids_[c];
  }
  std::vector<Fact> received(const ir::Node& n);
  std::optional<std::pair<std::string, std::vector<DistRef>>> lastScaledValue(const std::vector<Val>& sval);
  std::map<std::string, bool> schemaOk_;
  std::set<std::string> used_;
  int64_t steps_ = 0;
  // N-D folding: group A (the first, n_ ranks) and groups B_k (nB_[k]
  // ranks, k < groupsB_.size(), nested in this order outside A); grid_[j]
  // is the A group holding the B positions j (mixed radix, B_0 fastest:
  // position j_k = j / strideB_[k] % nB_[k]), in A order.
  bool twoD_ = false;
  std::string groupA_;
  std::vector<std::string> groupsB_;
  std::vector<int64_t> nB_, strideB_;
  int64_t nAllB() const {
    int64_t p = 1;
    for (int64_t x : nB_) p *= x;
    return p;
  }
  // The rank at A position i, B positions js.
  int64_t rankAt(int64_t i, const std::vector<int64_t>& js) const {
    int64_t j = 0;
    for (size_t k = 0; k < js.size(); ++k) j += js[k] * strideB_[k];
    return grid_[size_t(j)][size_t(i)];
  }
  // The ranks of group g's line through rank 0 of the class (g 0: A, k + 1: B_k).
  std::vector<int64_t> lineOf(size_t g) const {
    if (g == 0) return grid_[0];
    std::vector<int64_t> line;
    for (int64_t j = 0; j < nB_[g - 1]; ++j) line.push_back(grid_[size_t(j * strideB_[g - 1])][0]);
    return line;
  }
  // Decides with group k + 1's size as the folded one.
  void swapB(size_t k) { std::swap(n_, nB_[k]); }
  std::vector<std::vector<int64_t>> grid_;
  std::vector<std::vector<std::vector<int64_t>>> grids_;  // per class (pipeline stage)
  std::map<std::tuple<size_t, ir::NodeId, int>, bool> groupChecked_;
  std::map<int, std::set<std::vector<int64_t>>> partsOf_;  // axis -> its group's parts
  size_t cls_ = 0;  // the class entered
  // The rules only decide layouts (no S types, no expressions); a mean over
  // a split group multiplies decidedFactor_ by the group size.
  bool decideOnly_ = false;
  double decidedFactor_ = 1.0;
  // Deciding only, where a rule sees several true layouts: which to give
  // (pick_), and how many there were (picks_).
  size_t pick_ = 0, picks_ = 1;
  // transfer2 with micro-batch copies: their layouts of the results, and
  // the operands' count, piece index and terms.
  const std::vector<Fact>* mbDecided_ = nullptr;
  int64_t mbCount_ = 1, mbIndex_ = -1;
  std::vector<bool> mbTerms_;
};

bool Folder::use(const std::string& schema) {
  auto it = schemaOk_.find(schema);
  if (it == schemaOk_.end()) {
    bool ok = true;
    for (const auto& l : schemaLemmas().at(schema)) ok = ok && in_.proven && in_.proven(l);
    it = schemaOk_.emplace(schema, ok).first;
  }
  if (it->second) used_.insert(schema);
  return it->second;
}

std::string Folder::opKey(OpKind op, const ir::AttrMap& attrs, int64_t inRank, int out, const std::vector<int>& kids) {
  // Reshape, squeeze and unsqueeze are one row-major reshape, named by the
  // result type the key carries; expand likewise.
  std::string key;
  if (reshapeLike(op)) key = "reshape";
  else if (op == OpKind::Expand) key = "expand";
  else key = std::string(ir::opName(op)) + "@" + std::to_string(interner_.attrs(op, attrs, inRank)) + "." + std::to_string(out);
  for (int k : kids) key += " " + std::to_string(k);
  return key;
}

// The expression an op computes from operand values, with scalar factors
// pulled through the ops that are linear in them (scale-algebra).
Val Folder::canon(OpKind op, const ir::AttrMap& attrs, const std::vector<Val>& in, int out, const TensorType& t,
                  int64_t inRank) {
  auto cat = ir::opInfo(op).category;
  if (cat == OpCategory::Random || cat == OpCategory::Collective) return {ex_.unique(t), 1.0};
  auto node = [&](const std::vector<int>& kids) { return ex_.intern(opKey(op, attrs, inRank, out, kids), t); };
  // A constant of one value everywhere, and any view or broadcast of one,
  // is that value filled into its type (uniform-constants): one term
  // however it is written (zeros reshaped and expanded, then sliced).
  if (op == OpKind::Constant && attrs.count("value") && ir::isConcrete(t.shape)) {
    const ir::Tensor& value = ir::attrTensor(attrs, "value");
    bool one = value.numel() >= 1;
    for (int64_t i = 1; one && i < value.numel(); ++i) one = value.getAsDouble(i) == value.getAsDouble(0);
    if (one && std::isfinite(value.getAsDouble(0)) && use("uniform-constants")) {
      int n = ex_.uniformNode(value.getAsDouble(0), t);
      if (value.numel() == 1) ex_.scalar(n) = value.getAsDouble(0);
      return {n, 1.0};
    }
  }
  if ((ir::opInfo(op).category == OpCategory::Layout) && in.size() == 1 && ir::isConcrete(t.shape) &&
      ex_.uniform(in[0].node) && use("uniform-constants"))
    if (auto c = exactTimes(*ex_.uniform(in[0].node), in[0].k)) {
      int n = ex_.uniformNode(*c, t);
      if (ex_.type(in[0].node) == t && ex_.scalar(in[0].node)) ex_.scalar(n) = *c;
      return {n, 1.0};
    }
  bool scaleOk = use("scale-algebra");
  if (scaleOk && (op == OpKind::Mul || op == OpKind::Div) && in.size() == 2) {
    for (int side : {1, 0}) {
      if (op == OpKind::Div && side == 0) continue;
      const Val& c = in[size_t(side)];
      const Val& x = in[size_t(1 - side)];
      auto s = ex_.scalar(c.node);
      if (!s || !(ex_.type(x.node) == t)) continue;
      std::optional<double> cs = exactTimes(*s, c.k);
      if (!cs) continue;
      std::optional<double> k = op == OpKind::Mul ? exactTimes(x.k, *cs) : exactOver(x.k, *cs);
      if (k && *k != 0) return {x.node, *k};
    }
  }
  if (scaleOk && op == OpKind::Neg) return {in[0].node, -in[0].k};
  if ((op == OpKind::Slice || op == OpKind::Split || op == OpKind::Concat) && use("view-algebra"))
    if (auto r = runsCanon(op, attrs, in, out, t)) return *r;
  // A slice taking every element is its operand (view-algebra: the identity view).
  if (op == OpKind::Slice && in.size() == 1 && wholeSlice(attrs, ex_.type(in[0].node), t) && use("view-algebra"))
    return in[0];
  bool layoutLinear = ir::opInfo(op).category == OpCategory::Layout && in.size() == 1;
  bool viewOp = op == OpKind::Reshape || op == OpKind::Squeeze || op == OpKind::Unsqueeze ||
                op == OpKind::Transpose || op == OpKind::Expand;
  if (viewOp && in.size() == 1 && use("view-algebra")) {
    Val x = in[0];
    if (!scaleOk) x = {ex_.materialize(x), 1.0};
    if (auto n = viewNode(op, attrs, x.node, t)) return {*n, x.k};
  }
  if (scaleOk && (layoutLinear || op == OpKind::Identity || op == OpKind::ReduceSum || op == OpKind::ReduceMean)) {
    if (op == OpKind::Identity) return in[0];
    return {node({in[0].node}), in[0].k};
  }
  // A batched matmul operand broadcast on its batch dims is the operand
  // without those broadcasts: matmul broadcasts batch dims alike (an
  // explicit expand of a KV head meets the implicit one; view-algebra).
  std::vector<Val> inB = in;
  if (op == OpKind::MatMul && in.size() == 2 && use("view-algebra"))
    for (Val& v : inB) v.node = unbroadcastBatch(v.node);
  if (op == OpKind::MatMul && in.size() == 2 && !(inB[0].node == in[0].node && inB[1].node == in[1].node)) {
    std::vector<TensorType> bt{ex_.type(inB[0].node), ex_.type(inB[1].node)};
    auto got = inferGlobal(op, attrs, bt, 0);
    if (got && *got == t) return canon(op, attrs, inB, out, t, inRank);
  }
  if (scaleOk && op == OpKind::MatMul && in.size() == 2)
    if (auto k = exactTimes(in[0].k, in[1].k)) return {node({in[0].node, in[1].node}), *k};
  // Adds of one type: one n-ary sum of the terms, in a fixed order
  // (sum-algebra), so gradients accumulated in another order meet.
  if (op == OpKind::Add && in.size() == 2 && ex_.type(in[0].node) == t && ex_.type(in[1].node) == t &&
      use("sum-algebra")) {
    bool sameK = scaleOk && in[0].k == in[1].k;
    std::vector<int> terms;
    for (const Val& v : in) {
      int m = sameK ? v.node : ex_.materialize(v);
      if (auto it = sums_.find(m); it != sums_.end()) terms.insert(terms.end(), it->second.begin(), it->second.end());
      else terms.push_back(m);
    }
    std::sort(terms.begin(), terms.end());
    std::string key = "sum+";
    for (int k : terms) key += " " + std::to_string(k);
    int n = ex_.intern(key, t);
    sums_.emplace(n, std::move(terms));
    return {n, sameK ? in[0].k : 1.0};
  }
  if (scaleOk && (op == OpKind::Add || op == OpKind::Sub || op == OpKind::Concat) && !in.empty()) {
    bool same = std::all_of(in.begin(), in.end(), [&](const Val& v) { return v.k == in[0].k; });
    if (same) {
      std::vector<int> kids;
      for (const auto& v : in) kids.push_back(v.node);
      return {node(kids), in[0].k};
    }
  }
  std::vector<int> kids;
  for (const auto& v : in) kids.push_back(ex_.materialize(v));
  int n = node(kids);
  if (op == OpKind::Constant) {
    const ir::Tensor& value = ir::attrTensor(attrs, "value");
    if (value.numel() == 1) ex_.scalar(n) = value.getAsDouble(0);
  }
  return {n, 1.0};
}

std::vector<Folder::Piece> Folder::runsOf(int node, int64_t dim) {
  if (auto it = pieces_.find(node); it != pieces_.end() && it->second.dim == dim) return it->second.parts;
  const Dim& e = ex_.type(node).shape[size_t(dim)];
  return {Piece{node, 0, e.value()}};
}

std::vector<Folder::Piece> Folder::mergeRuns(const std::vector<Piece>& parts) {
  std::vector<Piece> merged;
  for (const Piece& p : parts) {
    if (p.b <= p.a) continue;
    if (!merged.empty() && merged.back().base == p.base && merged.back().b == p.a) merged.back().b = p.b;
    else merged.push_back(p);
  }
  return merged;
}

std::optional<Val> Folder::fromRuns(int64_t dim, std::vector<Piece> parts, const TensorType& t, double k) {
  std::vector<Piece> merged = mergeRuns(parts);
  if (merged.empty()) return std::nullopt;
  if (merged.size() == 1) {
    const Piece& p = merged[0];
    const TensorType& bt = ex_.type(p.base);
    if (p.a == 0 && bt.shape[size_t(dim)] == Dim(p.b) && bt == t) return Val{p.base, k};
  }
  std::string key = "runs " + std::to_string(dim);
  for (const Piece& p : merged) key += " " + std::to_string(p.base) + ":" + std::to_string(p.a) + ":" + std::to_string(p.b);
  int n = ex_.intern(key, t);
  pieces_.emplace(n, Runs{dim, std::move(merged)});
  return Val{n, k};
}

// Slices (one axis, step 1), splits and concats of concrete sizes along a
// dim, as runs of pieces (view-algebra: a slice of a concat of slices is
// the pieces it covers; adjacent pieces of one value concatenated are
// their union; all of a value is the value). Operands of different scale
// factors keep the plain form.
std::optional<Val> Folder::runsCanon(OpKind op, const ir::AttrMap& attrs, const std::vector<Val>& in, int out,
                                     const TensorType& t) {
  if (in.empty() || !ir::isConcrete(t.shape)) return std::nullopt;
  for (const Val& v : in)
    if (v.k != in[0].k || !ir::isConcrete(ex_.type(v.node).shape)) return std::nullopt;
  const TensorType& t0 = ex_.type(in[0].node);
  const int64_t rank = int64_t(t0.shape.size());
  auto axis = [&](int64_t a) -> std::optional<int64_t> {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
    return a;
  };
  auto cut = [&](int64_t d, int64_t a, int64_t b) -> std::optional<Val> {
    std::vector<Piece> parts, got;
    parts = runsOf(in[0].node, d);
    int64_t at = 0;
    for (const Piece& p : parts) {
      int64_t len = p.b - p.a, lo = std::max(a, at), hi = std::min(b, at + len);
      if (lo < hi) got.push_back(Piece{p.base, p.a + (lo - at), p.a + (hi - at)});
      at += len;
    }
    return fromRuns(d, std::move(got), t, in[0].k);
  };
  if (op == OpKind::Slice && in.size() == 1) {
    std::vector<int64_t> axes = attrs.count("axes") ? ir::attrInts(attrs, "axes") : std::vector<int64_t>{0};
    const auto& starts = ir::attrInts(attrs, "starts");
    const auto& ends = ir::attrInts(attrs, "ends");
    if (axes.size() != 1 || starts.size() != 1 || ends.size() != 1) return std::nullopt;
    if (attrs.count("steps"))
      for (int64_t st : ir::attrInts(attrs, "steps"))
        if (st != 1) return std::nullopt;
    auto d = axis(axes[0]);
    if (!d) return std::nullopt;
    int64_t size = t0.shape[size_t(*d)].value();
    auto clampAt = [&](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t(0), size); };
    int64_t a = clampAt(starts[0]), b = clampAt(ends[0]);
    if (b - a != t.shape[size_t(*d)].value()) return std::nullopt;
    return cut(*d, a, b);
  }
  if (op == OpKind::Split && in.size() == 1) {
    auto d = axis(ir::attrInt(attrs, "axis"));
    const auto& sizes = ir::attrInts(attrs, "sizes");
    if (!d || size_t(out) >= sizes.size()) return std::nullopt;
    int64_t a = 0;
    for (int o = 0; o < out; ++o) a += sizes[size_t(o)];
    return cut(*d, a, a + sizes[size_t(out)]);
  }
  if (op == OpKind::Concat) {
    auto d = axis(ir::attrInt(attrs, "axis"));
    if (!d) return std::nullopt;
    std::vector<Piece> parts;
    for (const Val& v : in) {
      if (int64_t(ex_.type(v.node).shape.size()) != rank) return std::nullopt;
      auto r = runsOf(v.node, *d);
      parts.insert(parts.end(), r.begin(), r.end());
    }
    return fromRuns(*d, std::move(parts), t, in[0].k);
  }
  return std::nullopt;
}

std::optional<int> Folder::zigBase(int node, int64_t dim, const Dim& local) {
  auto it = pieces_.find(node);
  if (it == pieces_.end() || it->second.dim != dim || !local.isConcrete() || local.value() % 2) return std::nullopt;
  const int base = it->second.parts[0].base;
  std::vector<Piece> want = mergeRuns(zigOrder(base, local.value() / 2));
  const std::vector<Piece>& got = it->second.parts;
  if (want.size() != got.size() || !(ex_.type(base) == ex_.type(node)) || !use("zigzag-chunks")) return std::nullopt;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i].base != want[i].base || got[i].a != want[i].a || got[i].b != want[i].b) return std::nullopt;
  return base;
}

void Folder::asZig(Fact& f, const TensorType& local) {
  if (f.lay != Lay::Split || f.zig || !f.plain() || f.innerDim >= 0 || (twoD_ && f.moreSplit(f.dim)) ||
      f.lay3 != Lay::Rep || decideOnly_ ||
      size_t(f.dim) >= local.shape.size())
    return;
  if (auto base = zigBase(f.v.node, f.dim, local.shape[size_t(f.dim)])) {
    f.zig = true;
    f.v.node = *base;
  }
}

std::vector<Folder::Piece> Folder::zigOrder(int base, int64_t c) const {
  std::vector<Piece> parts;
  for (int64_t i = 0; i < n_; ++i) {
    parts.push_back(Piece{base, i * c, (i + 1) * c});
    parts.push_back(Piece{base, (2 * n_ - 1 - i) * c, (2 * n_ - i) * c});
  }
  return parts;
}

std::optional<int> Folder::internView(View v, const TensorType& t) {
  normalizeView(v);
  const TensorType& bt = ex_.type(v.base);
  // the identity: the base itself
  std::vector<int64_t> flat;
  for (const auto& d : v.dims) flat.insert(flat.end(), d.begin(), d.end());
  bool ordered = true;
  for (size_t i = 0; i < flat.size(); ++i) ordered = ordered && flat[i] == int64_t(i);
  if (ordered && flat.size() == v.atoms.size() && bt == t) return v.base;
  int n = ex_.intern(viewKey(v), t);
  views_.emplace(n, std::move(v));
  return n;
}

std::optional<View> Folder::viewOf(int x) const {
  if (auto it = views_.find(x); it != views_.end()) return it->second;
  return identityView(x, ex_.type(x).shape);
}

// x without the broadcasts on its dims before the last two (a batched
// matmul operand: matmul broadcasts those dims alike), where x is a view
// with some there; else x.
int Folder::unbroadcastBatch(int x) {
  auto it = views_.find(x);
  if (it == views_.end()) return x;
  View v = it->second;
  TensorType t = ex_.type(x);
  bool any = false;
  for (size_t j = 0; j + 2 < v.dims.size(); ++j) {
    auto& d = v.dims[j];
    if (d.empty() || !std::all_of(d.begin(), d.end(), [](int64_t a) { return a < 0; })) continue;
    d.clear();
    t.shape[j] = Dim(1);
    any = true;
  }
  if (!any) return x;
  auto n = internView(v, t);
  return n ? *n : x;
}

std::optional<int> Folder::viewNode(OpKind op, const ir::AttrMap& attrs, int x, const TensorType& t) {
  const bool reshape = op == OpKind::Reshape || op == OpKind::Squeeze || op == OpKind::Unsqueeze;
  // A reshape of a reshape is one reshape (row-major both): of the value
  // the first one reshaped, where that one was not a view in normal form.
  if (auto it = flatOf_.find(x); reshape && it != flatOf_.end()) x = it->second;
  std::optional<View> v = viewOf(x);
  if (!v || ex_.type(x).dtype != t.dtype) return std::nullopt;
  const Shape& out = t.shape;
  if (op == OpKind::Transpose) {
    const auto& perm = ir::attrInts(attrs, "perm");
    if (perm.size() != v->dims.size()) return std::nullopt;
    std::vector<std::vector<int64_t>> dims;
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(v->dims.size())) return std::nullopt;
      dims.push_back(v->dims[size_t(p)]);
    }
    v->dims = std::move(dims);
  } else if (op == OpKind::Expand) {
    if (!expandView(*v, out)) return std::nullopt;
  } else if (!reshapeView(*v, out)) {
    // regroups runs no atom boundary matches: a reshape of x, named so
    int n = ex_.intern("reshape-of " + std::to_string(x), t);
    flatOf_.emplace(n, x);
    return n;
  }
  // the result's sizes are the op's
  for (size_t i = 0; i < v->dims.size(); ++i) {
    Dim have(1);
    for (int64_t a : v->dims[i]) have = have * atomSize(*v, a);
    if (i >= out.size() || have != out[i]) return std::nullopt;
  }
  if (v->dims.size() != out.size()) return std::nullopt;
  return internView(std::move(*v), t);
}

std::optional<TensorType> Folder::inferGlobal(OpKind op, const ir::AttrMap& attrs,
                                              const std::vector<TensorType>& ins, int out) {
  ir::InferCtx ctx{op, attrs, std::span<const TensorType>(ins), nullptr};
  auto r = ir::opInfo(op).infer(ctx);
  if (!r.ok() || size_t(out) >= r->size()) return std::nullopt;
  return (*r)[size_t(out)];
}

TensorType Folder::globalOf(const TensorType& local, const Fact& f, bool primaryOnly) const {
  TensorType t = local;
  for (size_t k = 0; k < nB_.size() && !primaryOnly; ++k)
    if (f.layB[k] == Lay::Split && size_t(f.dimB[k]) < t.shape.size())
      t.shape[size_t(f.dimB[k])] = Dim(nB_[k]) * t.shape[size_t(f.dimB[k])];
  if (!primaryOnly && f.lay3 == Lay::Split && size_t(f.dim3) < t.shape.size())
    t.shape[size_t(f.dim3)] = Dim(f.cnt3) * t.shape[size_t(f.dim3)];
  if (f.lay == Lay::RunSum) {
    t.shape[size_t(f.dim)] = Dim(n_ / f.inner) * t.shape[size_t(f.dim)];
    return t;
  }
  if (f.lay != Lay::Split) return t;
  if (!f.segs.empty()) {
    int64_t w = 0;
    for (const Seg& sg : f.segs) w += n_ / sg.inner * sg.w;
    t.shape[size_t(f.dim)] = Dim(w);
    return t;
  }
  t.shape[size_t(f.dim)] = Dim(n_ / f.inner) * t.shape[size_t(f.dim)];
  if (f.innerDim >= 0) t.shape[size_t(f.innerDim)] = Dim(f.inner) * t.shape[size_t(f.innerDim)];
  return t;
}


// Reshape of a tensor split on dim d: the factor groups of the reshape (runs
// of input and output dims with equal products) move independently, so the
// split survives when d leads its group (size-1 dims aside), on an output
// dim leading the same group, N times larger in S. Which one is ambiguous
// where the group leads with size-1 dims ([16, 128] -> [16, 1, 128]): every
// candidate is a true layout, and the caller keeps the one S computes.
// The groups of a reshape of concrete shapes: input dims [i0, i1) becoming
// output dims [j0, j1), equal products (size-1 dims joined greedily).
struct ReshapeGroup {
  size_t i0, i1, j0, j1;
};
// Dims may be symbolic monomials (ONNX's dynamic batch and seq, Dynamo's
// s0): a group's products are compared by divisibility then (batch * 16 ->
// batch, 16 is two groups; 4 against batch decides nothing: no groups).
std::vector<ReshapeGroup> reshapeGroups(const Shape& li, const Shape& lo) {
  // Whether prefix product p is a proper factor of q (nullopt: neither).
  auto smaller = [](const Dim& p, const Dim& q) -> std::optional<bool> {
    if (properFactor(p, q)) return true;
    if (properFactor(q, p)) return false;
    return std::nullopt;
  };
  std::vector<ReshapeGroup> gs;
  size_t i = 0, j = 0;
  while (i < li.size() || j < lo.size()) {
    size_t i0 = i, j0 = j;
    Dim pi = i < li.size() ? li[i++] : Dim(1), po = j < lo.size() ? lo[j++] : Dim(1);
    while (pi != po) {
      auto lt = smaller(pi, po);
      if (!lt) return {};
      if (*lt) {
        if (i >= li.size()) return {};
        pi = pi * li[i++];
      } else {
        if (j >= lo.size()) return {};
        po = po * lo[j++];
      }
    }
    gs.push_back({i0, i, j0, j});
  }
  return gs;
}

// The output dim a reshape maps the input dims {a, a + 1} to, when they are
// exactly one factor group of it and that group is one output dim.
std::optional<int64_t> mergedDim(const Shape& in, const Shape& out, int64_t a) {
  for (const ReshapeGroup& g : reshapeGroups(in, out))
    if (g.i0 == size_t(a)) {
      if (g.i1 != size_t(a) + 2 || g.j1 != g.j0 + 1) return std::nullopt;
      return int64_t(g.j0);
    }
  return std::nullopt;
}

// The output dim a reshape from shape a to b carries input dim d to whole:
// d a factor group of its own (the dims around it merged or split among
// themselves); nullopt where d is merged or split.
std::optional<int64_t> carriedWhole(const Shape& a, const Shape& b, int64_t d) {
  for (const ReshapeGroup& gr : reshapeGroups(a, b))
    if (int64_t(gr.i0) == d && gr.i1 == gr.i0 + 1 && gr.j1 == gr.j0 + 1) return int64_t(gr.j0);
  return std::nullopt;
}

// The output dim a reshape that only adds or drops unit dims carries input
// dim d (not a unit dim) to: the one with as many non-unit dims before it.
std::optional<int64_t> unitReshapeDim(const Shape& a, const Shape& b, int64_t d) {
  auto squeezed = [](const Shape& sh) {
    Shape o;
    for (const Dim& x : sh)
      if (x != Dim(1)) o.push_back(x);
    return o;
  };
  if (a[size_t(d)] == Dim(1) || squeezed(a) != squeezed(b)) return std::nullopt;
  int64_t k = 0;
  for (int64_t i = 0; i < d; ++i) k += a[size_t(i)] != Dim(1);
  for (size_t o = 0; o < b.size(); ++o)
    if (b[o] != Dim(1) && k-- == 0) return int64_t(o);
  return std::nullopt;
}

// A reshape of a split of dim d of the local input `in` (`blocks` blocks,
// 1 for a plain split) that lands the split on an output dim o as a
// blocked split, or out of blocks into a plain one; read on S's shapes (dim
// d n times larger in, o n times larger out, so size-1 dims do not blur
// the groups). In S the factor group of d is the mixed radix
// [outer, blocks, n, m, tail] (outer: the group's dims before d, m: the
// rank's piece of a block, tail: the group's dims after d), rank r fixing
// the n digit. An output dim o of the group with Q elements after it in
// the group holds rank r's elements as K blocks of its own exactly when Q
// divides m * tail (the n digit lies inside o) and o spans K whole
// [n, m, tail] runs: go[o] * Q = K * n * m * tail, the dims before o
// taking the rest (outer * blocks / K). This covers S's [b, heads, s, hd]
// -> [b*heads, s, hd] with the heads split (K = b), its inverse (blocks b
// split into [b, heads, ...], K = 1), and Megatron's
// [s, b*heads, hd] -> [s, b, heads*hd] (blocks b, K = 1). Returns every
// {o, K}, each a true layout (the caller keeps the one S computes), except
// a plain split staying plain (reshapeSplitDims' reading).
std::vector<std::pair<int64_t, Dim>> blockedReshape(const Shape& in, const Shape& out, int64_t d, int64_t n,
                                                    const Dim& blocks) {
  std::vector<std::pair<int64_t, Dim>> found;
  auto m = ir::exactDiv(in[size_t(d)], blocks);
  if (!m) return found;
  Shape gi = in;
  gi[size_t(d)] = Dim(n) * gi[size_t(d)];
  for (size_t o = 0; o < out.size(); ++o) {
    Shape go = out;
    go[o] = Dim(n) * go[o];
    for (const ReshapeGroup& g : reshapeGroups(gi, go)) {
      if (size_t(d) < g.i0 || size_t(d) >= g.i1 || o < g.j0 || o >= g.j1) continue;
      Dim outer(1), tail(1), before(1), after(1);
      for (size_t a = g.i0; a < size_t(d); ++a) outer = outer * gi[a];
      for (size_t a = size_t(d) + 1; a < g.i1; ++a) tail = tail * gi[a];
      for (size_t b = g.j0; b < o; ++b) before = before * go[b];
      for (size_t b = o + 1; b < g.j1; ++b) after = after * go[b];
      const Dim inner = *m * tail;
      if (!ir::exactDiv(inner, after)) continue;
      auto k = ir::exactDiv(go[o] * after, Dim(n) * inner);
      if (!k || before * *k != outer * blocks) continue;
      if (blocks != Dim(1) || *k != Dim(1)) found.emplace_back(int64_t(o), *k);
    }
  }
  return found;
}

std::vector<int64_t> reshapeSplitDims(const Shape& in, const Shape& out, int64_t d) {
  const Shape& li = in;
  const Shape& lo = out;
  for (const ReshapeGroup& g : reshapeGroups(li, lo)) {
    if (size_t(d) < g.i0 || size_t(d) >= g.i1) continue;
    for (size_t a = g.i0; a < size_t(d); ++a)
      if (li[a] != Dim(1)) return {};
    std::vector<int64_t> dims;
    for (size_t b = g.j0; b < g.j1 && b < lo.size(); ++b) {
      dims.push_back(int64_t(b));
      if (lo[b] != Dim(1)) break;
    }
    return dims;
  }
  return {};
}

// Every operand replicated or split, at least one split: the result is split
// where the op's schema says, or has no layout.
std::vector<Fact> Folder::splitRule(const ir::Node& n, const std::vector<Fact>& in) {
  const auto& vals = g_->values();
  auto local = [&](size_t i) -> const TensorType& { return vals[size_t(n.inputs[i])].type; };
  const TensorType& out0 = vals[size_t(n.outputs[0])].type;
  int64_t R = int64_t(out0.shape.size());
  std::optional<int64_t> od;
  int64_t concatBlocks = 0;  // a concat of splits along their dim: a blocked split
  std::vector<int64_t> candidates;  // several result dims, for reshapes
  ir::AttrMap attrs = n.attrs;
  auto cat = ir::opInfo(n.op).category;
  auto sizeAt = [](const TensorType& t, int64_t d) { return t.shape[size_t(d)]; };
  const ir::AttrMap& norm = interner_.attrMap(interner_.attrs(
      n.op, n.attrs, n.inputs.empty() ? 0 : int64_t(local(0).shape.size())));
  auto axesOf = [&]() { return reducedAxes(norm); };
  // Elementwise with numpy broadcasting: every split operand lands on the
  // same result dim at full size; replicated ones broadcast there.
  auto broadcastDim = [&]() -> std::optional<int64_t> {
    std::optional<int64_t> d;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].lay != Lay::Split) continue;
      int64_t o = in[i].dim + R - int64_t(local(i).shape.size());
      if ((d && *d != o) || sizeAt(local(i), in[i].dim) != sizeAt(out0, o)) return std::nullopt;
      d = o;
    }
    for (size_t i = 0; d && i < in.size(); ++i) {
      if (in[i].lay != Lay::Rep) continue;
      int64_t at = *d - (R - int64_t(local(i).shape.size()));
      if (at >= 0 && sizeAt(local(i), at) != Dim(1)) return std::nullopt;
    }
    return d;
  };
  if ((cat == OpCategory::Unary) && use("unary-over-split")) {
    od = in[0].dim;
  } else if (opHasTrait(n.op, OpTrait::Binary) && use("binary-over-split")) {  // the ops the lemmas' ?g ranges over
    od = broadcastDim();
  } else if (n.op == OpKind::Where && use("where-over-split")) {
    od = broadcastDim();
    // What the where lemmas cover: one branch split, the other a rank-0
    // value; the mask split alike, or replicated and of lower rank off the
    // split dim, or of the same rank with size 1 there.
    auto rank = [&](size_t i) { return int64_t(local(i).shape.size()); };
    bool ok = od && in.size() == 3 &&
              ((in[1].lay == Lay::Split && in[2].lay == Lay::Rep && rank(2) == 0) ||
               (in[2].lay == Lay::Split && in[1].lay == Lay::Rep && rank(1) == 0));
    if (ok && in[0].lay == Lay::Rep) {
      int64_t at = *od - (R - rank(0));
      ok = at < 0 || (rank(0) == R && sizeAt(local(0), at) == Dim(1));
    } else if (ok) {
      ok = in[0].lay == Lay::Split;
    }
    if (!ok) od = std::nullopt;
  } else if (n.op == OpKind::MatMul) {
    int64_t ra = int64_t(local(0).shape.size()), rb = int64_t(local(1).shape.size());
    if (ra >= 2 && rb >= 2) {
      const Fact &a = in[0], &b = in[1];
      // Batch dims: aligned from the right, rank R - 2.
      auto batchOk = [&](const Fact& split, int64_t rs, const Fact& other, size_t oi, int64_t ro) -> std::optional<int64_t> {
        int64_t o = split.dim + (R - rs);
        int64_t at = o - (R - ro);
        if (other.lay == Lay::Rep) {
          if (at >= 0 && sizeAt(local(oi), at) != Dim(1)) return std::nullopt;
          return o;
        }
        if (other.lay == Lay::Split && other.dim == at) return o;
        return std::nullopt;
      };
      if (a.lay == Lay::Split && a.dim == ra - 2 && b.lay == Lay::Rep && use("matmul-row-split")) od = R - 2;
      else if (b.lay == Lay::Split && b.dim == rb - 1 && a.lay == Lay::Rep && use("matmul-col-split")) od = R - 1;
      else if (a.lay == Lay::Split && a.dim < ra - 2 && use("matmul-batch-split")) od = batchOk(a, ra, b, 1, rb);
      else if (b.lay == Lay::Split && b.dim < rb - 2 && a.lay == Lay::Rep && use("matmul-batch-split"))
        od = batchOk(b, rb, a, 0, ra);
    }
  } else if ((n.op == OpKind::ReduceSum || n.op == OpKind::ReduceMean || n.op == OpKind::ReduceMax) &&
             use("reduce-over-other-split")) {
    od = afterReduce(n, axesOf(), in[0].dim);
  } else if ((n.op == OpKind::Softmax || n.op == OpKind::LogSoftmax) && use("softmax-over-split")) {
    int64_t axis = ir::attrInt(norm, "axis");
    if (axis == R - 1 && in[0].dim < R - 1) od = in[0].dim;
    else if (axis != in[0].dim && use("softmax-over-other-split")) od = in[0].dim;  // any axis but the split one
  } else if (n.op == OpKind::TopK && use("rows-over-other-split")) {
    // Each row along the axis on its own: both outputs (values, indices)
    // split where the input is, when that is not the axis.
    if (in[0].dim != ir::attrInt(norm, "axis")) od = in[0].dim;
  } else if (n.op == OpKind::OneHot && use("rows-over-other-split")) {
    // Elementwise on the indices with a new axis (counted in the output):
    // the split dim moves past it when the axis comes first.
    int64_t axis = ir::attrInt(norm, "axis");
    if (axis >= 0 && axis < R) od = in[0].dim < axis ? in[0].dim : in[0].dim + 1;
  } else if ((n.op == OpKind::LayerNorm || n.op == OpKind::RmsNorm) && use("norm-over-split")) {
    int64_t axis = ir::attrInt(norm, "axis");
    bool restRep = std::all_of(in.begin() + 1, in.end(), [](const Fact& f) { return f.lay == Lay::Rep; });
    if (axis == R - 1 && in[0].lay == Lay::Split && in[0].dim < axis && restRep) od = in[0].dim;
  } else if (n.op == OpKind::Transpose && use("permute-of-split")) {
    const auto& perm = ir::attrInts(norm, "perm");
    for (size_t o = 0; o < perm.size(); ++o)
      if (perm[o] == in[0].dim) od = int64_t(o);
  } else if (reshapeLike(n.op) && use("reshape-of-split")) {
    candidates = reshapeSplitDims(local(0).shape, out0.shape, in[0].dim);

    // Grouped on S's shapes as well: where the rank's own dims of size 1
    // read the groups otherwise (a rank's one KV head of one repeat,
    // merged in S into the heads), the dim that leads the split dim's
    // group in S, N times larger there, takes the pieces.
    // Runs (a KV head per run of ranks) are n / inner pieces in S.
    // S's grouping comes first: it is the one S's own reshape makes (where
    // S computes neither, the one kept).
    if (in[0].blocks == 1 && in[0].innerDim < 0 && n_ % in[0].inner == 0 && ir::isConcrete(out0.shape)) {
      Shape gi = globalOf(local(0), in[0]).shape;
      std::vector<int64_t> bySeq;
      for (int64_t o = 0; o < R; ++o) {
        Shape go = out0.shape;
        go[size_t(o)] = Dim(n_ / in[0].inner) * go[size_t(o)];
        auto inS = reshapeSplitDims(gi, go, in[0].dim);
        if (std::find(inS.begin(), inS.end(), o) != inS.end()) bySeq.push_back(o);
      }
      for (int64_t o : candidates)
        if (std::find(bySeq.begin(), bySeq.end(), o) == bySeq.end()) bySeq.push_back(o);
      candidates = bySeq;
    }
  } else if (n.op == OpKind::Expand && use("expand-of-split")) {
    int64_t o = in[0].dim + R - int64_t(local(0).shape.size());
    if (sizeAt(local(0), in[0].dim) == sizeAt(out0, o)) od = o;
  } else if ((n.op == OpKind::Slice || n.op == OpKind::Split) && use("slice-of-split")) {
    // Slice axes are not normalized by the interner: empty means the
    // first len(starts) dims, negative ones count from the end.
    std::vector<int64_t> axes;
    if (n.op == OpKind::Split) {
      axes.push_back(ir::attrInt(norm, "axis"));
    } else {
      axes = ir::attrInts(n.attrs, "axes");
      if (axes.empty())
        for (size_t a = 0; a < ir::attrInts(n.attrs, "starts").size(); ++a) axes.push_back(int64_t(a));
      for (auto& a : axes)
        if (a < 0) a += int64_t(local(0).shape.size());
    }
    if (std::find(axes.begin(), axes.end(), in[0].dim) == axes.end()) od = in[0].dim;
  } else if (n.op == OpKind::Concat && use("concat-of-splits")) {
    int64_t axis = ir::attrInt(norm, "axis");
    bool all = std::all_of(in.begin(), in.end(), [&](const Fact& f) { return f.lay == Lay::Split && f.dim == in[0].dim; });
    if (all && in[0].dim != axis) od = in[0].dim;
    // Along the split dim, plain splits of equal local size: rank r holds
    // its piece of each operand, [a_r | b_r | c_r], a blocked split of S's
    // concat (the backward of a fused QKV's split).
    const Dim& k0 = local(0).shape[size_t(in[0].dim)];
    bool blockable = all && in[0].dim == axis && in.size() > 1 && k0.isConcrete();
    for (size_t i = 0; blockable && i < in.size(); ++i)
      blockable = in[i].plain() && local(i).shape[size_t(axis)] == k0;
    if (blockable) {
      od = axis;
      concatBlocks = int64_t(in.size());
    }
  }
  if (od) candidates = {*od};
  // Blocked splits: every split operand blocked alike; a split op on the
  // blocked dim into its blocks yields plain splits of S's blocks. Two-level
  // splits: every split operand alike too, replicated within runs through
  // the ops above; an expand turns the runs' copies into pieces of the dim
  // it broadcasts, and a reshape merging the two split dims (the outer one
  // of size 1 on each rank) makes a plain split of the merged dim.
  int64_t blocks = 0, inner = 0;
  for (const auto& f : in)
    if (f.lay == Lay::Split) {
      if (f.innerDim >= 0 && !reshapeLike(n.op)) return {};
      if ((blocks && f.blocks != blocks) || (inner && f.inner != inner)) return {};
      blocks = f.blocks;
      inner = f.inner;
    }
  if (isBlocked(blocks) && n.op == OpKind::Expand) return {};
  // A reshape moving the split into or out of blocks (blockedReshape):
  // candidates of their own, with their blocks.
  std::vector<std::pair<int64_t, int64_t>> blockedCands;
  if (reshapeLike(n.op) && in[0].lay == Lay::Split && in[0].inner == 1 && in[0].innerDim < 0 &&
      use("reshape-of-split"))
    for (const auto& [o, k] : blockedReshape(local(0).shape, out0.shape, in[0].dim, n_, blockCount(in[0].blocks)))
      blockedCands.emplace_back(o, blocksId(k));
  if (isBlocked(blocks) && reshapeLike(n.op) && !blockedCands.empty()) {
    candidates.clear();  // out of blocks: the blocked dim does not carry over whole
  } else if (isBlocked(blocks) && reshapeLike(n.op)) {
    // the blocked dim carries over whole: only unit dims added or dropped,
    // or the dim a factor group of its own both locally and in S (other
    // dims merged or split around it)
    auto squeezed = [](const Shape& sh) {
      Shape o;
      for (const Dim& d : sh)
        if (d != Dim(1)) o.push_back(d);
      return o;
    };
    if (squeezed(local(0).shape) != squeezed(out0.shape)) {
      auto o = carriedWhole(local(0).shape, out0.shape, in[0].dim);
      if (!o) return {};
      Shape go = out0.shape;
      go[size_t(*o)] = Dim(n_) * go[size_t(*o)];
      if (carriedWhole(globalOf(local(0), in[0]).shape, go, in[0].dim) != o) return {};
      candidates = {*o};
    }
  }
  if (inner > 1 && isBlocked(blocks)) return {};
  if (concatBlocks) blocks = concatBlocks;
  if (n.op == OpKind::Split && in[0].lay == Lay::Split && ir::attrInt(norm, "axis") == in[0].dim) {
    const auto& sizes = ir::attrInts(n.attrs, "sizes");
    const Dim& whole = local(0).shape[size_t(in[0].dim)];
    if (int64_t(sizes.size()) != blocks || !whole.isConcrete() || whole.value() % blocks ||
        std::any_of(sizes.begin(), sizes.end(), [&](int64_t z) { return z != whole.value() / blocks; }) ||
        !use("slice-of-split"))
      return {};
    attrs["sizes"] = std::vector<int64_t>(size_t(blocks), n_ * (whole.value() / blocks));
    candidates = {in[0].dim};
    blocks = 1;
  }
  std::vector<int64_t> innerDims(candidates.size(), -1);
  if (reshapeLike(n.op) && in[0].innerDim >= 0) {
    // Grouped on S's shapes, where the two dims are not 1 and so not
    // ambiguous: the output dim their group becomes, N times larger in S.
    if (in[0].innerDim != in[0].dim + 1 || local(0).shape[size_t(in[0].dim)] != Dim(1) || !use("reshape-of-split"))
      return {};
    Shape gi = globalOf(local(0), in[0]).shape;
    candidates.clear();
    for (int64_t o = 0; o < R; ++o) {
      Shape go = out0.shape;
      go[size_t(o)] = Dim(n_) * go[size_t(o)];
      if (mergedDim(gi, go, in[0].dim) == o) candidates.push_back(o);
    }
    if (candidates.size() != 1) return {};
    innerDims = {-1};
  } else if (n.op == OpKind::Expand && inner > 1 && !candidates.empty()) {
    // A dim the expand may broadcast (size 1 in, even if 1 out) takes the
    // runs' pieces, `inner` times larger in S; or the runs keep copies.
    // Every candidate is a true layout; the one S computes is kept.
    // (Where S computes none of them, the runs keeping their copies stand:
    // below, after the loop.)
    const Shape& si = local(0).shape;
    int64_t d = candidates[0];
    candidates.clear();
    innerDims.clear();
    for (int64_t o = 0; o < R; ++o) {
      int64_t at = o - (R - int64_t(si.size()));
      if (o != d && (at < 0 || si[size_t(at)] == Dim(1))) {
        candidates.push_back(d);
        innerDims.push_back(o);
      }
    }
    candidates.push_back(d);
    innerDims.push_back(-1);
  }
  // The blocked reading comes last: where S computes none, the plain ones
  // stand as before (a unit dim on S's side blurs a merge too: [16, 2, h]
  // -> [32, 1, ...] is a reshape of S's shapes as well).
  std::vector<int64_t> candBlocks(candidates.size(), blocks);
  if (in[0].innerDim < 0)
    for (const auto& [o, k] : blockedCands) {
      candidates.push_back(o);
      candBlocks.push_back(k);
      innerDims.push_back(-1);
    }
  std::vector<TensorType> gin;
  std::vector<Val> vin;
  for (size_t i = 0; i < in.size(); ++i) {
    gin.push_back(globalOf(local(i), in[i]));
    vin.push_back(in[i].v);
  }
  int64_t inRank = int64_t(local(0).shape.size());
  std::vector<Fact> first, copiesOuts, sameValue, readBack, nearS;
  bool merged = reshapeLike(n.op) && in[0].innerDim >= 0;
  std::vector<int64_t> candInner(candidates.size(), merged ? 1 : inner);
  // A reshape cutting a plain split's dim (k on each member) into a unit
  // dim o and o + 1 of k (as many elements before o as before the dim, so
  // row-major order lands it there, locally and in S): where S cuts its
  // n * k into n / q rows of q * k, member i's piece lies in row i / q,
  // piece i % q of the row (runs of q members, the inner dim o + 1): S's
  // [b, heads, ...] -> [b, kv, rep, ...] with q members' heads on each KV
  // head. Every such q (and o, among unit dims) is a true layout; one is
  // kept only where S computes it.
  if (!decideOnly_ && !twoD_ && reshapeLike(n.op) && in[0].lay == Lay::Split && in[0].plain() && in[0].innerDim < 0 &&
      !in[0].zig && in[0].moreRep() && in[0].lay3 == Lay::Rep && use("reshape-of-split")) {
    const Shape& li = local(0).shape;
    const Shape& lo = out0.shape;
    const size_t d = size_t(in[0].dim);
    Dim before(1), at(1);
    for (size_t a = 0; a < d; ++a) before = before * li[a];
    for (size_t o = 0; o + 1 < lo.size(); at = at * lo[o++]) {
      if (at != before || lo[o] != Dim(1) || lo[o + 1] != li[d]) continue;
      for (int64_t q = 2; q < n_; ++q)
        if (n_ % q == 0) {
          candidates.push_back(int64_t(o));
          candBlocks.push_back(1);
          candInner.push_back(q);
          innerDims.push_back(int64_t(o) + 1);
        }
    }
  }
  if (decideOnly_) {
    if (candidates.empty()) return {};
    picks_ = candidates.size();  // transfer2 tries each in turn
    size_t k = std::min(pick_, candidates.size() - 1);
    Fact want{Lay::Split, candidates[k], {}, candBlocks[k], candInner[k], innerDims[k]};
    return std::vector<Fact>(n.outputs.size(), want);
  }
  // Dropping a unit inner dim is also the sum over it: each member's term
  // of its run's piece summed over the inner dim (torch's backward of a
  // repeat with one query head a rank: a view and a squeeze, no sum),
  // kept where S computes that sum.
  if (!decideOnly_ && !twoD_ && reshapeLike(n.op) && in[0].lay == Lay::Split && in[0].innerDim >= 0 &&
      in[0].inner > 1 && local(0).shape[size_t(in[0].innerDim)] == Dim(1) && ir::isConcrete(out0.shape)) {
    Shape dropped = local(0).shape;
    dropped.erase(dropped.begin() + std::ptrdiff_t(in[0].innerDim));
    if (dropped == out0.shape && use("run-partial-sums")) {
      const int64_t k = in[0].innerDim;
      ir::AttrMap red{{"axes", std::vector<int64_t>{k}}, {"keepdims", int64_t(1)}};
      TensorType kept = gin[0];
      kept.shape[size_t(k)] = Dim(1);
      Val summed = canon(OpKind::ReduceSum, red, {in[0].v}, 0, kept, inRank);
      Fact o{Lay::RunSum, in[0].dim < k ? in[0].dim : in[0].dim - 1, {}};
      o.inner = in[0].inner;
      Shape g = globalOf(out0, o).shape;
      o.v = canon(OpKind::Reshape, ir::AttrMap{{"shape", g}}, {summed}, 0, globalOf(out0, o), int64_t(kept.shape.size()));
      std::vector<Fact> outs(n.outputs.size(), o);
      if (n.outputs.size() == 1 && sComputes(outs)) return outs;
    }
  }
  for (size_t ci = 0; ci < candidates.size(); ++ci) {
    int64_t d = candidates[ci];
    Fact want{Lay::Split, d, {}, candBlocks[ci], candInner[ci], innerDims[ci]};
    if (reshapeLike(n.op) || n.op == OpKind::Expand) {
      Shape g = globalOf(out0, want).shape;
      attrs = n.attrs;
      if (n.op == OpKind::Reshape || n.op == OpKind::Expand) attrs["shape"] = g;
      else attrs = ir::AttrMap{{"shape", g}};
    }
    OpKind op = n.op == OpKind::Squeeze || n.op == OpKind::Unsqueeze ? OpKind::Reshape : n.op;
    std::vector<Fact> outs;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      TensorType expect = globalOf(vals[size_t(n.outputs[o])].type, want);
      auto got = inferGlobal(op, attrs, gin, int(o));
      if (!got || !(*got == expect)) break;
      want.v = canon(op, attrs, vin, int(o), expect, inRank);
      outs.push_back(want);
    }
    if (outs.size() != n.outputs.size()) continue;
    // A reshape the rank does in place of nothing (its local shape kept)
    // may read as S's own value again, another true layout: S's reshape
    // it stands for is preferred.
    if (candidates.size() > 1 && reshapeLike(n.op) && outs[0].v == in[0].v) {
      if (sameValue.empty()) sameValue = outs;
      continue;
    }
    // One that S computes before the operand (the reshape undoing one of
    // S's earlier reshapes: a batch of one rank's sequences flattened to
    // tokens, then given a unit dim) is true too, but S's reshape of the
    // operand, a later value, is preferred: the ops after it act on that.
    if (candidates.size() > 1 && reshapeLike(n.op) && readsBack(outs, in[0])) {
      if (readBack.empty()) readBack = outs;
      continue;
    }
    if (candidates.size() == 1 || sComputes(outs)) return outs;
    if (nearS.empty() && sComputesUpToUnitDims(outs)) nearS = outs;
    if (first.empty()) first = outs;
    // An expand S computes in none of its readings: the runs keep their
    // copies (an expand to its own shape before a batched matmul, which
    // takes the runs as its operand's repeat).
    if (n.op == OpKind::Expand && inner > 1 && innerDims[ci] < 0) copiesOuts = outs;
  }
  if (!sameValue.empty() && (first.empty() || sComputes(sameValue))) return sameValue;
  if (!readBack.empty()) return readBack;
  if (!nearS.empty()) return nearS;
  return copiesOuts.empty() ? first : copiesOuts;
}

// Operands summed over the group (and replicated ones): an op linear in
// the summed operand sums too. Also the two ways a split becomes a sum: a
// contraction over the split dim, and a sum or mean over it.
std::vector<Fact> Folder::sumRule(const ir::Node& n, const std::vector<Fact>& in) {
  const auto& vals = g_->values();
  auto local = [&](size_t i) -> const TensorType& { return vals[size_t(n.inputs[i])].type; };
  const TensorType& out0 = vals[size_t(n.outputs[0])].type;
  int64_t inRank = n.inputs.empty() ? 0 : int64_t(local(0).shape.size());
  auto count = [&](Lay l) { return std::count_if(in.begin(), in.end(), [&](const Fact& f) { return f.lay == l; }); };
  std::vector<TensorType> gin;
  std::vector<Val> vin;
  for (size_t i = 0; i < in.size(); ++i) {
    gin.push_back(globalOf(local(i), in[i]));
    vin.push_back(in[i].v);
  }
  auto single = [&](Val v) -> std::vector<Fact> {
    if (decideOnly_) return n.outputs.size() == 1 ? std::vector<Fact>{Fact{Lay::Sum, 0, {}}} : std::vector<Fact>{};
    auto got = inferGlobal(n.op, n.attrs, gin, 0);
    if (!got || !(*got == out0) || n.outputs.size() != 1) return {};
    return {Fact{Lay::Sum, 0, v}};
  };
  int64_t sums = count(Lay::Sum), splits = count(Lay::Split);
  if (std::any_of(in.begin(), in.end(), [](const Fact& f) { return f.lay == Lay::Split && f.inner != 1; })) return {};
  // A replicated operand added (or subtracted) on every member: the sum
  // over the group holds it n times, a value kept only where S computes it
  // (a bias pre-divided by the group size); else it stays the bug it
  // usually is (a bias added on every rank), for the diagnosis below.
  if (sums == 1 && splits == 0 && !decideOnly_ && in.size() == 2 && (n.op == OpKind::Add || n.op == OpKind::Sub) &&
      in[0].lay != in[1].lay && (in[0].lay == Lay::Rep || in[1].lay == Lay::Rep) && n.outputs.size() == 1 &&
      use("replicated-into-sum")) {
    size_t ri = in[0].lay == Lay::Rep ? 0 : 1;
    std::vector<Val> v2 = vin;
    if (auto k = exactTimes(v2[ri].k, double(n_))) {
      v2[ri].k = *k;
      auto got = inferGlobal(n.op, n.attrs, gin, 0);
      if (got && *got == out0) {
        std::vector<Fact> f{Fact{Lay::Sum, 0, canon(n.op, n.attrs, v2, 0, out0, inRank)}};
        if (sComputes(f)) return f;
      }
    }
  }
  if (sums > 0 && splits == 0 && use("linear-over-sum")) {
    bool linear = false;
    switch (n.op) {
      case OpKind::Add: case OpKind::Sub: linear = sums == 2; break;
      case OpKind::Mul: case OpKind::MatMul: linear = sums == 1; break;
      case OpKind::Div: linear = sums == 1 && in[0].lay == Lay::Sum; break;
      case OpKind::Neg: case OpKind::Identity: case OpKind::ReduceSum: case OpKind::ReduceMean:
      case OpKind::Transpose: case OpKind::Reshape: case OpKind::Squeeze: case OpKind::Unsqueeze:
        linear = true;
        break;
      case OpKind::Concat: linear = sums == int64_t(in.size()); break;
      case OpKind::Slice: case OpKind::Split: linear = true; break;
      default: break;
    }
    if (!linear) return {};
    if (n.op == OpKind::Split) {  // each piece of partial sums: partial sums of the piece
      std::vector<Fact> outs;
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        const TensorType& to = vals[size_t(n.outputs[o])].type;
        if (decideOnly_) {
          outs.push_back(Fact{Lay::Sum, 0, {}});
          continue;
        }
        auto got = inferGlobal(n.op, n.attrs, gin, int(o));
        if (!got || !(*got == to)) return {};
        outs.push_back(Fact{Lay::Sum, 0, canon(n.op, n.attrs, vin, int(o), to, inRank)});
      }
      return outs;
    }
    if (decideOnly_) return single({});
    return single(canon(n.op, n.attrs, vin, 0, out0, inRank));
  }
  if (sums > 0) return {};
  if (n.op == OpKind::MatMul && splits == 2 && use("matmul-contract-split")) {
    int64_t ra = int64_t(local(0).shape.size()), rb = int64_t(local(1).shape.size());
    if (ra >= 2 && rb >= 2 && in[0].dim == ra - 1 && in[1].dim == rb - 2 && in[0].blocks == in[1].blocks)
      return decideOnly_ ? single({}) : single(canon(n.op, n.attrs, vin, 0, out0, inRank));
  }
  if ((n.op == OpKind::ReduceSum || n.op == OpKind::ReduceMean) && splits == 1) {
    const auto& norm = interner_.attrMap(interner_.attrs(n.op, n.attrs, inRank));
    const auto& axes = std::get<std::vector<int64_t>>(norm.at("axes"));
    if (std::find(axes.begin(), axes.end(), in[0].dim) == axes.end()) return {};
    if (decideOnly_) {
      if (n.op == OpKind::ReduceSum && use("reduce-sum-over-split")) return single({});
      if (n.op == OpKind::ReduceMean && use("reduce-mean-over-split")) {
        decidedFactor_ *= double(n_);
        return single({});
      }
      return {};
    }
    Val v = canon(n.op, n.attrs, vin, 0, out0, inRank);
    if (n.op == OpKind::ReduceSum && use("reduce-sum-over-split")) return single(v);
    // The mean of N equal shards' means is the whole mean: sum_r = N * mean.
    if (n.op == OpKind::ReduceMean && use("reduce-mean-over-split"))
      if (auto k = exactTimes(v.k, double(n_))) return single({v.node, *k});
  }
  return {};
}

// Partial sums within runs of members (Lay::RunSum). Made by a sum over
// the inner dim of a two-level split (each member sums its own part of its
// run's piece: the backward of a KV head's repeat over its run's query
// heads), carried by ops linear in them that act alike along the dim
// (sums of each run's terms are the sum of the run), and ended by a sum
// over the dim or a contraction with a value the runs hold whole (the
// KV weight): sum over members i of A_i B_{i / q} is sum over runs j of
// (sum over run j of A_i) B_j, S's contraction, partial sums over the
// group. One group, no copies: transfer2 never sees one (decideOnly_).
std::vector<Fact> Folder::runSumRule(const ir::Node& n, const std::vector<Fact>& in) {
  if (decideOnly_ || twoD_ || n.outputs.size() != 1 || !use("run-partial-sums")) return {};
  for (const auto& f : in)
    if (f.zig || !f.moreRep() || f.lay3 != Lay::Rep || !f.segs.empty() || f.blocks != 1) return {};
  const auto& vals = g_->values();
  auto local = [&](size_t i) -> const TensorType& { return vals[size_t(n.inputs[i])].type; };
  const TensorType& out0 = vals[size_t(n.outputs[0])].type;
  const int64_t R = int64_t(out0.shape.size());
  const int64_t inRank = n.inputs.empty() ? 0 : int64_t(local(0).shape.size());
  std::vector<TensorType> gin;
  std::vector<Val> vin;
  for (size_t i = 0; i < in.size(); ++i) {
    gin.push_back(globalOf(local(i), in[i]));
    vin.push_back(in[i].v);
  }
  // The result laid out as `want`, where S's op on the operands' values
  // gives the type that layout says.
  auto make = [&](Fact want, OpKind op, const ir::AttrMap& attrs) -> std::vector<Fact> {
    TensorType expect = globalOf(out0, want);
    auto got = inferGlobal(op, attrs, gin, 0);
    if (!got || !(*got == expect)) return {};
    want.v = canon(op, attrs, vin, 0, expect, inRank);
    return {want};
  };
  auto runSum = [](int64_t dim, int64_t q) {
    Fact f{Lay::RunSum, dim, {}};
    f.inner = q;
    return f;
  };
  const ir::AttrMap& norm = interner_.attrMap(interner_.attrs(n.op, n.attrs, inRank));
  auto has = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  if (n.op == OpKind::ReduceSum && in.size() == 1 && in[0].lay == Lay::Split) {
    // member i sums its piece of the inner dim: partial sums of the run's piece
    const Fact& x = in[0];
    auto axes = reducedAxes(norm);
    auto od = afterReduce(n, axes, x.dim);
    if (x.inner < 2 || x.innerDim < 0 || !has(axes, x.innerDim) || !od) return {};
    return make(runSum(*od, x.inner), n.op, n.attrs);
  }
  int64_t q = 0, d = -1;
  size_t first = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].lay == Lay::RunSum) {
      if (q && in[i].inner != q) return {};
      if (!q) q = in[i].inner, d = in[i].dim, first = i;
    }
  auto count = [&](Lay l) { return std::count_if(in.begin(), in.end(), [&](const Fact& f) { return f.lay == l; }); };
  const int64_t runs = count(Lay::RunSum), reps = count(Lay::Rep);
  // where an operand's dim lands in an elementwise result (numpy broadcasting, aligned right)
  auto aligned = [&](size_t i) { return in[i].dim + R - int64_t(local(i).shape.size()); };
  switch (n.op) {
    case OpKind::Neg: case OpKind::Identity:
      return make(runSum(d, q), n.op, n.attrs);
    case OpKind::Transpose: {
      const auto& perm = ir::attrInts(norm, "perm");
      for (size_t o = 0; o < perm.size(); ++o)
        if (perm[o] == d) return make(runSum(int64_t(o), q), n.op, n.attrs);
      return {};
    }
    case OpKind::ReduceSum: {
      // over the dim too: every run's sum summed, partial sums over the group
      auto od = afterReduce(n, reducedAxes(norm), d);
      return make(od ? runSum(*od, q) : Fact{Lay::Sum, 0, {}}, n.op, n.attrs);
    }
    case OpKind::Slice:  // (a split has several outputs: refused above)
      if (has(sliceAxes(n, inRank), d)) return {};
      return make(runSum(d, q), n.op, n.attrs);
    case OpKind::Add: case OpKind::Sub:
      // each run's terms added to the other's: both partial sums alike
      if (runs != int64_t(in.size())) return {};
      for (size_t i = 0; i < in.size(); ++i)
        if (aligned(i) != aligned(first)) return {};
      return make(runSum(aligned(first), q), n.op, n.attrs);
    case OpKind::Mul: case OpKind::Div:
      // linear in the partial sums, the other factor the same on every member
      if (runs != 1 || reps != int64_t(in.size()) - 1 || (n.op == OpKind::Div && first != 0)) return {};
      return make(runSum(aligned(first), q), n.op, n.attrs);
    case OpKind::Concat: {
      if (ir::attrInt(norm, "axis") == d) return segConcat(n, in);  // [dq_r | dk_j | dv_j]
      if (runs != int64_t(in.size())) return {};
      for (const auto& f : in)
        if (f.dim != d) return {};
      return make(runSum(d, q), n.op, n.attrs);
    }
    case OpKind::Reshape: case OpKind::Squeeze: case OpKind::Unsqueeze: {
      // the runs' pieces as a plain split's over n / q members: the dim
      // leads its factor group, locally and in S
      if (in.size() != 1) return {};
      Shape gi = gin[0].shape;
      for (int64_t o : reshapeSplitDims(local(0).shape, out0.shape, d)) {
        Shape go = out0.shape;
        go[size_t(o)] = Dim(n_ / q) * go[size_t(o)];
        auto inS = reshapeSplitDims(gi, go, d);
        if (!has(inS, o)) continue;
        auto r = make(runSum(o, q), OpKind::Reshape, ir::AttrMap{{"shape", go}});
        if (!r.empty()) return r;
      }
      return {};
    }
    case OpKind::MatMul: {
      if (in.size() != 2) return {};
      const int64_t ra = int64_t(local(0).shape.size()), rb = int64_t(local(1).shape.size());
      if (ra < 2 || rb < 2 || runs != 1) return {};
      const Fact &a = in[0], &b = in[1];
      // contracted with the runs' whole pieces: partial sums over the group
      auto wholeRuns = [&](const Fact& f, int64_t dim) {
        return f.lay == Lay::Split && f.inner == q && f.innerDim < 0 && f.dim == dim;
      };
      if ((a.lay == Lay::RunSum && a.dim == ra - 1 && wholeRuns(b, rb - 2)) ||
          (b.lay == Lay::RunSum && b.dim == rb - 2 && wholeRuns(a, ra - 1))) {
        if (!use("matmul-contract-split")) return {};
        return make(Fact{Lay::Sum, 0, {}}, n.op, n.attrs);
      }
      if (reps != 1) return {};
      // rows, columns or a batch dim of the partial sums, times a value
      // every member holds: partial sums of that piece of the product
      if (a.lay == Lay::RunSum && a.dim == ra - 2) return make(runSum(R - 2, q), n.op, n.attrs);
      if (b.lay == Lay::RunSum && b.dim == rb - 1) return make(runSum(R - 1, q), n.op, n.attrs);
      if (a.lay == Lay::RunSum && a.dim < ra - 2) return make(runSum(a.dim + R - ra, q), n.op, n.attrs);
      if (b.lay == Lay::RunSum && b.dim < rb - 2) return make(runSum(b.dim + R - rb, q), n.op, n.attrs);
      return {};
    }
    default:
      return {};
  }
}

// Collectives over the folded group, matched by the collective-order module.
bool Folder::overFoldedGroup(const ir::Node& n) {
  ir::NodeId id = ir::NodeId(&n - g_->nodes().data());
  if (!in_.model) {
    // ir::uniformSpmd: the instance is the part of its group holding the rank
    auto inst = dist_.groupOf(ir::attrStr(n.attrs, "group"), members_[0]);
    return inst.ok() && *inst == members_;
  }
  const int* c = in_.model->collOf[size_t(members_[0])].find(id);
  if (!c) return false;
  const CollInstance& inst = in_.model->colls[size_t(*c)];
  return inst.members == members_ &&
         std::all_of(inst.nodes.begin(), inst.nodes.end(), [&](ir::NodeId x) { return x == id; });
}

// An all_reduce with max over the folded group of each member's reduce_max
// over its piece of a plain split, along the split dim alone: S's max over
// that dim (the n-ary form of reduce-max-own-over-concat[-drop]; max is
// associative and commutative). The members' reduce_max has no layout of
// its own (partial maxima are no layout), so nothing else may read it.
std::optional<Fact> Folder::maxOverSplit(const ir::Node& n) {
  if (twoD_ || n.op != OpKind::AllReduce || n.inputs.size() != 1 || n.outputs.size() != 1 ||
      ir::attrStr(n.attrs, "reduce") != "max")
    return std::nullopt;
  const ir::Value& in = g_->value(n.inputs[0]);
  if (in.kind != ir::ValueKind::NodeOutput) return std::nullopt;
  const ir::Node& p = g_->node(in.producer);
  if (p.op != OpKind::ReduceMax || p.inputs.size() != 1 || p.outputs.size() != 1) return std::nullopt;
  const Fact& x = (*facts_)[size_t(p.inputs[0])];
  if (x.lay != Lay::Split || !x.plain() || !x.moreRep() || x.lay3 != Lay::Rep) return std::nullopt;
  const int64_t inRank = int64_t(g_->value(p.inputs[0]).type.shape.size());
  const auto& norm = interner_.attrMap(interner_.attrs(p.op, p.attrs, inRank));
  const auto& axes = std::get<std::vector<int64_t>>(norm.at("axes"));
  if (axes != std::vector<int64_t>{x.dim} || !overFoldedGroup(n) || !use("max-over-split")) return std::nullopt;
  if (decideOnly_) return Fact{Lay::Rep, 0, {}};
  const TensorType& outT = g_->value(n.outputs[0]).type;  // a member's, S's too: the split dim is reduced
  return Fact{Lay::Rep, 0, canon(p.op, p.attrs, {x.v}, 0, outT, inRank)};
}

std::vector<Fact> Folder::collective(const ir::Node& n, const std::vector<Fact>& in, bool checkMembers) {
  if (checkMembers && !overFoldedGroup(n)) return {};
  const TensorType& inT = g_->value(n.inputs[0]).type;
  const TensorType& outT = g_->value(n.outputs[0]).type;
  int64_t rank = int64_t(inT.shape.size());
  auto dimAttr = [&](const char* name) -> std::optional<int64_t> {
    auto d = ir::normAxis(ir::attrInt(n.attrs, name), rank, name);
    if (!d.ok()) return std::nullopt;
    return *d;
  };
  const Fact& x = in[0];
  // (an all_to_all exchanging along one dim takes a split blocked once per
  // member, below)
  const bool exchangeBlocks = n.op == OpKind::AllToAll && x.lay == Lay::Split && x.blocks == n_ && x.inner == 1 &&
                              x.segs.empty() && n_ > 1;
  if (x.lay == Lay::Split && !x.plain() && !exchangeBlocks) return {};
  // Zigzag chunks: gathered along their dim, S's value with its pieces in
  // member order; no other collective takes them.
  if (x.zig) {
    auto d = dimAttr("dim");
    if (n.op != OpKind::AllGather || !d || *d != x.dim || !(outT == globalOf(inT, x, true)) ||
        !use("zigzag-chunks"))
      return {};
    if (decideOnly_) return {Fact{Lay::Rep, 0, {}}};
    const int64_t c = inT.shape[size_t(x.dim)].value() / 2;
    const TensorType t = ex_.type(x.v.node);
    auto v = fromRuns(x.dim, zigOrder(x.v.node, c), t, x.v.k);
    if (!v) return {};
    return {Fact{Lay::Rep, 0, *v}};
  }
  // What a sum or an average over the group of partial sums is.
  auto reduced = [&]() -> std::optional<Val> {
    const std::string& red = ir::attrStr(n.attrs, "reduce");
    if (x.lay != Lay::Sum || (red != "sum" && red != "avg")) return std::nullopt;
    if (red == "sum") return x.v;
    auto k = exactOver(x.v.k, double(n_));
    if (!k) return std::nullopt;
    return Val{x.v.node, *k};
  };
  switch (n.op) {
    case OpKind::AllReduce:
      if (auto v = reduced()) return {Fact{Lay::Rep, 0, *v}};
      // A split of one slot per member summed: the sum over the split dim,
      // kept (the gradient of a value expanded to every head, one head per
      // rank).
      if (x.lay == Lay::Split && inT.shape[size_t(x.dim)] == ir::Dim(1) && ir::attrStr(n.attrs, "reduce") == "sum" &&
          !decideOnly_ && use("all-reduce-of-unit-split")) {
        ir::AttrMap a{{"axes", std::vector<int64_t>{x.dim}}, {"keepdims", int64_t(1)}};
        TensorType whole = ex_.type(x.v.node);  // a copy: canon may grow the types
        whole.shape[size_t(x.dim)] = ir::Dim(1);
        return {Fact{Lay::Rep, 0, canon(OpKind::ReduceSum, a, {x.v}, 0, whole, rank)}};
      }
      return {};
    case OpKind::AllGather: {
      auto d = dimAttr("dim");
      if (d && x.lay == Lay::Split && x.dim == *d && outT == globalOf(inT, x, true)) return {Fact{Lay::Rep, 0, x.v}};
      return {};
    }
    case OpKind::ReduceScatter: {
      auto d = dimAttr("dim");
      auto v = reduced();
      if (!d || !v) return {};
      // The sum of a value holding a base's pieces in zigzag order:
      // each member's chunk is its pair of pieces of the base.
      if (auto base = decideOnly_ ? std::nullopt : zigBase(v->node, *d, outT.shape[size_t(*d)])) {
        Fact z{Lay::Split, *d, {*base, v->k}};
        z.zig = true;
        return {z};
      }
      Fact out{Lay::Split, *d, *v};
      if (!(globalOf(outT, out, true) == inT)) return {};
      return {out};
    }
    case OpKind::AllToAll: {
      auto s = dimAttr("split_dim"), c = dimAttr("concat_dim");
      if (!s || !c || x.lay != Lay::Split || x.zig || x.innerDim >= 0) return {};
      if (*s == *c && x.dim != *s && x.plain()) {
        // Pieces along another dim d exchanged along s: member j gets
        // chunk j along s of every member's piece, the pieces in member
        // order along s. With V's dim s as [N, a] and d as [N, p], member
        // j holds W[j] for W = V viewed [.., N(j), a, .., N(r), p, ..] with
        // r moved after j, then flattened: a plain split of s of that
        // reshape of V (an expert-parallel combine of expert-split rows).
        const Shape& g = globalOf(inT, x, true).shape;
        const Dim& ls = inT.shape[size_t(*s)];
        if (!(outT == inT) || !ls.isConcrete() || ls.value() % n_ || !use("all-to-all-exchange")) return {};
        const int64_t a = ls.value() / n_;
        Shape split;
        std::vector<int64_t> perm;
        Shape flat;
        for (int64_t i = 0; i < rank; ++i) {
          if (i == *s) {
            split.push_back(Dim(n_)), split.push_back(Dim(a));
          } else if (i == x.dim) {
            split.push_back(Dim(n_)), split.push_back(inT.shape[size_t(i)]);
          } else {
            split.push_back(g[size_t(i)]);
          }
        }
        auto at = [&](int64_t dim) {  // first factor of dim in `split`
          int64_t k = 0;
          for (int64_t i = 0; i < dim; ++i) k += (i == *s || i == x.dim) ? 2 : 1;
          return k;
        };
        for (int64_t i = 0; i < rank; ++i) {
          if (i == *s) {
            perm.insert(perm.end(), {at(i), at(x.dim), at(i) + 1});
            flat.push_back(Dim(n_ * n_ * a));
          } else if (i == x.dim) {
            perm.push_back(at(i) + 1);
            flat.push_back(inT.shape[size_t(i)]);
          } else {
            perm.push_back(at(i));
            flat.push_back(g[size_t(i)]);
          }
        }
        Fact out{Lay::Split, *s, {}};
        if (!(globalOf(outT, out, true).shape == flat)) return {};
        if (decideOnly_) return {out};
        TensorType ts{inT.dtype, split}, tp{inT.dtype, {}}, tf{inT.dtype, flat};
        for (int64_t q : perm) tp.shape.push_back(split[size_t(q)]);
        Val v = canon(OpKind::Reshape, ir::AttrMap{{"shape", split}}, {x.v}, 0, ts, rank);
        v = canon(OpKind::Transpose, ir::AttrMap{{"perm", perm}}, {v}, 0, tp, int64_t(split.size()));
        out.v = canon(OpKind::Reshape, ir::AttrMap{{"shape", flat}}, {v}, 0, tf, int64_t(split.size()));
        return {out};
      }
      if (x.dim != *c) return {};
      if (*s == *c) {
        // Exchanging pieces along the split dim itself (an expert-parallel
        // dispatch and combine): member i's chunk j goes to member j, at
        // place i. A plain split of V (member i holding V's piece i, N
        // chunks of k) becomes V blocked N times (member j holding chunk
        // j of every member's piece: piece j of each of V's N blocks), and
        // a split blocked N times with pieces of k becomes the plain split
        // (member j gathering block j's N pieces). Same V, same shapes.
        if (!(outT == inT) || !inT.shape[size_t(*s)].isConcrete() || inT.shape[size_t(*s)].value() % n_ ||
            !use("all-to-all-exchange"))
          return {};
        Fact out = x;
        out.blocks = x.blocks == 1 ? n_ : 1;
        if (!(globalOf(outT, out, true) == globalOf(inT, x, true))) return {};
        return {out};
      }
      if (!x.plain()) return {};
      Fact out{Lay::Split, *s, x.v};
      if (!(globalOf(outT, out, true) == globalOf(inT, x, true))) return {};
      return {out};
    }
    case OpKind::Broadcast:
      if (x.lay == Lay::Rep) return {x};
      return {};
    default:
      return {};
  }
}

// A recv in every member of a class from the same position of one other
// class: the value sent there, with its layout.
std::vector<Fact> Folder::received(const ir::Node& n) {
  if (!in_.model) return {};  // ir::uniformSpmd: no send or recv
  const DistModel& m = *in_.model;
  ir::NodeId id = ir::NodeId(&n - g_->nodes().data());
  std::optional<std::pair<int64_t, ir::NodeId>> from;  // (class, send node)
  for (size_t i = 0; i < members_.size(); ++i) {
    const auto& rf = m.recvFrom[size_t(members_[i])];
    auto it = rf.find(id);
    if (it == rf.end()) return {};
    auto [src, send] = it->second;
    auto [cls, pos] = where_[size_t(src)];
    if (cls < 0 || pos != int64_t(i) || (from && (*from != std::make_pair(cls, send)))) return {};
    from = std::make_pair(cls, send);
  }
  if (!from) return {};
  const ir::Graph& sg = *graphs_[size_t(from->first)];
  const Fact& f = allFacts_[size_t(from->first)][size_t(sg.node(from->second).inputs[0])];
  if (f.lay == Lay::None) return {};
  return {f};
}

// A uniform constant every member holds is each member's piece of the
// uniform constant of S's shape, in any layout (uniform-constants): it
// takes the layout of the op's first split operand where it has that
// operand's extents along every dim the layout cuts (zeros padded around
// a sharded gradient: slice_backward's form, KV heads on runs of ranks).
// Elementwise ops and concat only: elsewhere (a matmul) the same index
// names different dims of the two operands, and a reading that no rule
// takes would replace one that some rule does.
void Folder::uniformAsPartner(const ir::Node& n, std::vector<Fact>& in) {
  if (in.size() < 2) return;
  // (a uniform value is every member's piece in any layout: the partner
  // is the first split operand that is not one)
  auto uniformPiece = [&](const Fact& f) {
    return (f.lay == Lay::Rep || (f.lay == Lay::Split && f.plain() && f.innerDim < 0 && !f.zig)) && f.moreRep() &&
           f.lay3 == Lay::Rep && ex_.uniform(f.v.node);
  };
  size_t pi = 0;
  while (pi < in.size() && ((in[pi].lay != Lay::Split && in[pi].lay != Lay::RunSum) || uniformPiece(in[pi]))) ++pi;
  // else partial sums over the group (one plain group): zeros are every
  // member's term of S's zeros
  if (pi == in.size()) {
    for (pi = 0; pi < in.size(); ++pi)
      if (in[pi].lay == Lay::Sum && in[pi].moreRep() && in[pi].lay3 == Lay::Rep) break;
  }
  if (pi == in.size()) return;
  const Fact p = in[pi];
  if (p.lay3 == Lay::Sum || std::count(p.layB.begin(), p.layB.end(), Lay::Sum)) return;
  const TensorType& tp = g_->value(n.inputs[pi]).type;
  std::vector<int64_t> cut;
  if (p.lay != Lay::Sum) cut.push_back(p.dim);
  if (p.innerDim >= 0) cut.push_back(p.innerDim);
  for (size_t k = 0; k < nB_.size(); ++k)
    if (p.layB[k] == Lay::Split) cut.push_back(p.dimB[k]);
  if (p.lay3 == Lay::Split) cut.push_back(p.dim3);
  for (size_t j = 0; j < in.size(); ++j) {
    Fact& f = in[j];
    if (j == pi || !uniformPiece(f)) continue;
    auto c = exactTimes(*ex_.uniform(f.v.node), f.v.k);
    const TensorType& tj = g_->value(n.inputs[j]).type;
    if (!c || tj.shape.size() != tp.shape.size() || !ir::isConcrete(tj.shape)) continue;
    // (zeros alone are partial sums of zeros: q copies of c sum to q c)
    if ((p.lay == Lay::RunSum || p.lay == Lay::Sum) && *c != 0.0) continue;
    if (!std::all_of(cut.begin(), cut.end(), [&](int64_t d) { return tj.shape[size_t(d)] == tp.shape[size_t(d)]; }))
      continue;
    Fact g = p;
    g.fam3 = -1, g.terms3.clear();
    const TensorType gt = globalOf(tj, g);
    if (!ir::isConcrete(gt.shape) || !use("uniform-constants")) continue;
    g.v = {ex_.uniformNode(*c, gt), 1.0};
    f = g;
  }
}

std::vector<Fact> Folder::transfer(const ir::Node& n) {
  if (n.op == OpKind::Recv) return received(n);
  if (n.op == OpKind::Send) return {};
  std::vector<Fact> in;
  for (ir::ValueId v : n.inputs) in.push_back((*facts_)[size_t(v)]);
  if (n.op == OpKind::AllReduce && in.size() == 1 && in[0].lay == Lay::None) {
    if (auto f = maxOverSplit(n)) return {*f};
  }
  if (std::any_of(in.begin(), in.end(), [](const Fact& f) { return f.lay == Lay::None; })) return {};
  auto cat = ir::opInfo(n.op).category;
  if (cat == OpCategory::Random) return {};
  // (ops acting position by position on their operands: the same dims of
  // two operands are one dim there)
  if (cat == OpCategory::Binary || cat == OpCategory::Compare || cat == OpCategory::Ternary || n.op == OpKind::Concat)
    uniformAsPartner(n, in);
  // A collective whose every instance on the class's ranks has one member
  // (a tp group of size 1) is the identity (ir/collectives.h).
  if (cat == OpCategory::Collective && oneMemberEach(n) &&
      g_->value(n.inputs[0]).type == g_->value(n.outputs[0]).type)
    return in;
  // A slice taking every element of its operand is the operand, whatever
  // its layout (view-algebra).
  if (n.op == OpKind::Slice && n.inputs.size() == 1 && n.outputs.size() == 1 &&
      wholeSlice(n.attrs, g_->value(n.inputs[0]).type, g_->value(n.outputs[0]).type) && use("view-algebra"))
    return in;
  if (n.op == OpKind::Slice && bySlice_.count(cls_) && bySlice_.at(cls_).count(ir::NodeId(&n - g_->nodes().data()))) {
    auto f = sliceByRank(n, in[0]);
    if (!f) return {};
    return {*f};
  }
  bool copies = std::any_of(in.begin(), in.end(), [](const Fact& f) { return f.lay3 != Lay::Rep; });
  if (std::any_of(in.begin(), in.end(), [](const Fact& f) { return !f.segs.empty(); })) {
    if (twoD_ || copies) return {};
    return segRule(n, in);
  }
  if (cat == OpCategory::Collective) {
    auto outs = twoD_ ? collective2(n, in) : collective(n, in);
    // A collective acts on the members' values within one copy: what they
    // combine into, and so the layout over the copies, carries over.
    if (copies && in.size() != 1) return {};
    for (auto& o : outs) o.copiesAs(in[0]);
    return outs;
  }
  if (copies) {
    if (auto acc = accumulated(n, in)) return {*acc};
    return transfer2(n, in);
  }
  // A replicated value's expand: which of its true layouts S computes is
  // decided there (with one group as with two).
  if (twoD_ || (n.op == OpKind::Expand && in.size() == 1 && in[0].lay == Lay::Rep)) return transfer2(n, in);
  return zigGate(n, in, rules(n, in));
}

// Zigzag chunks through an op: every split operand is the zigzag one (the
// pieces of two orders never meet), and the op acts alike on every
// position of its dim, so it commutes with taking the member's two pieces:
// elementwise ops, norms, reductions and softmax over other dims (over the
// dim: a sum, which any partition gives), matmul rows or contraction, and
// layout ops moving the dim whole (transpose; reshapes where it leads its
// factor group, the only ones the split rule reads) or cutting other dims.
std::vector<Fact> Folder::zigGate(const ir::Node& n, const std::vector<Fact>& in, std::vector<Fact> outs) {
  if (std::none_of(in.begin(), in.end(), [](const Fact& f) { return f.zig; })) return outs;
  if (outs.empty() || !use("zigzag-chunks")) return {};
  int64_t dim = -1;
  for (const Fact& f : in) {
    if (f.lay != Lay::Split) continue;
    if (!f.zig || !f.plain() || f.innerDim >= 0) return {};
    dim = f.dim;
  }
  const int64_t rank = int64_t(g_->value(n.inputs[0]).type.shape.size());
  auto axisIs = [&](const char* name, int64_t d) {
    if (!n.attrs.count(name)) return false;
    auto a = ir::normAxis(ir::attrInt(n.attrs, name), rank, name);
    return a.ok() && *a == d;
  };
  bool alike = actsAlikeAlongDims(n.op) || n.op == OpKind::Transpose || reshapeLike(n.op) ||
               n.op == OpKind::Expand || n.op == OpKind::OneHot;
  if (n.op == OpKind::TopK || n.op == OpKind::Split || n.op == OpKind::Concat)
    alike = !axisIs("axis", dim);
  if (n.op == OpKind::Slice) {
    auto axes = sliceAxes(n, rank);
    alike = std::find(axes.begin(), axes.end(), dim) == axes.end();
  }
  if (!alike) return {};
  for (Fact& o : outs) {
    if (o.lay != Lay::Split) continue;
    if (!o.plain() || o.innerDim >= 0) return {};
    o.zig = true;
  }
  return outs;
}

// A slice whose bounds differ between the members, of a value every member
// holds whole: member i's piece along one axis, of equal width k, at
// (i / q) k, the pieces tiling the axis (q consecutive members holding
// each: KV heads shared by the ranks of their query heads) is a split of
// the value, by the slice's own semantics (slice-by-rank).
std::optional<Fact> Folder::sliceByRank(const ir::Node& n, const Fact& x) {
  if (x.lay != Lay::Rep || !x.plain() || n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
  const TensorType& whole = g_->value(n.inputs[0]).type;
  const TensorType& out = g_->value(n.outputs[0]).type;
  const int64_t rank = int64_t(whole.shape.size());
  ir::NodeId id = ir::NodeId(&n - g_->nodes().data());
  std::optional<int64_t> axis;
  std::vector<std::pair<int64_t, int64_t>> piece;  // per member: [start, end) on the axis
  // Two groups: members row-major over the grid, group A's position
  // fastest; the piece must depend on that position alone.
  std::vector<std::pair<int64_t, int64_t>> all;
  for (int64_t r : members_) {
    const ir::AttrMap& a = dist_.rank(r).node(id).attrs;
    const auto& starts = ir::attrInts(a, "starts");
    const auto& ends = ir::attrInts(a, "ends");
    std::vector<int64_t> axes = a.count("axes") ? ir::attrInts(a, "axes") : std::vector<int64_t>{};
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
    if (a.count("steps"))
      for (int64_t st : ir::attrInts(a, "steps"))
        if (st != 1) return std::nullopt;
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1) return std::nullopt;
    int64_t ax = axes[0] < 0 ? axes[0] + rank : axes[0];
    if (ax < 0 || ax >= rank || !whole.shape[size_t(ax)].isConcrete() || (axis && *axis != ax)) return std::nullopt;
    axis = ax;
    int64_t size = whole.shape[size_t(ax)].value();
    auto clampAt = [&](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t(0), size); };
    all.emplace_back(clampAt(starts[0]), clampAt(ends[0]));
  }
  if (twoD_) {
    if (int64_t(all.size()) != n_ * nAllB()) return std::nullopt;
    for (size_t p = 0; p < all.size(); ++p)
      if (all[p] != all[p % size_t(n_)]) return sliceByRankB(n, x, all, *axis);
    all.resize(size_t(n_));
  }
  piece = all;
  if (!axis || piece.empty()) return std::nullopt;
  int64_t k = piece[0].second - piece[0].first, size = whole.shape[size_t(*axis)].value();
  int64_t inner = n_;
  for (size_t i = 1; i < piece.size(); ++i)
    if (piece[i].first != piece[0].first) {
      inner = int64_t(i);
      break;
    }
  if (k <= 0 || inner >= n_ || n_ % inner || (n_ / inner) * k != size) return std::nullopt;
  for (size_t i = 0; i < piece.size(); ++i)
    if (piece[i].first != int64_t(i) / inner * k || piece[i].second - piece[i].first != k) return std::nullopt;
  Fact f{Lay::Split, *axis, x.v};
  f.inner = inner;
  if (!(globalOf(out, f) == whole)) return std::nullopt;
  // The layouts over the other groups and over the copies are about the
  // value each member slices (its pieces along the axis make it whole
  // again): they carry over. Another group's split of the axis holds the
  // member's value as its piece; the slices cut that piece, nested inside
  // it as the first group's pieces always are (sequence parallel's chunk
  // of a context parallel chunk). The copies' split of the axis is not
  // read so.
  if ((x.lay3 == Lay::Split && x.dim3 == *axis) || (inner > 1 && x.moreSplit(*axis)) || !use("slice-by-rank"))
    return std::nullopt;
  f.moreAs(x);
  f.copiesAs(x);
  if (!nestedAllowed(f)) return std::nullopt;
  return f;
}

// The same over a further group B_k: the pieces depend on the member's
// B_k position alone (a context parallel rank's rows of the causal mask,
// with tensor parallelism as group A), each position's piece of equal
// width at its position times the width, tiling the axis: a split over
// B_k, replicated over A as the value is (slice-by-rank). `all`: the
// members' [start, end), A position fastest.
std::optional<Fact> Folder::sliceByRankB(const ir::Node& n, const Fact& x,
                                         const std::vector<std::pair<int64_t, int64_t>>& all, int64_t axis) {
  const TensorType& whole = g_->value(n.inputs[0]).type;
  const TensorType& out = g_->value(n.outputs[0]).type;
  const int64_t size = whole.shape[size_t(axis)].value();
  for (size_t k = 0; k < nB_.size(); ++k) {
    auto at = [&](int64_t b) { return all[size_t(b * strideB_[k] * n_)]; };  // A and the other groups at 0
    bool alone = true;
    for (size_t p = 0; p < all.size() && alone; ++p)
      alone = all[p] == at(int64_t(p) / n_ / strideB_[k] % nB_[k]);
    if (!alone) continue;
    const int64_t w = at(0).second - at(0).first;
    bool tiles = w > 0 && nB_[k] * w == size;
    for (int64_t b = 0; b < nB_[k] && tiles; ++b) tiles = at(b).first == b * w && at(b).second == (b + 1) * w;
    if (!tiles || x.layB[k] != Lay::Rep || x.moreSplit(axis) || (x.lay3 == Lay::Split && x.dim3 == axis) ||
        !use("slice-by-rank"))
      return std::nullopt;
    Fact f = x;
    f.layB[k] = Lay::Split;
    f.dimB[k] = axis;
    f.zigB[k] = false;
    if (!(globalOf(out, f) == whole) || !nestedAllowed(f)) return std::nullopt;
    return f;
  }
  return std::nullopt;
}

// Gradients added up across micro-batches: two values holding disjoint
// terms of the same family of the same S value, in the same group layout
// (which combines the members' values linearly), hold the terms of both;
// all of them, S's value (sum-of-terms).
std::optional<Fact> Folder::accumulated(const ir::Node& n, const std::vector<Fact>& in) {
  if (n.op != OpKind::Add || in.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  const Fact &a = in[0], &b = in[1];
  if (a.lay3 != Lay::Sum || b.lay3 != Lay::Sum || !(a.v == b.v) || a.fam3 != b.fam3 || a.cnt3 != b.cnt3 ||
      !a.sameGroupLayout(b) || a.terms3.size() != size_t(a.cnt3) || b.terms3.size() != size_t(a.cnt3))
    return std::nullopt;
  const auto& vals = g_->values();
  const TensorType& t = vals[size_t(n.outputs[0])].type;
  if (!(vals[size_t(n.inputs[0])].type == t) || !(vals[size_t(n.inputs[1])].type == t)) return std::nullopt;
  Fact out = a;
  for (size_t m = 0; m < out.terms3.size(); ++m) {
    if (a.terms3[m] && b.terms3[m]) return std::nullopt;
    out.terms3[m] = a.terms3[m] || b.terms3[m];
  }
  if (!use("sum-of-terms")) return std::nullopt;
  if (std::all_of(out.terms3.begin(), out.terms3.end(), [](bool x) { return x; })) out.whole();
  return out;
}

std::vector<Fact> Folder::rules(const ir::Node& n, const std::vector<Fact>& in) {
  bool allRep = std::all_of(in.begin(), in.end(), [](const Fact& f) { return f.lay == Lay::Rep; });
  if (allRep) {
    // Every rank computes the same op on the same values.
    std::vector<Val> vin;
    for (const auto& f : in) vin.push_back(f.v);
    int64_t inRank = n.inputs.empty() ? 0 : int64_t(g_->value(n.inputs[0]).type.shape.size());
    std::vector<Fact> outs;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      outs.push_back(Fact{Lay::Rep, 0,
                          decideOnly_ ? Val{} : canon(n.op, n.attrs, vin, int(o), g_->value(n.outputs[o]).type, inRank)});
    return outs;
  }
  if (std::any_of(in.begin(), in.end(), [](const Fact& f) { return f.lay == Lay::RunSum; }) ||
      (n.op == OpKind::ReduceSum && in.size() == 1 && in[0].lay == Lay::Split && in[0].innerDim >= 0))
    return runSumRule(n, in);
  bool anySum = std::any_of(in.begin(), in.end(), [](const Fact& f) { return f.lay == Lay::Sum; });
  if (!anySum) {
    auto s = splitRule(n, in);
    if (!s.empty()) return s;
    // A batched matmul of a plain split and a split shared by runs (query
    // heads against the KV head their run shares): the runs' operand as a
    // plain split of its repeat, as S repeats KV heads.
    if (n.op == OpKind::MatMul && in.size() == 2 && !decideOnly_ && !twoD_ && in[0].lay == Lay::Split &&
        in[1].lay == Lay::Split && (in[0].inner == 1) != (in[1].inner == 1)) {
      std::vector<Fact> plain = in;
      size_t runs = in[0].inner == 1 ? 1 : 0;
      if (auto f = runsAsRepeat(in[runs], g_->value(n.inputs[runs]).type)) {
        plain[runs] = *f;
        auto r = splitRule(n, plain);
        if (!r.empty()) return r;
      }
    }
  }
  auto r = sumRule(n, in);
  // operands each split its own way along the concat's dim: segments
  if (r.empty() && n.op == OpKind::Concat) r = segConcat(n, in);
  return r;
}

std::optional<Fact> Folder::runsAsRepeat(const Fact& f, const TensorType& local) {
  if (f.lay != Lay::Split || f.inner <= 1 || f.innerDim >= 0 || f.blocks != 1 || !f.moreRep() ||
      f.lay3 != Lay::Rep || size_t(f.dim) >= local.shape.size() || !local.shape[size_t(f.dim)].isConcrete())
    return std::nullopt;
  TensorType g = globalOf(local, f);
  if (!(ex_.type(f.v.node) == g)) return std::nullopt;
  const Shape& shape = g.shape;
  const size_t d = size_t(f.dim);
  const int64_t q = f.inner, p = n_ / q, k = local.shape[d].value();
  std::optional<View> v = viewOf(f.v.node);
  if (!v) return std::nullopt;
  auto with = [&](std::vector<int64_t> mid) {
    Shape s2(shape.begin(), shape.begin() + std::ptrdiff_t(d));
    s2.insert(s2.end(), mid.begin(), mid.end());
    s2.insert(s2.end(), shape.begin() + std::ptrdiff_t(d) + 1, shape.end());
    return s2;
  };
  // E's dim as [p, k], a unit dim after p widened to q, then merged back
  if (!reshapeView(*v, with({p, k})) || !reshapeView(*v, with({p, 1, k})) || !expandView(*v, with({p, q, k})) ||
      !reshapeView(*v, with({p * q * k})))
    return std::nullopt;
  TensorType t = g;
  t.shape[d] = Dim(p * q * k);
  if (!use("runs-as-repeat") || !use("view-algebra")) return std::nullopt;
  auto node = internView(std::move(*v), t);
  if (!node) return std::nullopt;
  Fact out{Lay::Split, f.dim, {*node, f.v.k}};
  if (!(globalOf(local, out) == t)) return std::nullopt;
  return out;
}

// A D input's layout from its relation on every member: the same S tensor
// everywhere, or member i holding the i-th of N even slices of one.
// Slices of an S tensor that tile a whole dim, alone or concatenated in
// order along it, are that tensor (a tp = 1 shard, a fused QKV's blocks).
RelPtr Folder::wholeIfTiles(const RelPtr& r) const {
  std::vector<const Rel*> parts;
  if (r->op == RelOp::Slice) parts = {r.get()};
  else if (r->op == RelOp::Concat)
    for (const auto& a : r->args) parts.push_back(a.get());
  if (parts.empty()) return r;
  int64_t dim = -1, at = 0;
  std::string name;
  for (const Rel* p : parts) {  // one-dim boxes of one S tensor, in order from 0
    auto box = sliceBox(*p, seq_);
    bool tiles = box && box->second.size() == 1 && (name.empty() || box->first == name) &&
                 (dim < 0 || box->second.begin()->first == dim) && box->second.begin()->second.first == at;
    if (!tiles) return r;
    name = box->first, dim = box->second.begin()->first, at = box->second.begin()->second.second;
  }
  const Shape& sh = seq_.value(*seq_.findValue(name)).type.shape;
  if (r->op == RelOp::Concat) {
    auto cd = ir::normAxis(r->dim, int64_t(sh.size()), "concat");
    if (!cd.ok() || *cd != dim) return r;
  }
  if (sh[size_t(dim)].isConcrete() && sh[size_t(dim)].value() == at) return Rel::seq(name);
  return r;
}

namespace {
bool dependsOnRank(const IntExpr& e) {
  if (e.kind == IntExpr::Kind::Var || e.kind == IntExpr::Kind::Index) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const IntExpr& a) { return dependsOnRank(a); });
}
bool dependsOnRank(const Rel& r) {
  if (r.op == RelOp::Dist || r.op == RelOp::For) return true;
  if (r.op == RelOp::Slice && (dependsOnRank(r.start) || dependsOnRank(r.end))) return true;
  return std::any_of(r.args.begin(), r.args.end(), [](const RelPtr& a) { return dependsOnRank(*a); });
}
}  // namespace

// A D input's layout read from its relation template (checkInputTemplates:
// one term per rank, all well-typed): a term that does not depend on the
// rank is held by every member (replicated when it is a whole S tensor);
// slice(seq.X, d, k*idx(r, G), k*idx(r, G) + k) over the folded group G,
// N*k the extent of dim d, is member i's i-th piece (an even split). Other
// terms are read per rank (needsRanks).
std::optional<Fact> Folder::templateFact(const InputRelation& t, const TensorType& local, const std::string& group) {
  if (!dependsOnRank(*t.expr)) {
    RankSpace ranks = RankSpace::of(dist_);
    auto c = templateAt(t, ranks, members_[0]);
    if (!c.ok()) return std::nullopt;
    RelPtr e = wholeIfTiles(*c);
    if (e->op != RelOp::Seq) return std::nullopt;
    auto v = seq_.findValue(e->name);
    if (!v || !(wholeType(*v) == local)) return std::nullopt;
    return Fact{Lay::Rep, 0, {seqNode(*v), 1.0}};
  }
  const Rel& e = *t.expr;
  if (e.op != RelOp::Slice || e.args[0]->op != RelOp::Seq || !t.loopVar) return std::nullopt;
  auto s = affineForm(e.start, t.loopVar, dist_), en = affineForm(e.end, t.loopVar, dist_);
  if (!s || !en || s->k.size() != 1 || s->c != 0) return std::nullopt;
  // k*idx(r, G): member i's i-th piece; k*(idx(r, G)/q): runs of q members
  // holding one piece (KV heads shared by the ranks of their query heads).
  const AffineAtom& atom = s->k.begin()->first;
  int64_t inner = 1;
  if (!atom.isIdx(group)) {
    auto runs = atom.runsOf(group);
    if (!runs) return std::nullopt;
    inner = *runs;
    if (inner < 2 || inner >= n_ || n_ % inner) return std::nullopt;
  }
  int64_t k = s->k.begin()->second;
  if (k <= 0 || en->k != s->k || en->c != k) return std::nullopt;
  auto v = seq_.findValue(e.args[0]->name);
  if (!v) return std::nullopt;
  const TensorType whole = wholeType(*v);
  auto d = ir::normAxis(e.dim, int64_t(whole.shape.size()), "slice");
  if (!d.ok() || local.shape.size() != whole.shape.size() || !(local.shape[size_t(*d)] == Dim(k))) return std::nullopt;
  Fact f{Lay::Split, *d, {seqNode(*v), 1.0}};
  f.inner = inner;
  if (!(globalOf(local, f) == whole)) return std::nullopt;
  return f;
}

namespace {
// Replicated over group A and all but B_k, split over B_k as `fb` (a fact
// over B_k alone) splits.
Fact splitOverB(const Fact& fb, size_t k) {
  Fact f;
  f.lay = Lay::Rep;
  f.layB[k] = Lay::Split;
  f.dimB[k] = fb.dim;
  f.zigB[k] = fb.zig;
  f.v = fb.v;
  return f;
}

// The atoms of a template's slice bounds (idx(r, G), r); false where a
// bound is not affine in them.
bool templateAtoms(const Rel& r, const InputRelation& t, const ir::Program& dist, std::set<AffineAtom>& atoms) {
  if (r.op == RelOp::Slice)
    for (const IntExpr* e : {&r.start, &r.end}) {
      auto f = affineForm(*e, t.loopVar, dist);
      if (!f) return false;
      for (const auto& [a, _] : f->k) atoms.insert(a);
    }
  return std::all_of(r.args.begin(), r.args.end(), [&](const RelPtr& a) { return templateAtoms(*a, t, dist, atoms); });
}
}  // namespace

// Several groups: a template that depends on no group (replicated over
// all), on one (split over it, replicated over the others), or slices of
// one S tensor, nested on any dims (one dim more than once), each bound
// affine in the groups' indices (split over several: per dim, the offset
// is the sum of the slices' starts, the extent the outermost's; the
// groups cutting one dim nest in group order, as splitOverGroups reads).
std::optional<Fact> Folder::templateFact2(const InputRelation& t, const TensorType& local) {
  std::set<AffineAtom> atoms;
  if (!templateAtoms(*t.expr, t, dist_, atoms)) return std::nullopt;
  // An atom of group G: idx(r, G), or it divided (runs of ranks).
  auto allOf = [&](const std::string& g) {
    return std::all_of(atoms.begin(), atoms.end(), [&](const AffineAtom& x) {
      return x.kind == AffineAtom::Kind::Idx && x.group == g && (x.ops.empty() || x.ops.front().first == '/');
    });
  };
  if (atoms.empty() || allOf(groupA_)) return templateFact(t, local, groupA_);
  for (size_t k = 0; k < groupsB_.size(); ++k) {
    if (!allOf(groupsB_[k])) continue;
    swapB(k);
    auto fb = templateFact(t, local, groupsB_[k]);
    swapB(k);
    if (!fb || fb->lay != Lay::Split || !fb->plain()) return std::nullopt;  // the further groups' layouts are plain
    return splitOverB(*fb, k);
  }
  std::vector<const Rel*> nest;
  const Rel* r = t.expr.get();
  while (r->op == RelOp::Slice) nest.push_back(r), r = r->args[0].get();
  if (r->op != RelOp::Seq || nest.empty()) return std::nullopt;
  auto v = seq_.findValue(r->name);
  if (!v) return std::nullopt;
  const TensorType whole = wholeType(*v);
  const int64_t R = int64_t(whole.shape.size());
  if (int64_t(local.shape.size()) != R || !ir::isConcrete(whole.shape) || !ir::isConcrete(local.shape))
    return std::nullopt;
  std::map<int64_t, std::map<AffineAtom, int64_t>> coef;  // dim -> atom -> coefficient
  std::map<int64_t, int64_t> offset, width;
  for (const Rel* sl : nest) {
    auto d = ir::normAxis(sl->dim, R, "slice");
    auto st = affineForm(sl->start, t.loopVar, dist_), en = affineForm(sl->end, t.loopVar, dist_);
    if (!d.ok() || !st || !en || st->k != en->k || en->c - st->c <= 0) return std::nullopt;
    width.try_emplace(*d, en->c - st->c);  // the outermost slice's extent
    offset[*d] += st->c;
    for (const auto& [atom, k] : st->k) coef[*d][atom] += k;
  }
  // Each group's dim and step.
  const size_t G = groupsB_.size() + 1;
  std::vector<int64_t> dimOf(G, -1), step(G, 0);
  for (const auto& [d, byAtom] : coef)
    for (const auto& [atom, k] : byAtom) {
      if (k == 0) continue;
      size_t g = 0;
      while (g < G && !atom.isIdx(g == 0 ? groupA_ : groupsB_[g - 1])) ++g;
      if (g == G || k < 0 || dimOf[g] >= 0) return std::nullopt;
      dimOf[g] = d, step[g] = k;
    }
  Fact f{Lay::Rep, 0, {seqNode(*v), 1.0}};
  if (dimOf[0] >= 0) f.lay = Lay::Split, f.dim = dimOf[0];
  for (size_t k = 0; k + 1 < G; ++k)
    if (dimOf[k + 1] >= 0) f.layB[k] = Lay::Split, f.dimB[k] = dimOf[k + 1];
  if (!(globalOf(local, f) == whole)) return std::nullopt;
  for (int64_t d = 0; d < R; ++d) {
    const int64_t ext = local.shape[size_t(d)].value();
    if (offset[d] != 0 || (width.count(d) && width[d] != ext)) return std::nullopt;
    int64_t want = ext;
    for (size_t g = 0; g < G; ++g)
      if (dimOf[g] == d) {
        if (step[g] != want) return std::nullopt;
        want *= g == 0 ? n_ : nB_[g - 1];
      }
  }
  if (!nestedAllowed(f)) return std::nullopt;
  return f;
}

std::optional<Fact> Folder::inputFact(const std::string& name, const TensorType& local, const Bound& bound) {
  auto it = bound.find(name);
  if (it == bound.end()) return std::nullopt;
  std::vector<RelPtr> rels;
  for (int64_t r : members_) {
    if (!it->second[size_t(r)]) return std::nullopt;
    rels.push_back(it->second[size_t(r)]);
  }
  auto seqVal = [&](const std::string& s) -> std::optional<ir::ValueId> { return seq_.findValue(s); };
  for (RelPtr& r : rels) r = wholeIfTiles(r);
  if (std::all_of(rels.begin(), rels.end(), [&](const RelPtr& r) { return r->op == RelOp::Seq && r->name == rels[0]->name; })) {
    auto v = seqVal(rels[0]->name);
    if (!v || !(wholeType(*v) == local)) return std::nullopt;
    return Fact{Lay::Rep, 0, {seqNode(*v), 1.0}};
  }
  const Rel& r0 = *rels[0];
  if (r0.op == RelOp::Concat) {
    if (auto f = blockedInputFact(rels, local)) return f;
    if (auto f = segInputFact(rels, local)) return f;
    return zigInputFact(rels, local);
  }
  if (r0.op != RelOp::Slice || r0.args[0]->op != RelOp::Seq) return std::nullopt;
  auto v = seqVal(r0.args[0]->name);
  if (!v) return std::nullopt;
  const TensorType whole = wholeType(*v);
  auto d = ir::normAxis(r0.dim, int64_t(whole.shape.size()), "slice");
  if (!d.ok() || local.shape.size() != whole.shape.size() || !local.shape[size_t(*d)].isConcrete()) return std::nullopt;
  int64_t k = local.shape[size_t(*d)].value();
  // Runs of `inner` consecutive members holding the same piece (KV heads
  // shared by the ranks of their query heads): the first member whose piece
  // differs from member 0's ends the first run.
  int64_t inner = int64_t(rels.size());
  for (size_t i = 1; i < rels.size(); ++i)
    if (rels[i]->op == RelOp::Slice && rels[i]->start.kind == IntExpr::Kind::Const && rels[i]->start.value != r0.start.value) {
      inner = int64_t(i);
      break;
    }
  if (inner == int64_t(rels.size()) || n_ % inner) return std::nullopt;
  Fact f{Lay::Split, *d, {seqNode(*v), 1.0}};
  f.inner = inner;
  if (!(globalOf(local, f) == whole)) return std::nullopt;
  for (size_t i = 0; i < rels.size(); ++i) {
    const Rel& r = *rels[i];
    if (r.op != RelOp::Slice || r.args[0]->op != RelOp::Seq || r.args[0]->name != r0.args[0]->name) return std::nullopt;
    auto di = ir::normAxis(r.dim, int64_t(whole.shape.size()), "slice");
    int64_t piece = int64_t(i) / inner;
    if (!di.ok() || *di != *d || r.start.kind != IntExpr::Kind::Const || r.end.kind != IntExpr::Kind::Const ||
        r.start.value != piece * k || r.end.value != (piece + 1) * k)
      return std::nullopt;
  }
  return f;
}

// The members' relations as concats of P slices of one S tensor along one
// dim d, its other dims whole on each member: the tensor, d, and per member
// and part the slice's [start, end) (constant bounds).
std::optional<Folder::SlicesOfOne> Folder::slicesOfOne(const std::vector<RelPtr>& rels, const TensorType& local) {
  const Rel& r0 = *rels[0];
  const size_t P = r0.args.size();
  if (P < 2 || r0.args[0]->op != RelOp::Slice || r0.args[0]->args[0]->op != RelOp::Seq || int64_t(rels.size()) != n_)
    return std::nullopt;
  const std::string& name = r0.args[0]->args[0]->name;
  auto v = seq_.findValue(name);
  if (!v) return std::nullopt;
  SlicesOfOne out{*v, wholeType(*v), 0, {}};
  const int64_t rank = int64_t(out.whole.shape.size());
  auto d = ir::normAxis(r0.dim, rank, "concat");
  if (!d.ok() || int64_t(local.shape.size()) != rank || !ir::isConcrete(out.whole.shape) ||
      !ir::isConcrete(local.shape) || local.dtype != out.whole.dtype)
    return std::nullopt;
  out.d = *d;
  for (size_t a = 0; a < local.shape.size(); ++a)
    if (int64_t(a) != *d && !(local.shape[a] == out.whole.shape[a])) return std::nullopt;
  for (const RelPtr& r : rels) {
    auto rd = ir::normAxis(r->dim, rank, "concat");
    if (r->op != RelOp::Concat || r->args.size() != P || !rd.ok() || *rd != *d) return std::nullopt;
    auto& parts = out.parts.emplace_back();
    for (const RelPtr& x : r->args) {
      auto xd = ir::normAxis(x->dim, rank, "slice");
      if (x->op != RelOp::Slice || x->args[0]->op != RelOp::Seq || x->args[0]->name != name || !xd.ok() || *xd != *d ||
          x->start.kind != IntExpr::Kind::Const || x->end.kind != IntExpr::Kind::Const || x->end.value <= x->start.value)
        return std::nullopt;
      parts.emplace_back(x->start.value, x->end.value);
    }
  }
  return out;
}

// Member i holding the i-th of N even pieces of each of B equal blocks of
// one S tensor along d, concatenated (a fused QKV column shard).
std::optional<Fact> Folder::blockedInputFact(const std::vector<RelPtr>& rels, const TensorType& local) {
  auto s = slicesOfOne(rels, local);
  if (!s) return std::nullopt;
  const int64_t blocks = int64_t(s->parts[0].size()), localSize = local.shape[size_t(s->d)].value();
  if (localSize % blocks) return std::nullopt;
  const int64_t k = localSize / blocks, width = n_ * k;
  if (s->whole.shape[size_t(s->d)].value() != blocks * width) return std::nullopt;
  for (size_t i = 0; i < s->parts.size(); ++i)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t start = b * width + int64_t(i) * k;
      if (s->parts[i][size_t(b)] != std::make_pair(start, start + k)) return std::nullopt;
    }
  return Fact{Lay::Split, s->d, {seqNode(s->v), 1.0}, blocks};
}

// Member i holding pieces i and 2N - 1 - i of 2N even pieces of one S
// tensor along d, concatenated in that order (Megatron's load-balanced
// context parallel chunks, causal attention).
std::optional<Fact> Folder::zigInputFact(const std::vector<RelPtr>& rels, const TensorType& local) {
  auto s = slicesOfOne(rels, local);
  if (!s || s->parts[0].size() != 2 || !use("zigzag-chunks")) return std::nullopt;
  const int64_t localSize = local.shape[size_t(s->d)].value();
  if (localSize % 2) return std::nullopt;
  const int64_t c = localSize / 2;
  if (s->whole.shape[size_t(s->d)].value() != 2 * n_ * c) return std::nullopt;
  for (size_t i = 0; i < s->parts.size(); ++i) {
    const int64_t starts[2] = {int64_t(i) * c, (2 * n_ - 1 - int64_t(i)) * c};
    for (size_t b = 0; b < 2; ++b)
      if (s->parts[i][b] != std::make_pair(starts[b], starts[b] + c)) return std::nullopt;
  }
  Fact f{Lay::Split, s->d, {seqNode(s->v), 1.0}};
  f.zig = true;
  return f;
}

// Member i holding, for each of P segments of one S tensor along d, piece
// i / inner_p of the segment's n / inner_p even pieces, concatenated in
// segment order (vLLM's merged QKV: q split over every rank, k and v over
// runs of ranks or held whole).
std::optional<Fact> Folder::segInputFact(const std::vector<RelPtr>& rels, const TensorType& local) {
  auto s = slicesOfOne(rels, local);
  if (!s) return std::nullopt;
  Fact f{Lay::Split, s->d, {seqNode(s->v), 1.0}};
  int64_t offset = 0, localSum = 0;
  for (size_t p = 0; p < s->parts[0].size(); ++p) {
    const auto [a0, z0] = s->parts[0][p];
    const int64_t w = z0 - a0;
    int64_t inner = n_;  // the first member whose piece differs ends the run
    for (size_t i = 1; i < s->parts.size(); ++i)
      if (s->parts[i][p].first != a0) {
        inner = int64_t(i);
        break;
      }
    if (n_ % inner) return std::nullopt;
    for (size_t i = 0; i < s->parts.size(); ++i) {
      const int64_t start = offset + int64_t(i) / inner * w;
      if (s->parts[i][p] != std::make_pair(start, start + w)) return std::nullopt;
    }
    f.segs.push_back(Seg{w, inner});
    offset += n_ / inner * w, localSum += w;
  }
  if (offset != s->whole.shape[size_t(s->d)].value() || localSum != local.shape[size_t(s->d)].value() ||
      !use("segmented-split"))
    return std::nullopt;
  return f;
}

// A segmented split through an op acting alike along its dim: a transpose
// or a reshape moving the dim whole, elementwise ops whose split operands
// are segmented alike (replicated ones not reaching the dim, or of size 1
// there), matmul rows or columns (not the contraction), a slice or split
// along other dims; a split into the segments gives each its own layout
// (a plain split, runs of ranks, or replicated).
std::vector<Fact> Folder::segRule(const ir::Node& n, const std::vector<Fact>& in) {
  const auto& vals = g_->values();
  auto local = [&](size_t i) -> const TensorType& { return vals[size_t(n.inputs[i])].type; };
  const TensorType& out0 = vals[size_t(n.outputs[0])].type;
  const int64_t R = int64_t(out0.shape.size());
  const Fact* seg = nullptr;
  // (a matmul contracting two segmented operands compares their segments
  // itself: one's partial sums meet the other's whole pieces)
  const bool contracting = n.op == OpKind::MatMul && in.size() == 2 && !in[0].segs.empty() && !in[1].segs.empty();
  for (const Fact& f : in)
    if (f.lay == Lay::Split) {
      if (f.segs.empty() || (seg && f.segs != seg->segs && !contracting)) return {};
      seg = &f;
    } else if (f.lay != Lay::Rep) {
      return {};
    }
  if (!seg || !use("segmented-split")) return {};
  // Segments of partial sums: linear ops only, the other operands the
  // same on every member (a scale, a matmul by a replicated weight) or
  // alike partial sums added.
  const bool sums = std::any_of(in.begin(), in.end(), [](const Fact& f) { return hasRunSums(f.segs); });
  if (sums && !contracting) {
    bool linear = false;
    const int64_t segmentedIns = std::count_if(in.begin(), in.end(), [](const Fact& f) { return f.lay == Lay::Split; });
    switch (n.op) {
      case OpKind::Transpose: case OpKind::Reshape: case OpKind::Squeeze: case OpKind::Unsqueeze: case OpKind::Slice:
      case OpKind::Split: case OpKind::Neg: case OpKind::Identity: case OpKind::ReduceSum: case OpKind::ReduceMean:
        linear = in.size() == 1;
        break;
      case OpKind::Add: case OpKind::Sub: linear = segmentedIns == int64_t(in.size()); break;
      case OpKind::Mul: case OpKind::MatMul: linear = segmentedIns == 1; break;
      case OpKind::Div: linear = segmentedIns == 1 && in[0].lay == Lay::Split; break;
      default: break;
    }
    if (!linear || !use("run-partial-sums")) return {};
  }
  auto segmented = [&](int64_t d) {
    Fact o{Lay::Split, d, {}};
    o.segs = seg->segs;
    return o;
  };
  std::vector<Fact> outs;
  const auto cat = ir::opInfo(n.op).category;
  if (n.op == OpKind::Transpose && in.size() == 1 && use("permute-of-split")) {
    const auto& perm = ir::attrInts(n.attrs, "perm");
    for (size_t o = 0; o < perm.size(); ++o)
      if (perm[o] == in[0].dim) outs = {segmented(int64_t(o))};
  } else if (reshapeLike(n.op) && in.size() == 1 && use("reshape-of-split")) {
    // the dim a factor group of its own, to one output dim, locally and in
    // S (or only unit dims added or dropped)
    if (auto o = carriedWhole(local(0).shape, out0.shape, in[0].dim)) {
      Fact probe = segmented(*o);
      if (carriedWhole(globalOf(local(0), in[0]).shape, globalOf(out0, probe).shape, in[0].dim) == o) outs = {probe};
    } else if (auto u = unitReshapeDim(local(0).shape, out0.shape, in[0].dim)) {
      Fact probe = segmented(*u);
      if (unitReshapeDim(globalOf(local(0), in[0]).shape, globalOf(out0, probe).shape, in[0].dim) == u) outs = {probe};
    }
  } else if ((cat == OpCategory::Unary || cat == OpCategory::Binary || cat == OpCategory::Ternary) &&
             n.outputs.size() == 1 && use(cat == OpCategory::Unary ? "unary-over-split" : "binary-over-split")) {
    // numpy broadcasting, aligned right: one output dim for every split operand
    std::optional<int64_t> od;
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t ri = int64_t(local(i).shape.size());
      if (in[i].lay == Lay::Split) {
        const int64_t o = in[i].dim + R - ri;
        if ((od && *od != o) || !(local(i).shape[size_t(in[i].dim)] == out0.shape[size_t(o)])) return {};
        od = o;
      }
    }
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t at = *od - (R - int64_t(local(i).shape.size()));
      if (in[i].lay == Lay::Rep && at >= 0 && local(i).shape[size_t(at)] != Dim(1)) return {};
    }
    outs = {segmented(*od)};
  } else if (n.op == OpKind::MatMul && in.size() == 2) {
    const int64_t ra = int64_t(local(0).shape.size()), rb = int64_t(local(1).shape.size());
    if (ra < 2 || rb < 2) return {};  // a vector operand drops a dim
    if (in[0].lay == Lay::Split && in[0].dim == ra - 2 && in[1].lay == Lay::Rep && use("matmul-row-split"))
      outs = {segmented(R - 2)};
    if (in[1].lay == Lay::Split && in[1].dim == rb - 1 && in[0].lay == Lay::Rep && use("matmul-col-split"))
      outs = {segmented(R - 1)};
    // contracted over segments of the same widths and runs, each a plain
    // split (every member a piece of its own), or partial sums of a run's
    // piece (of the whole: inner = n) against the piece the run holds
    // whole: the sum over the group of the members' products is S's
    // contraction, partial sums over the group
    auto alike = [&](const std::vector<Seg>& a, const std::vector<Seg>& b) {
      if (a.size() != b.size()) return false;
      for (size_t p = 0; p < a.size(); ++p) {
        if (a[p].w != b[p].w || a[p].inner != b[p].inner) return false;
        if (a[p].inner == 1 ? (a[p].runSum || b[p].runSum) : a[p].runSum == b[p].runSum) return false;
      }
      return true;
    };
    if (contracting && in[0].lay == Lay::Split && in[1].lay == Lay::Split && in[0].dim == ra - 1 && in[1].dim == rb - 2 &&
        alike(in[0].segs, in[1].segs) && use("matmul-contract-split")) {
      if (!(hasRunSums(in[0].segs) || hasRunSums(in[1].segs)) || use("run-partial-sums")) outs = {Fact{Lay::Sum, 0, {}}};
    }
  } else if (n.op == OpKind::Split && in.size() == 1 && use("slice-of-split")) {
    auto ax = ir::normAxis(ir::attrInt(n.attrs, "axis"), int64_t(local(0).shape.size()), "split");
    if (!ax.ok()) return {};
    if (*ax != in[0].dim) {
      for (size_t o = 0; o < n.outputs.size(); ++o) outs.push_back(segmented(in[0].dim));
    } else {
      // into the segments, one output each
      const auto& sizes = ir::attrInts(n.attrs, "sizes");
      if (sizes.size() != seg->segs.size()) return {};
      for (size_t p = 0; p < sizes.size(); ++p) {
        const Seg& sg = seg->segs[p];
        if (sizes[p] != sg.w) return {};
        Fact o{sg.inner == n_ ? (sg.runSum ? Lay::Sum : Lay::Rep) : (sg.runSum ? Lay::RunSum : Lay::Split),
               sg.inner == n_ ? 0 : in[0].dim, {}};
        if (o.lay == Lay::Split || o.lay == Lay::RunSum) o.inner = sg.inner;
        outs.push_back(o);
      }
    }
  } else if (n.op == OpKind::Slice && in.size() == 1 && use("slice-of-split")) {
    auto axes = sliceAxes(n, int64_t(local(0).shape.size()));
    if (std::find(axes.begin(), axes.end(), in[0].dim) == axes.end()) outs = {segmented(in[0].dim)};
  } else if ((n.op == OpKind::ReduceSum || n.op == OpKind::ReduceMean || n.op == OpKind::ReduceMax) && in.size() == 1 &&
             use("reduce-over-other-split")) {
    // over other dims: each position of the dim on its own (a merged
    // bias's gradient, summed over the tokens)
    const int64_t inRank = int64_t(local(0).shape.size());
    if (auto o = afterReduce(n, reducedAxes(interner_.attrMap(interner_.attrs(n.op, n.attrs, inRank))), in[0].dim))
      outs = {segmented(*o)};
  }
  if (outs.size() != n.outputs.size()) return {};
  return finalize(n, in, std::move(outs), 1.0);
}

// A concat along the split dim of operands each split its own way (plain,
// on runs of members, or held whole by all) and of any local widths:
// member r holds its piece of each, the segmented split of S's concat
// (the backward of vLLM's merged QKV split: [dq_r | dk_r | dv_r]). Equal
// plain widths are the blocked split splitRule reads.
std::vector<Fact> Folder::segConcat(const ir::Node& n, const std::vector<Fact>& in) {
  if (twoD_ || decideOnly_ || n.outputs.size() != 1 || in.size() < 2) return {};
  const auto& vals = g_->values();
  const int64_t rank = int64_t(vals[size_t(n.inputs[0])].type.shape.size());
  auto ax = ir::normAxis(ir::attrInt(n.attrs, "axis"), rank, "concat");
  if (!ax.ok()) return {};
  Fact o{Lay::Split, *ax, {}};
  bool anySplit = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const Fact& f = in[i];
    const Dim& w = vals[size_t(n.inputs[i])].type.shape[size_t(*ax)];
    if (!w.isConcrete() || f.zig || !f.moreRep() || f.lay3 != Lay::Rep || f.blocks != 1 || !f.segs.empty()) return {};
    if (f.lay == Lay::Rep) {
      o.segs.push_back(Seg{w.value(), n_});
    } else if (f.lay == Lay::Sum) {  // the whole segment in partial sums
      o.segs.push_back(Seg{w.value(), n_, true});
    } else if ((f.lay == Lay::Split || f.lay == Lay::RunSum) && f.dim == *ax && f.innerDim < 0 && n_ % f.inner == 0) {
      o.segs.push_back(Seg{w.value(), f.inner, f.lay == Lay::RunSum});
      anySplit = true;
    } else {
      return {};
    }
  }
  if (!anySplit || !use("segmented-split") || (hasRunSums(o.segs) && !use("run-partial-sums"))) return {};
  return finalize(n, in, {o}, 1.0);
}

// The last D value (classes and values in reverse order) whose layout
// names an S value's expression by another factor than S's: said in the
// user's terms, with the D values ("r0:x") it concerns.
std::optional<std::pair<std::string, std::vector<DistRef>>> Folder::lastScaledValue(const std::vector<Val>& sval) {
  std::unordered_map<int, ir::ValueId> seqOf;
  std::set<std::pair<int, double>> held;  // S values as they are: a D value holding one is no other expression
  for (size_t v = sval.size(); v-- > 0;)
    if (sval[v].node >= 0) {
      seqOf[sval[v].node] = ir::ValueId(v);
      held.emplace(sval[v].node, sval[v].k);
    }
  for (size_t c = classes_.size(); c-- > 0;) {
    enter(c);
    for (size_t v = g_->values().size(); v-- > 0;) {
      const Fact& f = (*facts_)[v];
      auto it = f.lay == Lay::None ? seqOf.end() : seqOf.find(f.v.node);
      if (it == seqOf.end() || held.count({f.v.node, f.v.k})) continue;
      const std::string& name = g_->value(ir::ValueId(v)).name;
      std::string text = "D's '" + name + "' holds S's '" + seq_.value(it->second).name + "' times " +
                         factorText(f.v.k / sval[size_t(it->second)].k) + " (" + g_->value(ir::ValueId(v)).loc.str() + ")";
      std::vector<DistRef> at;
      for (size_t i = 0; i < members_.size() && i < 8; ++i) at.push_back({members_[i], name});
      return std::make_pair(text, at);
    }
  }
  return std::nullopt;
}


// 2-D folding. Each group's layout is decided by the same schemas, the
// other group's held fixed (a value split over A and over B along other dims
// is, over A, the concat of B-splits, and the schema is the same lemma);
// then S's types and the expression are checked and built once with both.
std::vector<Fact> Folder::transfer2(const ir::Node& n, const std::vector<Fact>& in) {
  std::vector<Fact> pin = in, sin;
  for (auto& f : pin) {
    f.moreRepAll();
    f.whole();
  }
  // Each other group's layouts of the results, with its factor: every
  // reading its rules see (a reshape adding unit dims around the split
  // one), tried below with the first group's.
  struct Reading {
    std::vector<Fact> outs;
    double factor = 1.0;
  };
  std::vector<std::vector<Reading>> secAlt(twoD_ ? nB_.size() : 0);
  for (size_t k = 0; k < secAlt.size(); ++k) {
    sin.clear();
    for (const auto& f : in) sin.push_back(secondaryView(f, k));
    swapB(k);
    for (size_t pick = 0;; ++pick) {
      decideOnly_ = true;
      decidedFactor_ = 1.0;
      pick_ = pick;
      picks_ = 1;
      Reading r{zigGate(n, sin, rules(n, sin)), decidedFactor_};
      size_t picks = picks_;
      pick_ = 0;
      decideOnly_ = false;
      secAlt[k].push_back(std::move(r));
      if (pick + 1 >= picks) break;
    }
    swapB(k);
  }
  // The readings of every group, in order: the first reading of each is
  // tried first, as before.
  size_t secCombos = 1;
  for (const auto& alts : secAlt) secCombos *= alts.size();
  std::vector<std::vector<Fact>> sec(nB_.size());
  double f2 = 1.0, fMb = 1.0;  // fMb: the micro-batch copies' factor, decided below
  auto chooseSec = [&](size_t combo) {
    f2 = fMb;
    for (size_t k = 0; k < secAlt.size(); ++k) {
      const Reading& r = secAlt[k][combo % secAlt[k].size()];
      combo /= secAlt[k].size();
      sec[k] = r.outs;
      auto prod = exactTimes(f2, r.factor);
      if (!prod) return false;
      f2 = *prod;
    }
    return true;
  };
  if (!chooseSec(0)) return {};
  // The layout over micro-batch copies, decided the same way: the split
  // operands are pieces of one count and index, the summed ones terms of
  // one count and set.
  std::optional<std::vector<Fact>> mb;
  if (std::any_of(in.begin(), in.end(), [](const Fact& f) { return f.lay3 != Lay::Rep; })) {
    int64_t cnt = 0, idx = -1;
    const std::vector<bool>* terms = nullptr;
    std::vector<Fact> min;
    for (const auto& f : in) {
      if (f.lay3 != Lay::Rep) {
        if (cnt && f.cnt3 != cnt) return {};
        cnt = f.cnt3;
      }
      if (f.lay3 == Lay::Split) {
        if (idx >= 0 && f.idx3 != idx) return {};
        idx = f.idx3;
      }
      if (f.lay3 == Lay::Sum) {
        if (terms && *terms != f.terms3) return {};
        terms = &f.terms3;
      }
      min.push_back(microBatchView(f));
    }
    decideOnly_ = true;
    int64_t saved = n_;
    n_ = cnt;
    decidedFactor_ = 1.0;
    pick_ = 0;
    mb = rules(n, min);
    n_ = saved;
    decideOnly_ = false;
    if (mb->size() != n.outputs.size()) return {};
    for (auto& o : *mb) {
      if (o.lay == Lay::Split && (!o.plain() || o.innerDim >= 0 || idx < 0)) return {};
      if (o.lay == Lay::Sum && !terms && idx < 0) return {};
    }
    fMb = decidedFactor_;
    mbCount_ = cnt, mbIndex_ = idx;
    mbTerms_ = terms ? *terms : std::vector<bool>(size_t(cnt), false);
    if (!terms) mbTerms_[size_t(idx)] = true;
  }
  mbDecided_ = mb ? &*mb : nullptr;
  // A value every member of the first group holds, broadcast along a unit
  // dim: replicated where S broadcasts it so (and the expand does
  // something: to its own shape it is the operand, which S computes
  // trivially), else each member's copies as its piece of S's broadcast to
  // n times the size where S computes that (a KV head held by every rank of
  // the group, expanded to each rank's query heads), else replicated.
  if (n.op == OpKind::Expand && n.inputs.size() == 1 && pin[0].lay == Lay::Rep) {
    std::vector<Fact> rep;
    for (size_t combo = 0; combo < secCombos; ++combo) {
      if (!chooseSec(combo)) continue;
      std::vector<Fact> r = combine2(n, in, {Fact{Lay::Rep, 0, {}}}, sec, 1.0, f2);
      if (!r.empty() && sComputes(r) && r[0].v.node != in[0].v.node) return mbDecided_ = nullptr, r;
      if (rep.empty()) rep = std::move(r);
    }
    const TensorType& si = g_->value(n.inputs[0]).type;
    const int64_t R = int64_t(g_->value(n.outputs[0]).type.shape.size()), inRank = int64_t(si.shape.size());
    for (int64_t o = 0; o < R && use("expand-of-replicated"); ++o) {
      int64_t at = o - (R - inRank);
      if (at >= 0 && si.shape[size_t(at)] != Dim(1)) continue;
      for (size_t combo = 0; combo < secCombos; ++combo) {
        if (!chooseSec(combo)) continue;
        std::vector<Fact> piece = combine2(n, in, {Fact{Lay::Split, o, {}}}, sec, 1.0, f2);
        if (!piece.empty() && sComputes(piece)) return mbDecided_ = nullptr, piece;
      }
    }
    if (!rep.empty()) return mbDecided_ = nullptr, rep;
  }
  // Where the groups' rules see several true layouts (an expand of KV heads
  // held by runs of ranks; a reshape adding unit dims next to a dim another
  // group splits), the one S computes is kept (as splitRule does with one
  // group); where S computes none, the first readings stand.
  // (A reshape's reading that goes back to an earlier value of S comes
  // after S's own reshape of the operand, as in splitRule.)
  std::vector<Fact> first, readBack;
  for (size_t pick = 0;; ++pick) {
    decideOnly_ = true;
    decidedFactor_ = 1.0;
    pick_ = pick;
    picks_ = 1;
    std::vector<Fact> pri = zigGate(n, pin, rules(n, pin));
    size_t picks = picks_;
    double f1 = decidedFactor_;
    pick_ = 0;
    decideOnly_ = false;
    for (size_t combo = 0; combo < secCombos; ++combo) {
      if (!chooseSec(combo)) continue;
      std::vector<Fact> outs = combine2(n, in, pri, sec, f1, f2);
      const bool several = picks > 1 || secCombos > 1;
      if (!outs.empty() && several && reshapeLike(n.op) && readsBack(outs, in[0])) {
        if (readBack.empty()) readBack = std::move(outs);
        continue;
      }
      if (!outs.empty() && (!several || sComputes(outs))) return mbDecided_ = nullptr, outs;
      if (first.empty()) first = std::move(outs);
    }
    if (pick + 1 >= picks) return mbDecided_ = nullptr, readBack.empty() ? first : readBack;
  }
}

// The first group's layouts `pri` and the second's `sec` of n's results, as
// one fact each, checked against S (finalize).
std::vector<Fact> Folder::combine2(const ir::Node& n, const std::vector<Fact>& in, const std::vector<Fact>& pri,
                                   const std::vector<std::vector<Fact>>& secs, double f1, double f2) {
  if (pri.size() != n.outputs.size() || pri.empty() || secs.size() != nB_.size()) return {};
  for (const auto& sec : secs)
    if (sec.size() != n.outputs.size()) return {};
  std::vector<Fact> outs = pri;
  for (size_t o = 0; o < outs.size(); ++o) {
    for (size_t k = 0; k < secs.size(); ++k) {
      const Fact& sec = secs[k][o];
      // A blocked split over the first group (Megatron's fused QKV), or a
      // two-level one (KV heads held by runs of ranks) whose dims no other
      // group splits: over each B position it is the one-group layout.
      if (!sec.plain()) return {};
      if (!outs[o].plain() && outs[o].lay == Lay::Split && sec.lay == Lay::Split &&
          (sec.dim == outs[o].dim || sec.dim == outs[o].innerDim))
        return {};
      outs[o].layB[k] = sec.lay;
      outs[o].dimB[k] = sec.dim;
      outs[o].zigB[k] = sec.zig;
    }
  }
  // Groups splitting one dim nest their pieces (in group order): only ops
  // acting on each position of that dim alike take them.
  if (!nestedOk(n, in, outs)) return {};
  for (const Fact& o : outs)
    if (!zigNestOk(o)) return {};
  for (size_t o = 0; o < outs.size(); ++o) {
    if (mbDecided_) {
      // Copies are the outermost layer: their pieces may share a dim with
      // a group's (the batch split over data parallel ranks and copies).
      const Fact& m = (*mbDecided_)[o];
      outs[o].lay3 = m.lay;
      if (m.lay == Lay::Split) outs[o].dim3 = m.dim, outs[o].idx3 = mbIndex_, outs[o].cnt3 = mbCount_;
      if (m.lay == Lay::Sum) outs[o].cnt3 = mbCount_, outs[o].terms3 = mbTerms_;
    }
  }
  // Each group's reading of a reshape is true with that group's pieces
  // alone; where unit dims leave it a choice (a batch dim of 1 on each
  // rank beside a head dim another group splits), the readings together
  // must be one reshape of S's shapes: each split dim the leading dim of
  // its factor group there, its pieces those of the dim it leads to.
  if (!reshapeReadingsAgree(n, in, outs)) return {};
  auto factor = exactTimes(f1, f2);
  if (!factor) return {};
  outs = finalize(n, in, std::move(outs), *factor);
  if (!mbDecided_) return outs;
  // A sum over the copies: its term family is the op on the operands'
  // pieces (a contraction or reduction over the copies' dim), or on their
  // families (an op linear in the summed operands), named with the result.
  std::vector<int> kids;
  for (const Fact& f : in) {
    if (f.lay3 == Lay::Split) {
      // materialize may grow the types: no reference into them across it
      const std::string key = "piece " + std::to_string(f.dim3) + "/" + std::to_string(f.cnt3) + " " +
                              std::to_string(ex_.materialize(f.v));
      const TensorType t = ex_.type(f.v.node);
      kids.push_back(ex_.intern(key, t));
    }
    else if (f.lay3 == Lay::Sum) kids.push_back(f.fam3);
    else kids.push_back(ex_.materialize(f.v));
  }
  int64_t inRank = n.inputs.empty() ? 0 : int64_t(g_->value(n.inputs[0]).type.shape.size());
  for (size_t o = 0; o < outs.size(); ++o)
    if (outs[o].lay3 == Lay::Sum)
      outs[o].fam3 = ex_.intern("terms " + std::to_string(ex_.materialize(outs[o].v)) + " " +
                                    opKey(n.op, n.attrs, inRank, int(o), kids),
                                g_->value(n.outputs[o]).type);
  return outs;
}

bool Folder::reshapeReadingsAgree(const ir::Node& n, const std::vector<Fact>& in, const std::vector<Fact>& outs) {
  if (!reshapeLike(n.op) || in.size() != 1 || outs.size() != 1) return true;
  const Shape gi = globalOf(g_->value(n.inputs[0]).type, in[0]).shape;
  const Shape go = globalOf(g_->value(n.outputs[0]).type, outs[0]).shape;
  auto leadsTo = [&](Lay li, int64_t di, Lay lo, int64_t dout) {
    if (li != Lay::Split) return true;  // a replicated or summed operand: no dim to follow
    if (lo != Lay::Split) return false;
    auto dims = reshapeSplitDims(gi, go, di);
    return std::find(dims.begin(), dims.end(), dout) != dims.end();
  };
  // The first group's blocked and two-level splits are read by their own
  // rules (blockedReshape, runs); the other groups' splits are plain.
  if (in[0].plain() && outs[0].plain() && in[0].innerDim < 0 && outs[0].innerDim < 0 &&
      !leadsTo(in[0].lay, in[0].dim, outs[0].lay, outs[0].dim))
    return false;
  for (size_t k = 0; k < nB_.size(); ++k)
    if (!leadsTo(in[0].layB[k], in[0].dimB[k], outs[0].layB[k], outs[0].dimB[k])) return false;
  return leadsTo(in[0].lay3, in[0].dim3, outs[0].lay3, outs[0].dim3);
}

// Facts naming a dim split by two groups or more (their pieces nested in
// group order) are laid out by the rules of each group with the others
// held fixed, which holds when the op acts on every position of that dim
// alike (elementwise ops, norms and reductions over other dims or over it,
// matmul rows or contraction): a schema of the outer group then applies to
// the inner groups' concat as to any value. Ops that cut, move or reshape
// the dim do not take them.
bool Folder::nestedOk(const ir::Node& n, const std::vector<Fact>& in, const std::vector<Fact>& outs) {
  auto nested = [&](const Fact& f) { return isNested(f); };
  if (std::none_of(in.begin(), in.end(), nested) && std::none_of(outs.begin(), outs.end(), nested)) return true;
  if (!use("nested-splits")) return false;
  // The groups splitting dim d of f, as a bit set (A: bit 0).
  auto groupsOn = [&](const Fact& f, int64_t d) {
    unsigned bits = f.lay == Lay::Split && f.dim == d ? 1u : 0u;
    for (size_t k = 0; k < nB_.size(); ++k)
      if (f.layB[k] == Lay::Split && f.dimB[k] == d) bits |= 2u << k;
    return bits;
  };
  auto many = [](unsigned bits) { return (bits & (bits - 1)) != 0; };
  // A layout op that moves each nested dim whole to one output dim (a
  // transpose; a reshape where the dim is a factor group of its own, in
  // the rank's shapes and in S's) re-indexes it alike at every position:
  // the output must nest the same groups on it.
  if ((n.op == OpKind::Transpose || reshapeLike(n.op)) && in.size() == 1 && outs.size() == 1) {
    const TensorType& ti = g_->value(n.inputs[0]).type;
    const TensorType& to = g_->value(n.outputs[0]).type;
    if (!ir::isConcrete(ti.shape) || !ir::isConcrete(to.shape)) return false;
    const int64_t ri = int64_t(ti.shape.size()), ro = int64_t(to.shape.size());
    // Input dim -> the output dims it may become, in order: whole, or, for
    // a reshape, the one leading its factor group's image.
    std::vector<std::vector<int64_t>> to_(static_cast<size_t>(ri));
    if (n.op == OpKind::Transpose) {
      const auto& perm = ir::attrInts(n.attrs, "perm");
      if (int64_t(perm.size()) != ri) return false;
      for (int64_t o = 0; o < ri; ++o)
        if (perm[size_t(o)] >= 0 && perm[size_t(o)] < ri) to_[size_t(perm[size_t(o)])].push_back(o);
    } else {
      // Row-major, dim i lands whole on dim o where the dims before each
      // hold as many elements and the two are of one size (a factor group
      // of its own, or beside unit dims the reshape adds or drops), in the
      // rank's shapes and in S's; the dims of size 1 in S are left out
      // (nothing nests on them).
      auto lands = [](const Shape& a, const Shape& b, int64_t i, int64_t o) {
        int64_t pa = 1, pb = 1;
        for (int64_t k = 0; k < i; ++k) pa *= a[size_t(k)].value();
        for (int64_t k = 0; k < o; ++k) pb *= b[size_t(k)].value();
        return pa == pb && a[size_t(i)] == b[size_t(o)];
      };
      // (the copies' layout is set on the results after this check: off both)
      Fact fi = in[0], fo = outs[0];
      fi.whole(), fo.whole();
      const Shape gi = globalOf(ti, fi).shape, go = globalOf(to, fo).shape;
      if (!ir::isConcrete(gi) || !ir::isConcrete(go)) return false;
      for (int64_t i = 0; i < ri; ++i) {
        if (gi[size_t(i)].value() == 1) continue;
        for (int64_t o = ro; o-- > 0;)
          if (lands(ti.shape, to.shape, i, o) && lands(gi, go, i, o)) {
            to_[size_t(i)].push_back(o);
            break;
          }
        // A reshape may also merge or cut a nested dim, where it leads its
        // factor group (size-1 dims aside) in the rank's shapes and in S's,
        // on an output dim leading the group's image: row-major, S's element
        // (p * l + x) * rest + y of the group lands in piece p of the output
        // dim, at the rank's own reshape of (x, y), for P pieces of any
        // nesting (data parallel ranks' tokens, each split again over expert
        // parallel ranks, flattened to [tokens, hidden]).
        auto inS = reshapeSplitDims(gi, go, i);
        for (int64_t o : reshapeSplitDims(ti.shape, to.shape, i))
          if (std::find(inS.begin(), inS.end(), o) != inS.end()) to_[size_t(i)].push_back(o);
      }
    }
    std::vector<bool> covered(size_t(ro), false);
    for (int64_t d = 0; d < ri; ++d) {
      unsigned bits = groupsOn(in[0], d);
      if (!many(bits)) continue;
      const auto& cands = to_[size_t(d)];
      auto o = std::find_if(cands.begin(), cands.end(), [&](int64_t c) { return groupsOn(outs[0], c) == bits; });
      if (o == cands.end()) return false;
      covered[size_t(*o)] = true;
    }
    for (int64_t o = 0; o < ro; ++o)
      if (many(groupsOn(outs[0], o)) && !covered[size_t(o)]) return false;
    return true;
  }
  // An expand keeps each nested dim (numpy-aligned from the right) that it
  // does not broadcast.
  if (n.op == OpKind::Expand && in.size() == 1 && outs.size() == 1) {
    const Shape& si = g_->value(n.inputs[0]).type.shape;
    const Shape& so = g_->value(n.outputs[0]).type.shape;
    const int64_t ri = int64_t(si.size()), ro = int64_t(so.size());
    if (ro < ri) return false;
    std::vector<bool> covered(size_t(ro), false);
    for (int64_t d = 0; d < ri; ++d) {
      unsigned bits = groupsOn(in[0], d);
      if (!many(bits)) continue;
      const int64_t o = d + ro - ri;
      if (!(si[size_t(d)] == so[size_t(o)]) || groupsOn(outs[0], o) != bits) return false;
      covered[size_t(o)] = true;
    }
    for (int64_t o = 0; o < ro; ++o)
      if (many(groupsOn(outs[0], o)) && !covered[size_t(o)]) return false;
    return true;
  }
  // A slice, concat or split along other dims keeps each nested dim as it
  // is, in place: every value nests the same groups on it.
  // A one_hot is elementwise on the indices, its new axis counted in the
  // output: each nested dim moves past the axis when the axis comes first.
  if (n.op == OpKind::OneHot && in.size() == 1 && outs.size() == 1) {
    const int64_t ri = int64_t(g_->value(n.inputs[0]).type.shape.size()), ro = ri + 1;
    int64_t axis = n.attrs.count("axis") ? ir::attrInt(n.attrs, "axis") : -1;
    axis = axis < 0 ? axis + ro : axis;
    if (axis < 0 || axis >= ro) return false;
    std::vector<bool> covered(size_t(ro), false);
    for (int64_t d = 0; d < ri; ++d) {
      unsigned bits = groupsOn(in[0], d);
      if (!many(bits)) continue;
      const int64_t o = d < axis ? d : d + 1;
      if (groupsOn(outs[0], o) != bits) return false;
      covered[size_t(o)] = true;
    }
    for (int64_t o = 0; o < ro; ++o)
      if (many(groupsOn(outs[0], o)) && !covered[size_t(o)]) return false;
    return true;
  }
  // A top-k works on each row along its axis alone: a nested dim
  // elsewhere stays, in both outputs.
  if (n.op == OpKind::Slice || n.op == OpKind::Concat || n.op == OpKind::Split || n.op == OpKind::TopK) {
    if (n.inputs.empty()) return false;
    const int64_t R = int64_t(g_->value(n.inputs[0]).type.shape.size());
    std::vector<int64_t> axes;
    if (n.op == OpKind::TopK) {
      axes.push_back(n.attrs.count("axis") ? ir::attrInt(n.attrs, "axis") : -1);
    } else if (n.op == OpKind::Slice) {
      axes = sliceAxes(n, R);
    } else {
      axes.push_back(ir::attrInt(n.attrs, "axis"));
    }
    for (auto& a : axes) a = a < 0 ? a + R : a;
    std::vector<const Fact*> all;
    for (const Fact& f : in) all.push_back(&f);
    for (const Fact& f : outs) all.push_back(&f);
    for (int64_t d = 0; d < R; ++d) {
      unsigned bits = 0;
      for (const Fact* f : all) bits |= groupsOn(*f, d);
      if (!many(bits)) continue;
      if (std::find(axes.begin(), axes.end(), d) != axes.end()) return false;
      for (const Fact* f : all)
        if (groupsOn(*f, d) != bits) return false;
    }
    return true;
  }
  return actsAlikeAlongDims(n.op);
}

// S's types of the operands and results must agree with the op's shape
// function (reshape and expand at S's sizes), and each result is the op on
// the operands' expressions, times `factor` (means over split groups).
std::vector<Fact> Folder::finalize(const ir::Node& n, const std::vector<Fact>& in, std::vector<Fact> outs,
                                   double factor) {
  const auto& vals = g_->values();
  std::vector<TensorType> gin;
  std::vector<Val> vin;
  for (size_t i = 0; i < in.size(); ++i) {
    gin.push_back(globalOf(vals[size_t(n.inputs[i])].type, in[i]));
    vin.push_back(in[i].v);
  }
  ir::AttrMap attrs = n.attrs;
  OpKind op = n.op == OpKind::Squeeze || n.op == OpKind::Unsqueeze ? OpKind::Reshape : n.op;
  if (reshapeLike(n.op) || n.op == OpKind::Expand) {
    Shape g = globalOf(vals[size_t(n.outputs[0])].type, outs[0]).shape;
    if (n.op == OpKind::Reshape || n.op == OpKind::Expand) attrs["shape"] = g;
    else attrs = ir::AttrMap{{"shape", g}};
  }
  int64_t inRank = n.inputs.empty() ? 0 : int64_t(vals[size_t(n.inputs[0])].type.shape.size());
  if (n.op == OpKind::Split) {
    // a split along a dim split over a group: each piece's S size (the
    // rules allow it only into a blocked split's blocks)
    auto ax = ir::normAxis(ir::attrInt(attrs, "axis"), inRank, "split");
    int64_t mult = 1;
    if (ax.ok() && in[0].lay == Lay::Split && in[0].dim == *ax) mult *= n_;
    for (size_t k = 0; k < nB_.size(); ++k)
      if (ax.ok() && in[0].layB[k] == Lay::Split && in[0].dimB[k] == *ax) mult *= nB_[k];
    if (ax.ok() && in[0].lay3 == Lay::Split && in[0].dim3 == *ax) mult *= in[0].cnt3;
    if (ax.ok() && in[0].lay == Lay::Split && in[0].dim == *ax && !in[0].segs.empty()) {
      // into the segments: each one's S width (segRule checked the sizes)
      std::vector<int64_t> sizes;
      for (const Seg& sg : in[0].segs) sizes.push_back(n_ / sg.inner * sg.w);
      attrs["sizes"] = sizes;
      mult = 1;
    }
    if (mult > 1) {
      std::vector<int64_t> sizes = ir::attrInts(attrs, "sizes");
      for (auto& z : sizes) z *= mult;
      attrs["sizes"] = sizes;
    }
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    TensorType expect = globalOf(vals[size_t(n.outputs[o])].type, outs[o]);
    auto got = inferGlobal(op, attrs, gin, int(o));
    if (!got || !(*got == expect)) return {};
    Val v = canon(op, attrs, vin, int(o), expect, inRank);
    if (factor != 1.0) {
      auto k = exactTimes(v.k, factor);
      if (!k) return {};
      v.k = *k;
    }
    outs[o].v = v;
  }
  return outs;
}

// Every rank of the class runs collective node n alone: an instance of one
// member (the same node).
bool Folder::oneMemberEach(const ir::Node& n) {
  ir::NodeId id = ir::NodeId(&n - g_->nodes().data());
  if (!in_.model) {  // ir::uniformSpmd: every part of a group of mesh axes has its size
    auto inst = dist_.groupOf(ir::attrStr(n.attrs, "group"), 0);
    return inst.ok() && inst->size() == 1;
  }
  const DistModel& m = *in_.model;
  std::vector<int64_t> ranks = members_;
  if (twoD_) {
    ranks.clear();
    for (const auto& row : grid_) ranks.insert(ranks.end(), row.begin(), row.end());
  }
  if (ranks.empty()) return false;
  for (int64_t r : ranks) {
    const int* c = m.collOf[size_t(r)].find(id);
    if (!c) return false;
    const CollInstance& inst = m.colls[size_t(*c)];
    if (inst.members.size() != 1 || inst.members[0] != r || inst.nodes.size() != 1 || inst.nodes[0] != id) return false;
  }
  return true;
}

// Every instance of collective node n on the class's ranks is one group of
// the axis (A: 0, B: 1), the same node on each member.
bool Folder::instancesAreGroups(const ir::Node& n, int axis) {
  ir::NodeId id = ir::NodeId(&n - g_->nodes().data());
  auto key = std::make_tuple(cls_, id, axis);
  if (auto it = groupChecked_.find(key); it != groupChecked_.end()) return it->second;
  const std::string& name = axis == 0 ? groupA_ : groupsB_[size_t(axis - 1)];
  if (!in_.model) return ir::attrStr(n.attrs, "group") == name;  // ir::uniformSpmd
  const DistModel& m = *in_.model;
  auto [cached, fresh] = partsOf_.try_emplace(axis);
  if (fresh) {  // the group's parts, once per axis
    auto part = dist_.partition(name);
    if (part.ok()) cached->second.insert(part->begin(), part->end());
  }
  const std::set<std::vector<int64_t>>& parts = cached->second;
  bool ok = !parts.empty();
  for (int64_t r : members_) {
    if (!ok) break;
    const int* c = m.collOf[size_t(r)].find(id);
    if (!c) {
      ok = false;
      break;
    }
    const CollInstance& inst = m.colls[size_t(*c)];
    ok = parts.count(inst.members) > 0 &&
         std::all_of(inst.nodes.begin(), inst.nodes.end(), [&](ir::NodeId x) { return x == id; });
  }
  groupChecked_[key] = ok;
  return ok;
}

// A collective over group A or B acts on that group's layout; the other's
// carries through, unless the collective cuts or joins the dim it splits.
std::vector<Fact> Folder::collective2(const ir::Node& n, const std::vector<Fact>& in) {
  const std::string& group = ir::attrStr(n.attrs, "group");
  int axis = group == groupA_ ? 0 : -1;
  for (size_t k = 0; k < groupsB_.size(); ++k)
    if (group == groupsB_[k]) axis = int(k + 1);
  if (axis < 0 || !instancesAreGroups(n, axis)) return {};
  const Fact& x = in[0];
  int64_t rank = int64_t(g_->value(n.inputs[0]).type.shape.size());
  std::vector<int64_t> touched;
  for (const char* a : {"dim", "split_dim", "concat_dim"})
    if (n.attrs.count(a))
      if (auto d = ir::normAxis(ir::attrInt(n.attrs, a), rank, a); d.ok()) touched.push_back(*d);
  auto touches = [&](Lay l, int64_t d) {
    return l == Lay::Split && std::find(touched.begin(), touched.end(), d) != touched.end();
  };
  // The groups nest in order (A innermost): a group's collective cuts or
  // joins its own pieces of a dim whole when no inner group splits it
  // (outer groups' pieces of it carry over: sequence parallel's
  // all_gather over tp inside a cp chunk); an inner group's split of a
  // touched dim would interleave the pieces.
  if (axis == 0) {
    Fact p = x;
    p.moreRepAll();
    auto r = collective(n, {p}, false);
    if (r.size() != 1) return {};
    r[0].moreAs(x);
    if (!nestedAllowed(r[0]) || !zigNestOk(r[0])) return {};
    return r;
  }
  const size_t k = size_t(axis - 1);
  if (touches(x.lay, x.dim) || (!x.plain() && x.lay == Lay::Split && touches(Lay::Split, x.innerDim))) return {};
  for (size_t b = 0; b < k; ++b)
    if (touches(x.layB[b], x.dimB[b])) return {};
  swapB(k);
  auto r = collective(n, {secondaryView(x, k)}, false);
  swapB(k);
  if (r.size() != 1 || !r[0].plain()) return {};
  Fact out = x;
  out.layB[k] = r[0].lay;
  out.dimB[k] = r[0].dim;
  out.zigB[k] = r[0].zig;
  out.v = r[0].v;
  if (!nestedAllowed(out) || !zigNestOk(out)) return {};
  return {out};
}

// A D input's layout over the groups: split over at most one of them (any
// layout over A, a plain split over a B group), each rank's relation the
// one its position there gives; or split over several (splitOverGroups).
std::optional<Fact> Folder::inputFact2(const std::string& name, const TensorType& local, const Bound& bound) {
  auto it = bound.find(name);
  if (it == bound.end()) return std::nullopt;
  for (const auto& row : grid_)
    for (int64_t r : row)
      if (!it->second[size_t(r)]) return std::nullopt;
  // Along each group's line through rank 0: the same relation everywhere
  // (replicated over that group, whatever it holds), or a layout.
  auto same = [&](const std::vector<int64_t>& line) {
    return std::all_of(line.begin(), line.end(),
                       [&](int64_t r) { return equal(*it->second[size_t(r)], *it->second[size_t(line[0])]); });
  };
  std::vector<size_t> varying;
  for (size_t g = 0; g <= nB_.size(); ++g)
    if (!same(lineOf(g))) varying.push_back(g);
  if (varying.size() > 1) {
    if (auto f = splitOverGroups(it->second, local)) return f;
    return zigSplitOverGroups(it->second, local);
  }
  const size_t g = varying.empty() ? 0 : varying[0];
  auto saved = members_;
  members_ = lineOf(g);
  if (g > 0) swapB(g - 1);
  std::optional<Fact> f = inputFact(name, local, bound);
  if (g > 0) swapB(g - 1);
  members_ = saved;
  if (!f || (varying.empty() && f->lay != Lay::Rep)) return std::nullopt;
  if (g > 0) {
    // the further groups' layouts are plain (not zigzag chunks either)
    if (f->lay != Lay::Split || !f->plain()) return std::nullopt;
    f = splitOverB(*f, g - 1);
  }
  // Every rank's relation is that of its position on group g's line.
  for (size_t j = 0; j < grid_.size(); ++j)
    for (size_t i = 0; i < grid_[j].size(); ++i) {
      int64_t like = g == 0 ? grid_[0][i]
                            : grid_[size_t((int64_t(j) / strideB_[g - 1] % nB_[g - 1]) * strideB_[g - 1])][0];
      if (!equal(*it->second[size_t(grid_[j][i])], *it->second[size_t(like)])) return std::nullopt;
    }
  return f;
}

// The box a relation cuts out of one S tensor: slices (nested, on any dims)
// of a seq leaf; per dim [start, end). nullopt: another form.
std::optional<std::pair<std::string, std::map<int64_t, std::pair<int64_t, int64_t>>>> sliceBox(const Rel& r,
                                                                                               const ir::Graph& seq) {
  if (r.op == RelOp::Seq) return std::make_pair(r.name, std::map<int64_t, std::pair<int64_t, int64_t>>{});
  if (r.op != RelOp::Slice || r.start.kind != IntExpr::Kind::Const || r.end.kind != IntExpr::Kind::Const)
    return std::nullopt;
  auto inner = sliceBox(*r.args[0], seq);
  if (!inner) return std::nullopt;
  auto v = seq.findValue(inner->first);
  if (!v) return std::nullopt;
  const auto& shape = seq.value(*v).type.shape;
  auto d = ir::normAxis(r.dim, int64_t(shape.size()), "slice");
  if (!d.ok() || !shape[size_t(*d)].isConcrete()) return std::nullopt;
  auto [lo, hi] = inner->second.count(*d) ? inner->second[*d] : std::make_pair(int64_t(0), shape[size_t(*d)].value());
  int64_t s = lo + r.start.value, e = lo + r.end.value;
  if (r.start.value < 0 || e < s || e > hi) return std::nullopt;
  inner->second[*d] = {s, e};
  return inner;
}

// A D input split over several groups: the rank at A position i and B
// positions j_k holds, along each dim, the piece its splitting groups'
// positions give, groups splitting one dim nested in group order (A
// innermost): offset the sum of step_g * position_g, the innermost's step
// the local extent and each next one's the one before times its size (the
// rows idx(r,cp)*8 + idx(r,tp)*4 of sequence parallel inside context
// parallel chunks); every other dim whole. The relations may nest the
// slices in any order (compared as boxes).
std::optional<Fact> Folder::zigSplitOverGroups(const std::vector<RelPtr>& rels, const TensorType& local) {
  const size_t G = nB_.size() + 1;
  if (!use("zigzag-chunks")) return std::nullopt;
  // S's shapes as the relations read them (a micro-batch copy's piece)
  auto seqShape = [&](const std::string& n) { return seqShapeOf(n, true); };
  std::vector<std::vector<std::optional<RelBoxes>>> got(grid_.size());
  for (size_t j = 0; j < grid_.size(); ++j)
    for (int64_t r : grid_[j]) got[j].push_back(relBoxes(*rels[size_t(r)], seqShape));
  if (!got[0][0]) return std::nullopt;
  auto v = seq_.findValue(got[0][0]->leaf);
  if (!v) return std::nullopt;
  const TensorType whole = wholeType(*v);
  const int64_t R = int64_t(whole.shape.size());
  if (int64_t(local.shape.size()) != R || whole.dtype != local.dtype || !ir::isConcrete(local.shape)) return std::nullopt;
  // The dim each group moves along: where rank 0's pieces and its
  // neighbour's along the group cover other ranges (pieces joined where
  // adjacent, so their count may differ).
  std::vector<int64_t> dimOf(G, -1);
  for (size_t g = 0; g < G; ++g) {
    const auto& b1 = g == 0 ? got[0][1] : got[size_t(strideB_[g - 1])][0];
    if (!b1 || b1->leaf != got[0][0]->leaf) return std::nullopt;
    for (int64_t d = 0; d < R; ++d) {
      std::set<std::pair<int64_t, int64_t>> x, y;
      for (const auto& b : got[0][0]->list) x.insert(b[size_t(d)]);
      for (const auto& b : b1->list) y.insert(b[size_t(d)]);
      if (x == y) continue;
      if (dimOf[g] >= 0) return std::nullopt;
      dimOf[g] = d;
    }
  }
  // The pieces rank (i, j) holds under layout f, outer groups first.
  auto expected = [&](const Fact& f, int64_t i, int64_t j) -> std::optional<RelBoxes> {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> runs;
    runs.resize(size_t(R));
    for (int64_t d = 0; d < R; ++d) runs[size_t(d)] = {{0, whole.shape[size_t(d)].value()}};
    auto cut = [&](int64_t d, int64_t N, int64_t p, bool zig) {
      std::vector<std::vector<std::pair<int64_t, int64_t>>> as;
      for (const auto& r : runs[size_t(d)]) as.push_back({r});
      int64_t L = 0;
      for (const auto& r : runs[size_t(d)]) L += r.second - r.first;
      const int64_t parts = zig ? 2 * N : N;
      if (L % parts) return false;
      const int64_t w = L / parts;
      std::vector<std::pair<int64_t, int64_t>> out;
      for (int64_t q : zig ? std::vector<int64_t>{p, 2 * N - 1 - p} : std::vector<int64_t>{p})
        for (const auto& b : cutBoxes(as, 0, q * w, (q + 1) * w)) {
          if (!out.empty() && out.back().second == b[0].first) out.back().second = b[0].second;
          else out.push_back(b[0]);
        }
      runs[size_t(d)] = std::move(out);
      return true;
    };
    for (size_t k = nB_.size(); k-- > 0;)
      if (f.layB[k] == Lay::Split && !cut(f.dimB[k], nB_[k], j / strideB_[k] % nB_[k], f.zigB[k])) return std::nullopt;
    if (f.lay == Lay::Split && !cut(f.dim, n_, i, f.zig)) return std::nullopt;
    RelBoxes b{got[0][0]->leaf, -1, {{}}};
    for (int64_t d = 0; d < R; ++d) b.list[0].push_back(runs[size_t(d)][0]);
    for (int64_t d = 0; d < R; ++d) {
      if (runs[size_t(d)].size() == 1) continue;
      if (b.dim >= 0) return std::nullopt;
      b.dim = d;
      auto proto = b.list[0];
      b.list.clear();
      for (const auto& r : runs[size_t(d)]) {
        proto[size_t(d)] = r;
        b.list.push_back(proto);
      }
    }
    return b;
  };
  for (size_t z = 0; z < G; ++z) {  // the group in zigzag chunks
    if (dimOf[z] < 0) continue;
    Fact f{Lay::Rep, 0, {seqNode(*v), 1.0}};
    if (dimOf[0] >= 0) f.lay = Lay::Split, f.dim = dimOf[0];
    for (size_t k = 0; k + 1 < G; ++k)
      if (dimOf[k + 1] >= 0) f.layB[k] = Lay::Split, f.dimB[k] = dimOf[k + 1];
    if (z == 0) f.zig = true;
    else f.zigB[z - 1] = true;
    if (!(globalOf(local, f) == whole) || !zigNestOk(f)) continue;
    bool all = true;
    for (size_t j = 0; all && j < grid_.size(); ++j)
      for (size_t i = 0; all && i < grid_[j].size(); ++i) {
        auto want = expected(f, int64_t(i), int64_t(j));
        all = want && got[j][i] && *want == *got[j][i];
      }
    if (all && nestedAllowed(f)) return f;
  }
  return std::nullopt;
}

std::optional<Fact> Folder::splitOverGroups(const std::vector<RelPtr>& rels, const TensorType& local) {
  const size_t G = nB_.size() + 1;
  auto box0 = sliceBox(*rels[size_t(grid_[0][0])], seq_);
  if (!box0) return std::nullopt;
  auto v = seq_.findValue(box0->first);
  if (!v) return std::nullopt;
  const TensorType whole = wholeType(*v);
  const int64_t R = int64_t(whole.shape.size());
  if (int64_t(local.shape.size()) != R || whole.dtype != local.dtype || !ir::isConcrete(whole.shape) ||
      !ir::isConcrete(local.shape))
    return std::nullopt;
  using Box = std::map<int64_t, std::pair<int64_t, int64_t>>;
  auto range = [&](const Box& box, int64_t d) {
    return box.count(d) ? box.at(d) : std::make_pair(int64_t(0), whole.shape[size_t(d)].value());
  };
  auto sizeOf = [&](size_t g) { return g == 0 ? n_ : nB_[g - 1]; };
  // The dim each group cuts and its step: where rank 0's neighbour along it differs.
  std::vector<int64_t> dimOf(G, -1), step(G, 0);
  for (size_t g = 0; g < G; ++g) {
    int64_t r1 = g == 0 ? grid_[0][1] : grid_[size_t(strideB_[g - 1])][0];
    auto b1 = sliceBox(*rels[size_t(r1)], seq_);
    if (!b1 || b1->first != box0->first) return std::nullopt;
    for (int64_t d = 0; d < R; ++d) {
      auto x = range(box0->second, d), y = range(b1->second, d);
      if (x == y) continue;
      if (dimOf[g] >= 0 || y.first <= x.first || y.second - y.first != x.second - x.first) return std::nullopt;
      dimOf[g] = d, step[g] = y.first - x.first;
    }
  }
  Fact f{Lay::Rep, 0, {seqNode(*v), 1.0}};
  if (dimOf[0] >= 0) f.lay = Lay::Split, f.dim = dimOf[0];
  for (size_t k = 0; k + 1 < G; ++k)
    if (dimOf[k + 1] >= 0) f.layB[k] = Lay::Split, f.dimB[k] = dimOf[k + 1];
  if (!(globalOf(local, f) == whole)) return std::nullopt;
  for (int64_t d = 0; d < R; ++d) {
    int64_t want = local.shape[size_t(d)].value();
    for (size_t g = 0; g < G; ++g)
      if (dimOf[g] == d) {
        if (step[g] != want) return std::nullopt;
        want *= sizeOf(g);
      }
  }
  if (!nestedAllowed(f)) return std::nullopt;
  // Every rank's box is exactly its pieces.
  for (size_t j = 0; j < grid_.size(); ++j)
    for (size_t i = 0; i < grid_[j].size(); ++i) {
      auto box = sliceBox(*rels[size_t(grid_[j][i])], seq_);
      if (!box || box->first != box0->first) return std::nullopt;
      std::vector<int64_t> start(size_t(R), 0);
      for (size_t g = 0; g < G; ++g) {
        if (dimOf[g] < 0) continue;
        int64_t pos = g == 0 ? int64_t(i) : int64_t(j) / strideB_[g - 1] % nB_[g - 1];
        start[size_t(dimOf[g])] += step[g] * pos;
      }
      for (int64_t d = 0; d < R; ++d) {
        bool split = std::find(dimOf.begin(), dimOf.end(), d) != dimOf.end();
        auto want = split ? std::make_pair(start[size_t(d)], start[size_t(d)] + local.shape[size_t(d)].value())
                          : std::make_pair(int64_t(0), whole.shape[size_t(d)].value());
        if (range(box->second, d) != want) return std::nullopt;
      }
      for (const auto& [d, _] : box->second)
        if (d < 0 || d >= R) return std::nullopt;
    }
  return f;
}

// Micro-batch copies. A D input's relation may cut, along one dim, a piece
// that no folded group's rank moves: micro-batch m of M, the same slice on
// every member, or a group's pieces offset by m times the group's span (the
// batch split over copies, then over data parallel ranks). Peeled off, the
// rest is read as any relation, about that copy's piece of S's tensor; the
// fact adds the copy layout.
std::optional<Fact> Folder::withCut(std::optional<Fact> f, const CopyCut& c, const std::string& name,
                                    const TensorType& local) {
  cut_.reset();
  if (!f || (f->lay == Lay::Sum) || std::count(f->layB.begin(), f->layB.end(), Lay::Sum)) return std::nullopt;
  f->lay3 = Lay::Split, f->dim3 = c.dim, f->idx3 = c.idx, f->cnt3 = c.cnt;
  if (!zigNestOk(*f)) return std::nullopt;  // the copies may not cut a zigzag dim
  copies_ = std::max(copies_, c.cnt);
  auto v = seq_.findValue(name);
  if (!v || !(globalOf(local, *f) == seq_.value(*v).type) || !use("copies-of-pieces")) return std::nullopt;
  return f;
}

std::optional<Fact> Folder::copyTemplateFact(const InputRelation& t, const TensorType& local, const std::string& group) {
  // The slices down to the S leaf, outermost first; each dim cut once.
  std::vector<const Rel*> nest;
  const Rel* r = t.expr.get();
  while (r->op == RelOp::Slice) nest.push_back(r), r = r->args[0].get();
  if (r->op != RelOp::Seq || nest.empty()) return std::nullopt;
  auto v = seq_.findValue(r->name);
  if (!v) return std::nullopt;
  const Shape& sh = seq_.value(*v).type.shape;
  std::optional<CopyCut> cut;
  std::vector<std::pair<IntExpr, IntExpr>> bounds;
  std::set<int64_t> dims;
  for (const Rel* sl : nest) {
    auto d = ir::normAxis(sl->dim, int64_t(sh.size()), "slice");
    auto s = affineForm(sl->start, t.loopVar, dist_), e = affineForm(sl->end, t.loopVar, dist_);
    if (!d.ok() || !dims.insert(*d).second || !s || !e || s->k != e->k || !sh[size_t(*d)].isConcrete())
      return std::nullopt;
    int64_t size = sh[size_t(*d)].value(), w = e->c - s->c, span = w;
    bounds.emplace_back(sl->start, sl->end);
    if (!s->k.empty()) {
      // one group's pieces of width w: their span is the group's size times w
      if (s->k.size() != 1 || s->k.begin()->second != w) continue;
      const AffineAtom& atom = s->k.begin()->first;
      if (atom.isIdx(group)) span = n_ * w;
      else {
        size_t k = 0;
        while (k < groupsB_.size() && !atom.isIdx(groupsB_[k])) ++k;
        if (!twoD_ || k == groupsB_.size()) continue;
        span = nB_[k] * w;
      }
    }
    if (w <= 0 || span >= size || size % span || s->c % span || s->c < 0) continue;
    if (cut) return std::nullopt;
    cut = CopyCut{*d, s->c / span, size / span};
    bounds.back() = {sl->start - IntExpr::constant(s->c), sl->end - IntExpr::constant(s->c)};
  }
  if (!cut) return std::nullopt;
  // The relation without the cut: a constant slice goes, a group's is
  // shifted to the copy's piece.
  RelPtr x = Rel::seq(r->name);
  for (size_t i = nest.size(); i-- > 0;) {
    auto d = ir::normAxis(nest[i]->dim, int64_t(sh.size()), "slice");
    auto s = affineForm(bounds[i].first, t.loopVar, dist_);
    if (*d == cut->dim && s && s->k.empty()) continue;
    x = Rel::slice(x, *d, bounds[i].first, bounds[i].second);
  }
  InputRelation peeled = t;
  peeled.expr = x;
  cut_ = cut;
  std::optional<Fact> f = twoD_ ? templateFact2(peeled, local) : templateFact(peeled, local, group);
  return withCut(f, *cut, r->name, local);
}

std::optional<Fact> Folder::copyInputFact(const std::string& name, const TensorType& local, const Bound& bound) {
  auto it = bound.find(name);
  if (it == bound.end()) return std::nullopt;
  std::vector<int64_t> ranks = members_;
  if (twoD_) {
    ranks.clear();
    for (const auto& row : grid_) ranks.insert(ranks.end(), row.begin(), row.end());
  }
  // Every rank's pieces of one S tensor (boxes, concatenated along a dim:
  // a zigzag chunk is two); the one dim no rank's pieces leave, whose
  // pieces together span one piece of it.
  auto seqShape = [&](const std::string& n) { return seqShapeOf(n, false); };
  std::vector<RelBoxes> boxes;
  for (int64_t rk : ranks) {
    if (!it->second[size_t(rk)]) return std::nullopt;
    auto b = relBoxes(*it->second[size_t(rk)], seqShape);
    if (!b || (!boxes.empty() && b->leaf != boxes[0].leaf)) return std::nullopt;
    boxes.push_back(std::move(*b));
  }
  const std::string leaf = boxes[0].leaf;
  const Shape sh = *seqShape(leaf);
  std::optional<CopyCut> cut;
  int64_t lo = 0;
  for (size_t d = 0; d < sh.size(); ++d) {
    int64_t size = sh[d].value(), a = size, b = 0;
    for (const auto& rb : boxes)
      for (const auto& box : rb.list) a = std::min(a, box[d].first), b = std::max(b, box[d].second);
    int64_t span = b - a;
    if (span <= 0 || span >= size || size % span || a % span) continue;
    if (cut) return std::nullopt;
    cut = CopyCut{int64_t(d), a / span, size / span};
    lo = a;
  }
  if (!cut) return std::nullopt;
  // Each rank's relation about the copy's piece: the slice nearest the
  // leaf along the cut dim shifted into it (gone where it takes the whole
  // piece); what it selects then checked against the boxes, shifted.
  const int64_t R = int64_t(sh.size()), piece = sh[size_t(cut->dim)].value() / cut->cnt;
  auto axis = [&](int64_t d) { return d < 0 ? d + R : d; };
  std::function<bool(const Rel&)> leafChain = [&](const Rel& x) {
    return x.op == RelOp::Seq || (x.op == RelOp::Slice && axis(x.dim) != cut->dim && leafChain(*x.args[0]));
  };
  std::function<RelPtr(const RelPtr&)> peel = [&](const RelPtr& x) -> RelPtr {
    if (x->op == RelOp::Slice && axis(x->dim) == cut->dim && leafChain(*x->args[0])) {
      if (x->start.kind != IntExpr::Kind::Const || x->end.kind != IntExpr::Kind::Const) return nullptr;
      const int64_t s = x->start.value - lo, e = x->end.value - lo;
      if (s == 0 && e == piece) return x->args[0];
      return Rel::slice(x->args[0], cut->dim, IntExpr::constant(s), IntExpr::constant(e));
    }
    if (x->args.empty()) return x;
    auto out = std::make_shared<Rel>(*x);
    for (auto& arg : out->args)
      if (!(arg = peel(arg))) return nullptr;
    return out;
  };
  auto pieceShape = [&](const std::string& n) -> std::optional<Shape> {
    if (n != leaf) return std::nullopt;
    Shape p = sh;
    p[size_t(cut->dim)] = Dim(piece);
    return p;
  };
  Bound peeled;
  auto& rels = peeled[name];
  rels.assign(it->second.size(), nullptr);
  for (size_t i = 0; i < ranks.size(); ++i) {
    RelPtr x = peel(it->second[size_t(ranks[i])]);
    if (!x) return std::nullopt;
    RelBoxes want = boxes[i];
    for (auto& box : want.list) box[size_t(cut->dim)].first -= lo, box[size_t(cut->dim)].second -= lo;
    auto got = relBoxes(*x, pieceShape);
    if (!got || !(*got == want)) return std::nullopt;
    rels[size_t(ranks[i])] = x;
  }
  cut_ = cut;
  std::optional<Fact> f = twoD_ ? inputFact2(name, local, peeled) : inputFact(name, local, peeled);
  return withCut(f, *cut, leaf, local);
}


// Several groups, each a partition of the world, whose groups cross: the
// ranks joined by them fall into classes (pipeline stages of a [pp, dp,
// tp] mesh; the whole world without send/recv), each a product of one
// group of each: grids_[c][j][i] is the rank at A position i and B
// positions j (mixed radix) of class c. A is the first group of
// consecutive ranks when one is (else the first); the further groups nest
// outside it in the order of their ranks' stride (Megatron's tp, cp, dp).
std::string Folder::setupND(const std::vector<std::string>& groups) {
  const int64_t world = dist_.worldSize();
  const size_t G = groups.size();
  std::vector<ir::GroupPartition> parts;
  // per group, rank -> (part, position)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> at(G, std::vector<std::pair<int64_t, int64_t>>(size_t(world), {-1, -1}));
  std::vector<int64_t> size(G), stride(G);
  std::vector<bool> contiguous(G);
  for (size_t g = 0; g < G; ++g) {
    auto p = dist_.partition(groups[g]);
    if (!p.ok() || p->empty()) return "group " + groups[g] + " not found";
    parts.push_back(*p);
    for (size_t q = 0; q < p->size(); ++q)
      for (size_t i = 0; i < (*p)[q].size(); ++i) {
        int64_t r = (*p)[q][i];
        if (r < 0 || r >= world || at[g][size_t(r)].first >= 0) return "group " + groups[g] + " is no partition";
        at[g][size_t(r)] = {int64_t(q), int64_t(i)};
      }
    for (int64_t r = 0; r < world; ++r)
      if (at[g][size_t(r)].first < 0) return "rank " + std::to_string(r) + " outside group " + groups[g];
    const auto& p0 = (*p)[size_t(at[g][0].first)];
    size[g] = int64_t(p0.size());
    stride[g] = size[g] > 1 ? p0[1] - p0[0] : 0;
    contiguous[g] = p0.back() - p0.front() + 1 == size[g];
    for (const auto& q : *p)
      if (int64_t(q.size()) != size[g]) return "groups of different sizes";
    if (size[g] < 2) return "group " + groups[g] + " of one rank";
  }
  std::vector<size_t> order(G);
  for (size_t g = 0; g < G; ++g) order[g] = g;
  auto first = std::find(contiguous.begin(), contiguous.end(), true);
  size_t a = first == contiguous.end() ? 0 : size_t(first - contiguous.begin());
  order.erase(order.begin() + long(a));
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return stride[x] < stride[y]; });
  groupA_ = groups[a];
  n_ = size[a];
  groupsB_.clear(), nB_.clear(), strideB_.clear();
  int64_t cells = n_, prod = 1;
  for (size_t g : order) {
    groupsB_.push_back(groups[g]);
    nB_.push_back(size[g]);
    strideB_.push_back(prod);
    prod *= size[g];
    cells *= size[g];
  }
  if (world % cells != 0) return "groups do not cross the world";
  auto partOf = [&](size_t g, int64_t r) -> const std::vector<int64_t>& { return parts[g][size_t(at[g][size_t(r)].first)]; };
  std::vector<bool> placed(size_t(world), false);
  classes_.clear();
  grids_.clear();
  for (int64_t start = 0; start < world; ++start) {
    if (placed[size_t(start)]) continue;
    std::vector<std::vector<int64_t>> grid;
    for (int64_t j = 0; j < prod; ++j) {
      int64_t r = start;
      for (size_t k = 0; k < order.size(); ++k) {
        const auto& line = partOf(order[k], r);
        int64_t jk = j / strideB_[k] % nB_[k];
        if (at[order[k]][size_t(r)].second != 0) return "group " + groupsB_[k] + " does not start at rank " + std::to_string(r);
        r = line[size_t(jk)];
      }
      if (at[a][size_t(r)].second != 0) return "group " + groupA_ + " does not start at rank " + std::to_string(r);
      grid.push_back(partOf(a, r));
    }
    // Each group's part through each cell is the cell's line along it, in order.
    for (int64_t j = 0; j < prod; ++j)
      for (int64_t i = 0; i < n_; ++i) {
        int64_t r = grid[size_t(j)][size_t(i)];
        if (placed[size_t(r)]) return "groups do not cross";
        placed[size_t(r)] = true;
        for (size_t k = 0; k < order.size(); ++k) {
          int64_t jk = j / strideB_[k] % nB_[k];
          const auto& line = partOf(order[k], r);
          if (at[order[k]][size_t(r)].second != jk) return "groups do not cross";
          for (int64_t p = 0; p < nB_[k]; ++p)
            if (line[size_t(p)] != grid[size_t(j + (p - jk) * strideB_[k])][size_t(i)]) return "groups do not cross";
        }
      }
    std::vector<int64_t> all;
    for (const auto& row : grid) all.insert(all.end(), row.begin(), row.end());
    classes_.push_back(std::move(all));
    grids_.push_back(std::move(grid));
  }
  grid_ = grids_[0];
  twoD_ = true;
  return "";
}

namespace {
// S's value from N members' chunks in zigzag order along d (chunk(m):
// member m's, ext long on d): S's piece q of 2N is the first half of
// member q's chunk (q < N), else the second half of member 2N - 1 - q's.
RelPtr zigRebuild(int64_t N, int64_t d, int64_t ext, const std::function<RelPtr(int64_t)>& chunk) {
  if (ext % 2) return nullptr;
  const int64_t half = ext / 2;
  std::vector<RelPtr> parts;
  for (int64_t q = 0; q < 2 * N; ++q) {
    RelPtr c = chunk(q < N ? q : 2 * N - 1 - q);
    if (!c) return nullptr;
    const int64_t at = q < N ? 0 : half;
    parts.push_back(Rel::slice(c, d, IntExpr::constant(at), IntExpr::constant(at + half)));
  }
  return Rel::concat(d, parts);
}
}  // namespace

// The relation an S value has over D when D's value holds it in layout f
// (local: the shape of D's value).
RelPtr Folder::rebuild2(const Fact& f, const std::string& name, const Shape& local) const {
  auto overA = [&](const std::vector<int64_t>& row) -> RelPtr {
    if (f.lay == Lay::Rep) return Rel::dist(IntExpr::constant(row[0]), name);
    if (f.lay == Lay::Split && f.zig) {
      if (size_t(f.dim) >= local.size() || !local[size_t(f.dim)].isConcrete()) return nullptr;
      return zigRebuild(n_, f.dim, local[size_t(f.dim)].value(),
                        [&](int64_t m) { return Rel::dist(IntExpr::constant(row[size_t(m)]), name); });
    }
    std::vector<RelPtr> parts;
    for (int64_t r : row) parts.push_back(Rel::dist(IntExpr::constant(r), name));
    return f.lay == Lay::Split ? Rel::concat(f.dim, parts) : Rel::sum(parts);
  };
  // Group B_k over the relations of the inner groups at B positions j
  // (j_k = 0; the outer groups' positions fixed by j).
  std::function<RelPtr(size_t, int64_t)> over = [&](size_t k, int64_t j) -> RelPtr {
    if (k == 0) return overA(grid_[size_t(j)]);
    const size_t b = k - 1;
    if (f.layB[b] == Lay::Rep) return over(k - 1, j);
    std::vector<RelPtr> parts;
    if (f.layB[b] == Lay::Split && f.zigB[b]) {
      // a member's chunk is what the inner groups rebuild at it
      const int64_t d = f.dimB[b];
      if (size_t(d) >= local.size() || !local[size_t(d)].isConcrete()) return nullptr;
      int64_t ext = local[size_t(d)].value() * (f.lay == Lay::Split && f.dim == d ? n_ : 1);
      for (size_t i = 0; i < b; ++i)
        if (f.layB[i] == Lay::Split && f.dimB[i] == d) ext *= nB_[i];
      return zigRebuild(nB_[b], d, ext, [&](int64_t m) { return over(k - 1, j + m * strideB_[b]); });
    }
    for (int64_t p = 0; p < nB_[b]; ++p) {
      parts.push_back(over(k - 1, j + p * strideB_[b]));
      if (!parts.back()) return nullptr;
    }
    return f.layB[b] == Lay::Split ? Rel::concat(f.dimB[b], parts) : Rel::sum(parts);
  };
  return over(nB_.size(), 0);
}

// The D values of the current class where a sum of the partial sums `v`
// holds belongs. Walking back through the ops that carried them (their
// operands holding partial sums too), the origins are the first values
// whose producer took none (a contraction of whole or split operands) or
// that are inputs; with several (a SwiGLU's two input-gradient matmuls,
// added), first the earliest carried value reached from all of them, where
// one sum covers every term, then the origins in program order; at most
// four.
std::vector<std::string> Folder::partialSumOrigins(ir::ValueId v) const {
  std::vector<ir::ValueId> carried;  // v and the values it was carried from
  std::vector<bool> seen(g_->values().size(), false);
  std::vector<ir::ValueId> work{v};
  seen[size_t(v)] = true;
  std::vector<ir::ValueId> origins;
  while (!work.empty()) {
    ir::ValueId x = work.back();
    work.pop_back();
    carried.push_back(x);
    int64_t p = g_->value(x).producer;
    bool fromSums = false;
    if (p >= 0)
      for (ir::ValueId u : g_->node(ir::NodeId(p)).inputs)
        if ((*facts_)[size_t(u)].lay == Lay::Sum) {
          fromSums = true;
          if (!seen[size_t(u)]) {
            seen[size_t(u)] = true;
            work.push_back(u);
          }
        }
    if (!fromSums) origins.push_back(x);
  }
  std::sort(origins.begin(), origins.end());
  std::sort(carried.begin(), carried.end());  // program order: operands first
  std::vector<ir::ValueId> out;
  if (origins.size() > 1) {
    // The origins each carried value is reached from, in program order.
    std::map<ir::ValueId, std::set<ir::ValueId>> from;
    for (ir::ValueId x : carried) {
      std::set<ir::ValueId>& mine = from[x];
      if (std::binary_search(origins.begin(), origins.end(), x)) mine.insert(x);
      int64_t p = g_->value(x).producer;
      if (p >= 0)
        for (ir::ValueId u : g_->node(ir::NodeId(p)).inputs)
          if (auto it = from.find(u); it != from.end()) mine.insert(it->second.begin(), it->second.end());
      if (mine.size() == origins.size()) {
        out.push_back(x);
        break;
      }
    }
  }
  out.insert(out.end(), origins.begin(), origins.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < out.size() && i < 4; ++i) names.push_back(g_->value(out[i]).name);
  return names;
}

FoldOutcome Folder::run() {
  FoldOutcome res;
  int64_t world = dist_.worldSize();
  if (world < 1) return res.why = "no rank", res;
  // The group every collective acts on; its parts are the classes.
  std::set<std::string> groups;
  bool p2p = false;
  for (int64_t c = 0; c < dist_.numClasses(); ++c)
    for (const auto& n : dist_.classGraph(c).nodes()) {
      p2p = p2p || n.op == OpKind::Send || n.op == OpKind::Recv;
      if (ir::opInfo(n.op).category == OpCategory::Collective && !(n.op == OpKind::Send || n.op == OpKind::Recv))
        groups.insert(ir::attrStr(n.attrs, "group"));
    }
  // Groups of one rank each (tp = 1) fold nothing: their collectives are
  // identities (transfer, oneMemberEach).
  for (auto it = groups.begin(); it != groups.end();) {
    auto part = dist_.partition(*it);
    bool solo = part.ok() && std::all_of(part->begin(), part->end(), [](const auto& p) { return p.size() == 1; });
    it = solo ? groups.erase(it) : std::next(it);
  }
  if (!more_.empty()) {
    // (an axis some collective already names is folded anyway)
    size_t added = 0;
    for (const auto& m : more_) added += groups.insert(m).second ? 1 : 0;
    if (added == 0) return res.why = "no group to add", res;
  }
  if (groups.size() > kMaxMoreGroups + 1)
    return res.why = "collectives over more than " + std::to_string(kMaxMoreGroups + 1) + " groups", res;
  std::vector<RankDomain> domains;
  if (groups.size() >= 2) {
    std::string bad = setupND(std::vector<std::string>(groups.begin(), groups.end()));
    if (!bad.empty()) return res.why = bad, res;
    RankDomain d;
    d.group = groupA_;
    domains.assign(classes_.size(), d);
    res.group = groupA_;
    std::string names, sizes;
    for (size_t k = groupsB_.size(); k-- > 0;) names += groupsB_[k] + " x ", sizes += std::to_string(nB_[k]) + " x ";
    res.foldedOver = "groups " + names + groupA_ + " (" + sizes + std::to_string(n_) + " ranks" +
                     (classes_.size() > 1 ? ", in " + std::to_string(classes_.size()) + " pipeline stages" : "") + ")";
  } else if (groups.empty() && p2p) {
    // Pipeline stages and no group collective (tp = 1): each rank a class
    // of its own, its values' layouts whole, its recvs what its peer sent.
    for (int64_t r = 0; r < world; ++r) {
      classes_.push_back({r});
      domains.push_back(RankDomain{true, r, r, ""});
    }
    res.group = "each rank";
  } else if (groups.empty()) {
    std::vector<int64_t> all;
    for (int64_t r = 0; r < world; ++r) all.push_back(r);
    classes_.push_back(all);
    RankDomain d;
    const auto& axes = dist_.mesh().axes;
    if (axes.size() == 1) d.group = axes[0].name;
    else d = RankDomain{true, 0, world - 1, ""};
    domains.push_back(d);
    res.group = d.str();
  } else {
    auto part = dist_.partition(*groups.begin());
    size_t covered = 0;
    if (part.ok())
      for (const auto& p : *part) covered += p.size();
    if (!part.ok() || int64_t(covered) != world || part->empty())
      return res.why = "group " + *groups.begin() + " does not span the ranks", res;
    classes_ = *part;
    res.group = *groups.begin();
    for (const auto& c : classes_) {
      // The first class is the group itself; others name their ranks.
      bool contiguous = c.back() - c.front() + 1 == int64_t(c.size());
      RankDomain d;
      if (&c == &classes_.front() && std::find(c.begin(), c.end(), 0) != c.end()) d.group = res.group;
      else if (contiguous) d = RankDomain{true, c.front(), c.back(), ""};
      else d = RankDomain{true, -1, -2, ""};  // no comprehension: concrete parts
      domains.push_back(d);
    }
  }
  if (!twoD_) n_ = int64_t(classes_[0].size());
  for (const auto& c : classes_)
    if (!twoD_ && int64_t(c.size()) != n_) return res.why = "groups of different sizes", res;
  res.groupSize = twoD_ ? n_ * nAllB() : n_;
  where_.assign(size_t(world), {-1, -1});
  for (size_t c = 0; c < classes_.size(); ++c)
    for (size_t i = 0; i < classes_[c].size(); ++i) where_[size_t(classes_[c][i])] = {int64_t(c), int64_t(i)};
  for (const auto& c : classes_) {
    graphs_.push_back(&dist_.rank(c[0]));
    for (int64_t r : c)
      if (r != c[0] && !dist_.sameClass(r, c[0]) &&
          !sameGraph(*graphs_.back(), dist_.rank(r), &bySlice_[graphs_.size() - 1]))
        return res.why = kDifferentGraphs, res;
    // Point-to-point peers: member i of this class with member i of one
    // other class (the same stage position), whatever the member.
    const ir::Graph& g = *graphs_.back();
    for (const auto& n : g.nodes()) {
      if (n.op != OpKind::Send && n.op != OpKind::Recv) continue;
      int64_t peerClass = -2;
      for (size_t i = 0; i < c.size(); ++i) {
        const auto& ni = dist_.rank(c[i]).node(ir::NodeId(&n - g.nodes().data()));
        auto resolved = dist_.peerOf(c[i], ni);
        int64_t peer = resolved.ok() ? *resolved : -1;
        if (peer < 0 || peer >= world) return res.why = "a peer outside the world", res;
        auto [pc, pos] = where_[size_t(peer)];
        if (pos != int64_t(i) || (peerClass != -2 && pc != peerClass)) return res.why = "peers not stage-aligned", res;
        peerClass = pc;
      }
    }
  }
  allFacts_.resize(classes_.size());
  for (size_t c = 0; c < classes_.size(); ++c) allFacts_[c].assign(graphs_[c]->values().size(), Fact{});

  // S's values, hash-consed.
  std::vector<Val> sval(seq_.values().size());
  for (ir::ValueId v : seq_.inputs()) sval[size_t(v)] = {ex_.intern("seq " + seq_.value(v).name, seq_.value(v).type), 1.0};
  for (ir::ValueId v : seq_.params()) sval[size_t(v)] = {ex_.intern("seq " + seq_.value(v).name, seq_.value(v).type), 1.0};
  for (const auto& n : seq_.nodes()) {
    std::vector<Val> vin;
    for (ir::ValueId v : n.inputs) vin.push_back(sval[size_t(v)]);
    int64_t inRank = n.inputs.empty() ? 0 : int64_t(seq_.value(n.inputs[0]).type.shape.size());
    for (size_t o = 0; o < n.outputs.size(); ++o)
      sval[size_t(n.outputs[o])] = canon(n.op, n.attrs, vin, int(o), seq_.value(n.outputs[o]).type, inRank);
  }

  sCount_ = int(ex_.size());
  for (const auto& [node, view] : views_)
    if (node < sCount_) sViewsUnitFree_.insert(unitFreeKey(view));

  // D's inputs from the relations, then its ops in order.
  if (in_.templates) {
    for (size_t c = 0; c < classes_.size(); ++c) {
      enter(c);
      // One rank class per folded class: its members' relations are one template's.
      for (int64_t r : classes_[c])
        if (!dist_.sameClass(r, classes_[c][0]))
          return res.needsRanks = true, res.why = "a folded class of several rank classes", res;
      const int64_t cls = dist_.classOf(classes_[c][0]);
      for (const auto* list : {&g_->inputs(), &g_->params()})
        for (ir::ValueId v : *list) {
          const std::string& name = g_->value(v).name;
          if (in_.templates->unrelated.count(name)) continue;
          InputRelation t = *in_.templates->byClass.at({cls, name});
          double k = 1.0;  // scale(R, k): R's layout, its value times k
          if (t.expr && t.expr->op == RelOp::Scale && t.expr->factor != 0) k = t.expr->factor, t.expr = t.expr->args[0];
          auto f = twoD_ ? templateFact2(t, g_->value(v).type) : templateFact(t, g_->value(v).type, res.group);
          if (!f) f = copyTemplateFact(t, g_->value(v).type, res.group);
          if (f) f->v.k *= k;
          if (!f) return res.needsRanks = true, res.why = "relation of '" + name + "' not read as a layout", res;
          (*facts_)[size_t(v)] = settled(*f);
        }
    }
  }
  if (!in_.inputs && !in_.templates) return res.why = "no checked input relations", res;
  Bound bound;
  static const std::vector<CheckedInput> kNone;
  for (const auto& c : in_.inputs ? *in_.inputs : kNone) {
    auto& byRank = bound[c.name];
    if (byRank.empty()) byRank.resize(size_t(world));
    byRank[size_t(c.rank)] = c.expr;
  }
  std::string stuck;  // the first D op with known operands and no schema
  bool stuckCollective = false;
  // The first such op reading partial sums where it is not linear in them
  // (a bias added to them, a nonlinearity): the likely bug.
  std::string sumMisuse;
  std::vector<DistRef> sumMisuseAt;
  std::vector<DistRef> sumOrigins;  // where those partial sums began
  std::string sumMisuseSeq;  // the S value that op computes from whole values, if S has it
  std::string copyMisuse;    // that op mixing micro-batch copies
  std::vector<DistRef> copyMisuseAt;
  // Operands from different micro-batch copies: pieces of two copies, or
  // partial sums over copies no sum joins (a term twice, terms of
  // different values): the likely bug. twiceOnly: a term twice only.
  auto noteCopyMisuse = [&](const ir::Node& n, bool twiceOnly) {
    for (size_t i = 0; i < n.inputs.size() && copyMisuse.empty(); ++i)
      for (size_t j = i + 1; j < n.inputs.size() && copyMisuse.empty(); ++j) {
        const Fact &a = (*facts_)[size_t(n.inputs[i])], &b = (*facts_)[size_t(n.inputs[j])];
        const std::string what = std::string(ir::opName(n.op)) + " '" + n.name + "' (" + n.loc.str() + ")";
        const std::string& an = g_->value(n.inputs[i]).name;
        const std::string& bn = g_->value(n.inputs[j]).name;
        if (!twiceOnly && a.lay3 == Lay::Split && b.lay3 == Lay::Split && a.idx3 != b.idx3)
          copyMisuse = what + " combines micro-batch " + std::to_string(a.idx3) + "'s piece ('" + an +
                       "') with micro-batch " + std::to_string(b.idx3) + "'s ('" + bn + "')";
        if (a.lay3 == Lay::Sum && b.lay3 == Lay::Sum && a.terms3.size() == b.terms3.size()) {
          std::string twice;
          for (size_t m = 0; m < a.terms3.size(); ++m)
            if (a.terms3[m] && b.terms3[m]) twice += (twice.empty() ? "" : ", ") + std::to_string(m);
          const bool allTerms = std::all_of(a.terms3.begin(), a.terms3.end(), [](bool t) { return t; });
          if (!twice.empty() && (a.terms3 != b.terms3 || !allTerms))
            copyMisuse = what + " adds the terms of micro-batch " + twice + " twice ('" + an + "' and '" + bn + "')";
        }
        if (!copyMisuse.empty())
          for (size_t k = 0; k < members_.size() && k < 8; ++k)
            copyMisuseAt.push_back({members_[k], an}), copyMisuseAt.push_back({members_[k], bn});
      }
  };
  for (size_t c = 0; c < classes_.size() && in_.inputs; ++c) {
    enter(c);
    for (const auto* list : {&g_->inputs(), &g_->params()})
      for (ir::ValueId v : *list) {
        const std::string& name = g_->value(v).name;
        // scale(R, k) on every member, one k: R's layout, its value times k
        // (a bias pre-divided by the group size, a weight pre-scaled).
        double k = 1.0;
        const Bound* use = &bound;
        Bound peeled;
        if (auto it = bound.find(name); it != bound.end() && !members_.empty()) {
          const auto& byRank = it->second;
          auto scaleOf = [&](int64_t r) -> const Rel* {
            return size_t(r) < byRank.size() && byRank[size_t(r)] && byRank[size_t(r)]->op == RelOp::Scale
                       ? byRank[size_t(r)].get() : nullptr;
          };
          const Rel* s0 = scaleOf(members_[0]);
          bool all = s0 && std::all_of(members_.begin(), members_.end(), [&](int64_t r) {
                       return scaleOf(r) && scaleOf(r)->factor == s0->factor;
                     });
          if (all && s0->factor != 0) {
            peeled = bound;
            for (auto& rel : peeled[name])
              if (rel && rel->op == RelOp::Scale) rel = rel->args[0];
            use = &peeled;
            k = s0->factor;
          }
        }
        std::optional<Fact> f = twoD_ ? inputFact2(name, g_->value(v).type, *use) : inputFact(name, g_->value(v).type, *use);
        if (!f) f = copyInputFact(name, g_->value(v).type, *use);
        if (f) {
          f->v.k *= k;
          (*facts_)[size_t(v)] = settled(*f);
        }
      }
  }
  // Classes in turn until nothing changes: a stage's recv learns its layout
  // once the sending stage has run. A round that changes nothing ends it,
  // and each other settles at least one more value, so this terminates; a
  // pipeline needs about one round per virtual stage its transfers cross
  // against the class order (the backward's, the interleaved schedule's
  // chunks wrapping from the last stage to the first).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t c = 0; c < classes_.size(); ++c) {
      enter(c);
      for (const auto& n : g_->nodes()) {
        if (!n.outputs.empty() && std::all_of(n.outputs.begin(), n.outputs.end(), [&](ir::ValueId o) {
              return (*facts_)[size_t(o)].lay != Lay::None;
            }))
          continue;
        auto outs = transfer(n);
        if (outs.size() != n.outputs.size() || outs.empty()) continue;
        ++steps_;
        changed = true;
        for (size_t o = 0; o < outs.size(); ++o) {
          asZig(outs[o], g_->value(n.outputs[o]).type);
          (*facts_)[size_t(n.outputs[o])] = settled(outs[o]);
        }
      }
    }
  }
  // The output of S's op of D op n's kind whose inputs are the S values
  // n's operands hold (skipRep: the replicated operands not compared, at
  // least one other is); "" if S has none. A name for the report only.
  auto seqOpOver = [&](const ir::Node& n, bool skipRep) -> std::string {
    for (const ir::Node& sn : seq_.nodes()) {
      if (sn.op != n.op || sn.inputs.size() != n.inputs.size() || sn.outputs.size() != 1) continue;
      size_t compared = 0;
      bool same = true;
      for (size_t i = 0; i < n.inputs.size() && same; ++i) {
        const Fact& f = (*facts_)[size_t(n.inputs[i])];
        if (skipRep && f.lay == Lay::Rep) continue;
        ++compared;
        same = sval[size_t(sn.inputs[i])] == f.v;
      }
      if (same && compared > 0) return seq_.value(sn.outputs[0]).name;
    }
    return "";
  };
  for (size_t c = 0; c < classes_.size() && stuck.empty(); ++c) {
    enter(c);
    for (const auto& n : g_->nodes()) {
      bool outsKnown = std::all_of(n.outputs.begin(), n.outputs.end(),
                                   [&](ir::ValueId o) { return (*facts_)[size_t(o)].lay != Lay::None; });
      bool inputsKnown = std::all_of(n.inputs.begin(), n.inputs.end(),
                                     [&](ir::ValueId v) { return (*facts_)[size_t(v)].lay != Lay::None; });
      // An add of two partial sums over the copies holding one copy's terms
      // twice is the likely bug even where the sum has a layout.
      if (inputsKnown && outsKnown && n.op == OpKind::Add) noteCopyMisuse(n, true);
      if (outsKnown || !inputsKnown || n.op == OpKind::Send) continue;
      stuck = std::string(ir::opName(n.op)) + " '" + n.name + "' (" + n.loc.str() + ") on";
      stuckCollective = ir::opInfo(n.op).category == OpCategory::Collective;
      for (ir::ValueId v : n.inputs) {
        const Fact& f = (*facts_)[size_t(v)];
        stuck += std::string(" ") +
                 (f.lay == Lay::Rep      ? "rep"
                  : f.lay == Lay::Sum    ? "sum"
                  : f.lay == Lay::RunSum ? "sum(" + std::to_string(f.dim) + ", runs of " + std::to_string(f.inner) + ")"
                                         : "split") +
                 (f.lay == Lay::Split ? "(" + std::to_string(f.dim) +
                                            (isBlocked(f.blocks) ? ", " + blockCount(f.blocks).str() + " blocks" : "") +
                                            (f.inner > 1 ? ", runs of " + std::to_string(f.inner) +
                                                               (f.innerDim >= 0 ? " split on " + std::to_string(f.innerDim) : "")
                                                         : "") +
                                            ")"
                                      : "");
        for (size_t k = 0; k < nB_.size(); ++k)
          if (f.layB[k] != Lay::Rep)
            stuck += std::string(f.layB[k] == Lay::Sum ? "+sum" : "+split(" + std::to_string(f.dimB[k]) + ")") + " over " +
                     groupsB_[k];
        if (f.lay3 != Lay::Rep)
          stuck += std::string(f.lay3 == Lay::Sum ? "+sum" : "+split(" + std::to_string(f.dim3) + ")") + " over " +
                   std::to_string(f.cnt3) + " micro-batches";
        if (f.lay == Lay::Sum && sumMisuse.empty()) {
          const std::string& name = g_->value(v).name;
          sumMisuse = "D's '" + name + "' holds partial sums over group " + res.group + " (the sum of dist[r]." +
                      relName(name) + " for r in " + domains[c].str() + "), which " + std::string(ir::opName(n.op)) +
                      " '" + n.name + "' (" + n.loc.str() + ") uses as if whole: missing sum over group " + res.group +
                      " (all_reduce)";
          for (size_t i = 0; i < members_.size() && i < 8; ++i)
            sumMisuseAt.push_back({members_[i], name});
          for (const std::string& o : partialSumOrigins(v))
            if (!members_.empty()) sumOrigins.push_back({members_[0], o});
        }
      }
      // Where the failure shows in S: the value the op computes from the
      // whole values its operands stand for (sums summed, pieces joined,
      // copies as they are), when S computes it too: a column-parallel
      // matmul reading partial sums names S's matmul. Only a name for the
      // report: the witness decides on the outputs.
      bool whole = std::all_of(n.inputs.begin(), n.inputs.end(), [&](ir::ValueId v) {
        Lay l = (*facts_)[size_t(v)].lay;
        return l == Lay::Rep || l == Lay::Sum || l == Lay::Split;
      });
      if (!sumMisuse.empty() && whole && n.outputs.size() == 1) {
        std::vector<Val> vin;
        for (ir::ValueId v : n.inputs) vin.push_back((*facts_)[size_t(v)].v);
        int64_t inRank = n.inputs.empty() ? 0 : int64_t(g_->value(n.inputs[0]).type.shape.size());
        bool pieces = std::any_of(n.inputs.begin(), n.inputs.end(),
                                  [&](ir::ValueId v) { return (*facts_)[size_t(v)].lay == Lay::Split; });
        if (!pieces) {
          Val at = canon(n.op, n.attrs, vin, 0, g_->value(n.outputs[0]).type, inRank);
          for (size_t v = 0; at.node < sCount_ && v < sval.size(); ++v)
            if (sval[v] == at) {
              sumMisuseSeq = seq_.value(ir::ValueId(v)).name;
              break;
            }
        } else {
          // A piece's whole value has S's type, not the rank's: S's op of
          // the same kind over exactly those values.
          sumMisuseSeq = seqOpOver(n, false);
        }
      }
      // The S op this D op stands for, for the report: S's op of the same
      // kind over the values the operands with a group layout hold (the
      // replicated operands may be what D got wrong).
      if (n.outputs.size() == 1) {
        res.stuckAt = seqOpOver(n, true);
        if (!res.stuckAt.empty()) res.stuckText = stuck;
      }
      noteCopyMisuse(n, false);
      break;
    }
  }

  if (!stuck.empty()) spdlog::debug("rank folding: the first D op with no layout over the group is {}", stuck);

  // Each wanted S value, named exactly by a D value's layout.
  auto isSeqOutput = [&](ir::ValueId v) {
    return std::find(seq_.outputs().begin(), seq_.outputs().end(), v) != seq_.outputs().end();
  };
  auto groupLayoutText = [&](const Fact& f, const std::string& name, size_t cl) -> std::string {
    std::string each = "dist[r]." + relName(name) + " for r in " + domains[cl].str();
    if (f.lay == Lay::Rep) return "replicated (every rank's " + relName(name) + ")";
    if (f.lay == Lay::Sum) return "the sum of " + each + " (partial sums over group " + res.group + ")";
    if (f.lay == Lay::RunSum)
      return "along dim " + std::to_string(f.dim) + ", each run of " + std::to_string(f.inner) +
             " ranks' piece the sum of its ranks' " + relName(name) + " (partial sums within runs)";
    if (f.blocks != 1) return "split along dim " + std::to_string(f.dim) + " in " + blockCount(f.blocks).str() + " blocks";
    if (f.inner != 1) return "split along dim " + std::to_string(f.dim) + " over runs of " + std::to_string(f.inner) + " ranks";
    return "the concat of " + each + " along dim " + std::to_string(f.dim);
  };
  auto layoutText = [&](const Fact& f, const std::string& name, size_t cl) {
    std::string copies;
    if (f.lay3 == Lay::Split)
      copies = ", micro-batch " + std::to_string(f.idx3) + "'s piece (of " + std::to_string(f.cnt3) + " along dim " +
               std::to_string(f.dim3) + ")";
    if (f.lay3 == Lay::Sum) {
      std::string some;
      for (size_t m = 0; m < f.terms3.size(); ++m)
        if (f.terms3[m]) some += (some.empty() ? "" : ", ") + std::to_string(m);
      copies = ", summed over micro-batches " + some + " of " + std::to_string(f.cnt3) + " only";
    }
    // the further groups' layouts, where not replicated
    std::string more;
    for (size_t k = 0; k < nB_.size(); ++k) {
      if (f.layB[k] == Lay::Rep) continue;
      more += ", over group " + groupsB_[k] + " " +
              (f.layB[k] == Lay::Sum ? std::string("partial sums")
                                     : "split along dim " + std::to_string(f.dimB[k]) + (f.zigB[k] ? " in zigzag chunks" : ""));
    }
    return groupLayoutText(f, name, cl) + (f.zig ? " in zigzag chunks" : "") + more + copies;
  };
  for (const auto& w : in_.wanted) {
    auto sv = seq_.findValue(w);
    if (!sv) return res.why = "unknown value " + w, res;
    Val target = sval[size_t(*sv)];
    auto exp = in_.expected.find(w);
    std::optional<OutputResult> found;
    // A D output holding S's value in another layout than required (or
    // only partly), for the diagnosis.
    std::optional<std::pair<size_t, ir::ValueId>> other;
    // How S's value is rebuilt from D value c in layout f (of class cl);
    // asIs: a replicated value as the expect line names its rank.
    auto rebuild = [&](const Fact& f, ir::ValueId c, size_t cl,
                       bool asIs) -> std::optional<std::pair<RelPtr, RelPtr>> {
      // A symbolic number of blocks: no relation written with it.
      if (f.lay == Lay::Split && f.blocks < 0) return std::nullopt;
      // a blocked split: rank r's piece of each block ([q_r | k_r | v_r])
      const bool blocked = f.lay == Lay::Split && f.blocks > 1 && f.inner == 1 && f.innerDim < 0 &&
                           (!twoD_ || f.moreRep());
      // runs of ranks each holding one piece (a KV head on several ranks)
      const bool runs = f.lay == Lay::Split && f.blocks == 1 && f.inner > 1 && f.innerDim < 0 && f.segs.empty() &&
                        !twoD_ && n_ % f.inner == 0;
      const std::string& name = g_->value(c).name;
      RelPtr concrete, shown;
      // Each run's piece, `piece(i)` of its members: the first member's, or
      // (partial sums) the sum of all of them.
      auto runPieces = [&](int64_t inner, bool sums, const std::function<RelPtr(int64_t)>& piece,
                           std::vector<RelPtr>& parts) {
        for (int64_t j = 0; j < n_; j += inner) {
          if (!sums) {
            parts.push_back(piece(j));
            continue;
          }
          std::vector<RelPtr> terms;
          for (int64_t i = j; i < j + inner; ++i) terms.push_back(piece(i));
          parts.push_back(Rel::sum(terms));
        }
      };
      auto whole = [&](int64_t i) { return Rel::dist(IntExpr::constant(members_[size_t(i)]), name); };
      if (f.lay == Lay::RunSum) {  // each run's piece: the sum of its members' terms
        if (twoD_ || f.inner < 2 || n_ % f.inner) return std::nullopt;
        std::vector<RelPtr> parts;
        runPieces(f.inner, true, whole, parts);
        concrete = shown = Rel::concat(f.dim, parts);
        return std::make_pair(concrete, shown);
      }
      if (!f.segs.empty() && f.lay == Lay::Split && !twoD_) {
        // each segment: the concat of its pieces, piece j from the first
        // member of run j (a segment every member holds: member 0's)
        std::vector<RelPtr> parts;
        int64_t off = 0;
        for (const Seg& sg : f.segs) {
          runPieces(sg.inner, sg.runSum, [&](int64_t i) {
            return Rel::slice(whole(i), f.dim, IntExpr::constant(off), IntExpr::constant(off + sg.w));
          }, parts);
          off += sg.w;
        }
        concrete = shown = Rel::concat(f.dim, parts);
        return std::make_pair(concrete, shown);
      }
      if (!f.plain() && !blocked && !runs) return std::nullopt;
      if (runs) {
        std::vector<RelPtr> parts;
        runPieces(f.inner, false, whole, parts);
        concrete = shown = Rel::concat(f.dim, parts);
        return std::make_pair(concrete, shown);
      }
      if (f.zig && !twoD_) {
        const Dim& ext = g_->value(c).type.shape[size_t(f.dim)];
        if (f.lay != Lay::Split || !ext.isConcrete()) return std::nullopt;
        concrete = shown = zigRebuild(n_, f.dim, ext.value(), [&](int64_t m) {
          return Rel::dist(IntExpr::constant(members_[size_t(m)]), name);
        });
        if (!concrete) return std::nullopt;
        return std::make_pair(concrete, shown);
      }
      if (blocked) {
        const Dim& ext = g_->value(c).type.shape[size_t(f.dim)];
        if (!ext.isConcrete() || ext.value() % f.blocks) return std::nullopt;
        int64_t k = ext.value() / f.blocks;
        std::vector<RelPtr> parts;
        for (int64_t b = 0; b < f.blocks; ++b)
          for (int64_t r : twoD_ ? grid_[0] : members_)
            parts.push_back(Rel::slice(Rel::dist(IntExpr::constant(r), name), f.dim, IntExpr::constant(b * k),
                                       IntExpr::constant((b + 1) * k)));
        concrete = shown = Rel::concat(f.dim, parts);
      } else if (twoD_) {
        concrete = shown = rebuild2(f, name, g_->value(c).type.shape);
        if (!concrete) return std::nullopt;
        if (asIs && exp != in_.expected.end() && f.lay == Lay::Rep && f.moreRep() && exp->second->op == RelOp::Dist &&
            exp->second->name == name && exp->second->rank.kind == IntExpr::Kind::Const &&
            exp->second->rank.value >= 0 && exp->second->rank.value < dist_.worldSize())
          concrete = exp->second;
      } else if (f.lay == Lay::Rep) {
        concrete = Rel::dist(IntExpr::constant(members_[0]), name);
        shown = concrete;
        if (asIs && exp != in_.expected.end() && exp->second->op == RelOp::Dist && exp->second->name == name &&
            exp->second->rank.kind == IntExpr::Kind::Const &&
            std::find(members_.begin(), members_.end(), exp->second->rank.value) != members_.end())
          concrete = exp->second;
      } else {
        std::vector<RelPtr> parts;
        for (int64_t r : members_) parts.push_back(Rel::dist(IntExpr::constant(r), name));
        concrete = f.lay == Lay::Split ? Rel::concat(f.dim, parts) : Rel::sum(parts);
        shown = concrete;
        const RankDomain& dom = domains[cl];
        if (!dom.isRange || dom.lo <= dom.hi) {
          auto each = Rel::forEach("r", dom, Rel::dist(IntExpr::var("r"), name));
          shown = f.lay == Lay::Split ? Rel::concat(f.dim, {each}) : Rel::sum({each});
        }
      }
      return std::make_pair(concrete, shown);
    };
    for (size_t cl = 0; cl < classes_.size() && !found; ++cl) {
      enter(cl);
      std::vector<ir::ValueId> cands;
      if (isSeqOutput(*sv)) cands = g_->outputs();
      else for (size_t v = 0; v < g_->values().size(); ++v) cands.push_back(ir::ValueId(v));
      for (ir::ValueId c : cands) {
        const Fact& f = (*facts_)[size_t(c)];
        if (f.lay == Lay::None || f.v.node != target.node) continue;
        if (!other) other = std::make_pair(cl, c);
        if (f.lay3 == Lay::Sum || !(f.v == target)) continue;  // a sum over some micro-batches only
        RelPtr concrete, shown;
        if (f.lay3 == Lay::Split) {
          // S's value is the concat of the copies' pieces, each rebuilt
          // over the groups (a part already a concat along the same dim
          // is spliced in: the data parallel ranks' pieces of one copy).
          if (f.idx3 != 0) continue;
          std::vector<RelPtr> parts(size_t(f.cnt3));
          for (ir::ValueId c2 : cands) {
            const Fact& g = (*facts_)[size_t(c2)];
            if (g.lay3 != Lay::Split || !(g.v == f.v) || g.dim3 != f.dim3 || g.cnt3 != f.cnt3 ||
                !g.sameGroupLayout(f) || parts[size_t(g.idx3)])
              continue;
            if (auto b = rebuild(g, c2, cl, false)) parts[size_t(g.idx3)] = b->first;
          }
          if (std::any_of(parts.begin(), parts.end(), [](const RelPtr& p) { return !p; })) continue;
          std::vector<RelPtr> flat;
          for (const auto& p : parts) {
            if (p->op == RelOp::Concat && p->dim == f.dim3) flat.insert(flat.end(), p->args.begin(), p->args.end());
            else flat.push_back(p);
          }
          concrete = shown = Rel::concat(f.dim3, flat);
        } else {
          auto b = rebuild(f, c, cl, true);
          if (!b) continue;
          std::tie(concrete, shown) = *b;
        }
        if (exp != in_.expected.end()) {
          if (!equal(*flatConcats(concrete), *flatConcats(exp->second))) continue;
          shown = exp->second;
        }
        found = OutputResult{w, str(*shown), shown};
        break;
      }
    }
    if (found) {
      res.outputs.push_back(*found);
      continue;
    }
    res.outputs.push_back(OutputResult{w, "", nullptr});
    res.unmatched.push_back(w);
    if (res.unmatched.size() > 1) continue;
    std::string want = exp != in_.expected.end() ? " as expected, " + str(*exp->second) : "";
    if (!copyMisuse.empty()) {
      res.layoutMismatch = res.faultNamed = true;
      res.diagnosis = "no D " + std::string(isSeqOutput(*sv) ? "output" : "value") + " holds S's '" + w + "'" + want +
                      ": " + copyMisuse;
      res.closest = copyMisuseAt;
    } else if (other) {
      enter(other->first);
      const Fact& f = (*facts_)[size_t(other->second)];
      const std::string& name = g_->value(other->second).name;
      res.layoutMismatch = res.faultNamed = true;
      res.diagnosis = "S's '" + w + "' is not what D holds" + want + ": D's '" + name + "' is " +
                      (f.v.k != target.k ? "a multiple (by " + factorText(f.v.k / target.k) + ") of it, " : "it as ") +
                      layoutText(f, name, other->first);
      if (f.lay == Lay::Sum) {
        res.diagnosis += ", which D never adds up: missing sum over group " + res.group + " (all_reduce)";
        res.missingSumGroups.push_back(res.group);
      }
      if (f.lay3 == Lay::Sum) res.diagnosis += ": the other micro-batches' terms are never added";
      for (size_t i = 0; i < members_.size() && i < 8; ++i)
        res.closest.push_back({members_[i], name});
    } else if (!sumMisuse.empty()) {
      res.layoutMismatch = res.faultNamed = true;
      res.failedAt = sumMisuseSeq;
      res.diagnosis = "no D " + std::string(isSeqOutput(*sv) ? "output" : "value") + " holds S's '" + w + "'" + want +
                      ": " + sumMisuse;
      res.closest = sumMisuseAt;
      res.sumOrigins = sumOrigins;
      res.missingSumGroups.push_back(res.group);
    } else if (auto scaled = lastScaledValue(sval)) {
      // The D value nearest the outputs that holds an S value times another
      // factor (an average where S sums): from there on D computes another
      // expression.
      res.layoutMismatch = true;
      res.diagnosis = "no D " + std::string(isSeqOutput(*sv) ? "output" : "value") + " holds S's '" + w + "'" + want +
                      ": " + scaled->first;
      res.closest = scaled->second;
    } else {
      res.diagnosis = "no D " + std::string(isSeqOutput(*sv) ? "output" : "value") + " holds S's '" + w + "'" + want +
                      (stuck.empty() ? "" : "; the first D op with no layout over the group is " + stuck);
      // A collective whose operand's layout it cannot take (a gather of a
      // replicated value, a sum of whole ones, the other group's) is a
      // likely bug rather than a missing schema: the witness goes first.
      // So is a program every op of which has a layout, its outputs exact
      // expressions over S's values, none of them the one wanted (the
      // ranks' pieces of a batch in another order than the outputs'): the
      // witness decides, and only a numeric difference refutes.
      res.layoutMismatch = stuckCollective || stuck.empty();
    }
  }
  res.copies = copies_;
  {  // S values some D value holds as S computes them (a layout over the group)
    std::map<std::pair<int, double>, std::vector<std::string>> names;
    for (size_t v = 0; v < sval.size(); ++v)
      if (sval[v].node >= 0) names[{sval[v].node, sval[v].k}].push_back(seq_.value(ir::ValueId(v)).name);
    for (size_t c = 0; c < classes_.size(); ++c) {
      enter(c);
      for (size_t v = 0; v < g_->values().size(); ++v) {
        const Fact& f = (*facts_)[v];
        if (f.lay == Lay::None || f.lay3 != Lay::Rep) continue;
        if (auto it = names.find({f.v.node, f.v.k}); it != names.end()) res.held.insert(it->second.begin(), it->second.end());
      }
    }
  }
  if (!res.unmatched.empty()) {
    res.why = res.diagnosis;
    return res;
  }
  res.verified = true;
  res.steps = steps_;
  for (const auto& s : used_) {
    std::string line = s + " (";
    const auto& ls = schemaLemmas().at(s);
    for (size_t i = 0; i < ls.size(); ++i) line += (i ? ", " : "") + ls[i];
    res.schemas.push_back(line + ")");
  }
  return res;
}

}  // namespace

FoldOutcome verifyFolded(const FoldInput& in) {
  FoldOutcome one = Folder(in).run();
  if (one.verified || one.group.empty()) return one;
  // Collectives over one group, and another mesh axis the program is laid
  // out over without a collective (forward data parallel: each dp replica
  // holds its batch): fold over both. Trying is sound: folding says
  // verified only when every output is matched.
  // Each other axis alone, then all of them (a program with no collective
  // at all, its inputs laid out over every axis).
  std::optional<FoldOutcome> mismatch;
  bool needsRanks = one.needsRanks;
  std::vector<std::vector<std::string>> tries;
  std::vector<std::string> others;
  for (const auto& a : in.dist->mesh().axes) {
    if (a.size < 2 || a.name == one.group) continue;
    tries.push_back({a.name});
    others.push_back(a.name);
  }
  // Then all of them but those along which the ranks run different graphs
  // (pipeline stages), as each alone showed.
  std::set<std::string> differ;
  const size_t singles = tries.size();
  for (size_t t = 0; t < tries.size(); ++t) {
    const std::vector<std::string> more = tries[t];  // (tries grows below)
    std::string names;
    for (const auto& m : more) names += (names.empty() ? "" : ", ") + m;
    FoldOutcome two = Folder(in, more).run();
    if (t < singles && two.why == kDifferentGraphs) differ.insert(more[0]);
    if (t + 1 == singles) {
      std::vector<std::string> rest;
      for (const auto& o : others)
        if (!differ.count(o)) rest.push_back(o);
      if (rest.size() >= 2 && rest.size() <= kMaxMoreGroups + 1) tries.push_back(rest);
    }
    spdlog::debug("rank folding: with group {} as well: {}", names, two.verified ? "verified" : two.why);
    if (two.verified) return two;
    needsRanks = needsRanks || two.needsRanks;
    if (two.layoutMismatch && !one.layoutMismatch && !mismatch) mismatch = std::move(two);
  }
  FoldOutcome out = mismatch ? std::move(*mismatch) : one;
  out.needsRanks = needsRanks;
  return out;
}

}  // namespace sp::rewrite
