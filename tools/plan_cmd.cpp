#include "tools/plan_cmd.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <chrono>
#include <filesystem>

#include "planner/launch.h"
#include "planner/parallelize.h"
#include "planner/plan_report.h"
#include "planner/search.h"
#include "rewrite/verify/verify.h"
#include "tools/commands.h"

namespace sp::tools {

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.str().c_str());
  return kExitBadInput;
}

// Writes seq.sp, dist.sp and relations.rel into `dir`.
Status writeProgram(const std::string& dir, const planner::ParallelProgram& prog) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeError("parallelize-write", "cannot create the directory: " + ec.message(), dir);
  for (auto [name, text] : {std::pair{"seq.sp", &prog.seq}, std::pair{"dist.sp", &prog.dist},
                            std::pair{"relations.rel", &prog.relations}}) {
    fs::path f = fs::path(dir) / name;
    std::ofstream out(f, std::ios::trunc);
    if (!(out << *text) || !out.flush()) return makeError("parallelize-write", "cannot write", f.string());
  }
  return okStatus();
}

VerifyArgs programArgs(const std::string& dir) {
  namespace fs = std::filesystem;
  VerifyArgs v;
  v.seq = (fs::path(dir) / "seq.sp").string();
  v.dist = (fs::path(dir) / "dist.sp").string();
  v.relationFile = (fs::path(dir) / "relations.rel").string();
  return v;
}

// The launch's layout at its real degrees, generated and verified: one layer
// per pipeline stage (the stages' send/recv skeleton, each stage's ranks
// running a layer at the real tp) on `dp` data-parallel replicas.
planner::LayerCheck checkLayerAt(const planner::ModelConfig& model, const planner::LaunchReport& rep, int64_t dp,
                                 double timeLimit) {
  planner::LayerCheck c;
  const int64_t pp = std::max<int64_t>(rep.layout.pp, 1);
  auto spec = planner::specFromConfig(model, rep.layout, rep.job.seq, rep.layout.microBatch, pp);
  c.what = pp > 1 ? std::to_string(pp) + " " + model.name + " layers" : "one " + model.name + " layer";
  if (!spec) {
    c.verdict = "not generated";
    c.detail = spec.error().message;
    return c;
  }
  spec->dp = int(dp);
  // One layer per stage and one micro-batch: the skeleton of the stages,
  // not the interleaved schedule's chunks (`parallelize --plan ...,vpp=V
  // --micro-batches M` generates and verifies those).
  std::string noChunks;
  if (spec->vpp > 1)
    noChunks = "the stages checked without their " + std::to_string(spec->vpp) +
               " interleaved model chunks (parallelize --plan ...,vpp=" + std::to_string(spec->vpp) + " checks those)";
  spec->vpp = 1;
  // The training step (forward and backward, Megatron's backward
  // collectives); forward only where the backward is not generated.
  spec->backward = true;
  auto prog = planner::parallelize(*spec);
  std::string forwardOnly;
  if (!prog) {
    forwardOnly = prog.error().message;
    spec->backward = false;
    prog = planner::parallelize(*spec);
  }
  c.what += std::string(" (attention + MLP, ") + (spec->backward ? "forward + backward" : "forward") +
            (pp > 1 ? ", one per pipeline stage" : "") + "), " + planner::layoutPhrase(*spec) + ", seq " +
            std::to_string(spec->seq) + ", micro-batch " + std::to_string(spec->batch);
  if (!prog) {
    c.verdict = "not generated";
    c.detail = prog.error().message;
    return c;
  }
  auto t0 = std::chrono::steady_clock::now();
  rewrite::VerifyOptions o;
  o.timeLimitSeconds = timeLimit;
  auto v = rewrite::verifyTexts(prog->seq, prog->dist, prog->relations, o);  // a parse error: a generator bug
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!v) {
    c.verdict = "inconclusive";
    c.detail = v.error().str();
  } else {
    c.verdict = std::string(rewrite::verdictName(v->verdict));
    if (v->failure) c.detail = (v->failure->seqOp.empty() ? "" : "at " + v->failure->seqOp + ": ") + v->failure->message;
    else c.detail = v->reason;
  }
  if (!forwardOnly.empty()) c.detail += (c.detail.empty() ? "" : "; ") + ("forward only: " + forwardOnly);
  if (!noChunks.empty()) c.detail += (c.detail.empty() ? "" : "; ") + noChunks;
  return c;
}

