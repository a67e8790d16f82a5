#pragma once
// Framework kernels (apex, vLLM, Transformer Engine) declared as
// compositions of IR ops in decomposition files (*.decomp), loaded at run
// time from the shipped directory (frontend/decomp, or
// $SHARDPROOF_DECOMP_DIR) and from FxOptions::decompDirs. A file:
//
//   decomp apex.fused_layer_norm_affine_fwd.default    # the op after torch.ops.
//   args %input, %weight, %bias, normalized_shape, eps = 1e-5
//                                                      # %a|b: the argument a, also called b
//   outputs %y, %mean, %invvar                         # the op's results, in order
//   mutates result -> %out                             # new values of mutated args
//   require len(normalized_shape) == 1 : "message"  # checked per call
//   {
//     %y = layer_norm(%input, %weight, %bias) {axis = ${-len(normalized_shape)}, epsilon = ${eps}}
//     ...                                              # text IR statements
//   }
//
// `%name` arguments are tensors (graph inputs of the body, typed by the
// call); plain names are Python values substituted into `${...}`
// expressions (docs/fx-import.md, "Framework kernels"). Errors carry file:line.
#include <map>
#include <string>
#include <vector>

#include "frontend/fx_emit.h"

namespace sp::frontend::fx {

struct DecompArg {
  std::string name;
  std::vector<std::string> aliases;  // other names of the argument (`%result|out`)
  bool tensor = false;
  std::optional<std::string> dflt;  // default value text (scalars only)
};

struct Decomposition {
  std::string op;  // "apex.fused_layer_norm_affine_fwd.default"
  std::vector<DecompArg> args;
  std::vector<std::string> outputs;                              // body value names
  std::vector<std::pair<std::string, std::string>> mutates;      // arg -> body value
  std::vector<std::pair<std::string, std::string>> requires_;    // expr text, message
  std::string body;                                              // text IR statements
  int bodyLine = 0;                                              // line of the body's first line
  std::string file;
  int line = 0;                                                  // of the `decomp` line

  // The argument called `name` or one of its aliases; nullptr if none.
  const DecompArg* findArg(const std::string& name) const;
};

// Parses one file (any number of `decomp` blocks).
Result<std::vector<Decomposition>> parseDecompFile(const std::string& text, const std::string& path);

class DecompLibrary {
 public:
  // Loads every *.decomp file of `dirs` (earlier directories win; a
  // duplicate op within one directory is an error).
  static Result<DecompLibrary> load(const std::vector<std::string>& dirs);
  const Decomposition* find(const std::string& op) const;
  std::vector<std::string> ops() const;

 private:
  std::map<std::string, Decomposition> byOp_;
};

// The shipped directory: $SHARDPROOF_DECOMP_DIR, else the source tree's
// frontend/decomp.
std::string defaultDecompDir();

// Maps the current call (e.call, outputs set up by the importer) through d:
// outputs are d.outputs then d.mutates' values when `functionalized` (the
// auto_functionalized tuple), d.outputs otherwise. With `bases`
// (auto_functionalized_v2) the new values follow in that order of argument
// names instead. Keyword arguments may use an alias of a declared name.
Status mapDecomposition(Emitter& e, const Decomposition& d, bool functionalized,
                        const std::vector<std::string>* bases = nullptr);

}  // namespace sp::frontend::fx
