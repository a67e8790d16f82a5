#pragma once
// The relation-inference engine: one e-graph over IR ops and the clean
// relation operators (dist leaves, concat, sum, slice, scale, permute,
// reshape), the lemma library compiled to rewrite rules, saturation under
// budgets and extraction of clean terms. verify.cpp drives it per S op.
//
// Encoding of e-nodes (ENode::op / data):
//   IR op k      op = int(k), data = [attr id (Interner), output index]
//   dist leaf    op = kOpDist, data = [rank, value id in that rank's graph]
//   concat       op = kOpConcat, data = [dim >= 0], two or more kids; built
//                left-nested, and engine_assoc.cpp adds the flat n-ary form
//   sum          op = kOpSum, two or more kids, a multiset: stored sorted by
//                class (EGraph::setCommutative), likewise flattened
//   slice        op = kOpSlice, data = [dim >= 0, start, end]
//   scale        op = kOpScale, data = [bits of the double factor]
//   permute      op = kOpPermute, data = perm
//   reshape      op = kOpReshape, data = [shape id (Interner)]
// IR layout ops are bridged to their relation equivalents when added
// (transpose = permute, reshape/squeeze/unsqueeze = reshape, single-axis
// step-1 slice = slice, concat = concat, split output k = slice, identity =
// its input, expand = concat of copies along each broadcast dim): same
// meaning, part of the trusted relation semantics.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/program.h"
#include "rewrite/engine/egraph.h"
#include "rewrite/lemma/lemma.h"
#include "rewrite/relation/relation.h"

namespace sp::smt {
class Context;
}

namespace sp::rewrite {

inline constexpr int32_t kOpDist = 10000;
inline constexpr int32_t kOpConcat = 10001;
inline constexpr int32_t kOpSum = 10002;
inline constexpr int32_t kOpSlice = 10003;
inline constexpr int32_t kOpScale = 10004;
inline constexpr int32_t kOpPermute = 10005;
inline constexpr int32_t kOpReshape = 10006;

inline bool isRelOp(int32_t op) { return op >= kOpDist; }

// Interned IR attribute maps (axes normalized against the input rank, so
// axis=-1 and axis=1 of a rank-2 softmax are one node) and reshape shapes.
class Interner {
 public:
  int64_t attrs(ir::OpKind op, const ir::AttrMap& a, int64_t inRank);
  const ir::AttrMap& attrMap(int64_t id) const { return attrs_.at(size_t(id)); }
  int64_t shape(const ir::Shape& s);
  const ir::Shape& shapeOf(int64_t id) const { return shapes_.at(size_t(id)); }

 private:
  std::map<std::string, int64_t> attrIds_;
  std::vector<ir::AttrMap> attrs_;
  std::map<std::string, int64_t> shapeIds_;
  std::vector<ir::Shape> shapes_;
};

// A lemma usable as a rewrite: proven, with the default ranks it is proven at.
struct Rule {
  const Lemma* lemma = nullptr;
  bool general = false;            // has tensor variables of the default rank
  std::vector<int> ranks;          // proven default ranks
  std::map<std::string, int> fixedRanks;
  // 1: the lemma's dropouts read as their mask output (compileRules).
  int dropoutOut = 0;
  // The lemma's n-ary form (engine_rules.cpp, liftOf): its left side cuts
  // operands as binary concats concat(?a_i, ?b_i) and its right side is a
  // concat or sum of T[?a_i] and T[?b_i], where T[concat(?a_i, ?b_i)] is
  // the left side itself. By induction over the parts (each step the
  // lemma, at the first part against the concat of the rest, with its
  // conditions checked there) and associativity, an op over n-part
  // concats is the concat or sum of its n images: matched once against
  // each class's widest concats, never against the binary views of a
  // chain (which made every prefix's image, O(n^2) per op and chain).
  struct Lift {
    std::vector<const Pattern*> cuts;  // the left side's concat(?a_i, ?b_i)
    std::vector<std::string> a, b;     // their operand variables
    const Pattern* part = nullptr;     // T[?a_i]: the right side's first operand
  };
  std::optional<Lift> lift;
};

// Is an IR op's result all zeros when these of its operands are (a layout
// op, negation or cast of zeros, a concat or sum of zeros, a product with
// zeros, in real arithmetic)? Constants are judged by their values.
bool zeroResult(ir::OpKind op, const std::vector<bool>& operandZero);
// Every element of a constant tensor is 0.
bool allZeros(const ir::Tensor& t);

// f * g is representable exactly (a scale factor stored is the real
// product): the engine's scale composition and rank folding's factors.
bool exactProduct(double f, double g);

// Compiles the proven lemmas of `lib` (statuses from proveLemmas, by name).
std::vector<Rule> compileRules(const LemmaLibrary& lib, const std::vector<LemmaStatus>& status);

struct EngineStats {
  int64_t lemmasApplied = 0;
  int64_t z3Queries = 0;
  int64_t iterations = 0;
  int64_t nodes = 0;
  std::map<std::string, int64_t> perLemma;  // lemma id -> applications
};

using DistLeaf = std::pair<int64_t, ir::ValueId>;  // (rank, value)

class Engine {
 public:
  Engine(Interner& in, const std::vector<Rule>& rules, EngineStats& stats, const ir::Program& dist);
  ~Engine();

