// Times the Megatron GPT TP=2 corpus pair (../shared/corpus): import of the
// sequential capture and the two rank captures, relation inference plus
// verify(), and the peak RSS of each run (each run in its own forked child).
// Prints CSV; the verdict is whatever verify() returns today.
//
//   bench_corpus [--runs N] [--corpus DIR] [--time-limit SECONDS]
//                [--witness-limit MACS] [--twin]
//
// --twin: a copy of the corpus whose first all_reduce in every rank's
// capture is replaced by a clone of its operand (the vocab-parallel
// embedding's, in Megatron captures): the refutation and its witness are
// what is timed (the witness limit defaults to verify's then).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "frontend/load.h"
#include "rewrite/verify/verify.h"

namespace {

using namespace sp;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The twin: a copy of `corpus` under a temporary directory with the first
// all_reduce of each dist capture replaced by a clone of its operand.
std::string makeTwin(const std::string& corpus) {
  namespace fs = std::filesystem;
  fs::path out = fs::temp_directory_path() / ("sp-bench-corpus-twin-" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::copy(corpus, out, fs::copy_options::recursive);
  std::regex ar(R"(torch\.ops\._c10d_functional\.all_reduce\.default\((\w+), 'sum', '\w+'\))");
  for (const auto& e : fs::directory_iterator(out / "dist")) {
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    std::smatch m;
    if (!std::regex_search(text, m, ar)) continue;
    text = m.prefix().str() + "torch.ops.aten.clone.default(" + m[1].str() + ")" + m.suffix().str();
    std::ofstream(e.path(), std::ios::trunc) << text;
  }
  return out.string();
}

// One run: import, infer relations, verify. Writes one CSV tail to fd.
int runOnce(const std::string& corpus, double timeLimit, double witnessLimit, int fd) {
  auto emit = [fd](const std::string& s) { return write(fd, s.data(), s.size()) < 0 ? 1 : 0; };
  auto clean = [](std::string s) {
    for (char& c : s)
      if (c == ',' || c == '\n') c = ';';
    return s;
  };
  auto t0 = Clock::now();
  auto seq = frontend::loadGraph(corpus + "/seq");
  if (!seq) return emit("0,0,error,0,0," + clean(seq.error().str()));
  auto dist = frontend::loadProgram(corpus + "/dist");
  if (!dist) return emit("0,0,error,0,0," + clean(dist.error().str()));
  double importS = since(t0);
  size_t seqOps = seq->nodes().size(), distOps = dist->rank(0).nodes().size();
  auto t1 = Clock::now();
  std::string verdict, reason;
  auto rel = rewrite::inferRelations(*seq, *dist);
  if (!rel) {
    verdict = "error";
    reason = rel.error().str();
  } else {
    rewrite::VerifyOptions opts;
    opts.timeLimitSeconds = timeLimit;
    // The bench times import and verification; a witness (gigabytes at these
    // sizes) runs only when asked for.
    opts.witnessWorkLimit = witnessLimit;
    opts.outputs = {"div_2"};  // the loss, as issue 4's acceptance command asks
    auto rep = rewrite::verify(*seq, *dist, *rel, opts);
    if (!rep) {
      verdict = "error";
      reason = rep.error().str();
    } else {
      verdict = std::string(rewrite::verdictName(rep->verdict));
      reason = rep->reason;
    }
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.3f,%.3f,", importS, since(t1));
  return emit(buf + verdict + "," + std::to_string(seqOps) + "," + std::to_string(distOps) + "," + clean(reason));
}

int usage() {
  std::fprintf(stderr, "usage: bench_corpus [--runs N] [--corpus DIR] [--time-limit SECONDS] [--witness-limit MACS (default 0: no witness; --twin: verify's)] [--twin]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 1;
  double timeLimit = 300;
  double witnessLimit = -1;  // multiply-adds; 0: no witness
  bool twin = false;
  std::string corpus = SP_SOURCE_DIR "/../shared/corpus/megatron_gpt_tp2_l1";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--twin") {
      twin = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    if (a == "--runs") runs = std::atoi(argv[++i]);
    else if (a == "--corpus") corpus = argv[++i];
    else if (a == "--time-limit") timeLimit = std::atof(argv[++i]);
    else if (a == "--witness-limit") {
      witnessLimit = std::atof(argv[++i]);
      if (witnessLimit < 0) return usage();
    }
    else return usage();
  }
  if (witnessLimit < 0) witnessLimit = twin ? rewrite::kDefaultWitnessWorkLimit : 0;
  if (runs < 1 || timeLimit <= 0) return usage();
  if (!std::filesystem::exists(corpus + "/seq") || !std::filesystem::exists(corpus + "/dist")) {
    std::fprintf(stderr, "bench_corpus: corpus absent (%s): skipped\n", corpus.c_str());
    return 0;
  }
  if (twin) corpus = makeTwin(corpus);
  std::printf("run,import_seconds,verify_seconds,verdict,seq_ops,dist_ops_rank0,peak_rss_mb,reason\n");
  for (int r = 0; r < runs; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      _exit(runOnce(corpus, timeLimit, witnessLimit, fds[1]));
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    struct rusage ru {};
    wait4(pid, &status, 0, &ru);
    if (!WIFEXITED(status) || out.empty()) out = "0,0,crashed,0,0,child status " + std::to_string(status);
    // Move peak RSS before the reason column.
    size_t cut = out.find(',');
    for (int k = 0; k < 4 && cut != std::string::npos; ++k) cut = out.find(',', cut + 1);
    std::string head = cut == std::string::npos ? out : out.substr(0, cut);
    std::string tail = cut == std::string::npos ? "" : out.substr(cut + 1);
    std::printf("%d,%s,%.1f,%s\n", r, head.c_str(), double(ru.ru_maxrss) / 1024.0, tail.c_str());
    std::fflush(stdout);
  }
  if (twin) std::filesystem::remove_all(corpus);
  return 0;
}
