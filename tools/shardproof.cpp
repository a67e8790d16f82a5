// The shardproof command line. This is the only translation unit that
// includes CLI11; the commands themselves live in commands.cpp.
#include <cstdint>
#include <cstdlib>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "ir/interpreter.h"
#include "rewrite/verify/verify.h"
#include "tools/commands.h"
#include "tools/plan_cmd.h"

// AOTAutograd's backward graphs, joined to the forward ones (ir/training_step.h).
static void addTrainingStepFlags(CLI::App* app, sp::tools::VerifyArgs& v) {
  app->add_option("--seq-backward", v.seqBackward,
                  "a training step: S's backward graph (its inputs: --seq's saved tensors, then tangents)");
  app->add_option("--dist-backward", v.distBackward, "a training step: D's backward graphs (as --dist)");
}

// Flags of commands that load torch.fx captures (docs/fx-import.md).
static void addFxFlags(CLI::App* app, sp::frontend::FxFlags& fx) {
  app->add_option("--fx-group", fx.groups,
                  "torch.fx: c10d group ID=GROUP (a mesh axis, axes joined by '+', world, self, or "
                  "rank lists '[0,1][2,3]'); repeatable");
  app->add_option("--mesh", fx.mesh, "torch.fx: mesh file ('mesh tp=2' and 'group ID = GROUP' lines)");
  app->add_option("--fx-constant", fx.constants,
                  "torch.fx: value of a lifted tensor constant, [FILE:]NAME=NUMBER; repeatable");
  app->add_option("--decomp", fx.decomps, "torch.fx: directory of kernel decomposition files; repeatable");
}