// With every data-parallel replica (each stage one body for its dp x tp
// ranks, the gradient all_reduce over dp included); where that is not
// decided within 10 s (folded, it takes well under a second at 8,192 ranks;
// per rank, thousands of ranks are out of reach), one replica, saying so.
planner::LayerCheck checkLayer(const planner::ModelConfig& model, const planner::LaunchReport& rep) {
  const int64_t dp = std::max<int64_t>(rep.layout.dp, 1);
  planner::LayerCheck all = checkLayerAt(model, rep, dp, dp > 1 ? 10 : 120);
  if (dp == 1 || all.verdict != "inconclusive") return all;
  // one replica, or with expert parallel one group of ep replicas (the experts' all_to_all spans them)
  planner::LayerCheck one = checkLayerAt(model, rep, std::max<int64_t>(rep.layout.ep, 1), 120);
  one.detail += std::string(one.detail.empty() ? "" : "; ") +
                (rep.layout.ep > 1 ? "one expert-parallel group of " + std::to_string(rep.layout.ep) + " replicas: with dp "
                                   : std::string("one data-parallel replica: with dp ")) +
                std::to_string(dp) + " " + all.verdict + " (" + all.detail.substr(0, 300) + ")";
  one.seconds += all.seconds;
  return one;
}

}  // namespace

int cmdPlan(const PlanArgs& a) {
  planner::PlanRequest req;
  auto model = planner::loadModelConfig(a.model);
  if (!model) return fail(model.error());
  req.model = *model;
  auto gpu = planner::findGpu(a.gpu, a.gpuFile.empty() ? planner::defaultGpuFile() : a.gpuFile);
  if (!gpu) return fail(gpu.error());
  req.gpu = *gpu;
  if (a.gpus <= 0) return fail(makeError("plan-input", "--gpus must be positive"));
  if (a.seq <= 0) return fail(makeError("plan-input", "--seq must be positive"));
  if (a.globalBatch <= 0) return fail(makeError("plan-input", "--global-batch must be positive"));
  if (a.top <= 0) return fail(makeError("plan-input", "--top must be positive"));
  req.job = planner::Job{a.gpus, a.seq, a.globalBatch};
  auto fix = planner::parseFix(a.fix);
  if (!fix) return fail(fix.error());
  req.fix = *fix;
  req.top = a.top;
  auto res = planner::searchPlans(req);
  if (!res) return fail(res.error());
  if (a.format == "json") std::fputs(planner::planJson(*res).c_str(), stdout);
  else std::fputs(planner::planText(req, *res).c_str(), stdout);
  if (res->plans.empty()) {
    if (a.format == "json") std::fputs(planner::ruledOutText(*res).c_str(), stderr);
    return 1;
  }
  if (a.emit.empty()) return kExitOk;
  // The best layout's program: one pipeline stage's layers at runnable sizes.
  if (a.emitLayers <= 0 || a.emitSeq < 0)
    return fail(makeError("plan-input", "--emit-layers must be positive and --emit-seq not negative"));
  const planner::Layout& best = res->plans.front().layout;
  planner::Layout stage = best;
  stage.pp = 1, stage.vpp = 1;  // one stage: no pipeline, no model chunks
  int64_t seq = a.emitSeq > 0 ? a.emitSeq : std::min<int64_t>(a.seq, 256);
  // equal context-parallel chunks, each split evenly over tp under sequence parallel
  const int64_t unit = stage.cp * (stage.sequenceParallel && stage.tp > 1 ? stage.tp : 1);
  seq = std::max(unit, seq - seq % unit);
  auto spec = planner::specFromConfig(*model, stage, seq, best.microBatch, a.emitLayers);
  if (!spec) return fail(makeError(spec.error().id, "plan --emit: " + spec.error().message));
  spec->dp = int(std::max<int64_t>(stage.ep, 1));  // with expert parallel, one group of ep replicas
  auto prog = planner::parallelize(*spec);
  if (!prog) return fail(makeError(prog.error().id, "plan --emit: " + prog.error().message));
  namespace fs = std::filesystem;
  std::string progDir = (fs::path(a.emit) / "program").string();
  if (auto w = writeProgram(progDir, *prog); !w.ok()) return fail(w.error());
  std::fprintf(stderr, "plan --emit: %s of the best layout, %lld layer%s, seq %lld, micro-batch %lld: program in %s\n",
               planner::layoutPhrase(*spec).c_str(), a.emitLayers,
               a.emitLayers == 1 ? "" : "s", (long long)seq, (long long)best.microBatch, progDir.c_str());
  CodegenArgs cg;
  cg.verify = programArgs(progDir);
  cg.outDir = (fs::path(a.emit) / "plan").string();
  return cmdCodegen(cg);
}

