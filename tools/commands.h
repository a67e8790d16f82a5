#pragma once
// The subcommands of the shardproof binary. Each returns the process exit
// code. Only tools/shardproof.cpp includes CLI11 (it is slow to compile).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "frontend/fx_flags.h"
#include "ir/program.h"
#include "ir/tensor.h"
#include <map>

namespace sp::tools {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 3;

struct InspectArgs {
  std::string model;
  bool printIr = false;
  std::string format = "text";  // text | json
  frontend::FxFlags fx;         // torch.fx capture options
};
int cmdInspect(const InspectArgs& a);

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy, or rN:NAME=FILE.npy for one rank
  uint64_t seed = 0;
  std::string outDir;
  int threads = 0;
  frontend::FxFlags fx;
};
int cmdRun(const RunArgs& a);

// NAME with every character outside [A-Za-z0-9._-] replaced by '_'.
std::string sanitizeFileName(const std::string& name);

// --input NAME=FILE.npy, or rN:NAME=FILE.npy for rank N only (rank -1).
struct InputArg {
  int64_t rank = -1;
  std::string name, file;
};
Result<InputArg> parseInputArg(const std::string& s);
// Writes every tensor to DIR/NAME.npy (sanitized names), creating DIR.
Status writeOutputs(const std::string& dir, const std::map<std::string, ir::Tensor>& outs);
// Per rank r, DIR/rN/NAME.npy.
Status writeRankOutputs(const std::string& dir, const std::vector<std::map<std::string, ir::Tensor>>& outs);
// The --input arguments of a program run: NAME=FILE feeds every rank with
// an input or param NAME, rN:NAME=FILE rank N only.
Result<std::vector<std::map<std::string, ir::Tensor>>> programInputs(const ir::Program& p,
                                                                     const std::vector<std::string>& inputs);

}  // namespace sp::tools

namespace sp::tools {

// Exit codes of verify: 0 verified, 1 refuted, 2 inconclusive, 3 bad input.
inline constexpr int kExitRefuted = 1;
inline constexpr int kExitInconclusive = 2;

// Default of --witness-limit: rewrite::kDefaultWitnessWorkLimit (asserted
// in verify_cmd.cpp; this header stays free of the verifier's).
inline constexpr double kVerifyWitnessLimit = 5e12;

struct VerifyArgs {
  std::string seq, dist;
  std::string seqBackward, distBackward;  // --seq-backward, --dist-backward: a training step
  std::string relationFile;     // --relation
  bool inferRelations = false;  // --infer-relations
  std::string writeRelations;   // --write-relations FILE
  std::string expectFile;       // --expect FILE (expect lines)
  std::vector<std::string> outputs;
  std::string format = "text";  // text | json | junit
  double timeLimit = 300;
  std::string dotFile;
  uint64_t seed = 0;
  double witnessLimit = kVerifyWitnessLimit;  // --witness-limit MACS
  double repairLimit = 10;                     // --repair-limit SECONDS (0: no repair search)
  bool noShrinkWitness = false;               // --no-shrink-witness (rewrite/witness/witness_shrink.h)
  bool noFold = false;                         // --no-fold: every rank in the e-graph (rewrite/engine/fold.h)
  frontend::FxFlags fx;         // applies to --seq and --dist captures
};
int cmdVerify(const VerifyArgs& a);

struct LemmasArgs {
  bool prove = false;
  std::string dir;                 // empty: the default lemma directory
  std::vector<std::string> only;   // lemma names
};
int cmdLemmas(const LemmasArgs& a);

// `codegen`: verify, then emit per-rank plans. Exit 0 written, 1 not
// verified (nothing written), 3 bad input.
struct CodegenArgs {
  VerifyArgs verify;                 // --seq, --dist, relations, --outputs, ...
  std::string outDir;                // --out
  std::vector<std::string> binds;    // --bind NAME=VALUE
};
int cmdCodegen(const CodegenArgs& a);

// `exec DIR --backend cpu`: run plans. Exit 0, 3 bad input or a failed run.
struct ExecArgs {
  std::string planDir;
  std::string backend = "cpu";       // cpu | cuda
  std::string ranksPerProcess = "all";  // cuda: all (single process) | 1 (one process per rank, torchrun/SLURM env)
  std::vector<std::string> inputs;   // as for run
  uint64_t seed = 0;
  std::string outDir;
};
int cmdExec(const ExecArgs& a);

}  // namespace sp::tools
