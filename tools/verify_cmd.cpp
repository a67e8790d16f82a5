// `shardproof verify` and `shardproof lemmas`.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "frontend/load.h"
#include "ir/interpreter.h"
#include "ir/training_step.h"
#include "rewrite/lemma/lemma.h"
#include "rewrite/verify/verify.h"
#include "tools/commands.h"
#include "tools/report.h"
#include "tools/verify_setup.h"

namespace sp::tools {

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.str().c_str());
  return kExitBadInput;
}

Result<std::string> readFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("cannot-open", "cannot open " + what + " '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return makeError("cannot-write", "cannot write '" + path + "'");
  return okStatus();
}

double peakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;
}

}  // namespace

static_assert(kVerifyWitnessLimit == rewrite::kDefaultWitnessWorkLimit,
              "the --witness-limit default must match VerifyOptions");

Result<VerifySetup> setupVerify(const VerifyArgs& a, bool partial) {
  if (a.relationFile.empty() == !a.inferRelations)
    return makeError("bad-args", "give exactly one of --relation FILE and --infer-relations");
  if (!a.writeRelations.empty() && !a.inferRelations)
    return makeError("bad-args", "--write-relations needs --infer-relations");
  if (!(a.witnessLimit >= 0))
    return makeError("bad-args", "--witness-limit must be non-negative, got " + std::to_string(a.witnessLimit));
  if (!(a.repairLimit >= 0))
    return makeError("bad-args", "--repair-limit must be non-negative, got " + std::to_string(a.repairLimit));
  if (a.timeLimit <= 0)
    return makeError("bad-args", "--time-limit must be positive, got " + std::to_string(a.timeLimit));
  SP_ASSIGN(auto fx, frontend::fxOptionsFromFlags(a.fx));
  auto constants = std::make_shared<std::vector<frontend::FxConstantNote>>();
  fx.constantNotes = constants.get();
  // with data-dependent sizes, the outputs that do not depend on them (a
  // training step's backward reads the forward's outputs by position)
  frontend::FxPartial seqPartial, distPartial;
  frontend::FxOptions seqFx = fx, distFx = fx;
  if (partial && a.seqBackward.empty()) {
    seqFx.partial = &seqPartial;
    distFx.partial = &distPartial;
  }
  SP_ASSIGN(ir::Graph seq, frontend::loadGraph(a.seq, seqFx));
  SP_ASSIGN(ir::Program dist, frontend::loadProgram(a.dist, distFx));
  if (a.seqBackward.empty() != a.distBackward.empty())
    return makeError("bad-args", "a training step needs both --seq-backward and --dist-backward");
  if (!a.seqBackward.empty()) {  // AOTAutograd's forward and backward, joined (ir/training_step.h)
    SP_ASSIGN(ir::Graph seqBw, frontend::loadGraph(a.seqBackward, fx));
    SP_ASSIGN(ir::Program distBw, frontend::loadProgram(a.distBackward, fx));
    auto s = ir::joinTrainingStep(seq, seqBw);
    if (!s) return makeError(s.error().id, a.seq + " + " + a.seqBackward + ": " + s.error().message);
    auto d = ir::joinTrainingStep(dist, distBw);
    if (!d) return makeError(d.error().id, a.dist + " + " + a.distBackward + ": " + d.error().message);
    seq = std::move(*s);
    dist = std::move(*d);
  }
  VerifySetup out{std::move(seq), std::move(dist), {}, {}, std::move(*constants), {}};
  out.partial = planPartialCheck(seqPartial, distPartial, out.seq, a.outputs);
  // Lifted tensor constants without a known value stay parameters.
  for (const auto& c : out.constants)
    if (!c.value) std::fprintf(stderr, "warning: %s\n", c.str().c_str());
  for (const auto& o : a.outputs)
    if (!out.seq.findValue(o) && !out.partial.isSeqDropped(o))
      return makeError("unknown-output", "--outputs: '" + o + "' is not a value of '" + a.seq + "'");

  if (a.inferRelations) {
    SP_ASSIGN(out.rel, rewrite::inferRelations(out.seq, out.dist));
    if (!a.writeRelations.empty()) SP_TRY(writeFile(a.writeRelations, rewrite::printRelations(out.rel)));
  } else {
    SP_ASSIGN(std::string text, readFile(a.relationFile, "relation file"));
    SP_ASSIGN(out.rel, rewrite::parseRelations(text, a.relationFile));
  }
  if (!a.expectFile.empty()) {
    SP_ASSIGN(std::string text, readFile(a.expectFile, "expected relation file"));
    SP_ASSIGN(auto parsed, rewrite::parseRelations(text, a.expectFile));
    if (!parsed.inputs.empty())
      return makeError("bad-expect", a.expectFile + ": an --expect file holds only 'expect' lines, found an input relation at " +
                                         parsed.inputs.front().location);
    for (auto& o : parsed.outputs) out.rel.outputs.push_back(std::move(o));
  }
  uncheckExpectsOnDropped(distPartial, out.rel, a.outputs, out.partial);
  // expected relations of outputs not checked are not checked either
  std::erase_if(out.rel.outputs, [&](const auto& o) {
    return std::any_of(out.partial.unchecked.begin(), out.partial.unchecked.end(),
                       [&](const UncheckedOutput& u) { return u.name == o.name; });
  });

  rewrite::VerifyOptions& opts = out.opts;
  opts.outputs = out.partial.unchecked.empty() ? a.outputs : out.partial.checkOutputs;
  opts.timeLimitSeconds = a.timeLimit;
  opts.seed = a.seed;
  opts.witnessWorkLimit = a.witnessLimit;
  opts.repairSeconds = a.repairLimit;
  opts.fold = !a.noFold;
  opts.shrinkWitness = !a.noShrinkWitness;
  // Progress lines on stderr: none in the first 2 seconds, then at most one a second.
  auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(start);
  auto due = [start, last]() {
    auto now = std::chrono::steady_clock::now();
    if (now - start < std::chrono::seconds(2) || now - *last < std::chrono::seconds(1)) return false;
    *last = now;
    return true;
  };
  opts.progress = [due](size_t done, size_t total, const std::string& op) {
    if (due()) std::fprintf(stderr, "progress: %zu/%zu seq ops (%s)\n", done, total, op.c_str());
  };
  auto witnessStart = std::make_shared<std::optional<std::chrono::steady_clock::time_point>>();
  opts.witnessProgress = [due, witnessStart](double done, double total, const std::string& at) {
    auto now = std::chrono::steady_clock::now();
    if (!*witnessStart) *witnessStart = now;
    if (!due()) return;
    double secs = std::chrono::duration<double>(now - **witnessStart).count();
    std::fprintf(stderr, "progress: witness %.0f%% of %.3g multiply-adds, %.0f s (%s)\n",
                 total > 0 ? 100 * done / total : 100.0, total, secs, at.c_str());
  };
  return out;
}

