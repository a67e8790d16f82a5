#pragma once
// Per-rank execution plans (docs/plan.md): the buffers of one rank at byte
// offsets in one arena, and the steps that run on them: kernels (an IR op),
// collectives on a communicator (a mesh group), send/recv pairs and stream
// waits. A plan is data: printed and parsed as text and as JSON, checked by
// checkPlan, read back into an ir::Program by toProgram. It depends only on
// ir/ (the executor in cuda_ref/ links it without the verifier).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace sp::codegen {

inline constexpr int kPlanVersion = 1;
inline constexpr int64_t kArenaAlign = 64;  // every buffer offset is a multiple
inline constexpr int kComputeStream = 0;    // kernels
inline constexpr int kCommStream = 1;       // collectives, send, recv

enum class BufferKind : uint8_t { Input, Param, Temp };
std::string_view bufferKindName(BufferKind k);  // "input", "param", "temp"

struct PlanBuffer {
  std::string name;       // the D value name
  ir::TensorType type;    // declared type; symbols bound by Plan::bindings
  BufferKind kind = BufferKind::Temp;
  int64_t offset = 0;     // bytes into the arena
  int64_t bytes = 0;      // size under the bindings
  // Param: its values, when the model carries them, in an .npy file beside
  // the plan (`data "r0/w.npy"`); loaded by readPlanDir.
  std::string dataFile;
  std::optional<ir::Tensor> data;
};

enum class StepKind : uint8_t { Kernel, Collective, Send, Recv, Wait };
std::string_view stepKindName(StepKind k);  // "kernel", "collective", "send", "recv", "wait"

struct PlanStep {
  StepKind kind = StepKind::Kernel;
  int stream = kComputeStream;
  // Kernel, collective, send, recv:
  ir::OpKind op{};
  std::string name;                  // the D node name
  std::vector<int> inputs, outputs;  // buffer indices
  ir::AttrMap attrs;                 // complete; a collective's "group" is its communicator
  std::vector<int64_t> members;      // collective: the communicator's ranks, group order
  int pairRank = -1, pairStep = -1;  // send/recv: the matching step of the peer
  ir::SourceLoc loc;                 // where the D node came from
  // Wait: this step's stream waits for every step issued so far on `waitFor`.
  int waitFor = -1;
  int line = 0;                      // line in the text it was parsed from; 0 if none
};

struct Plan {
  std::string program;  // the D program's name
  int64_t rank = 0;
  int64_t world = 1;
  ir::Mesh mesh;
  std::map<std::string, ir::GroupPartition> groups;  // named groups of the program
  ir::Bindings bindings;   // values of the symbolic dims
  int64_t arenaBytes = 0;
  int streams = 2;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;       // issue order
  std::vector<int> outputs;          // buffer indices of the rank's graph outputs
  std::string file;                  // where it was read from, for diagnostics

  std::optional<int> findBuffer(const std::string& name) const;
  // "r0.plan:12 step 5" (or "rank 0 step 5" for a plan not read from text).
  std::string stepWhere(size_t step) const;
};

// Concrete dims of `type` under `b`.
Result<std::vector<int64_t>> concreteDims(const ir::TensorType& type, const ir::Bindings& b);
// Bytes of `type` under `b`.
Result<int64_t> byteSize(const ir::TensorType& type, const ir::Bindings& b);

// Text form (docs/plan.md); parsePlanText reads exactly what printPlanText
// writes. Errors are located "file:line:col".
std::string printPlanText(const Plan& p);
Result<Plan> parsePlanText(const std::string& text, const std::string& file);

// JSON form, the same content. Errors are "file:line:col" for syntax and
// "file: steps[3].op" paths for content.
std::string printPlanJson(const Plan& p);
Result<Plan> parsePlanJson(const std::string& text, const std::string& file);

// Structural checks of one plan (both parsers run it): buffer sizes match
// their types, buffers lie in the arena at aligned offsets, step operands
// exist and type-check against the op's shape function, every buffer is
// written once (inputs and params by the executor), streams and waits are in
// range, and the memory plan is safe: a buffer sharing arena bytes with
// another is written only after every access to the other happens before it
// (same stream in issue order, or through waits). Errors name the step.
Status checkPlan(const Plan& p);

// The program the plans stand for: rank r's graph has the plan's input and
// param buffers as leaves and one node per kernel, collective, send and recv
// step, in issue order (waits carry no data). Nodes are located at their plan
// step ("r0.plan:12 node 'step 5'"), so errors about the program name steps.
Result<ir::Program> toProgram(const std::vector<Plan>& plans);

// Everything that must hold before plans run: checkPlan for each, the same
// program, world, mesh, groups and bindings on every rank, toProgram, then
// the one collective order of ir/collective_order: plans that would hang
// (`deadlock`, naming the steps and ranks), members meeting at different
// collectives (`collective-mismatch`), a communicator whose ranks are not the
// group's, or a send/recv whose recorded pair is not the one it meets, are
// errors. Returns the program.
Result<ir::Program> checkPlans(const std::vector<Plan>& plans);

}  // namespace sp::codegen
