// Interpreter time and peak memory per model, as CSV on stdout:
//   model,nodes,parameters,runs,median_seconds,min_seconds,peak_rss_mb
// Each model runs in a forked child, so peak RSS is that model's own.
// Usage: bench_interpreter [--runs N] MODEL[@sym=v,sym=v]...
// (default: the bundled Llama block and 2-layer LM fixtures, both as
// exported and with dynamic axes bound to batch 256, seq 16 (the models' position tables hold 16))
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "ir/interpreter.h"

namespace {

int benchOne(const std::string& spec, int runs, int fd) {
  std::string path = spec;
  sp::ir::RunOptions opts;
  opts.seed = 1;
  if (auto at = spec.find('@'); at != std::string::npos) {
    path = spec.substr(0, at);
    std::string binds = spec.substr(at + 1);
    size_t pos = 0;
    while (pos < binds.size()) {
      size_t comma = binds.find(',', pos);
      std::string item = binds.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "error: bad binding '%s' (want sym=value)\n", item.c_str());
        return 3;
      }
      opts.symbols[item.substr(0, eq)] = std::atoll(item.c_str() + eq + 1);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  auto g = sp::frontend::loadGraph(path);
  if (!g) {
    std::fprintf(stderr, "error: %s\n", g.error().str().c_str());
    return 3;
  }
  int64_t params = 0;
  for (auto v : g->params()) {
    auto n = sp::ir::numElements(g->value(v).type.shape);
    if (n && n->isConcrete()) params += n->coef;
  }
  auto inputs = sp::ir::prepareInputs(*g, {}, opts);
  if (!inputs) {
    std::fprintf(stderr, "error: %s\n", inputs.error().str().c_str());
    return 3;
  }
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto out = sp::ir::runGraph(*g, *inputs, opts);
    auto t1 = std::chrono::steady_clock::now();
    if (!out) {
      std::fprintf(stderr, "error: %s\n", out.error().str().c_str());
      return 3;
    }
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(times.begin(), times.end());
  char line[512];
  int n = std::snprintf(line, sizeof line, "%zu,%lld,%d,%.6f,%.6f", g->nodes().size(),
                        static_cast<long long>(params), runs, times[times.size() / 2], times[0]);
  if (write(fd, line, size_t(n)) != n) return 4;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else models.push_back(argv[i]);
  }
  if (models.empty()) {
    std::string base = std::string(SP_SOURCE_DIR) + "/tests/fixtures/onnx/";
    models = {base + "llama_block_op17.onnx", base + "gpt_lm_op17.onnx",
              base + "llama_block_op17_dyn.onnx@batch=256,seq=16",
              base + "gpt_lm_op17_dyn.onnx@batch=256,seq=16"};
  }
  std::printf("model,nodes,parameters,runs,median_seconds,min_seconds,peak_rss_mb\n");
  int status = 0;
  for (const auto& m : models) {
    int fds[2];
    if (pipe(fds) != 0) return 4;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      _exit(benchOne(m, runs, fds[1]));
    }
    close(fds[1]);
    char buf[512] = {0};
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int wstatus = 0;
    struct rusage ru {};
    wait4(pid, &wstatus, 0, &ru);
    if (got <= 0 || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      std::fprintf(stderr, "bench: %s failed\n", m.c_str());
      status = 1;
      continue;
    }
    std::printf("\"%s\",%s,%.1f\n", m.c_str(), buf, double(ru.ru_maxrss) / 1024.0);
  }
  return status;
}
