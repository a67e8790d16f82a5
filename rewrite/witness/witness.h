#pragma once
// The witness (DESIGN.md, "Refinement and the verdict"): S and D run by the
// CPU interpreter on random inputs related by R_in, computing only what the
// comparisons read. S runs first, then the D ranks; each keeps only the
// values named in the plan, and every other tensor is released after its
// last use, so the peak memory is the live set of one program's cone.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "rewrite/engine/engine_verify.h"

namespace sp::rewrite {

// The values a witness computes and keeps.
struct WitnessPlan {
  std::vector<std::string> seq;                // S values
  std::vector<std::vector<std::string>> dist;  // per rank: D values (names absent on a rank are skipped)
};

// What the witness of failure `f` keeps: the localized S value and the
// unproven S outputs; in D the closest tensors (on every rank, or, when
// those copies would exceed 512 MiB, on the ranks `f` names), the leaves of
// expected relations and the outputs that could rebuild an unproven output.
WitnessPlan planWitness(const ir::Graph& seq, const ir::Program& dist, const Failure& f,
                        const std::vector<std::string>& unproven, const std::map<std::string, RelPtr>& expected);

// Estimated multiply-adds of running the plan: every node of the cones that
// run counts its output elements, times the contracted extent for matmul and
// gemm (symbols at the interpreter's default value).
struct WitnessWork {
  double seq = 0;
  std::vector<double> dist;  // per rank
  double total() const;
};
WitnessWork estimateWork(const ir::Graph& seq, const ir::Program& dist, const WitnessPlan& plan);

// Progress of a run: (work done, work total, "seq mm_4" or "rank 1 mm_4").
using WitnessProgress = std::function<void(double done, double total, const std::string& at)>;

// Runs S, then D on inputs built from S's by R_in (same seed, so the run is
// deterministic). `run.seq` holds the planned S values (by value id, others
// undefined); `run.dist[r]` the planned D values of rank r. D inputs that
// are S inputs, or slices, reshapes or permutes of one, are built on the
// tensors themselves (a replicated input shares S's storage); others through
// the relation evaluator. Past `deadline` it stops with error id
// "time-limit" and a message saying how far it got: "S interpreted up to
// matmul 'mm_4' (loc), 56 of 80 ops done" or "S done; D interpreted up to
// rank 1 matmul 'mm_4' (loc), 300 of 420 ops of all ranks done".
Result<WitnessRun> runWitness(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                              const WitnessPlan& plan, uint64_t seed,
                              const WitnessProgress& progress = {},
                              std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace sp::rewrite
