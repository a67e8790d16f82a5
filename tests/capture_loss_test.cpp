// Cross entropy (aten.nll_loss_forward / nll_loss_backward after
// _log_softmax), aten.gather and aten.repeat in captures of the capture
// helper (tests/fixtures/capture/loss, README; torch 1.13 make_fx on gloo).
// The sequential captures run by `shardproof run` give torch's numbers
// (stored as .npy next to them); the TP programs verify with inferred
// relations and their twins with a collective left out are refuted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "tests/cli_harness.h"

namespace sp::test {
namespace {

namespace fs = std::filesystem;

std::string lossFixture(const std::string& rel) { return sourcePath("tests/fixtures/capture/loss/" + rel); }

CliResult verifyLoss(const std::string& name, const std::string& seqOf = "") {
  std::string dir = lossFixture(name);
  std::string seq = seqOf.empty() ? dir + "/seq.py" : lossFixture(seqOf) + "/seq.py";
  return runCli({"verify", "--seq", seq, "--dist", dir + "/dist", "--mesh", dir + "/mesh.txt", "--infer-relations",
                 "--format", "json"});
}

nlohmann::json parse(const CliResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (...) {
    ADD_FAILURE() << "not json: " << r.out << r.err;
    return nlohmann::json::object();
  }
}

// `shardproof run seq.py` on the stored inputs equals torch's outputs.
TEST(CaptureLoss, SequentialRunMatchesTorch) {
  for (const char* name : {"ce_tp2", "ce_sum_tp2", "ce_none_tp2", "pick_tp2", "tile_tp2", "gqa_tp2", "ce_grad"}) {
    SCOPED_TRACE(name);
    std::string dir = lossFixture(name);
    auto info = runCli({"inspect", dir + "/seq.py", "--format", "json"});
    ASSERT_EQ(info.code, 0) << info.out << info.err;
    auto j = parse(info);
    std::vector<std::string> args = {"run", dir + "/seq.py"};
    for (const auto& in : j["inputs"]) {
      std::string n = in["name"].get<std::string>();
      args.push_back("--input");
      args.push_back(n + "=" + dir + "/data/in_" + n + ".npy");
    }
    auto out = tempDir(std::string("capture-loss-run-") + name);
    args.push_back("--out-dir");
    args.push_back(out.string());
    auto r = runCli(args);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    size_t k = 0;
    for (const auto& o : j["outputs"]) {
      std::string n = o["name"].get<std::string>();
      auto got = ir::readNpy((out / (n + ".npy")).string());
      auto want = ir::readNpy(dir + "/data/out_" + std::to_string(k++) + ".npy");
      ASSERT_TRUE(got.ok()) << n;
      ASSERT_TRUE(want.ok()) << n;
      ASSERT_EQ(got->numel(), want->numel()) << n;
      ASSERT_EQ(got->dims(), want->dims()) << n;
      for (int64_t i = 0; i < got->numel(); ++i)
        EXPECT_NEAR(got->getAsDouble(i), want->getAsDouble(i), 1e-5 + 1e-4 * std::abs(want->getAsDouble(i)))
            << n << "[" << i << "]";
    }
    EXPECT_EQ(k, name == std::string("ce_grad") ? 2u : 1u);
    fs::remove_all(out);
  }
}

// The IR forms: F.cross_entropy is one cross_entropy node (reduction and
// ignore_index kept), gather a gather_elements, repeat a view.
TEST(CaptureLoss, ImportedForms) {
  struct Want {
    const char* name;
    const char* op;
    int count;
  };
  for (const Want& w : std::vector<Want>{{"ce_tp2", "cross_entropy", 1},
                                          {"ce_grad", "cross_entropy", 1},
                                          {"pick_tp2", "gather_elements", 1},
                                          {"tile_tp2", "expand", 1}}) {
    SCOPED_TRACE(w.name);
    auto r = runCli({"inspect", lossFixture(w.name) + "/seq.py", "--format", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(parse(r)["ops"][w.op], w.count) << r.out;
  }
  auto ir = runCli({"inspect", lossFixture("ce_sum_tp2") + "/seq.py", "--print-ir"});
  ASSERT_EQ(ir.code, 0) << ir.err;
  EXPECT_NE(ir.out.find("cross_entropy("), std::string::npos) << ir.out;
  EXPECT_NE(ir.out.find("ignore_index = 0"), std::string::npos) << ir.out;
  EXPECT_NE(ir.out.find("reduction = \"sum\""), std::string::npos) << ir.out;
}

TEST(CaptureLoss, TpProgramsVerify) {
  for (const char* name : {"ce_tp2", "ce_tp3", "ce_sum_tp2", "ce_none_tp2", "ce_vocab_tp3", "vocab_ce_tp2",
                           "vocab_ce_tp3", "pick_tp2", "tile_tp2", "tile_tp3", "gqa_tp2"}) {
    SCOPED_TRACE(name);
    auto r = verifyLoss(name);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(parse(r)["verdict"], "verified") << r.out;
  }
  // Megatron's vocab-parallel cross entropy proves F.cross_entropy under the
  // lemma's assumption that S's targets are in [0, vocab) (no ignored row).
  auto r = verifyLoss("vocab_ce_tp3");
  EXPECT_NE(r.out.find("lemma cross-entropy-as-shifted-logsumexp holds where the sequential lookup is defined"),
            std::string::npos)
      << r.out;
}

// Each sequential capture refines itself (a one-rank program of itself).
TEST(CaptureLoss, SequentialRefinesItself) {
  for (const char* name : {"ce_grad", "ce_sum_tp2", "ce_none_tp2", "pick_tp2"}) {
    SCOPED_TRACE(name);
    std::string seq = lossFixture(name) + "/seq.py";
    auto r = verifyAgainstItself(seq, std::string("capture-loss-self-") + name);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
  }
}

TEST(CaptureLoss, TwinsAreRefuted) {
  struct Twin {
    const char* name;
    const char* seqOp;     // the S op the refutation stops at
    const char* location;  // its source line
  };
  for (const Twin& t : std::vector<Twin>{
           // the MLP's all_reduce left out: the logits' matmul reads partial sums
           {"ce_tp3_noar", "matmul 'mm_1'", "loss_capture.py:"},
           {"ce_vocab_tp3_noar", "matmul 'mm_1'", "loss_capture.py:"},
           {"pick_tp3_noar", "matmul 'mm_1'", "loss_capture.py:"},
           {"tile_tp3_noar", "add 'add'", "loss_capture.py:"},
           // the target logit's all_reduce left out: the loss itself
           {"vocab_ce_tp3_nopred", "cross_entropy 'nll_loss_forward_cross_entropy'", "loss_capture.py:"},
           // KV heads tiled by repeat instead of repeat_interleave: the
           // attention scores read the wrong head
           {"gqa_tp2_tile", "matmul 'bmm'", "loss_capture.py:"}}) {
    SCOPED_TRACE(t.name);
    auto r = verifyLoss(t.name);
    ASSERT_EQ(r.code, 1) << r.out << r.err;
    auto j = parse(r);
    EXPECT_EQ(j["verdict"], "refuted") << r.out;
    EXPECT_EQ(j["failure"]["seq_op"], t.seqOp) << r.out;
    EXPECT_NE(j["failure"]["location"].get<std::string>().find(t.location), std::string::npos) << r.out;
  }
}

// A reduction the capture does not compute is not proven: S sums the loss
// (ignore_index 0), D is ce_tp2's mean.
TEST(CaptureLoss, AnotherReductionIsNotVerified) {
  auto r = verifyLoss("ce_tp2", "ce_sum_tp2");
  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_NE(parse(r)["verdict"], "verified") << r.out;
}

// Megatron's cross entropy written with [N] statistics and a row pick
// (predicted_logits_1d = logits_2d[arange_1d, target_1d]; sums without
// keepdim; the row max unsqueezed to shift), as its own code and torch.fx
// write it: verified (lemma cross-entropy-as-shifted-logsumexp-rows). Its
// twins are refuted at the loss: the picked logits not summed over the
// vocab shards (each rank's own pick, zero where another rank owns the
// target), and the exponentials' sums not summed.
TEST(CaptureLoss, RowPickVocabCrossEntropyVerifies) {
  auto r = verifyLoss("vocab_ce_rowpick_tp3");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(parse(r)["verdict"], "verified") << r.out;
  for (auto [what, from] : {std::pair<const char*, const char*>{"pick", "all_reduce.default(masked_fill_1, 'sum', '1')"},
                            {"sum", "all_reduce.default(sum_1, 'sum', '1')"}}) {
    SCOPED_TRACE(what);
    auto dir = tempDir(std::string("capture-loss-rowpick-") + what);
    fs::copy(lossFixture("vocab_ce_rowpick_tp3"), dir, fs::copy_options::recursive);
    for (const auto& e : fs::directory_iterator(dir / "dist")) {
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << e.path();
      // the collective's operand passed through unchanged
      std::string operand = std::string(from).substr(std::string("all_reduce.default(").size());
      operand = operand.substr(0, operand.find(','));
      size_t bol = text.rfind("torch.ops._c10d_functional.", at);
      text.replace(bol, at + std::string(from).size() - bol, "torch.ops.aten.clone.default(" + operand + ")");
      std::ofstream(e.path()) << text;
    }
    auto twin = runCli({"verify", "--seq", (dir / "seq.py").string(), "--dist", (dir / "dist").string(), "--mesh",
                        (dir / "mesh.txt").string(), "--infer-relations", "--format", "json"});
    fs::remove_all(dir);
    ASSERT_EQ(twin.code, 1) << twin.out << twin.err;
    EXPECT_EQ(parse(twin)["verdict"], "refuted") << twin.out;
  }
}

}  // namespace
}  // namespace sp::test
