// codegen and the CPU executor on every case of tests/verify: a fixed
// program that verifies becomes plans (read back and verified again), and
// the plans run on the CPU backend to the interpreter's outputs bit for bit
// (same kernels in the same order, collectives reduced in member order); a
// fixed program that does not verify, and every buggy twin, get no plan.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.h"
#include "codegen/lower.h"
#include "codegen/plan_dir.h"
#include "cuda_ref/executor.h"
#include "ir/golden_test_util.h"
#include "ir/text.h"
#include "rewrite/relation/relation_text.h"

namespace sp::cuda_ref {
namespace {

namespace fs = std::filesystem;

fs::path casesDir() { return fs::path(SP_SOURCE_DIR) / "tests" / "verify"; }

using test::readFile;

std::vector<std::string> caseIds() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(casesDir()))
    if (fs::exists(e.path() / "dist.sp")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// case.txt's `outputs = a, b` (empty: every S output).
std::vector<std::string> caseOutputs(const fs::path& dir) {
  std::istringstream in(readFile(dir / "case.txt"));
  std::string line;
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    if (line.rfind("outputs", 0) != 0 || line.find('=') == std::string::npos) continue;
    std::string item;
    std::istringstream items(line.substr(line.find('=') + 1));
    while (std::getline(items, item, ',')) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty()) out.push_back(item);
    }
  }
  return out;
}

codegen::CodegenOptions options(const std::vector<std::string>& outputs) {
  codegen::CodegenOptions o;
  o.verify.outputs = outputs;
  o.verify.timeLimitSeconds = 60;
  return o;
}

// Every output of every rank equal, bit for bit.
void expectSameOutputs(const std::vector<ir::TensorMap>& got, const std::vector<ir::TensorMap>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << what << " rank " << r;
    for (const auto& [name, t] : want[r]) {
      auto it = got[r].find(name);
      ASSERT_NE(it, got[r].end()) << what << " rank " << r << " has no output " << name;
      EXPECT_TRUE(it->second.identical(t)) << what << " rank " << r << " output " << name << ": executor "
                                           << it->second.type().str() << " differs from the interpreter's "
                                           << t.type().str();
    }
  }
}

class ExecCases : public ::testing::TestWithParam<std::string> {};

TEST_P(ExecCases, VerifiedProgramsBecomePlansThatRunLikeTheInterpreter) {
  fs::path dir = casesDir() / GetParam();
  auto seq = ir::parseGraph(readFile(dir / "seq.sp"), (dir / "seq.sp").string());
  auto dist = ir::parseProgram(readFile(dir / "dist.sp"), (dir / "dist.sp").string());
  auto rel = rewrite::parseRelations(readFile(dir / "relations.rel"), (dir / "relations.rel").string());
  ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok());
  auto opts = options(caseOutputs(dir));
  ASSERT_TRUE(rewrite::prepareLemmaLibrary(opts.verify).ok());

  auto gen = codegen::generatePlans(*seq, *dist, *rel, opts);
  ASSERT_TRUE(gen.ok()) << gen.error().str();
  auto plain = rewrite::verify(*seq, *dist, *rel, opts.verify);
  ASSERT_TRUE(plain.ok());
  bool verified = plain->verdict == rewrite::Verdict::Verified;
  EXPECT_EQ(gen->report.verdict, plain->verdict);
  std::printf("[codegen] %-36s dist.sp %s -> %s\n", GetParam().c_str(),
              std::string(rewrite::verdictName(plain->verdict)).c_str(),
              gen->plans.empty() ? "no plan" : "plans");
  if (!verified) {
    EXPECT_TRUE(gen->plans.empty()) << "plans for a program that is not verified";
  } else {
    ASSERT_TRUE(gen->readBack.has_value());
    EXPECT_EQ(gen->readBack->verdict, rewrite::Verdict::Verified);
    ASSERT_EQ(int64_t(gen->plans.size()), dist->worldSize());
    auto prog = codegen::checkPlans(gen->plans);
    ASSERT_TRUE(prog.ok()) << prog.error().str();
    for (uint64_t seed : {1, 2}) {
      ExecOptions eo;
      eo.seed = seed;
      auto got = runPlansCpu(gen->plans, *prog, {}, eo);
      ASSERT_TRUE(got.ok()) << got.error().str();
      ir::RunOptions ro;
      ro.seed = seed;
      auto want = ir::runProgram(*dist, {}, ro);
      ASSERT_TRUE(want.ok()) << want.error().str();
      expectSameOutputs(got->outputs, *want, GetParam() + " seed " + std::to_string(seed));
    }
  }
  if (!fs::exists(dir / "bug.sp")) return;
  auto bug = ir::parseProgram(readFile(dir / "bug.sp"), (dir / "bug.sp").string());
  ASSERT_TRUE(bug.ok()) << bug.error().str();
  auto twin = codegen::generatePlans(*seq, *bug, *rel, opts);
  // A twin that cannot even be ordered (it would hang) is refused as bad input.
  if (!twin.ok()) {
    std::printf("[codegen] %-36s bug.sp refused: %s\n", GetParam().c_str(), twin.error().str().c_str());
    return;
  }
  std::printf("[codegen] %-36s bug.sp %s -> %s\n", GetParam().c_str(),
              std::string(rewrite::verdictName(twin->report.verdict)).c_str(),
              twin->plans.empty() ? "no plan" : "plans");
  EXPECT_NE(twin->report.verdict, rewrite::Verdict::Verified);
  EXPECT_TRUE(twin->plans.empty()) << "plans for a buggy twin";
}