void noteConstants(const VerifySetup& s, rewrite::VerifyReport& report) {
  // Values the importer supplied for lifted tensor constants are assumptions of the verdict.
  for (const auto& c : s.constants)
    if (c.value) report.assumptions.push_back(c.str());
  if (report.stats.peakRssMb <= 0) report.stats.peakRssMb = peakRssMb();
}

// Relations --infer-relations guessed are an assumption of the verdict: a
// correct D whose inputs are laid out otherwise (GPT-2's fused QKV shard
// [q_r | k_r | v_r], guessed contiguous) is refuted under them the same way
// as a wrong one.
void noteInferredRelations(const VerifyArgs& a, rewrite::VerifyReport& report) {
  if (!a.inferRelations) return;
  report.assumptions.push_back(
      "the input relations were inferred (--infer-relations) and the verdict holds under them; if D lays its inputs "
      "out otherwise (a fused QKV shard [q_r | k_r | v_r]), check them with --write-relations and pass D's with "
      "--relation");
}

int cmdVerify(const VerifyArgs& a) {
  auto setup = setupVerify(a, true);
  if (!setup) return fail(setup.error());
  const ir::Graph* seq = &setup->seq;
  const ir::Program* dist = &setup->dist;
  const rewrite::RelationFile& rel = setup->rel;
  const rewrite::VerifyOptions& opts = setup->opts;
  const PartialCheck& partial = setup->partial;
  // every requested output left out by a partial import: nothing to run
  auto report = !partial.unchecked.empty() && partial.checkOutputs.empty()
                    ? Result<rewrite::VerifyReport>(nothingChecked())
                    : rewrite::verify(*seq, *dist, rel, opts);
  if (!report) return fail(report.error());
  applyPartialCheck(partial, *report);
  noteConstants(*setup, *report);
  noteInferredRelations(a, *report);

  if (!a.dotFile.empty()) {
    if (auto st = writeFile(a.dotFile, failureDot(*seq, *report)); !st) return fail(st.error());
  }
  std::string relText = rewrite::printRelations(rel);
  if (a.format == "json") {
    std::cout << reportJson(*report, relText, partial.unchecked);
  } else if (a.format == "junit") {
    std::cout << reportJUnit(*report, "shardproof.verify." + seq->name(), partial.unchecked);
  } else {
    if (a.inferRelations) std::cout << "input relations (inferred):\n" << relText;
    std::cout << reportText(*report, partial.unchecked);
  }
  switch (report->verdict) {
    case rewrite::Verdict::Verified: return kExitOk;
    case rewrite::Verdict::Refuted: return kExitRefuted;
    case rewrite::Verdict::Inconclusive: return kExitInconclusive;
  }
  return kExitInconclusive;
}

int cmdLemmas(const LemmasArgs& a) {
  std::string dir = a.dir.empty() ? rewrite::defaultLemmaDir() : a.dir;
  auto lib = rewrite::loadLemmas(dir);
  if (!lib) return fail(lib.error());
  for (const auto& n : a.only)
    if (!lib->find(n)) return fail(makeError("unknown-lemma", "no lemma named '" + n + "' in " + dir));
  if (!a.prove) {
    for (const auto& l : lib->lemmas) std::cout << l.name << "  " << l.str() << "  (" << l.location << ")\n";
    std::cout << lib->lemmas.size() << " lemmas in " << dir << " (use --prove to prove them)\n";
    return kExitOk;
  }
  rewrite::ProveOptions opts;
  opts.only = a.only;
  opts.evalOp = [](ir::OpKind op, const ir::AttrMap& attrs, const std::vector<ir::Tensor>& in) {
    return ir::evalOp(op, attrs, in);
  };
  auto statuses = rewrite::proveLemmas(*lib, opts);
  std::cout << rewrite::renderLemmaTable(statuses);
  for (const auto& s : statuses)
    if (!s.proven || s.numeric == rewrite::NumericState::Failed) return 1;
  return kExitOk;
}

}  // namespace sp::tools
