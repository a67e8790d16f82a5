#pragma once
// Shared by the ranks of one executor run (CPU and CUDA backends): the first
// error stops everyone; ranks blocked on a peer poll `failed`.
#include <atomic>
#include <mutex>
#include <optional>

#include "ir/support.h"

namespace sp::cuda_ref {

struct Abort {
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::optional<Error> error;
  void fail(Error e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!error) error = std::move(e);
    failed = true;
  }
};

inline Error abortedError() { return makeError("aborted", "another rank failed"); }

}  // namespace sp::cuda_ref
