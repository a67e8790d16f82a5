// The shrunk witness (rewrite/witness/witness_shrink.h): which dims it shrinks, where
// it refuses, that a difference stands only when S's value and D's rebuild
// carry the same rows and the same sums over them, and that refutations
// through it name what was shrunk.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/text.h"
#include "rewrite/verify/verify.h"
#include "rewrite/verify/verify_test_util.h"
#include "rewrite/witness/witness.h"
#include "rewrite/witness/witness_shrink.h"

namespace sp::rewrite {
namespace {

struct Texts {
  ir::Graph seq;
  ir::Program dist;
  RelationFile rel;
};

Texts parse(const std::string& s, const std::string& d, const std::string& r) {
  auto g = ir::parseGraph(s, "seq.sp");
  auto p = ir::parseProgram(d, "dist.sp");
  auto f = parseRelations(r, "r.rel");
  SP_ASSERT(g.ok(), g.ok() ? "" : g.error().str());
  SP_ASSERT(p.ok(), p.ok() ? "" : p.error().str());
  SP_ASSERT(f.ok(), f.ok() ? "" : f.error().str());
  return Texts{std::move(*g), std::move(*p), std::move(*f)};
}

// D: one rank computing `body` on x (replicated).
std::string oneRank(const std::string& x, const std::string& body) {
  return "program d {\n  world 1\n  mesh [tp = 1]\n  rank 0 {\n    input %x: " + x + "\n" + body + "  }\n}\n";
}

std::string shapeOf(const ir::Graph& g, const std::string& v) { return g.value(*g.findValue(v)).type.str(); }

// Expect lines: S value -> a D term (concrete).
using Expected = std::map<std::string, RelPtr>;
RelPtr at(int64_t rank, const std::string& name) { return Rel::dist(IntExpr::constant(rank), name); }

// Batch, sequence and hidden: [8, 6, 16] flattened to [48, 16] rows for
// the matmul, softmax over hidden, a mean over the rows: batch shrinks,
// then the sequence (no op here mixes positions), and every shape that
// holds them shrinks with them.
TEST(ShrunkWitness, BatchShrinksThroughFlatteningAndReductions) {
  std::string body =
      "    param %w: f32[16, 16]\n"
      "    %f: f32[48, 16] = reshape(%x) {shape = [48, 16]}\n"
      "    %h: f32[48, 16] = matmul(%f, %w)\n"
      "    %p: f32[48, 16] = softmax(%h) {axis = -1}\n"
      "    %b: f32[8, 6, 16] = reshape(%p) {shape = [8, 6, 16]}\n"
      "    %m: f32[6, 16] = reduce_mean(%b) {axes = [0], keepdims = 0}\n"
      "    %s: f32[] = reduce_sum(%b) {axes = [], keepdims = 0}\n"
      "    output %m\n    output %s\n";
  std::string seq = "graph s {\n  input %x: f32[8, 6, 16]\n" + body + "}\n";
  Texts t = parse(seq, oneRank("f32[8, 6, 16]", body), "dist[*].x = seq.x\ndist[*].w = seq.w\n");
  std::string why;
  auto w = ShrunkWitness::make(t.seq, t.dist, t.rel, Expected{{"m", at(0, "m")}, {"s", at(0, "s")}}, &why);
  ASSERT_TRUE(w) << why;
  EXPECT_EQ(w->extents(), (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(shapeOf(w->seq(), "x"), "f32[1, 1, 16]");
  EXPECT_EQ(shapeOf(w->seq(), "f"), "f32[1, 16]");
  EXPECT_EQ(shapeOf(w->seq(), "m"), "f32[1, 16]");
  EXPECT_EQ(shapeOf(w->dist().rank(0), "b"), "f32[1, 1, 16]");
  EXPECT_NE(w->note().find("x dim 0"), std::string::npos) << w->note();
  // The mean is the row's; the sum is 8 times it: each stands against the
  // same in D, and not against the other.
  EXPECT_TRUE(w->transfersExpected("m"));
  EXPECT_TRUE(w->transfersExpected("s"));
  auto crossed = ShrunkWitness::make(t.seq, t.dist, t.rel, Expected{{"s", Rel::reshape(at(0, "m"), {})}}, &why);
  EXPECT_TRUE(!crossed || !crossed->transfersExpected("s"));
}

// Where rows are mixed, the row extent does not shrink: a log-softmax over
// a row dim (shifted by log n), a slice of one, a concat along one, a
// product over one, a row dim meeting a plain dim of the same extent.
// (x is [8, 1]: 8 is the one extent to try.)
TEST(ShrunkWitness, OpsThatMixRowsStopTheShrink) {
  struct Mix {
    std::string body, why;
  };
  for (const Mix& m : std::vector<Mix>{
           {"    %y: f32[8, 1] = log_softmax(%x) {axis = 0}\n    output %y\n", "normalization over a row dim"},
           {"    %y: f32[4, 1] = slice(%x) {starts = [0], ends = [4], axes = [0]}\n    output %y\n",
            "a cut of a row dim inside its repeated rows"},
           {"    %i: i64[8] = range() {start = 0, limit = 8}\n    %f: f32[8] = cast(%i) {to = f32}\n"
            "    %c: f32[8, 1] = unsqueeze(%f) {axes = [1]}\n"
            "    %y: f32[16, 1] = concat(%x, %c) {axis = 0}\n    output %y\n",
            "a join of parts that repeat their rows differently"},
           {"    %y: f32[1] = reduce_prod(%x) {axes = [0], keepdims = 0}\n    output %y\n", "product over a row dim"},
           {"    %c: f32[8] = constant() {value = dense<f32[8], [1, 2, 3, 4, 5, 6, 7, 8]>}\n"
            "    %u: f32[8, 1] = unsqueeze(%c) {axes = [1]}\n"
            "    %y: f32[8, 1] = mul(%x, %u)\n    output %y\n",
            "meets a dim of the same extent that is not one"}}) {
    std::string seq = "graph s {\n  input %x: f32[8, 1]\n" + m.body + "}\n";
    Texts t = parse(seq, oneRank("f32[8, 1]", m.body), "dist[*].x = seq.x\n");
    std::string why;
    auto w = ShrunkWitness::make(t.seq, t.dist, t.rel, {}, &why);
    EXPECT_FALSE(w) << m.body;
    EXPECT_NE(why.find(m.why), std::string::npos) << m.body << ": " << why;
  }
}

// Attention along the sequence, [s, h] with s = h = 8 (a leaf whose two
// dims have the row extent by chance): only the sequence dim is rows. The
// softmax over keys is the repeated softmax over n (k = -1), its product
// with the values sums the n copies back (k = 0), and the layer norm over
// the hidden dim (not rows) is kept: the witness runs on one position and
// the output stands against D's at full size.
TEST(ShrunkWitness, AttentionShrinksAlongTheSequence) {
  std::string body =
      "    param %wq: f32[8, 8]\n    param %wk: f32[8, 8]\n    param %wv: f32[8, 8]\n"
      "    %n: f32[8, 8] = layer_norm(%x)\n"
      "    %q: f32[8, 8] = matmul(%n, %wq)\n    %k: f32[8, 8] = matmul(%n, %wk)\n"
      "    %v: f32[8, 8] = matmul(%n, %wv)\n"
      "    %kt: f32[8, 8] = transpose(%k) {perm = [1, 0]}\n"
      "    %s: f32[8, 8] = matmul(%q, %kt)\n    %p: f32[8, 8] = softmax(%s)\n"
      "    %o: f32[8, 8] = matmul(%p, %v)\n    output %o\n";
  std::string seq = "graph s {\n  input %x: f32[8, 8]\n" + body + "}\n";
  Texts t = parse(seq, oneRank("f32[8, 8]", body),
                  "dist[*].x = seq.x\ndist[*].wq = seq.wq\ndist[*].wk = seq.wk\ndist[*].wv = seq.wv\n");
  std::string why;
  auto w = ShrunkWitness::make(t.seq, t.dist, t.rel, Expected{{"o", at(0, "o")}}, &why);
  ASSERT_TRUE(w) << why;
  EXPECT_EQ(shapeOf(w->seq(), "x"), "f32[1, 8]");
  EXPECT_EQ(shapeOf(w->seq(), "p"), "f32[1, 1]");
  EXPECT_EQ(shapeOf(w->seq(), "o"), "f32[1, 8]");
  EXPECT_TRUE(w->transfersExpected("o"));
  EXPECT_NE(w->note().find("x dim 0"), std::string::npos) << w->note();
}

// Sums over rows scale a value by the row count (x is [8, 1]: 8 is the one
// extent to try): a nonlinear op after one
// stops the shrink, and a sum divided by a constant is still n times the
// shrunk value (k counts it), so it never stands against a mean.
TEST(ShrunkWitness, SumsOverRowsAreCounted) {
  std::string nonlinear =
      "    %s: f32[1] = reduce_sum(%x) {axes = [0], keepdims = 0}\n"
      "    %y: f32[1] = exp(%s)\n    output %y\n";
  Texts t = parse("graph s {\n  input %x: f32[8, 1]\n" + nonlinear + "}\n", oneRank("f32[8, 1]", nonlinear),
                  "dist[*].x = seq.x\n");
  std::string why;
  auto w = ShrunkWitness::make(t.seq, t.dist, t.rel, {}, &why);
  EXPECT_FALSE(w);
  EXPECT_NE(why.find("scaled by a sum over rows"), std::string::npos) << why;

  // S: sum / 8; D: mean. Equal at full size; at one row S's is 1/8 of D's.
  std::string s =
      "graph s {\n  input %x: f32[8, 1]\n"
      "  %s: f32[1] = reduce_sum(%x) {axes = [0], keepdims = 0}\n"
      "  %c: f32[] = constant() {value = dense<f32[], [8]>}\n"
      "  %y: f32[1] = div(%s, %c)\n  output %y\n}\n";
  std::string d = oneRank("f32[8, 1]", "    %y: f32[1] = reduce_mean(%x) {axes = [0], keepdims = 0}\n    output %y\n");
  Texts u = parse(s, d, "dist[*].x = seq.x\n");
  auto v = ShrunkWitness::make(u.seq, u.dist, u.rel, Expected{{"y", at(0, "y")}}, &why);
  ASSERT_TRUE(v) << why;
  EXPECT_FALSE(v->transfersExpected("y"));
}

// Data parallel: the batch split over dp is whole blocks of a rank's rows,
// so the extent of a rank's batch (4) shrinks: S's 8 rows run as 2 (one per
// rank), each rank's 4 as 1, the all_gather along the batch joins them, and
// the expect line still stands. Split along hidden, the rows (8) shrink.
TEST(ShrunkWitness, DataParallelBatchShrinksToOneRowPerRank) {
  std::string seq = "graph s {\n  input %x: f32[8, 16]\n  %y: f32[8, 16] = relu(%x)\n  output %y\n}\n";
  auto run = [&](const std::string& slice, const std::string& gathered, int dim) {
    std::string d = "program d {\n  world 2\n  mesh [dp = 2]\n  rank 0..1 {\n    input %x: " + slice +
                    "\n    %h: " + slice + " = relu(%x)\n    %y: f32[8, 16] = all_gather(%h) {group = \"dp\", dim = " +
                    std::to_string(dim) + "}\n    output %y\n  }\n}\n";
    std::string rel = "for r in dp: dist[r].x = slice(seq.x, dim=" + std::to_string(dim) +
                      ", start=idx(r,dp)*" + gathered + ", end=(idx(r,dp)+1)*" + gathered + ")\n";
    Texts t = parse(seq, d, rel);
    std::string why;
    auto w = ShrunkWitness::make(t.seq, t.dist, t.rel, Expected{{"y", at(0, "y")}}, &why);
    EXPECT_TRUE(w) << why;
    return w;
  };
  auto batch = run("f32[4, 16]", "4", 0);
  ASSERT_TRUE(batch);
  // The columns (16) and the rank's batch (4) both shrink.
  EXPECT_EQ(batch->extents(), (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(shapeOf(batch->dist().rank(1), "x"), "f32[1, 1]");
  EXPECT_EQ(shapeOf(batch->seq(), "x"), "f32[2, 1]");
  EXPECT_TRUE(batch->transfersExpected("y"));
  // The rank's relation is cut at the shrunk bounds: rank 1 holds S row 1.
  ASSERT_EQ(batch->rel().inputs.size(), 2u);
  EXPECT_EQ(str(*batch->rel().inputs[1].expr), "slice(seq.x, dim=0, start=1, end=2)");
  auto hidden = run("f32[8, 8]", "8", 1);
  ASSERT_TRUE(hidden);
  EXPECT_TRUE(hidden->transfersExpected("y"));
}

// End to end: a TP MLP over [batch, seq, hidden] without its all_reduce is
// refuted by the shrunk witness, which shrinks the tokens (sequence, then
// batch: each op of an MLP treats tokens alike) and says so; without the
// shrink the same verdict comes from the full-size witness.
TEST(ShrunkWitness, RefutesAMissingAllReduceAndSaysWhatItShrank) {
  std::string seq =
      "graph s {\n  input %x: f32[4, 32, 16]\n  param %w1: f32[16, 64]\n  param %w2: f32[64, 16]\n"
      "  %h: f32[4, 32, 64] = matmul(%x, %w1)\n  %g: f32[4, 32, 64] = gelu(%h)\n"
      "  %y: f32[4, 32, 16] = matmul(%g, %w2)\n  output %y\n}\n";
  std::string dist =
      "program d {\n  world 2\n  mesh [tp = 2]\n  rank 0..1 {\n    input %x: f32[4, 32, 16]\n"
      "    param %w1: f32[16, 32]\n    param %w2: f32[32, 16]\n"
      "    %h: f32[4, 32, 32] = matmul(%x, %w1)\n    %g: f32[4, 32, 32] = gelu(%h)\n"
      "    %y: f32[4, 32, 16] = matmul(%g, %w2)\n    output %y\n  }\n}\n";
  std::string rel =
      "dist[*].x = seq.x\n"
      "for r in tp: dist[r].w1 = slice(seq.w1, dim=1, start=idx(r,tp)*32, end=(idx(r,tp)+1)*32)\n"
      "for r in tp: dist[r].w2 = slice(seq.w2, dim=0, start=idx(r,tp)*32, end=(idx(r,tp)+1)*32)\n"
      "expect seq.y = dist[0].y\n";
  Texts t = parse(seq, dist, rel);
  for (bool shrink : {true, false}) {
    VerifyOptions o;
    o.shrinkWitness = shrink;
    o.shrinkWitnessFrom = 0;  // a small program: shrunk anyway
    auto rep = verify(t.seq, t.dist, t.rel, o);
    ASSERT_TRUE(rep.ok()) << rep.error().str();
    ASSERT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
    ASSERT_TRUE(rep->failure && rep->failure->witness);
    const std::string& note = rep->failure->witness->shrunk;
    if (shrink) {
      EXPECT_NE(note.find("extent 32 (x dim 1"), std::string::npos) << note;
      EXPECT_NE(note.find("; then extent 4 (x dim 0)"), std::string::npos) << note;
      bool said = false;
      for (const auto& a : rep->assumptions) said = said || a == note;
      EXPECT_TRUE(said);
    } else {
      EXPECT_TRUE(note.empty()) << note;
    }
    EXPECT_GT(rep->failure->witness->worstOutput.maxRelErr, o.tolerance);
  }
}

// The correct program is still verified with the witness machinery on, and
// the shrunk programs' D rebuilds its collectives and sends.
TEST(ShrunkWitness, PipelineSendsCarryRows) {
  std::string seq =
      "graph s {\n  input %x: f32[6, 8]\n  %a: f32[6, 8] = relu(%x)\n  %b: f32[6, 8] = exp(%a)\n  output %b\n}\n";
  std::string dist =
      "program d {\n  world 2\n  mesh [pp = 2]\n"
      "  rank 0 {\n    input %x: f32[6, 8]\n    %a: f32[6, 8] = relu(%x)\n    send(%a) {peer = 1}\n  }\n"
      "  rank 1 {\n    %a: f32[6, 8] = recv() {peer = 0, dtype = f32, shape = [6, 8]}\n"
      "    %b: f32[6, 8] = exp(%a)\n    output %b\n  }\n}\n";
  Texts t = parse(seq, dist, "dist[0].x = seq.x\n");
  std::string why;
  auto w = ShrunkWitness::make(t.seq, t.dist, t.rel, Expected{{"b", at(1, "b")}}, &why);
  ASSERT_TRUE(w) << why;
  // Columns (the larger saving), then rows: relu and exp treat both alike.
  EXPECT_EQ(w->extents(), (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(shapeOf(w->dist().rank(1), "a"), "f32[1, 1]");
  EXPECT_TRUE(w->transfersExpected("b"));
}

}  // namespace
}  // namespace sp::rewrite

namespace sp::rewrite {
namespace {

std::string slurpFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void distLeavesOf(const Rel& r, std::set<std::pair<int64_t, std::string>>& out) {
  if (r.op == RelOp::Dist) {
    auto rank = r.rank.eval({}, nullptr);
    if (rank.ok()) out.insert({*rank, r.name});
  }
  for (const auto& a : r.args) distLeavesOf(*a, out);
}

// Soundness over the regression corpus (tests/verify): every correct
// program (dist.sp) that the analysis shrinks shows, on the shrunk witness,
// no difference at any output whose expect line the shrink says stands at
// full size. A wrong transfer rule would show up here as a correct program
// with a difference, which the shrunk witness would call a refutation.
TEST(ShrunkWitness, CorrectProgramsOfTheCorpusShowNoDifferenceWhenShrunk) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(SP_SOURCE_DIR) / "tests" / "verify";
  int shrunk = 0, compared = 0;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    std::string id = dir.filename().string();
    auto seq = ir::parseGraph(slurpFile(dir / "seq.sp"), "seq.sp");
    auto dist = ir::parseProgram(slurpFile(dir / "dist.sp"), "dist.sp");
    auto rel = parseRelations(slurpFile(dir / "relations.rel"), "relations.rel");
    ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok()) << id;
    RankSpace ranks = RankSpace::of(*dist);
    std::map<std::string, RelPtr> expected;
    for (const auto& o : rel->outputs) {
      RelScope sc;
      sc.ranks = &ranks;
      auto c = concretize(*o.expr, sc);
      ASSERT_TRUE(c.ok()) << id << ": " << c.error().str();
      expected[o.name] = *c;
    }
    auto w = ShrunkWitness::make(*seq, *dist, *rel, expected);
    if (!w) continue;
    ++shrunk;
    WitnessPlan plan;
    plan.dist.resize(size_t(w->dist().worldSize()));
    std::set<std::pair<int64_t, std::string>> leaves;
    for (const auto& [name, e] : w->expected()) {
      plan.seq.push_back(name);
      distLeavesOf(*e, leaves);
    }
    for (const auto& [r, name] : leaves) plan.dist[size_t(r)].push_back(name);
    auto run = runWitness(w->seq(), w->dist(), w->rel(), plan, 0);
    ASSERT_TRUE(run.ok()) << id << ": " << run.error().str();
    RankSpace shrunkRanks = RankSpace::of(w->dist());
    for (const auto& [name, e] : w->expected()) {
      if (!w->transfersExpected(name)) continue;
      RelScope sc;
      sc.ranks = &shrunkRanks;
      auto t = evaluate(*e, TensorSource{nullptr, &run->dist}, sc);
      ASSERT_TRUE(t.ok()) << id << " " << name << ": " << t.error().str();
      const ir::Tensor& s = run->seq[size_t(*w->seq().findValue(name))];
      ErrorStat err = compareTensors(*t, s);
      EXPECT_LE(err.maxRelErr, 1e-3) << id << ": output " << name << " differs on the shrunk witness ("
                                     << w->note() << ")";
      ++compared;
    }
  }
  // The corpus has batch and sequence dims to shrink in many cases.
  EXPECT_GE(shrunk, 10);
  EXPECT_GE(compared, 10);
  std::printf("shrunk %d of %zu corpus programs, %d outputs compared\n", shrunk, dirs.size(), compared);
}

}  // namespace
}  // namespace sp::rewrite
