#pragma once
// A plan directory (docs/plan.md): manifest.json, rN.plan (text, what the
// executor reads), rN.plan.json (the same plan as JSON) and rN/NAME.npy for
// params whose values the model carries.
#include <string>
#include <vector>

#include "codegen/plan.h"

namespace sp::codegen {

// Facts recorded in the manifest beside the plans.
struct ManifestInfo {
  std::string seq, dist;              // the models codegen verified
  std::string verdict;                // "verified"
  std::vector<std::string> outputs;   // the S outputs checked
};

std::string manifestJson(const std::vector<Plan>& plans, const ManifestInfo& info);

// Writes every file; the directory is created if needed.
Status writePlanDir(const std::string& dir, const std::vector<Plan>& plans, const ManifestInfo& info);

// Reads manifest.json and the text plans it lists (with param data), and
// runs checkPlan on each; checkPlans is the caller's.
Result<std::vector<Plan>> readPlanDir(const std::string& dir);

}  // namespace sp::codegen
