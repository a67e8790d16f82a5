#pragma once
// Renderings of a verification report: text for people, JSON for tools,
// JUnit XML for CI systems, Graphviz for the S graph around a failure.
// docs/verify-report.md documents the JSON.
#include <string>

#include "ir/graph.h"
#include "rewrite/verify/verify.h"

namespace sp::tools {

std::string reportText(const rewrite::VerifyReport& r);
std::string reportJson(const rewrite::VerifyReport& r, const std::string& inputRelations);
std::string reportJUnit(const rewrite::VerifyReport& r, const std::string& suiteName);
// The S graph within `radius` edges of the failing value (or the whole graph
// if it has no failure and is small), the failing node highlighted.
std::string failureDot(const ir::Graph& seq, const rewrite::VerifyReport& r, int radius = 3);

}  // namespace sp::tools
