// codegen on the shared capture corpus (Megatron GPT 1 layer, TP 2 and TP 4
// torch.fx captures; /work/shared/corpus): verified with inferred relations
// and --outputs div_2, lowered, read back, checked and verified again. The
// copy with the embedding's all_reduce replaced by a clone gets no plan.
// Executing the corpus is not tested (its arenas are about 9 GB a rank).
// Skipped without the corpus unless SP_REQUIRE_CORPUS=1.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.h"
#include "frontend/load.h"
#include "rewrite/relation/relation_text.h"

namespace sp::codegen {
namespace {

namespace fs = std::filesystem;

fs::path corpusRoot() { return fs::path(SP_SOURCE_DIR) / ".." / "shared" / "corpus"; }

bool haveCorpus(const std::string& name) {
  if (fs::exists(corpusRoot() / name / "dist")) return true;
  const char* v = std::getenv("SP_REQUIRE_CORPUS");
  if (v && std::string(v) == "1") ADD_FAILURE() << "corpus capture " << name << " not found (SP_REQUIRE_CORPUS=1)";
  return false;
}

Result<CodegenResult> codegenDir(const fs::path& dir) {
  SP_ASSIGN(ir::Graph seq, frontend::loadGraph((dir / "seq").string()));
  SP_ASSIGN(ir::Program dist, frontend::loadProgram((dir / "dist").string()));
  SP_ASSIGN(rewrite::RelationFile rel, rewrite::inferRelations(seq, dist));
  CodegenOptions opts;
  opts.verify.outputs = {"div_2"};
  opts.verify.witnessWorkLimit = 0;  // a refutation would need gigabytes; inconclusive is no plan too
  opts.verify.timeLimitSeconds = 120;
  SP_TRY(rewrite::prepareLemmaLibrary(opts.verify));
  return generatePlans(seq, dist, rel, opts);
}

class CorpusCodegen : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusCodegen, CaptureBecomesVerifiedPlans) {
  if (!haveCorpus(GetParam())) GTEST_SKIP() << "corpus not found at " << corpusRoot();
  auto gen = codegenDir(corpusRoot() / GetParam());
  ASSERT_TRUE(gen.ok()) << gen.error().str();
  ASSERT_EQ(gen->report.verdict, rewrite::Verdict::Verified) << gen->report.reason;
  ASSERT_TRUE(gen->readBack.has_value());
  EXPECT_EQ(gen->readBack->verdict, rewrite::Verdict::Verified) << gen->readBack->reason;
  ASSERT_FALSE(gen->plans.empty());
  for (const Plan& p : gen->plans) {
    int64_t sum = 0, comm = 0;
    for (const auto& b : p.buffers) sum += b.bytes;
    for (const auto& s : p.steps) comm += s.kind == StepKind::Collective;
    EXPECT_LT(p.arenaBytes, sum) << "no reuse in rank " << p.rank;
    EXPECT_GT(comm, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Megatron, CorpusCodegen, ::testing::Values("megatron_gpt_tp2_l1", "megatron_gpt_tp4_l1"));

TEST(CorpusCodegen, MissingAllReduceGetsNoPlan) {
  const std::string name = "megatron_gpt_tp2_l1";
  if (!haveCorpus(name)) GTEST_SKIP() << "corpus not found at " << corpusRoot();
  fs::path dir = fs::temp_directory_path() / ("sp-codegen-corpus-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string from = "torch.ops._c10d_functional.all_reduce.default(slice_scatter, 'sum', '12')";
  bool replaced = false;
  for (const char* side : {"seq", "dist"}) {
    fs::create_directories(dir / side);
    for (const auto& e : fs::directory_iterator(corpusRoot() / name / side)) {
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      std::string s = ss.str();
      if (auto at = s.find(from); std::string(side) == "dist" && at != std::string::npos) {
        s.replace(at, from.size(), "torch.ops.aten.clone.default(slice_scatter)");
        replaced = true;
      }
      std::ofstream(dir / side / e.path().filename()) << s;
    }
  }
  ASSERT_TRUE(replaced) << "corpus text changed: '" << from << "' not found";
  auto gen = codegenDir(dir);
  fs::remove_all(dir);
  ASSERT_TRUE(gen.ok()) << gen.error().str();
  EXPECT_NE(gen->report.verdict, rewrite::Verdict::Verified);
  EXPECT_TRUE(gen->plans.empty());
}

}  // namespace
}  // namespace sp::codegen
