#pragma once
// What `verify` and `codegen` share: loading S and D, the relations
// (--relation or --infer-relations, --expect) and the verifier's options
// from the command line (verify_cmd.cpp).
#include <memory>
#include <vector>

#include "frontend/fx_import.h"
#include "rewrite/relation/relation_text.h"
#include "rewrite/verify/verify.h"
#include "tools/commands.h"
#include "tools/verify_partial.h"

namespace sp::tools {

struct VerifySetup {
  ir::Graph seq;
  ir::Program dist;
  rewrite::RelationFile rel;
  rewrite::VerifyOptions opts;
  std::vector<frontend::FxConstantNote> constants;  // lifted tensor constants the importer met
  PartialCheck partial;  // outputs a partial import left out (verify_partial.h)
};

// `partial`: captures with data-dependent sizes import without the outputs
// that depend on them (FxOptions::partial), which the run does not check;
// otherwise such a capture is an error (fx-data-dependent), as for codegen
// and for training steps, whose backward reads the forward's outputs by
// position.
Result<VerifySetup> setupVerify(const VerifyArgs& a, bool partial = false);
// The importer's constant values become assumptions of the report.
void noteConstants(const VerifySetup& s, rewrite::VerifyReport& report);

}  // namespace sp::tools
