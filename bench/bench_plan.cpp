// Planner search time (issue 16: the whole search for 16,384 GPUs in <= 5 s).
// Prints CSV: model,gpus,seq,global_batch,candidates,feasible,layouts,seconds,best_tflops
#include <chrono>
#include <cstdio>

#include "planner/search.h"

int main() {
  using namespace sp::planner;
  struct Case {
    const char* model;
    int64_t gpus, seq, batch;
  };
  std::printf("model,gpus,seq,global_batch,candidates,feasible,layouts,seconds,best_tflops\n");
  for (Case c : {Case{"llama3-405b", 8192, 8192, 2048}, Case{"llama3-405b", 16384, 8192, 2048},
                 Case{"llama3-405b", 16384, 131072, 128}, Case{"deepseek-v3", 16384, 4096, 15360},
                 Case{"mixtral-8x7b", 16384, 4096, 8192}}) {
    PlanRequest req;
    req.model = *loadModelConfig(std::string(SP_SOURCE_DIR) + "/planner/configs/" + c.model + ".json");
    req.gpu = *findGpu("h100-sxm");
    req.job = Job{c.gpus, c.seq, c.batch};
    auto t0 = std::chrono::steady_clock::now();
    auto r = searchPlans(req);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) return 1;
    std::printf("%s,%lld,%lld,%lld,%lld,%lld,%lld,%.4f,%.1f\n", c.model, (long long)c.gpus, (long long)c.seq,
                (long long)c.batch, (long long)r->candidates, (long long)r->feasible, (long long)r->layouts, s,
                r->plans.empty() ? 0.0 : r->plans[0].estimate.tflopsPerGpu);
  }
}