INSTANTIATE_TEST_SUITE_P(Verify, ExecCases, ::testing::ValuesIn(caseIds()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n) c = c == '-' ? '_' : c;
  return n;
});

// What codegen writes, read back from the directory, runs the same.
TEST(ExecDir, WrittenPlansRunFromTheDirectory) {
  fs::path dir = casesDir() / "pp-two-stages-microbatches";
  auto seq = ir::parseGraph(readFile(dir / "seq.sp"), "seq.sp");
  auto dist = ir::parseProgram(readFile(dir / "dist.sp"), "dist.sp");
  auto rel = rewrite::parseRelations(readFile(dir / "relations.rel"), "relations.rel");
  ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok());
  auto opts = options(caseOutputs(dir));
  ASSERT_TRUE(rewrite::prepareLemmaLibrary(opts.verify).ok());
  auto gen = codegen::generatePlans(*seq, *dist, *rel, opts);
  ASSERT_TRUE(gen.ok()) << gen.error().str();
  ASSERT_FALSE(gen->plans.empty());
  fs::path out = fs::temp_directory_path() / ("sp-exec-dir-" + std::to_string(::getpid()));
  fs::remove_all(out);
  ASSERT_TRUE(codegen::writePlanDir(out.string(), gen->plans, {"seq.sp", "dist.sp", "verified", {}}).ok());
  auto plans = codegen::readPlanDir(out.string());
  ASSERT_TRUE(plans.ok()) << plans.error().str();
  auto prog = codegen::checkPlans(*plans);
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  auto got = runPlansCpu(*plans, *prog, {});
  ASSERT_TRUE(got.ok()) << got.error().str();
  auto want = ir::runProgram(*dist, {});
  ASSERT_TRUE(want.ok());
  expectSameOutputs(got->outputs, *want, "from the directory");
  fs::remove_all(out);
}

// A kernel failing on one rank stops the ranks waiting for it in a
// collective: an error naming the rank and step, not a hang.
TEST(ExecErrors, AFailingRankStopsEveryRank) {
  auto prog = ir::parseProgram(R"(program g {
  world 2
  rank 0..1 {
    input %idx: i64[2]
    param %t: f32[4, 3]
    %g: f32[2, 3] = gather(%t, %idx)
    %s: f32[2, 3] = all_reduce(%g) {group = "world"}
    output %s
  }
}
)", "g.sp");
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  auto plans = codegen::lowerProgram(*prog, {});
  ASSERT_TRUE(plans.ok());
  auto back = codegen::readBackPlans(*plans);
  ASSERT_TRUE(back.ok()) << back.error().str();
  std::vector<ir::TensorMap> given(2);
  ir::Tensor bad(ir::DType::I64, {2}), good(ir::DType::I64, {2});
  bad.mutableData<int64_t>()[1] = 9;
  given[0]["idx"] = bad;
  given[1]["idx"] = good;
  auto run = runPlansCpu(back->plans, back->program, given);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().str().find("rank 0: r0.plan:"), std::string::npos) << run.error().str();
  EXPECT_NE(run.error().str().find("step 0 (gather 'g'): "), std::string::npos) << run.error().str();
}

TEST(ExecErrors, InputsMustMatchThePlansBindings) {
  auto prog = ir::parseProgram(R"(program s {
  world 1
  rank 0 {
    input %x: f32[n]
    %y: f32[n] = tanh(%x)
    output %y
  }
}
)", "s.sp");
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  auto plans = codegen::lowerProgram(*prog, {{"n", 3}});
  ASSERT_TRUE(plans.ok());
  auto back = codegen::readBackPlans(*plans);
  ASSERT_TRUE(back.ok()) << back.error().str();
  std::vector<ir::TensorMap> given(1);
  given[0]["x"] = ir::Tensor(ir::DType::F32, {5});
  auto run = runPlansCpu(back->plans, back->program, given);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().str().find("rank 0: input 'x': dim 'n' is 5 here but 3 elsewhere (n = 3 from the run options)"), std::string::npos)
      << run.error().str();
  given[0]["x"] = ir::Tensor(ir::DType::F32, {3});
  auto ok = runPlansCpu(back->plans, back->program, given);
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(ok->outputs[0].at("y").dims(), std::vector<int64_t>{3});
}

}  // namespace
}  // namespace sp::cuda_ref
