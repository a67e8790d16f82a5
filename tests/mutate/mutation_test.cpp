// Mutation testing of the verifier (README.md beside this file). For the
// examples' MLP and every case of tests/verify/, mutants of the correct D are
// verified and run on the interpreter. Soundness: a mutant whose outputs
// differ from S is never "verified"; a mutant whose outputs equal S (and
// every semantics-preserving rewrite) is never "refuted". Completeness on
// the corpus: in a case whose correct D verifies, every output-changing
// mutant is refuted (kill rate 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "rewrite/relation/relation_text.h"
#include "rewrite/verify/verify.h"
#include "tests/mutate/mutator.h"
#include "ir/program_edit.h"

namespace sp {
namespace {

namespace fs = std::filesystem;
using rewrite::Verdict;

constexpr double kDiffers = 1e-3;   // outputs changed
constexpr double kSame = 1e-4;      // outputs unchanged
constexpr size_t kCapPerCase = 80;  // mutants verified per case
const uint64_t kSeeds[] = {11, 12};

struct Case {
  std::string id;
  ir::Graph seq;
  ir::Program dist;
  rewrite::RelationFile rel;
  std::vector<std::string> outputs;  // checked S outputs (those with expect lines)
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<Case> loadCase(const std::string& id, const fs::path& seqP, const fs::path& distP, const fs::path& relP) {
  Case c;
  c.id = id;
  SP_ASSIGN(c.seq, ir::parseGraph(readFile(seqP), seqP.string()));
  SP_ASSIGN(c.dist, ir::parseProgram(readFile(distP), distP.string()));
  SP_ASSIGN(c.rel, rewrite::parseRelations(readFile(relP), relP.string()));
  for (const auto& o : c.rel.outputs) c.outputs.push_back(o.name);
  return c;
}

std::vector<Case> allCases() {
  std::vector<Case> out;
  fs::path src(SP_SOURCE_DIR);
  fs::path ex = src / "examples";
  auto mlp = loadCase("examples/mlp_tp2", ex / "mlp.sp", ex / "mlp_tp2.sp", ex / "mlp_tp2.rel");
  if (mlp.ok()) out.push_back(std::move(*mlp));
  else ADD_FAILURE() << mlp.error().str();
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(src / "tests" / "verify"))
    if (e.is_directory()) ids.push_back(e.path().filename().string());
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    fs::path d = src / "tests" / "verify" / id;
    auto c = loadCase(id, d / "seq.sp", d / "dist.sp", d / "relations.rel");
    if (c.ok()) out.push_back(std::move(*c));
    else ADD_FAILURE() << id << ": " << c.error().str();
  }
  return out;
}

double relErr(const ir::Tensor& got, const ir::Tensor& want) { return ir::diffTensors(got, want).maxRelErr; }

// S inputs and outputs per seed, computed once per case.
struct SeqRun {
  ir::TensorMap in, out;
};

// Worst rel err of the rebuilt S outputs on the inputs of `seed`; an error
// when D cannot run (deadlock, mismatched collectives, a relation that no
// longer evaluates).
Result<double> outputErrorAt(const Case& c, const SeqRun& run, uint64_t seed, const ir::Program& dist,
                             const rewrite::RelationFile& rel) {
  double worst = 0;
  rewrite::RankSpace ranks = rewrite::RankSpace::of(dist);
  ir::RunOptions o;
  o.seed = seed;
  o.threads = 1;
  o.fillMissing = false;
  SP_ASSIGN(auto distIn, rewrite::buildDistInputs(rel, ranks, run.in));
  SP_ASSIGN(auto distOut, ir::runProgram(dist, distIn, o));
  SP_ASSIGN(auto rebuilt, rewrite::rebuildSeqOutputs(rel, ranks, distOut));
  for (const auto& name : c.outputs) {
    auto got = rebuilt.find(name);
    auto want = run.out.find(name);
    if (got == rebuilt.end() || want == run.out.end())
      return makeError("missing-output", "output '" + name + "' not rebuilt");
    worst = std::max(worst, relErr(got->second, want->second));
  }
  return worst;
}

Result<SeqRun> seqRun(const Case& c, uint64_t seed) {
  ir::RunOptions o;
  o.seed = seed;
  o.threads = 1;
  SP_ASSIGN(auto in, ir::prepareInputs(c.seq, {}, o));
  SP_ASSIGN(auto out, ir::runGraph(c.seq, in, o));
  return SeqRun{std::move(in), std::move(out)};
}

// The same, worst over kSeeds (`runs` holds S's run per seed).
Result<double> outputError(const Case& c, const std::vector<SeqRun>& runs, const ir::Program& dist,
                           const rewrite::RelationFile& rel) {
  double worst = 0;
  for (size_t s = 0; s < runs.size(); ++s) {
    SP_ASSIGN(double e, outputErrorAt(c, runs[s], kSeeds[s], dist, rel));
    worst = std::max(worst, e);
  }
  return worst;
}

Result<rewrite::VerifyReport> runVerify(const Case& c, const ir::Program& dist, const rewrite::RelationFile& rel,
                                        double repairSeconds = 0) {
  rewrite::VerifyOptions o;
  o.outputs = c.outputs;
  o.timeLimitSeconds = 20;
  o.repairSeconds = repairSeconds;
  // The limit is for verification proper: the lemma library is proven
  // first, once per process (about a minute on a cold proof cache).
  SP_TRY(rewrite::prepareLemmaLibrary(o));
  return rewrite::verify(c.seq, dist, rel, o);
}

std::string describe(const rewrite::VerifyReport& r) {
  std::string s(rewrite::verdictName(r.verdict));
  if (!r.reason.empty()) s += ": " + r.reason;
  if (r.failure) {
    s += " | at " + r.failure->seqOp + ": " + r.failure->message;
    if (r.failure->witness) s += " | witness worst rel err " + std::to_string(r.failure->witness->worstOutput.maxRelErr);
  }
  return s;
}

// Per kind: how many mutants fell in each class.
struct Tally {
  int generated = 0, stillborn = 0, runError = 0, equivalent = 0, marginal = 0;
  int changed = 0, killed = 0, inconclusive = 0, verified = 0;  // among changed
  int rejected = 0;  // changed, and verify() returned an error (no verdict)
  int changedInVerifiedCases = 0, killedInVerifiedCases = 0;
  int generic = 0;  // killed, explained only as "no relation found ..." (no note on what D did)
};

// Mutants the repair search must undo: one attribute of one collective site
// (reduce mode, group, all_gather / reduce_scatter dim) changed, whose
// inverse edit is among the search's candidates.
bool repairable(const mutate::Mutant& m) {
  return m.kind == "reduce-mode" || m.kind == "collective-group" ||
         (m.kind == "collective-dim" && m.description.rfind("all_to_all", 0) != 0);
}
// A dropped all_reduce: the search inserts sums after the failure's closest
// D values; counted, not required (the value to sum may not be among them).
bool droppedAllReduce(const mutate::Mutant& m) {
  return m.kind == "drop-collective" && m.description.rfind("all_reduce", 0) == 0;
}

bool isDeadlockKind(const mutate::Mutant& m) {
  const auto& k = mutate::deadlockKinds();
  return std::find(k.begin(), k.end(), m.kind) != k.end();
}

// A refutation explained only generically: the message, less the closest
// D tensors, is "no relation found between S value 'v' and D tensors".
bool genericExplanation(const rewrite::Failure& f) {
  std::string m = f.message;
  if (size_t at = m.find(" (closest D tensors: "); at != std::string::npos) {
    size_t end = m.find(')', at);
    m.erase(at, end == std::string::npos ? std::string::npos : end + 1 - at);
  }
  const std::string head = "no relation found between S value '", tail = "' and D tensors";
  return m.rfind(head, 0) == 0 && m.size() > head.size() + tail.size() &&
         m.compare(m.size() - tail.size(), tail.size(), tail) == 0 &&
         m.find('\'', head.size()) == m.size() - tail.size();
}

void printTable(const std::map<std::string, Tally>& t) {
  std::printf("\n%-26s %5s %5s %5s %5s %5s %7s %6s %5s %5s %6s %9s %7s\n", "kind", "gen", "dead", "crash", "equiv",
              "marg", "changed", "killed", "rej", "inc", "verif", "kill-rate", "generic");
  Tally sum;
  auto row = [](const std::string& k, const Tally& x) {
    std::string rate = x.changed ? std::to_string(int(std::lround(100.0 * x.killed / x.changed))) + "%" : "-";
    std::printf("%-26s %5d %5d %5d %5d %5d %7d %6d %5d %5d %6d %9s %7d\n", k.c_str(), x.generated, x.stillborn,
                x.runError, x.equivalent, x.marginal, x.changed, x.killed, x.rejected, x.inconclusive, x.verified,
                rate.c_str(), x.generic);
  };
  for (const auto& [k, x] : t) {
    row(k, x);
    for (auto [f, g] : {std::pair(&Tally::generated, &sum.generated), {&Tally::stillborn, &sum.stillborn},
                        {&Tally::runError, &sum.runError}, {&Tally::equivalent, &sum.equivalent},
                        {&Tally::marginal, &sum.marginal}, {&Tally::changed, &sum.changed},
                        {&Tally::killed, &sum.killed}, {&Tally::rejected, &sum.rejected},
                        {&Tally::inconclusive, &sum.inconclusive},
                        {&Tally::verified, &sum.verified}, {&Tally::changedInVerifiedCases, &sum.changedInVerifiedCases},
                        {&Tally::killedInVerifiedCases, &sum.killedInVerifiedCases}, {&Tally::generic, &sum.generic}})
      *g += x.*f;
  }
  row("total", sum);
}

// Editing layer: a program rebuilt from its spec prints identically.
TEST(Mutation, SpecRoundTrip) {
  for (const Case& c : allCases()) {
    auto p = ir::buildProgram(ir::toSpec(c.dist));
    ASSERT_TRUE(p.ok()) << c.id << ": " << p.error().str();
    EXPECT_EQ(ir::printProgram(*p), ir::printProgram(c.dist)) << c.id;
  }
}

// The MLP yields mutants of the expected kinds, and dropping its all_reduce
// changes the outputs (the harness can tell mutants apart).
TEST(Mutation, MlpMutants) {
  auto cases = allCases();
  ASSERT_FALSE(cases.empty());
  const Case& mlp = cases[0];
  mutate::MutantSet set = mutate::generateMutants(mlp.seq, mlp.dist, mlp.rel);
  std::map<std::string, int> kinds;
  for (const auto& m : set.mutants) ++kinds[m.kind];
  for (const char* k : {"drop-collective", "reduce-mode", "allreduce-to-allgather", "relation-shard-offset",
                        "insert-identity", "duplicate-value", "commute-operands", "allreduce-via-allgather"})
    EXPECT_GT(kinds[k], 0) << "no " << k << " mutant of the MLP";
  std::vector<SeqRun> runs;
  for (uint64_t seed : kSeeds) {
    auto r = seqRun(mlp, seed);
    ASSERT_TRUE(r.ok()) << r.error().str();
    runs.push_back(std::move(*r));
  }
  auto base = outputError(mlp, runs, mlp.dist, mlp.rel);
  ASSERT_TRUE(base.ok()) << base.error().str();
  EXPECT_LT(*base, kSame);
  for (const auto& m : set.mutants) {
    auto e = outputError(mlp, runs, m.dist, m.relations);
    if (m.kind == "drop-collective") {
      EXPECT_TRUE(!e.ok() || *e > kDiffers) << m.description;
    }
    if (m.preserving) {
      EXPECT_TRUE(e.ok() && *e < kSame) << m.description;
    }
  }
}

TEST(Mutation, Corpus) {
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, Tally> table;
  int deadlockMutants = 0;
  int verifiedCases = 0, total = 0, repairEligible = 0, repaired = 0, dropEligible = 0, dropRepaired = 0;
  for (const Case& c : allCases()) {
    SCOPED_TRACE(c.id);
    std::vector<SeqRun> runs;
    for (uint64_t seed : kSeeds) {
      auto r = seqRun(c, seed);
      ASSERT_TRUE(r.ok()) << c.id << ": " << r.error().str();
      runs.push_back(std::move(*r));
    }
    auto base = runVerify(c, c.dist, c.rel);
    ASSERT_TRUE(base.ok()) << c.id << ": " << base.error().str();
    const bool caseVerified = base->verdict == Verdict::Verified;
    verifiedCases += caseVerified;
    mutate::MutantSet set = mutate::generateMutants(c.seq, c.dist, c.rel);
    for (const auto& [k, n] : set.stillborn) table[k].stillborn += n;
    for (const auto& m : set.mutants) ++table[m.kind].generated;
    auto chosen = mutate::selectMutants(set, kCapPerCase);
    for (const mutate::Mutant* m : chosen) {
      ++total;
      Tally& t = table[m->kind];
      const std::string who = c.id + " [" + m->kind + "] " + m->description;
      auto err = outputError(c, runs, m->dist, m->relations);
      auto rep = runVerify(c, m->dist, m->relations, caseVerified && (repairable(*m) || droppedAllReduce(*m)) ? 20 : 0);
      if (!rep.ok()) {  // the verifier rejects the input outright: counts as not verified
        std::printf("[mutant] %s: verify error: %s\n", who.c_str(), rep.error().str().c_str());
      }
      const Verdict v = rep.ok() ? rep->verdict : Verdict::Inconclusive;
      const std::string vs = rep.ok() ? describe(*rep) : "error: " + rep.error().str();
      if (isDeadlockKind(*m)) {
        ++deadlockMutants;
        EXPECT_TRUE(!rep.ok() || v == Verdict::Refuted)
            << who << ": one rank's collective order broken, but neither refuted nor rejected: " << vs;
      }
      if (!err.ok()) {
        ++t.runError;
        std::printf("[crash] %s | %s | %s\n", who.c_str(), err.error().str().c_str(), vs.c_str());
        EXPECT_NE(v, Verdict::Verified) << "SOUNDNESS: " << who << " cannot run (" << err.error().str()
                                        << ") but is verified";
        EXPECT_FALSE(m->preserving) << who << ": semantics-preserving rewrite cannot run: " << err.error().str();
        continue;
      }
      if (*err > kDiffers) {
        ++t.changed;
        t.killed += v == Verdict::Refuted;
        if (v == Verdict::Refuted && rep->failure && genericExplanation(*rep->failure)) {
          ++t.generic;
          std::printf("[generic] %s | %s\n", who.c_str(), vs.c_str());
        }
        t.inconclusive += rep.ok() && v == Verdict::Inconclusive;
        t.rejected += !rep.ok();
        t.verified += v == Verdict::Verified;
        if (caseVerified) {
          ++t.changedInVerifiedCases;
          t.killedInVerifiedCases += v == Verdict::Refuted;
          if (v == Verdict::Refuted && droppedAllReduce(*m)) {
            ++dropEligible;
            dropRepaired += !rep->failure->repair.empty();
            if (rep->failure->repair.empty()) std::printf("[unrepaired] %s | %s\n", who.c_str(), vs.c_str());
          }
          if (v == Verdict::Refuted && repairable(*m)) {
            ++repairEligible;
            repaired += !rep->failure->repair.empty();
            EXPECT_FALSE(rep->failure->repair.empty()) << who << ": no repair found: " << vs;
          }
          EXPECT_EQ(v, Verdict::Refuted) << who << ": outputs differ (rel err " << *err << ") but not refuted: " << vs;
        }
        EXPECT_NE(v, Verdict::Verified) << "SOUNDNESS: " << who << ": outputs differ (rel err " << *err
                                        << ") but verified";
        EXPECT_FALSE(m->preserving) << who << ": semantics-preserving rewrite changes outputs (rel err " << *err << ")";
        if (v != Verdict::Refuted) std::printf("[survivor] %s | err %.2e | %s\n", who.c_str(), *err, vs.c_str());
      } else if (*err < kSame) {
        ++t.equivalent;
        // Equal on the test's seeds. A refutation still stands when its
        // witness, rerun here independently of the verifier, shows the
        // outputs differ (a perturbed epsilon that these seeds hide).
        double atWitness = 0;
        bool faultAtWitness = false;  // D faults there too (an index out of range)
        if (v == Verdict::Refuted && rep->failure && rep->failure->witness) {
          auto sr = seqRun(c, rep->failure->witness->seed);
          ASSERT_TRUE(sr.ok()) << who << ": " << sr.error().str();
          auto we = outputErrorAt(c, *sr, rep->failure->witness->seed, m->dist, m->relations);
          atWitness = we.ok() ? *we : 0;
          // A D that faults on the witness's inputs (an index out of range
          // where S runs) holds no value of S's: confirmed when the rerun
          // faults too.
          faultAtWitness =
              !we.ok() && we.error().id == "index-out-of-range" && !rep->failure->witness->fault.empty();
          if (faultAtWitness) {
            std::printf("[witness-fault] %s | %s\n", who.c_str(), we.error().str().c_str());
          } else if (atWitness > kSame)
            std::printf("[witness-confirmed] %s | err %.2e on the test's seeds, %.2e on the witness\n", who.c_str(),
                        *err, atWitness);
        }
        EXPECT_TRUE(v != Verdict::Refuted || atWitness > kSame || faultAtWitness)
            << "SOUNDNESS: " << who << ": outputs equal S (rel err " << *err << ", " << atWitness
            << " on the witness) but refuted: " << vs;
      } else {
        ++t.marginal;
        std::printf("[marginal] %s | err %.2e | %s\n", who.c_str(), *err, vs.c_str());
      }
      if (m->preserving) {
        EXPECT_NE(v, Verdict::Refuted) << who << ": semantics-preserving rewrite refuted: " << vs;
      }
    }
  }
  printTable(table);
  int changed = 0, killed = 0;
  for (const auto& [k, t] : table) {
    changed += t.changedInVerifiedCases;
    killed += t.killedInVerifiedCases;
  }
  const double rate = changed ? double(killed) / changed : 0;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int generic = 0, refuted = 0;
  for (const auto& [k, t] : table) {
    generic += t.generic;
    refuted += t.killed;
  }
  std::printf("\n%d mutants checked; %d cases verify unmutated; kill rate there %d/%d = %.3f; %.1f s\n", total,
              verifiedCases, killed, changed, rate, secs);
  std::printf("refuted output-changing mutants explained beyond 'no relation found': %d/%d\n", refuted - generic,
              refuted);
  std::printf("refuted single-collective-attribute mutants with a verifying repair found: %d/%d\n", repaired,
              repairEligible);
  std::printf("refuted mutants with an all_reduce dropped, repaired by an inserted all_reduce: %d/%d\n", dropRepaired,
              dropEligible);
  std::printf("deadlock mutants (one rank's collective order or group changed), refuted or rejected: %d\n",
              deadlockMutants);
  EXPECT_GT(repairEligible, 0);
  EXPECT_GT(deadlockMutants, 0);
  EXPECT_GE(total, 200) << "too few mutants";
  EXPECT_GT(changed, 0);
}

}  // namespace
}  // namespace sp
