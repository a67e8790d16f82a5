#pragma once
// Internals of verify() shared by its source files: input-relation
// inversion, concrete relation terms, the witness.
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "rewrite/verify/lower.h"
#include "rewrite/verify/verify.h"

namespace sp::rewrite {

// What is known about one S value: clean terms over D, all equal to it.
struct SeqRel {
  RelPtr best;                // cheapest clean term
  std::vector<RelPtr> alts;   // other clean terms (dist leaves of its class)
};

// Expands comprehensions and evaluates integer expressions: a relation with
// constant ranks and bounds only.
Result<RelPtr> concretize(const Rel& r, const RelScope& scope);

// Inverts the input relations: every S input that D inputs cover (whole, or
// slices along one dim that tile it, through concat/scale/permute/reshape)
// gets a clean relation; D inputs holding the same S piece become facts.
// Also checks that every D input (parameters included) is covered.
struct InputInversion {
  std::map<std::string, SeqRel> seq;            // S input name -> relation
  std::map<std::string, std::string> missing;   // S input name -> why not
};
// The input relations, one per (rank, D input), concretized, after the checks
// every verdict needs: each D input and parameter covered (or declared
// unrelated), each relation well-typed and of its D input's shape.
struct CheckedInput {
  int64_t rank;
  std::string name;
  RelPtr expr;
  std::string location;
};
Result<std::vector<CheckedInput>> checkInputRelations(const ir::Graph& seq, const ir::Program& dist,
                                                     const RelationFile& rel);
// The same checks made once per relation template and rank class instead
// of once per (rank, input): where every input relation is a template
// (`dist[*].x = E`, or `for r in G: dist[r].x = E(r)` with G a group of
// mesh axes or a range lo..hi of ranks) that covers each rank class it
// touches whole (a pipeline stage's range), and whose slice bounds are affine in r and idx(r, G)
// with extents that do not depend on r, each term has one shape on every
// rank, so the checks hold on every rank of a class once they hold on its
// first rank and each slice's bounds hold over the whole range of its
// indices (interval bounds: a sound over-approximation). Returns each D
// input's template, or nothing where that is not shown; then
// checkInputRelations decides (and names any error).
struct TemplateInputs {
  // (rank class, D input) -> its template, which covers every rank of the class
  std::map<std::pair<int64_t, std::string>, const InputRelation*> byClass;
  std::set<std::string> unrelated;
};
std::optional<TemplateInputs> checkInputTemplates(const ir::Graph& seq, const ir::Program& dist,
                                                  const RelationFile& rel);
// An atom of an affine form: the loop variable r (a global rank) or
// idx(r, G) (G a group of mesh axes), floor-divided ('/') or taken modulo
// ('%') by constants, in order: idx(r, tp) / 2 is {Idx, "tp", {{'/', 2}}}.
struct AffineAtom {
  enum class Kind : uint8_t { Rank, Idx };
  Kind kind = Kind::Rank;
  std::string group;                          // Idx: G
  std::vector<std::pair<char, int64_t>> ops;  // '/' or '%', by a constant > 0
  static AffineAtom rank() { return {}; }
  static AffineAtom idx(std::string g) { return {Kind::Idx, std::move(g), {}}; }
  // idx(r, g) itself
  bool isIdx(const std::string& g) const { return kind == Kind::Idx && group == g && ops.empty(); }
  // idx(r, g) / q (runs of q members): q; nothing for any other atom
  std::optional<int64_t> runsOf(const std::string& g) const {
    if (kind != Kind::Idx || group != g || ops.size() != 1 || ops[0].first != '/') return std::nullopt;
    return ops[0].second;
  }
  std::string str() const;  // "r", "idx(r, tp)/2"
  auto operator<=>(const AffineAtom&) const = default;
};
// An integer expression of a template as c + sum k_a * a over atoms; *hi
// gets each atom's largest value (all start at 0). Nothing where the
// expression is not of that form.
struct AffineForm {
  int64_t c = 0;
  std::map<AffineAtom, int64_t> k;
};
std::optional<AffineForm> affineForm(const IntExpr& e, const std::optional<std::string>& var, const ir::Program& dist,
                                     std::map<AffineAtom, int64_t>* hi = nullptr);
// A template's term on one rank (loop variable and anchor bound to it).
Result<RelPtr> templateAt(const InputRelation& t, const RankSpace& ranks, int64_t rank);

Result<InputInversion> invertInputs(const ir::Graph& seq, const std::vector<CheckedInput>& checked, DistModel& model);

// Witness: runs S and D on related random inputs.
struct WitnessRun {
  std::vector<ir::Tensor> seq;                  // by S value id
  std::vector<ir::TensorMap> dist;              // per rank, by name
};
// Running it and estimating its work: rewrite/witness/witness.h.
ErrorStat compareTensors(const ir::Tensor& got, const ir::Tensor& want);
// The natural ways to rebuild S value `want` from D tensors `names` (same
// shape on a rank, sum or concat over a group, a chunk of a gathered
// tensor): the best match, with its description. nullopt: no D tensor of a
// compatible shape. Shapes are matched before any sum or concat is built;
// past `deadline` it stops with error id "time-limit".
struct Candidate {
  std::string what;  // "dist[0].y", "sum over tp of y", ...
  ErrorStat err;
  // How it was built: a D tensor (or a chunk of one), or a sum or concat
  // of one D value over the ranks of `group` (concat along `dim`).
  enum class Kind { Tensor, Sum, Concat } kind = Kind::Tensor;
  std::string group, name;
  int64_t dim = 0;
  int64_t rank = -1;      // the D rank whose tensor it is (Sum, Concat: a member)
  int64_t chunkDim = -1;  // Tensor: a chunk along this dim, -1: the whole tensor
  // Concat: the group's ranks in the order concatenated, where not the
  // group's own order (rank r's piece at another place: still a clean
  // rebuild, DESIGN.md's refinement); empty: the group's order.
  std::vector<int64_t> order;
};
Result<std::optional<Candidate>> bestCandidate(
    const ir::Tensor& want, const WitnessRun& run, const ir::Program& dist,
    const std::vector<std::pair<int64_t, std::string>>& names,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
// Each D input's pieces of its S tensor, rank by rank (relBoxes of its
// relation; nullopt where the relation is another form): computed once per
// witness run.
using InputLayouts = std::map<std::string, std::vector<std::optional<RelBoxes>>>;
InputLayouts inputLayouts(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel);
// S value `want` rebuilt from a D output laid out as an S input is (the
// gradient of a sharded weight held as the weight is: a fused QKV's
// blocks, KV heads on runs of ranks): for each S input X of want's shape
// whose relation on every rank selects pieces of X, and each D output in
// `names` of X's local shape on every rank, the output's pieces placed
// where X's relation takes them (every position held by some rank; where
// several hold it, the first one's value, or their sum: partial sums on
// the ranks sharing a piece). The best match; nullopt: none fits.
Result<std::optional<Candidate>> inputLayoutCandidate(
    const ir::Tensor& want, const WitnessRun& run, const ir::Graph& seq, const InputLayouts& layouts,
    const std::vector<std::pair<int64_t, std::string>>& names,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace sp::rewrite
