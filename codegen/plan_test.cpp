// The plan format: golden text plans, text and JSON round trips, the memory
// plan, and every diagnostic of the parsers and checks.
//   SP_UPDATE_GOLDEN=1 build/codegen/codegen_tests --gtest_filter='*PlanGolden*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/lower.h"
#include "codegen/plan.h"
#include "codegen/step_order.h"
#include "ir/golden_test_util.h"
#include "ir/text.h"

namespace sp::codegen {
namespace {

namespace fs = std::filesystem;

fs::path srcDir() { return fs::path(SP_SOURCE_DIR); }

using test::readFile;

// `path` relative to the source tree (locations in golden files).
std::vector<Plan> lowerFile(const fs::path& path) {
  auto prog = ir::parseProgram(readFile(srcDir() / path), path.string());
  EXPECT_TRUE(prog.ok()) << prog.error().str();
  if (!prog) return {};
  auto plans = lowerProgram(*prog, bindProgramSymbols(*prog, {}));
  EXPECT_TRUE(plans.ok()) << plans.error().str();
  if (!plans) return {};
  for (size_t r = 0; r < plans->size(); ++r) (*plans)[r].file = "r" + std::to_string(r) + ".plan";
  return *plans;
}

std::vector<Plan> lowerCase(const std::string& id) { return lowerFile(fs::path("tests") / "verify" / id / "dist.sp"); }

class PlanGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanGolden, TextMatchesGoldenAndRoundTrips) {
  auto plans = lowerCase(GetParam());
  ASSERT_FALSE(plans.empty());
  for (size_t r = 0; r < plans.size(); ++r) {
    std::string text = printPlanText(plans[r]);
    test::checkGolden(srcDir() / "codegen" / "testdata" / (GetParam() + ".r" + std::to_string(r) + ".plan"), text);
    auto back = parsePlanText(text, plans[r].file);
    ASSERT_TRUE(back.ok()) << back.error().str();
    EXPECT_EQ(printPlanText(*back), text);
    auto json = parsePlanJson(printPlanJson(plans[r]), "r.plan.json");
    ASSERT_TRUE(json.ok()) << json.error().str();
    json->file = plans[r].file;
    EXPECT_EQ(printPlanText(*json), text);
  }
  auto prog = checkPlans(plans);
  EXPECT_TRUE(prog.ok()) << prog.error().str();
}

INSTANTIATE_TEST_SUITE_P(Cases, PlanGolden,
                         ::testing::Values("tp-mlp", "pp-two-stages-microbatches", "sp-layernorm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// The collective waits: a kernel reading an all_reduce result waits for
// the communication stream, the all_reduce waits for the kernel it reads.
TEST(PlanLower, WaitsOnlyWhereStreamsMeet) {
  auto plans = lowerCase("tp-mlp");
  ASSERT_EQ(plans.size(), 2u);
  std::string text = printPlanText(plans[0]);
  EXPECT_NE(text.find("wait s1 for s0\n  step 6 collective s1 \"down\" %down = all_reduce(%p) comm tp [0, 1]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("wait s0 for s1\n  step 8 kernel s0 \"db\" %db = add(%down, %bd)"), std::string::npos) << text;
}

// A chain of ops reuses the bytes of dead intermediates: the arena is
// smaller than the buffers' sum, and the check accepts it.
TEST(PlanMemory, ReusesDeadBuffers) {
  auto prog = ir::parseProgram(R"(program chain {
  world 1
  rank 0 {
    input %x: f32[64, 64]
    %a: f32[64, 64] = tanh(%x)
    %b: f32[64, 64] = exp(%a)
    %c: f32[64, 64] = tanh(%b)
    %d: f32[64, 64] = exp(%c)
    output %d
  }
}
)", "chain.sp");
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  auto plans = lowerProgram(*prog, {});
  ASSERT_TRUE(plans.ok()) << plans.error().str();
  const Plan& p = (*plans)[0];
  int64_t sum = 0;
  for (const auto& b : p.buffers) sum += b.bytes;
  EXPECT_EQ(sum, 5 * 16384);
  EXPECT_EQ(p.arenaBytes, 3 * 16384);  // x, and two slots for a, b, c, d
  EXPECT_TRUE(checkPlan(p).ok());
  // c reuses a's bytes once b has read them, d b's; the input x stays.
  EXPECT_EQ(p.buffers[3].offset, p.buffers[1].offset);
  EXPECT_EQ(p.buffers[4].offset, p.buffers[2].offset);
  EXPECT_NE(p.buffers[2].offset, p.buffers[0].offset);
}

struct Bad {
  const char* name;
  std::string edit_from, edit_to;  // applied to the tp-mlp rank 0 plan
  std::string expect;              // substring of the error
};

class PlanErrors : public ::testing::TestWithParam<Bad> {};

TEST_P(PlanErrors, TextParserRejects) {
  auto plans = lowerCase("tp-mlp");
  ASSERT_FALSE(plans.empty());
  std::string text = printPlanText(plans[0]);
  const Bad& b = GetParam();
  auto at = text.find(b.edit_from);
  ASSERT_NE(at, std::string::npos) << b.edit_from << " in\n" << text;
  text.replace(at, b.edit_from.size(), b.edit_to);
  auto p = parsePlanText(text, "r0.plan");
  ASSERT_FALSE(p.ok()) << "accepted:\n" << text;
  EXPECT_NE(p.error().str().find(b.expect), std::string::npos) << p.error().str();
  EXPECT_EQ(p.error().str().rfind("r0.plan:", 0), 0u) << p.error().str();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanErrors,
    ::testing::Values(
        Bad{"unknown_op", "= matmul(%x, %wg)", "= matmull(%x, %wg)", "r0.plan:18:35: unknown op 'matmull' (did you mean 'matmul'?)"},
        Bad{"bad_version", "version 1", "version 7", "r0.plan:1:39: plan format version 7 is not 1"},
        Bad{"step_index", "step 1 ", "step 4 ", "r0.plan:19:8: step 4 should be step 1"},
        Bad{"undeclared_operand", "matmul(%x, %wg)", "matmul(%x, %nope)", "operand %nope is not a declared buffer"},
        Bad{"size_mismatch", "size 256\n", "size 255\n", "buffer %x: size 255 but f32[2, 4, 8] takes 256 bytes"},
        Bad{"unaligned", "at 256 ", "at 260 ", "are not 64-aligned inside the arena"},
        Bad{"outside_arena", "input at 0 ", "input at 1048576 ", "buffer %x: bytes [1048576, 1048832) are not 64-aligned inside the arena"},
        Bad{"missing_wait", "wait s0 for s1", "wait s1 for s0", "r0.plan:26 step 8: reads %down before r0.plan:24 step 6 that writes it is known to have finished (a stream wait is missing)"},
        Bad{"wrong_stream", "collective s1", "collective s0", "collective steps run on stream s1"},
        Bad{"collective_without_comm", "kernel s0 \"gate\"", "collective s0 \"gate\"", "r0.plan:18:55: expected 'comm', got '@'"},
        Bad{"written_twice", "%up = matmul", "%gate = matmul", "writes buffer %gate a second time"},
        Bad{"unknown_attr", "comm tp [0, 1]", "comm tp [0, 1] {reduction = \"sum\"}", "r0.plan:24:70: unknown attribute 'reduction' for all_reduce"},
        Bad{"trailing", "\n}\n", "\n}\n}\n", "expected end of file after the closing '}'"},
        Bad{"truncated", "  output %y\n}\n", "  output %y\n", "got end of file"},
        Bad{"bad_stream", "wait s0 for s1", "wait s0 for x1", "expected a stream like s0"},
        Bad{"no_mesh", "  mesh [tp = 2]\n", "", "r0.plan: the mesh must have at least one axis and 2 ranks, like the world"},
        Bad{"mesh_size", "mesh [tp = 2]", "mesh [tp = 2, dp = 2]", "r0.plan: the mesh must have at least one axis and 2 ranks, like the world"},
        Bad{"self_wait", "wait s0 for s1", "wait s0 for s0", "the stream waited for must be another existing stream"}),
    [](const auto& info) { return std::string(info.param.name); });

// Two buffers placed on the same bytes while both are live.
TEST(PlanErrors, OverlappingLiveBuffersAreRefused) {
  auto plans = lowerCase("tp-mlp");
  ASSERT_FALSE(plans.empty());
  Plan p = plans[0];
  auto gate = p.findBuffer("gate"), up = p.findBuffer("up");
  ASSERT_TRUE(gate && up);
  p.buffers[size_t(*up)].offset = p.buffers[size_t(*gate)].offset;
  auto st = checkPlan(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().str().find("buffers %gate and %up share arena bytes but r0.plan step 1 may write one while the other is in use"), std::string::npos)
      << st.error().str();
}

TEST(PlanJson, SyntaxAndContentErrorsAreLocated) {
  auto plans = lowerCase("tp-mlp");
  ASSERT_FALSE(plans.empty());
  auto bad = parsePlanJson("{\n \"format\": \"shardproof-plan\",\n \"version\": 1,\n ]", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().str().rfind("p.json:4:", 0), 0u) << bad.error().str();
  std::string json = printPlanJson(plans[0]);
  auto at = json.find("\"op\": \"matmul\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 14, "\"op\": 3");
  auto content = parsePlanJson(json, "p.json");
  ASSERT_FALSE(content.ok());
  EXPECT_EQ(content.error().str(), "p.json: .steps[0].op: expected a string");
  std::string attr = printPlanJson(plans[0]);
  at = attr.find("\"reduce\": \"\\\"sum\\\"\"");
  ASSERT_NE(at, std::string::npos) << attr;
  attr.replace(at, 20, "\"reduce\": \"[1,\"");
  auto lit = parsePlanJson(attr, "p.json");
  ASSERT_FALSE(lit.ok());
  EXPECT_NE(lit.error().str().find(".attrs.reduce"), std::string::npos) << lit.error().str();
}

// A hand-made plan whose collectives cross: on a 2x2 mesh each rank issues
// its two all_reduces in an order that makes the four ranks wait in a cycle.
// Every group sees the same order on both members, so only the global order
// finds it.
std::string crossedRank(int rank, const char* first, const char* second) {
  std::string r = std::to_string(rank);
  auto members = [&](const char* axis) {
    bool dp = std::string(axis) == "dp";
    int a = dp ? rank % 2 : rank / 2 * 2, b = dp ? a + 2 : a + 1;
    return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
  };
  return "plan \"crossed\" rank " + r + " of 4 version 1 {\n"
         "  mesh [dp = 2, tp = 2]\n"
         "  arena 192\n"
         "  streams 2\n"
         "  buffer %x: f32[4] input at 0 size 16\n"
         "  buffer %a: f32[4] temp at 64 size 16\n"
         "  buffer %b: f32[4] temp at 128 size 16\n"
         "  step 0 collective s1 \"a\" %a = all_reduce(%x) comm " + first + " " + members(first) + "\n"
         "  step 1 collective s1 \"b\" %b = all_reduce(%a) comm " + second + " " + members(second) + "\n"
         "  output %b\n"
         "}\n";
}

TEST(PlanHang, CrossedCollectivesAreRefusedNamingStepsAndRanks) {
  // rank 0: tp then dp; rank 1: dp then tp; rank 3: tp then dp; rank 2: dp then tp.
  // 0 waits for 1 (tp), 1 for 3 (dp), 3 for 2 (tp), 2 for 0 (dp).
  const char* order[4][2] = {{"tp", "dp"}, {"dp", "tp"}, {"dp", "tp"}, {"tp", "dp"}};
  std::vector<Plan> plans;
  for (int r = 0; r < 4; ++r) {
    std::string file = "r" + std::to_string(r) + ".plan";
    auto p = parsePlanText(crossedRank(r, order[r][0], order[r][1]), file);
    ASSERT_TRUE(p.ok()) << p.error().str();
    plans.push_back(*p);
  }
  auto prog = checkPlans(plans);
  ASSERT_FALSE(prog.ok());
  EXPECT_EQ(prog.error().id, "deadlock");
  std::string msg = prog.error().str();
  EXPECT_NE(msg.find("the plans would hang: deadlock: ranks 0 -> 1 -> 3 -> 2 -> 0 wait for each other in a cycle"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0 waits at all_reduce 'a' (node 'r0.plan:8 step 0') in group tp [0, 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1 waits at all_reduce 'a' (node 'r1.plan:8 step 0') in group dp [1, 3]"), std::string::npos) << msg;
  // The same plans with rank 1 and 2 in the order of 0 and 3 run.
  order[1][0] = order[2][0] = "tp";
  order[1][1] = order[2][1] = "dp";
  plans.clear();
  for (int r = 0; r < 4; ++r) plans.push_back(*parsePlanText(crossedRank(r, order[r][0], order[r][1]), "r.plan"));
  auto ok = checkPlans(plans);
  EXPECT_TRUE(ok.ok()) << ok.error().str();
}

TEST(PlanPairs, SendRecvPairsMustMatchTheOrder) {
  auto plans = lowerCase("pp-two-stages-microbatches");
  ASSERT_EQ(plans.size(), 2u);
  ASSERT_TRUE(checkPlans(plans).ok());
  // Swap the recorded pairs of rank 1's two recvs.
  std::vector<int> recvs;
  for (size_t i = 0; i < plans[1].steps.size(); ++i)
    if (plans[1].steps[i].kind == StepKind::Recv) recvs.push_back(int(i));
  ASSERT_EQ(recvs.size(), 2u);
  std::swap(plans[1].steps[size_t(recvs[0])].pairStep, plans[1].steps[size_t(recvs[1])].pairStep);
  auto st = checkPlans(plans);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().str(), "r1.plan step 0: pairs with r0 step 7 but the transfer it matches in the collective order is with r0 step 3");
}

TEST(PlanMembers, CommunicatorMustBeTheGroup) {
  auto plans = lowerCase("tp-mlp");
  for (auto& s : plans[1].steps)
    if (s.kind == StepKind::Collective) s.members = {1, 0};
  auto st = checkPlans(plans);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().str().find("communicator of all_reduce lists ranks [1, 0] but group tp of rank 1 is [0, 1]"),
            std::string::npos) << st.error().str();
}

}  // namespace
}  // namespace sp::codegen
