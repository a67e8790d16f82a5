#pragma once
// The TCP rendezvous of the distributed CUDA mode: rank 0 listens on
// MASTER_PORT and hands one blob (the NCCL unique ids) to every other rank,
// which connects to MASTER_ADDR:MASTER_PORT (retrying until the server is
// up). Plain POSIX sockets, every wait bounded by the timeout; errors say
// which rank and address failed and why.
#include <cstdint>
#include <string>

#include "ir/support.h"

namespace sp::cuda_ref {

struct RendezvousConfig {
  int64_t rank = 0, world = 1;
  std::string addr = "127.0.0.1";
  int port = 29500;
  double timeoutSeconds = 300;
};

// Rank 0 serves `blob` to ranks 1..world-1 and returns it; the others
// return what rank 0 served.
Result<std::string> rendezvousShare(const RendezvousConfig& c, const std::string& blob);

}  // namespace sp::cuda_ref
