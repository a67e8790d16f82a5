#pragma once
// `verify` of captures that a partial import read (data-dependent sizes,
// frontend/fx_import.h FxPartial; docs/verify-report.md "Outputs not
// checked"). An S output is not checked when S's value or D's output of
// its name was left out: the run checks the others, and the verdict is
// never "verified" while a requested output was not checked. A proof over
// what was imported holds for the whole program (the values it uses are
// computed as in the capture); a refutation stands only when every D output
// left out pairs with an S output left out, since one with no S namesake
// might have been the rebuild the refutation missed.
#include <string>
#include <vector>

#include "frontend/fx_import.h"
#include "ir/graph.h"
#include "rewrite/relation/relation_text.h"
#include "rewrite/verify/verify.h"
#include "tools/report.h"

namespace sp::tools {

struct PartialCheck {
  std::vector<UncheckedOutput> unchecked;  // S outputs, in S's then D's order
  std::vector<std::string> seqDropped;     // S outputs the import left out (not values of S's graph)
  std::vector<std::string> checkOutputs;   // what the run checks (VerifyOptions::outputs); empty: nothing
  std::vector<std::string> distOnly;       // D outputs left out that name no S output, with why
  std::vector<std::string> notes;          // assumptions: distOnly, D's collectives left out
  bool any() const { return !unchecked.empty() || !distOnly.empty() || !notes.empty(); }
  bool isSeqDropped(const std::string& name) const;
  // S output `name` is not checked either (its expect line reads a D output
  // the import left out): it leaves checkOutputs.
  void uncheck(const std::string& name, std::string reason, const std::vector<std::string>& requested);
};

// The S outputs whose expect line reads a D output a partial import left
// out: not checked (the expectation cannot be evaluated), with why.
void uncheckExpectsOnDropped(const frontend::FxPartial& dist, const rewrite::RelationFile& rel,
                             const std::vector<std::string>& requested, PartialCheck& p);

// `requested`: --outputs (empty: every S output).
PartialCheck planPartialCheck(const frontend::FxPartial& seq, const frontend::FxPartial& dist,
                              const ir::Graph& seqGraph, const std::vector<std::string>& requested);
// The report of a run with nothing left to check: inconclusive.
rewrite::VerifyReport nothingChecked();
// Says what was not checked (assumptions, reason) and adjusts the verdict:
// verified with a requested output unchecked becomes inconclusive, and so
// does refuted with a D output left out that names no S output.
void applyPartialCheck(const PartialCheck& p, rewrite::VerifyReport& report);

}  // namespace sp::tools
