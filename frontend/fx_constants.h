#pragma once
// Values of Dynamo's lifted tensor constants (`self._tensor_constantN`, read
// by `lift_fresh_copy`), which the printed capture does not contain. A value
// comes from, in this order: an explicit FxOptions::constantValues entry
// (`--fx-constant`), the `code:` comment of the node when it is literally
// `<expr>[<mask>] = <number>`, or the shipped table of known framework
// source sites (frontend/data/tensor_constants.txt). See docs/fx-import.md.
#include <optional>
#include <string>
#include <vector>

#include "frontend/fx_import.h"

namespace sp::frontend::fx {

// One row of the known-sites table: the `# File:` path suffix and line of the
// framework source, the constant's dtype, and its value.
struct ConstantSite {
  std::string pathSuffix;
  int line = 0;
  ir::DType dtype = ir::DType::F32;
  double value = 0;
  std::string where;  // "tensor_constants.txt:12"
};

// Parses a sites table; errors carry "file:line".
Result<std::vector<ConstantSite>> parseConstantSites(const std::string& text, const std::string& path);
Result<std::vector<ConstantSite>> loadConstantSites(const std::string& path);

// The literal of `<expr>[<index>] = <number>`, if the code is exactly that.
std::optional<double> assignedLiteral(const std::string& code);

struct ConstantQuery {
  std::string capture;  // capture file path
  std::string attr;     // "_tensor_constant2"
  ir::TensorType type;  // as declared by lift_fresh_copy
  ir::SourceLoc src;    // framework source of the node
  std::string code;     // its `code:` text
};

// The value and where it came from (FxConstantNote::origin), or nullopt
// with the reason in `why`.
std::optional<std::pair<double, std::string>> resolveConstant(const ConstantQuery& q,
                                                              const FxOptions& opts,
                                                              const std::vector<ConstantSite>& sites,
                                                              std::string& why);

}  // namespace sp::frontend::fx