int cmdCheckLaunch(const CheckLaunchArgs& a) {
  auto model = planner::loadModelConfig(a.model);
  if (!model) return fail(model.error());
  auto gpu = planner::findGpu(a.gpu, a.gpuFile.empty() ? planner::defaultGpuFile() : a.gpuFile);
  if (!gpu) return fail(gpu.error());
  if (a.megatronArgs.empty() == a.plan.empty())
    return fail(makeError("args-parse", "give one of --megatron-args FILE or --plan k=v,..."));
  Result<planner::MegatronArgs> args = makeError("args-parse", "");
  if (!a.megatronArgs.empty()) {
    std::ifstream in(a.megatronArgs, std::ios::binary);
    if (!in) return fail(makeError("args-read", "cannot read the arguments file", a.megatronArgs));
    std::stringstream ss;
    ss << in.rdbuf();
    args = planner::parseMegatronArgs(ss.str(), a.megatronArgs);
  } else {
    args = planner::parseLaunchPlan(a.plan);
  }
  if (!args) return fail(args.error());
  auto rep = planner::checkLaunch(*model, *gpu, a.gpus, *args);
  if (!rep) return fail(rep.error());
  rep->layerCheck = checkLayer(*model, *rep);
  if (a.format == "json") std::fputs(planner::launchJson(*rep).c_str(), stdout);
  else if (a.format == "junit") std::fputs(planner::launchJUnit(*rep).c_str(), stdout);
  else std::fputs(planner::launchText(*rep).c_str(), stdout);
  return rep->broken() || rep->layerCheck->verdict == "refuted" ? 1 : kExitOk;
}

int cmdParallelize(const ParallelizeArgs& a) {
  auto model = planner::loadModelConfig(a.model);
  if (!model) return fail(model.error());
  auto fix = planner::parseFix(a.fix);
  if (!fix) return fail(fix.error());
  if (a.seq <= 0) return fail(makeError("parallelize-input", "--seq must be positive"));
  if (a.batch <= 0) return fail(makeError("parallelize-input", "--batch must be positive"));
  if (a.layers < 0) return fail(makeError("parallelize-input", "--layers must be positive (0: the config's)"));
  planner::Layout layout;
  layout.tp = fix->tp.value_or(1);
  layout.pp = fix->pp.value_or(1);
  layout.vpp = fix->vpp.value_or(1);
  layout.cp = fix->cp.value_or(1);
  layout.ep = fix->ep.value_or(1);
  // auto: Megatron's sequence parallel wherever tp > 1 (inside context-
  // parallel chunks too: a rank's tokens split twice along one dim, which
  // the fold reads as nested pieces)
  layout.sequenceParallel = a.sequenceParallel == "on" || (a.sequenceParallel == "auto" && layout.tp > 1);
  if (a.sequenceParallel == "on" && layout.tp < 2)
    return fail(makeError("parallelize-input", "sequence parallel needs tp > 1"));
  auto spec = planner::specFromConfig(*model, layout, a.seq, a.batch, a.layers);
  if (!spec) return fail(spec.error());
  spec->attention = a.blocks != "mlp";
  spec->cpBalanced = a.cpChunks == "balanced";
  spec->dp = int(fix->dp.value_or(layout.ep));  // expert parallel inside data parallel: dp defaults to ep
  if (a.microBatches < 1) return fail(makeError("parallelize-input", "--micro-batches must be positive"));
  spec->microBatches = int(a.microBatches);
  spec->oneFOneB = a.schedule != "gpipe";
  spec->backward = a.backward;
  auto prog = planner::parallelize(*spec);
  if (!prog) return fail(prog.error());
  if (auto w = writeProgram(a.outDir, *prog); !w.ok()) return fail(w.error());
  std::fprintf(stderr, "parallelize: %s, %d layer%s (%s%s), %s, seq %lld, batch %lld: wrote %s/{seq.sp,dist.sp,relations.rel}\n",
               model->name.c_str(), spec->layers, spec->layers == 1 ? "" : "s",
               spec->attention ? "attention + MLP" : "MLP", spec->backward ? ", forward + backward" : "",
               planner::layoutPhrase(*spec).c_str(), a.seq, a.batch,
               a.outDir.c_str());
  if (!a.verify) return kExitOk;
  VerifyArgs v = programArgs(a.outDir);
  v.format = a.format;
  return cmdVerify(v);
}

}  // namespace sp::tools
