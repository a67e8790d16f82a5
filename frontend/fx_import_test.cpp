#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "frontend/fx_import.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

const std::string kCorpus = SP_SOURCE_DIR "/../shared/corpus/megatron_gpt_tp2_l1";

std::map<std::string, int> opCounts(const ir::Graph& g) {
  std::map<std::string, int> c;
  for (const auto& n : g.nodes()) ++c[std::string(ir::opName(n.op))];
  return c;
}

std::string countsStr(const ir::Graph& g) {
  std::string s;
  for (const auto& [k, v] : opCounts(g)) s += k + "=" + std::to_string(v) + " ";
  return s;
}

TEST(FxCorpus, MegatronSeq) {
  std::string path = kCorpus + "/seq/fw.g0.r0.py";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "corpus absent: " << path;
  auto g = importFxGraph(path);
  ASSERT_TRUE(g.ok()) << g.error().str();
  std::printf("seq: %zu nodes, %zu inputs, %zu params, %zu outputs: %s\n", g->nodes().size(),
              g->inputs().size(), g->params().size(), g->outputs().size(), countsStr(*g).c_str());
}

TEST(FxCorpus, MegatronDist) {
  std::vector<std::string> files{kCorpus + "/dist/fw.g0.r0.py", kCorpus + "/dist/fw.g0.r1.py"};
  if (!std::filesystem::exists(files[0])) GTEST_SKIP() << "corpus absent: " << files[0];
  auto p = importFxProgram(files);
  ASSERT_TRUE(p.ok()) << p.error().str();
  for (const auto& g : p->ranks())
    std::printf("rank: %zu nodes: %s\n", g.nodes().size(), countsStr(g).c_str());
}

}  // namespace
}  // namespace sp::frontend
