// `shardproof verify` and `shardproof lemmas`.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "frontend/load.h"
#include "ir/interpreter.h"
#include "rewrite/lemma.h"
#include "rewrite/verify.h"
#include "tools/commands.h"
#include "tools/report.h"

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

int cmdVerify(const VerifyArgs& a) {
  if (a.relationFile.empty() == !a.inferRelations)
    return fail(makeError("bad-args", "give exactly one of --relation FILE and --infer-relations"));
  if (!a.writeRelations.empty() && !a.inferRelations)
    return fail(makeError("bad-args", "--write-relations needs --infer-relations"));
  if (!(a.witnessLimit >= 0))
    return fail(makeError("bad-args", "--witness-limit must be non-negative, got " + std::to_string(a.witnessLimit)));
  if (!(a.repairLimit >= 0))
    return fail(makeError("bad-args", "--repair-limit must be non-negative, got " + std::to_string(a.repairLimit)));
  if (a.timeLimit <= 0)
    return fail(makeError("bad-args", "--time-limit must be positive, got " + std::to_string(a.timeLimit)));
  auto fx = frontend::fxOptionsFromFlags(a.fx);
  if (!fx) return fail(fx.error());
  std::vector<frontend::FxConstantNote> constants;
  fx->constantNotes = &constants;
  auto seq = frontend::loadGraph(a.seq, *fx);
  if (!seq) return fail(seq.error());
  auto dist = frontend::loadProgram(a.dist, *fx);
  if (!dist) return fail(dist.error());
  // Lifted tensor constants without a known value stay parameters.
  for (const auto& c : constants)
    if (!c.value) std::fprintf(stderr, "warning: %s\n", c.str().c_str());
  for (const auto& o : a.outputs)
    if (!seq->findValue(o))
      return fail(makeError("unknown-output", "--outputs: '" + o + "' is not a value of '" + a.seq + "'"));

  rewrite::RelationFile rel;
  if (a.inferRelations) {
    auto inferred = rewrite::inferRelations(*seq, *dist);
    if (!inferred) return fail(inferred.error());
    rel = std::move(*inferred);
    if (!a.writeRelations.empty()) {
      if (auto st = writeFile(a.writeRelations, rewrite::printRelations(rel)); !st) return fail(st.error());
    }
  } else {
    auto text = readFile(a.relationFile, "relation file");
    if (!text) return fail(text.error());
    auto parsed = rewrite::parseRelations(*text, a.relationFile);
    if (!parsed) return fail(parsed.error());
    rel = std::move(*parsed);
  }
  if (!a.expectFile.empty()) {
    auto text = readFile(a.expectFile, "expected relation file");
    if (!text) return fail(text.error());
    auto parsed = rewrite::parseRelations(*text, a.expectFile);
    if (!parsed) return fail(parsed.error());
    if (!parsed->inputs.empty())
      return fail(makeError("bad-expect", a.expectFile + ": an --expect file holds only 'expect' lines, found an input relation at " +
                                              parsed->inputs.front().location));
    for (auto& o : parsed->outputs) rel.outputs.push_back(std::move(o));
  }

  rewrite::VerifyOptions opts;
  opts.outputs = a.outputs;
  opts.timeLimitSeconds = a.timeLimit;
  opts.seed = a.seed;
  opts.witnessWorkLimit = a.witnessLimit;
  opts.repairSeconds = a.repairLimit;
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
  auto report = rewrite::verify(*seq, *dist, rel, opts);
  if (!report) return fail(report.error());
  // Values the importer supplied for lifted tensor constants are assumptions of the verdict.
  for (const auto& c : constants)
    if (c.value) report->assumptions.push_back(c.str());
  if (report->stats.peakRssMb <= 0) report->stats.peakRssMb = peakRssMb();

  if (!a.dotFile.empty()) {
    if (auto st = writeFile(a.dotFile, failureDot(*seq, *report)); !st) return fail(st.error());
  }
  std::string relText = rewrite::printRelations(rel);
  if (a.format == "json") {
    std::cout << reportJson(*report, relText);
  } else if (a.format == "junit") {
    std::cout << reportJUnit(*report, "shardproof.verify." + seq->name());
  } else {
    if (a.inferRelations) std::cout << "input relations (inferred):\n" << relText;
    std::cout << reportText(*report);
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