  EGraph& graph() { return g_; }
  const EGraph& graph() const { return g_; }
  Interner& interner() { return in_; }

  // A D tensor as a leaf (type from the program).
  ClassId dist(int64_t rank, ir::ValueId v);
  // An IR op applied to classes, output `outIndex` of type `t`; adds the
  // layout bridges. nullopt when the node already lives in a class of
  // another type (never merged).
  std::optional<ClassId> irNode(ir::OpKind op, const ir::AttrMap& attrs, std::vector<ClassId> kids,
                                int outIndex, const ir::TensorType& t);
  // Same, with the type inferred (lemma right sides).
  std::optional<ClassId> irNodeInfer(ir::OpKind op, const ir::AttrMap& attrs, std::vector<ClassId> kids,
                                     int outIndex = 0);
  // Relation operators with inferred types; nullopt when ill-typed.
  std::optional<ClassId> concat(int64_t dim, const std::vector<ClassId>& parts);
  std::optional<ClassId> sum(const std::vector<ClassId>& parts);
  std::optional<ClassId> slice(ClassId x, int64_t dim, int64_t start, int64_t end);
  std::optional<ClassId> scale(ClassId x, double factor);
  std::optional<ClassId> permute(ClassId x, const std::vector<int64_t>& perm);
  std::optional<ClassId> reshape(ClassId x, const ir::Shape& shape);
  // A concrete relation over dist tensors (no seq leaves, no comprehensions,
  // constant integer expressions).
  Result<ClassId> addRel(const Rel& r);
  // Merge when types agree; false (and nothing merged) otherwise.
  bool mergeChecked(ClassId a, ClassId b);
  // D values known to hold only zeros, per rank (DistModel::zeros): their
  // leaves are zero terms (dropZeroTerms).
  void setZeroLeaves(const std::vector<std::set<ir::ValueId>>* z) { zeroLeaves_ = z; }

  // Applies the rules until saturation, a budget, or `done()` holds.
  StopReason saturate(const Budget& b, const std::function<bool()>& done);

  // Cheapest clean term of a class (relation operators over dist leaves
  // accepted by leafOk); null when there is none. tilingOnly: concats of
  // leaves only (the class as D's shards of it).
  RelPtr extractClean(ClassId c, const std::function<bool(const DistLeaf&)>& leafOk, bool tilingOnly = false) const;
  // The class as a concat of D's shards (two or more parts, each a tiling
  // by leaves), even where one D leaf holds the whole (an all_gather's
  // output): the next op's lemmas meet D's partition through it. Null when
  // the class has no such concat.
  RelPtr extractShards(ClassId c, const std::function<bool(const DistLeaf&)>& leafOk) const;
  std::vector<DistLeaf> distLeaves(ClassId c) const;

 private:
  std::optional<ClassId> add(ENode n, const ir::TensorType& t);
  std::optional<ClassId> relNode(int32_t op, std::vector<int64_t> data, std::vector<ClassId> kids);
  std::optional<ir::TensorType> relType(int32_t op, const std::vector<int64_t>& data,
                                        const std::vector<ClassId>& kids) const;
  void bridge(ir::OpKind op, const ir::AttrMap& attrs, const std::vector<ClassId>& kids, int outIndex,
              ClassId out);
  std::optional<ClassId> expandAsConcat(ClassId x, const ir::Shape& to);
  std::optional<double> scalarConstant(ClassId c) const;  // value of a one-element float constant
  int applyRules(const std::chrono::steady_clock::time_point& deadline, const Budget& b);
  int tileSlices();
  int slicesOfConcats();  // engine_rules.cpp
  int dropZeroTerms();  // engine_rules.cpp
  int composeReshapes();  // engine_reshape.cpp
  int composeScales();    // engine_scale.cpp
  int flattenLinear();    // engine_scale.cpp
  int permutesThroughConcats();  // engine_permute.cpp
  int reshapesThroughConcats();  // engine_reshape_concat.cpp
  int concatsThroughConcats();   // engine_reshape_concat.cpp
  // The concat along `dim` with the most parts among class c's nodes (the
  // associativity views' flat one), or null.
  const ENode* widestConcat(ClassId c, int64_t dim) const;  // engine_reshape_concat.cpp
  int flattenAssoc();            // engine_assoc.cpp
  std::vector<ClassId> viewClasses_;  // prefixes and suffixes flattenAssoc made (sorted)
  std::function<bool()> overBudget_;  // set during applyRules' relation-semantics steps

  friend struct RuleMatcher;
  Interner& in_;
  const std::vector<Rule>& rules_;
  EngineStats& stats_;
  const ir::Program& dist_;
  EGraph g_;
  std::unique_ptr<smt::Context> smt_;
  const std::vector<std::set<ir::ValueId>>* zeroLeaves_ = nullptr;
};

// Rank-relative dims: d < 0 counts from the end.
inline int64_t normDim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

}  // namespace sp::rewrite
