// End-to-end tests of the shardproof binary: help, exit codes, messages.
#include <gtest/gtest.h>

#include "tests/cli_harness.h"

namespace sp::test {
namespace {

TEST(Cli, HelpListsCommands) {
  auto r = runCli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos);
  EXPECT_NE(r.out.find("run"), std::string::npos);
}

TEST(Cli, NoCommandIsBadInput) {
  auto r = runCli({});
  EXPECT_EQ(r.code, 3);
}

TEST(Cli, UnknownFlagIsBadInput) {
  auto r = runCli({"inspect", "--no-such-flag", "x.onnx"});
  EXPECT_EQ(r.code, 3);
}

TEST(Cli, MissingModelFile) {
  auto r = runCli({"inspect", "/nonexistent/model.onnx"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "error: '/nonexistent/model.onnx' does not exist\n");
}

TEST(Cli, UnknownModelFormat) {
  auto dir = tempDir("fmt");
  std::ofstream(dir / "model.xyz") << "hello";
  auto r = runCli({"inspect", (dir / "model.xyz").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("unknown model format '.xyz'"), std::string::npos) << r.err;
}

TEST(Cli, CorruptOnnxIsOneClearError) {
  auto dir = tempDir("corrupt");
  std::ofstream(dir / "bad.onnx", std::ios::binary) << std::string("\x08\x07\x12\xff\xff\xff garbage", 16);
  auto r = runCli({"inspect", (dir / "bad.onnx").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, EmptyRankDirectory) {
  auto dir = tempDir("emptydir");
  auto r = runCli({"inspect", dir.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("has no per-rank files"), std::string::npos) << r.err;
}

TEST(Cli, RankDirectoryWithGap) {
  auto dir = tempDir("gap");
  std::ofstream(dir / "m.r0.onnx") << "x";
  std::ofstream(dir / "m.r2.onnx") << "x";
  auto r = runCli({"inspect", dir.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("has no file for rank 1"), std::string::npos) << r.err;
}

TEST(Cli, BadInputArgument) {
  auto r = runCli({"run", sourcePath("examples/mlp.sp"), "--input", "novalue", "--out-dir", "/tmp/x"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not NAME=FILE.npy"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sp::test
