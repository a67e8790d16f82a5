#pragma once
// Renderings of a verification report: text for people, JSON for tools,
// JUnit XML for CI systems, Graphviz for the S graph around a failure.
// docs/verify-report.md documents the JSON.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "rewrite/verify/verify.h"

namespace sp::tools {

// An S output the run did not check: a partial import (a data-dependent
// size, frontend/fx_import.h FxPartial) left out its value in S or D's
// output of its name. Listed after the checked outputs, never as verified.
struct UncheckedOutput {
  std::string name;    // S output
  std::string reason;  // "S's value depends on torch.where (node 'where') at seq.py:30, whose result size ..."
  bool requested = true;  // named by --outputs (or every output without it)
};

std::string reportText(const rewrite::VerifyReport& r, const std::vector<UncheckedOutput>& unchecked = {});
std::string reportJson(const rewrite::VerifyReport& r, const std::string& inputRelations,
                       const std::vector<UncheckedOutput>& unchecked = {});
std::string reportJUnit(const rewrite::VerifyReport& r, const std::string& suiteName,
                        const std::vector<UncheckedOutput>& unchecked = {});
// The S graph within `radius` edges of the failing value (or the whole graph
// if it has no failure and is small), the failing node highlighted.
std::string failureDot(const ir::Graph& seq, const rewrite::VerifyReport& r, int radius = 3);

}  // namespace sp::tools
