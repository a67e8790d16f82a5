#pragma once
// The relation file format (docs/relations.md): input relations (each D
// input as an expression over S tensors) and expected output relations (an
// S output as an expression over D tensors). Parser, printer, expansion to
// concrete ranks, and witness construction.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rewrite/relation/relation.h"

namespace sp::rewrite {

struct InputRelation {
  bool allRanks = false;                 // dist[*].name = ...
  std::optional<std::string> loopVar;    // for r in DOMAIN: dist[...] = ...
  RankDomain loopDomain;
  IntExpr rank;                          // dist[rank] (unless allRanks)
  std::string name;
  RelPtr expr;                           // over seq tensors
  std::string location;                  // file:line
};

struct OutputRelation {
  std::string name;  // expect seq.name = ...
  RelPtr expr;       // over dist tensors
  std::string location;
};

// A D input declared to have no relation to S (`unrelated NAME`, every rank
// that has it): nothing computed from it can be related, and no witness can
// be built (its value is unknown), so verification ends inconclusive where
// it matters instead of refusing to start.
struct UnrelatedInput {
  std::string name;
  std::string reason;    // printed as a comment; parsed lines: "declared at file:line"
  std::string location;
};

struct RelationFile {
  std::vector<std::pair<std::string, int64_t>> lets;  // let H = 128 (inlined into expressions)
  std::vector<InputRelation> inputs;
  std::vector<OutputRelation> outputs;
  std::vector<UnrelatedInput> unrelated;
};

Result<RelationFile> parseRelations(const std::string& text, const std::string& file);
// One expression; `vars` names the variables it may use (values ignored).
Result<RelPtr> parseRelExpr(const std::string& text, const IntVars& vars = {});
std::string printRelations(const RelationFile& f);

// One input relation for one concrete rank.
struct BoundInput {
  int64_t rank;
  std::string name;
  RelPtr expr;
  RelScope scope;  // loop variable bound, anchor = rank
  std::string location;
};
// Every (rank, D input) the file defines; a second definition of the same
// rank's input is an error naming both lines.
Result<std::vector<BoundInput>> expandInputs(const RelationFile& f, const RankSpace& ranks);

// Witness generation: D inputs per rank from S inputs.
Result<std::vector<ir::TensorMap>> buildDistInputs(const RelationFile& f, const RankSpace& ranks,
                                                   const ir::TensorMap& seq);
// S outputs rebuilt from D outputs by the expect lines.
Result<ir::TensorMap> rebuildSeqOutputs(const RelationFile& f, const RankSpace& ranks,
                                        const std::vector<ir::TensorMap>& dist);

}  // namespace sp::rewrite