int main(int argc, char** argv) {
  using namespace sp::tools;
  sp::ir::reserveBlasBuffers();
  CLI::App app{
      "shardproof: a static verifier and plan-checker for distributed model implementations.\n"
      "Imports ONNX models, torch.fx captures and text IR; runs them on CPU; proves that a\n"
      "distributed program refines its sequential model."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "shardproof 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging on stderr");

  InspectArgs inspect;
  auto* ins = app.add_subcommand("inspect", "summarize a model: inputs, outputs, parameters, op counts");
  ins->add_option("MODEL", inspect.model, "a .onnx file, a text IR file, or a directory of rank files")
      ->required();
  ins->add_flag("--print-ir", inspect.printIr, "print the model as text IR");
  ins->add_option("--format", inspect.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  addFxFlags(ins, inspect.fx);

  RunArgs run;
  auto* rn = app.add_subcommand("run", "execute a model or distributed program on CPU");
  rn->add_option("MODEL", run.model, "a .onnx file, a text IR file, or a directory of rank files")
      ->required();
  rn->add_option("--input", run.inputs,
                 "NAME=FILE.npy (repeatable); rN:NAME=FILE.npy gives one rank of a program");
  rn->add_option("--seed", run.seed, "seed for inputs not given (default 0)");
  rn->add_option("--out-dir", run.outDir, "directory for OUTPUT.npy files (programs: rN/OUTPUT.npy)")
      ->required();
  rn->add_option("--threads", run.threads, "worker threads (default: all cores)");
  addFxFlags(rn, run.fx);

  VerifyArgs verify;
  auto* vf = app.add_subcommand(
      "verify", "prove that a distributed program refines a sequential model, or refute it.\n"
                "Exit codes: 0 verified, 1 refuted, 2 inconclusive, 3 bad input");
  vf->add_option("--seq", verify.seq, "sequential model (.onnx, .sp, .py capture, or a directory)")
      ->required();
  vf->add_option("--dist", verify.dist,
                 "distributed program: a text IR program, or a directory of *.r<N>.<ext> rank files")
      ->required();
  addTrainingStepFlags(vf, verify);
  vf->add_option("--relation", verify.relationFile, "input relations (docs/relations.md)");
  vf->add_flag("--infer-relations", verify.inferRelations,
               "propose input relations from names and shapes, and use them");
  vf->add_option("--write-relations", verify.writeRelations,
                 "with --infer-relations: write the proposal to FILE for review");
  vf->add_option("--expect", verify.expectFile, "expected output relations ('expect' lines)");
  vf->add_option("--outputs", verify.outputs,
                 "S values that must be rebuilt: outputs from D outputs, others from any D value (default: all outputs)")
      ->delimiter(',');
  vf->add_option("--format", verify.format, "text, json or junit")
      ->check(CLI::IsMember({"text", "json", "junit"}));
  vf->add_option("--time-limit", verify.timeLimit, "seconds before giving up: inconclusive (default 300)");
  vf->add_option("--dot", verify.dotFile, "write the S graph around the failure as Graphviz");
  vf->add_option("--seed", verify.seed, "seed of the witness inputs (default 0)");
  vf->add_option("--witness-limit", verify.witnessLimit,
                 "estimated multiply-adds above which the witness is not run: inconclusive (default 5e12)");
  vf->add_option("--repair-limit", verify.repairLimit,
                 "refuted: seconds spent looking for one collective edit (reduce mode, dim, group) under which "
                 "D verifies; 0: none (default 10)");
  vf->add_flag("--no-shrink-witness", verify.noShrinkWitness,
               "run the witness at full size only (by default a witness with S's row dims shrunk to one row, "
               "where every op provably treats rows alike, is tried first; it only refutes)");
  vf->add_flag("--no-fold", verify.noFold,
               "check every rank's graph, never one symbolic rank for an SPMD program over one group");
  addFxFlags(vf, verify.fx);

  LemmasArgs lemmas;
  auto* lm = app.add_subcommand("lemmas", "list the lemma library; --prove proves every lemma with Z3");
  lm->add_flag("--prove", lemmas.prove, "prove each lemma (Z3) and check it numerically");
  lm->add_option("--dir", lemmas.dir, "lemma directory (default: the built-in library)");
  lm->add_option("--only", lemmas.only, "lemma names")->delimiter(',');

  CodegenArgs cg;
  auto* cgc = app.add_subcommand("codegen", "verify D against S, then write verified per-rank execution plans.\n"
                                            "Exit codes: 0 plans written, 1 not verified (nothing written), 3 bad input");
  cgc->add_option("--seq", cg.verify.seq, "sequential model (.onnx, .sp, .py capture, or a directory)")->required();
  cgc->add_option("--dist", cg.verify.dist, "distributed program: a text IR program, or a directory of rank files")
      ->required();
  addTrainingStepFlags(cgc, cg.verify);
  cgc->add_option("--relation", cg.verify.relationFile, "input relations (docs/relations.md)");
  cgc->add_flag("--infer-relations", cg.verify.inferRelations, "propose input relations from names and shapes, and use them");
  cgc->add_option("--expect", cg.verify.expectFile, "expected output relations ('expect' lines)");
  cgc->add_option("--outputs", cg.verify.outputs, "S values that must be rebuilt (default: all outputs)")->delimiter(',');
  cgc->add_option("--time-limit", cg.verify.timeLimit, "seconds for each verification (default 300)");
  cgc->add_option("--out", cg.outDir, "plan directory to write (docs/plan.md)")->required();
  cgc->add_option("--bind", cg.binds, "NAME=VALUE: value of a symbolic dim (default 4); repeatable");
  cg.verify.repairLimit = 0;
  addFxFlags(cgc, cg.verify.fx);

  ExecArgs ex;
  auto* exc = app.add_subcommand("exec", "run a plan directory written by codegen; outputs to OUT/rN/NAME.npy");
  exc->add_option("DIR", ex.planDir, "plan directory (manifest.json, rN.plan)")->required();
  exc->add_option("--backend", ex.backend, "cpu (default) or cuda (needs a SHARDPROOF_CUDA build and a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  exc->add_option("--ranks-per-process", ex.ranksPerProcess,
                  "cuda: all (every rank in this process, default) or 1 (this process runs rank $RANK of "
                  "$WORLD_SIZE, as torchrun/srun launch it; MASTER_ADDR/MASTER_PORT for the rendezvous)")
      ->check(CLI::IsMember({"all", "1"}));
  exc->add_option("--input", ex.inputs, "NAME=FILE.npy (repeatable); rN:NAME=FILE.npy gives one rank");
  exc->add_option("--seed", ex.seed, "seed for inputs not given (default 0), drawn as `run` draws them");
  exc->add_option("--out-dir", ex.outDir, "directory for rN/OUTPUT.npy files")->required();

  PlanArgs plan;
  auto* pl = app.add_subcommand("plan", "propose parallel layouts for a model config: memory, step time, MFU.\n"
                                        "Exit codes: 0 plans, 1 no layout fits, 3 bad input");
  pl->add_option("--model", plan.model, "Hugging Face config.json")->required();
  pl->add_option("--gpus", plan.gpus, "number of GPUs")->required();
  pl->add_option("--gpu", plan.gpu, "GPU kind (planner/gpus.json)")->required();
  pl->add_option("--seq", plan.seq, "sequence length")->required();
  pl->add_option("--global-batch", plan.globalBatch, "sequences per step")->required();
  pl->add_option("--fix", plan.fix, "pinned choices: tp=8,pp=16,vpp=4,cp=1,ep=1,etp=1,dp=64,mb=1,recompute=full,distopt=1");
  pl->add_option("--top", plan.top, "distinct layouts to print (default 5)");
  pl->add_option("--format", plan.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  pl->add_option("--gpu-file", plan.gpuFile, "GPU data file (default planner/gpus.json)");
  pl->add_option("--emit", plan.emit, "write the best layout's program (DIR/program) and its verified plans (DIR/plan)");
  pl->add_option("--emit-layers", plan.emitLayers, "with --emit: layers (default 1)");
  pl->add_option("--emit-seq", plan.emitSeq, "with --emit: sequence length (default min(--seq, 256))");

  CheckLaunchArgs launch;
  auto* cl = app.add_subcommand("check-launch", "check a Megatron-LM launch configuration before it starts.\n"
                                                "Exit codes: 0 ok, 1 a rule broken, 3 bad input");
  cl->add_option("--model", launch.model, "Hugging Face config.json")->required();
  auto* clArgs = cl->add_option("--megatron-args", launch.megatronArgs, "file of Megatron-LM arguments");
  auto* clPlan = cl->add_option("--plan", launch.plan, "k=v,... (tp, pp, vpp, cp, ep, etp, mb, gbs, seq, sp, recompute, distopt)");
  clArgs->excludes(clPlan);
  cl->add_option("--gpus", launch.gpus, "world size")->required();
  cl->add_option("--gpu", launch.gpu, "GPU kind (planner/gpus.json)")->required();
  cl->add_option("--format", launch.format, "text, json or junit")->check(CLI::IsMember({"text", "json", "junit"}));
  cl->add_option("--gpu-file", launch.gpuFile, "GPU data file (default planner/gpus.json)");

  ParallelizeArgs par;
  auto* pz = app.add_subcommand("parallelize", "write a model config's Megatron tensor/pipeline-parallel program, its sequential\n"
                                               "model and their relations as text IR (and --verify them).\n"
                                               "Exit codes: 0 written (or verified), 1 refuted, 2 inconclusive, 3 bad input");
  pz->add_option("--model", par.model, "Hugging Face config.json")->required();
  pz->add_option("--plan", par.fix, "layout: tp=8,cp=2,dp=2,ep=2,pp=4,vpp=2 (dp defaults to ep; vpp: interleaved model chunks per stage)")->required();
  pz->add_option("--seq", par.seq, "sequence length")->required();
  pz->add_option("--batch", par.batch, "micro-batch size per data-parallel replica (default 1)");
  pz->add_flag("--backward", par.backward, "the training step: forward and backward, gradients of every weight");
  pz->add_option("--micro-batches", par.microBatches,
                 "micro-batches per step, each --batch sequences per replica");
  pz->add_option("--schedule", par.schedule,
                 "pipeline order of the micro-batches' forwards and backwards: 1f1b (default, Megatron's: "
                 "pp - s - 1 warm-up forwards on stage s, then one forward and one backward in turn) or gpipe "
                 "(every forward, then every backward)")
      ->check(CLI::IsMember({"1f1b", "gpipe"}));
  pz->add_option("--layers", par.layers, "transformer layers (default: the config's)");
  pz->add_option("--blocks", par.blocks, "full (attention + MLP, default) or mlp")->check(CLI::IsMember({"full", "mlp"}));
  pz->add_option("--sequence-parallel", par.sequenceParallel, "auto (on when tp > 1), on or off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  pz->add_option("--cp-chunks", par.cpChunks,
                 "context parallel: contiguous (default: rank k the k-th chunk) or balanced (Megatron's causal load "
                 "balance: rank k halves k and 2 cp - 1 - k)")
      ->check(CLI::IsMember({"contiguous", "balanced"}));
  pz->add_option("--out", par.outDir, "directory for seq.sp, dist.sp, relations.rel")->required();
  pz->add_flag("--verify", par.verify, "verify the written program (as `verify`)");
  pz->add_option("--format", par.format, "with --verify: text, json or junit")->check(CLI::IsMember({"text", "json", "junit"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  auto logger = spdlog::stderr_color_mt("shardproof");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);

  // No command ends the process with an uncaught exception: running out of
  // memory on a valid but huge input is one clear error naming the command
  // and its file (verify already turns it into an inconclusive witness).
  auto guarded = [](const std::string& what, const auto& cmd) -> int {
    try {
      return cmd();
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "error: %s: out of memory (the model's tensors do not fit)\n", what.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s: unexpected failure: %s\n", what.c_str(), e.what());
    }
    return kExitBadInput;
  };
  if (*ins) return guarded("inspect " + inspect.model, [&] { return cmdInspect(inspect); });
  if (*rn) return guarded("run " + run.model, [&] { return cmdRun(run); });
  if (*vf || *cgc || *lm || *cl) sp::rewrite::limitSearchMemory();
  if (*vf) return guarded("verify --seq " + verify.seq + " --dist " + verify.dist, [&] { return cmdVerify(verify); });
  if (*lm) return guarded("lemmas", [&] { return cmdLemmas(lemmas); });
  if (*cgc) return guarded("codegen --seq " + cg.verify.seq + " --dist " + cg.verify.dist, [&] { return cmdCodegen(cg); });
  if (*exc) return guarded("exec " + ex.planDir, [&] { return cmdExec(ex); });
  if (*pl) {
    if (!plan.emit.empty()) sp::rewrite::limitSearchMemory();
    return guarded("plan --model " + plan.model, [&] { return cmdPlan(plan); });
  }
  if (*cl) return guarded("check-launch --model " + launch.model, [&] { return cmdCheckLaunch(launch); });
  if (*pz) {
    if (par.verify) sp::rewrite::limitSearchMemory();
    return guarded("parallelize --model " + par.model, [&] { return cmdParallelize(par); });
  }
  return kExitBadInput;
}
