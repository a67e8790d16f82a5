#pragma once
// Relation expressions: typed, immutable trees built only from the "clean"
// relation operators of DESIGN.md (concat, sum over ranks, slice, reshape,
// permute, scale by a constant, select-rank = a dist leaf with a rank
// expression) over sequential (seq.x) and distributed (dist[r].x) tensors,
// plus the per-rank comprehension `for r in GROUP: e` that expands to one
// part per member inside concat/sum. Text syntax: docs/relations.md.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/program.h"
#include "ir/shape.h"
#include "ir/support.h"
#include "ir/tensor.h"

namespace sp::rewrite {

// The ranks of a program: mesh axes and named groups (a Program's, or a
// mesh alone). A group name is a mesh axis, axes joined by '+', or a named
// partition.
struct RankSpace {
  ir::Mesh mesh;
  std::map<std::string, ir::GroupPartition> groups;

  static RankSpace of(const ir::Program& p);
  int64_t worldSize() const { return mesh.worldSize(); }
  // Members, in group order, of the group `name` containing `rank`.
  Result<std::vector<int64_t>> members(const std::string& name, int64_t rank) const;
  // Position of `rank` in that group (idx(r, GROUP)).
  Result<int64_t> indexOf(const std::string& name, int64_t rank) const;
};

using IntVars = std::map<std::string, int64_t>;

// Integer expressions over comprehension variables: affine, with floor
// division and modulus by positive constants, and idx(r, GROUP) = position
// of rank r within its GROUP group.
struct IntExpr {
  enum class Kind : uint8_t { Const, Var, Add, Sub, MulC, DivC, ModC, Index };
  Kind kind = Kind::Const;
  int64_t value = 0;      // Const: the value; MulC/DivC/ModC: the constant
  std::string name;       // Var: variable; Index: group
  std::vector<IntExpr> args;

  static IntExpr constant(int64_t v);
  static IntExpr var(std::string name);
  static IntExpr index(IntExpr rank, std::string group);
  friend IntExpr operator+(IntExpr a, IntExpr b);
  friend IntExpr operator-(IntExpr a, IntExpr b);
  friend IntExpr operator*(IntExpr a, int64_t c);
  IntExpr divC(int64_t c) const;
  IntExpr modC(int64_t c) const;

  bool operator==(const IntExpr& o) const;
  Result<int64_t> eval(const IntVars& vars, const RankSpace* ranks) const;
  std::string str() const;  // "(r+1)*1536", "idx(r,tp)*64"
};

// The operators, their operands, attributes and numeric meaning: the one
// table rewrite/relation/relation_ops.def.
enum class RelOp : uint8_t {
#define RELOP(E, NAME, MINA, MAXA, IROP, ATTRS, DOC) E,
#include "rewrite/relation/relation_ops.def"
#undef RELOP
};
std::string_view relOpName(RelOp op);

// Where a comprehension variable ranges: an inclusive range of global ranks
// lo..hi, or the members of GROUP containing the anchor rank (the value of the
// innermost enclosing comprehension variable, else the rank the whole
// expression is about: the dist rank of an input line, 0 for expect lines).
struct RankDomain {
  bool isRange = false;
  int64_t lo = 0, hi = -1;
  std::string group;
  bool operator==(const RankDomain& o) const {
    return isRange == o.isRange && lo == o.lo && hi == o.hi && group == o.group;
  }
  std::string str() const;  // "0..3" or "tp"
};

struct Rel;
using RelPtr = std::shared_ptr<const Rel>;

struct Rel {
  RelOp op = RelOp::Seq;
  std::string name;            // Seq/Dist: tensor name; For: variable
  IntExpr rank;                // Dist: global rank
  int64_t dim = 0;             // Concat, Slice (may be negative: from the end)
  IntExpr start, end;          // Slice: [start, end) along dim
  ir::Shape shape;             // Reshape
  std::vector<int64_t> perm;   // Permute
  double factor = 1.0;         // Scale
  RankDomain domain;           // For
  std::vector<RelPtr> args;    // operands; For: the body

  static RelPtr seq(std::string name);
  static RelPtr dist(IntExpr rank, std::string name);
  static RelPtr concat(int64_t dim, std::vector<RelPtr> parts);
  static RelPtr sum(std::vector<RelPtr> parts);
  static RelPtr slice(RelPtr x, int64_t dim, IntExpr start, IntExpr end);
  static RelPtr reshape(RelPtr x, ir::Shape shape);
  static RelPtr permute(RelPtr x, std::vector<int64_t> perm);
  static RelPtr scale(RelPtr x, double factor);
  // Only valid as a part of concat or sum.
  static RelPtr forEach(std::string var, RankDomain domain, RelPtr body);
};

bool equal(const Rel& a, const Rel& b);
std::string str(const Rel& r);  // canonical text, parsed back by parseRelExpr
// A tensor name as relation text: as is when an identifier, else quoted
// ("fc1.weight", "/fc1/Gemm_output_0").
std::string relName(const std::string& name);

// What an expression is evaluated or typed against.
struct RelScope {
  const RankSpace* ranks = nullptr;  // needed for group domains and idx()
  int64_t anchorRank = 0;
  IntVars vars;                      // comprehension variables and lets
};

struct TypeLookup {
  std::function<Result<ir::TensorType>(const std::string& name)> seq;
  std::function<Result<ir::TensorType>(int64_t rank, const std::string& name)> dist;
};

// Shape and dtype of an expression; comprehensions expand concretely, so
// errors name the rank and values ("concat dim 1: part 2 (rank 3) has shape
// [4, 8], expected [4, *]").
Result<ir::TensorType> inferType(const Rel& r, const TypeLookup& lookup, const RelScope& scope);

struct TensorSource {
  const ir::TensorMap* seq = nullptr;
  const std::vector<ir::TensorMap>* dist = nullptr;  // dist[rank][name]
};

// Value of an expression on concrete tensors (witness generation: D inputs
// from S inputs; rebuilding S outputs from D outputs): type-checked by
// inferType, then each operator run as the IR op relation_ops.def names, on
// the interpreter's kernels in f64; returns the dtype of the first leaf.
Result<ir::Tensor> evaluate(const Rel& r, const TensorSource& src, const RelScope& scope);

// The pieces of one S tensor a constant relation selects, in order: boxes
// (per dim [start, end)) concatenated along `dim` (-1: one box), from
// slices and concats of a seq leaf with constant bounds; adjacent boxes
// that join into one are joined, so every way of writing a selection
// reads alike. nullopt: another form, or a symbolic S shape.
struct RelBoxes {
  using Box = std::vector<std::pair<int64_t, int64_t>>;
  std::string leaf;
  int64_t dim = -1;
  std::vector<Box> list;
  bool operator==(const RelBoxes& o) const { return leaf == o.leaf && dim == o.dim && list == o.list; }
  // The shape of what the relation selects: the boxes' extents, summed
  // along the concat dim.
  std::vector<int64_t> dims() const;
};
std::optional<RelBoxes> relBoxes(const Rel& r, const std::function<std::optional<ir::Shape>(const std::string&)>& seqShape);
// Of boxes concatenated along d (or one box), the positions [a, b) of the
// concatenation along d.
std::vector<RelBoxes::Box> cutBoxes(const std::vector<RelBoxes::Box>& list, size_t d, int64_t a, int64_t b);

}  // namespace sp::rewrite
