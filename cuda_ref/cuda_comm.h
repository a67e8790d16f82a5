#pragma once
// Communication of the CUDA backend, with the semantics of ir/collectives.h.
// One communicator per member list of the plans (a collective's `members`;
// a send/recv pair {low rank, high rank}). NCCL where every member runs on
// its own GPU; otherwise (ranks sharing a GPU in one process, which NCCL
// refuses) an in-process device communicator: members meet on the host,
// copy each other's inputs device to device and reduce in member order.
// all_gather / reduce_scatter / all_to_all along a non-leading dim pack
// through scratch memory with strided copies around NCCL.
#include <map>
#include <memory>
#include <vector>

#include "codegen/plan.h"
#include "cuda_ref/abort.h"
#include "cuda_ref/cuda_util.h"

namespace sp::cuda_ref {

// Device memory of one stream, grown on demand (the stream is synchronized
// before the old block is freed).
struct Scratch {
  void* ptr = nullptr;
  size_t bytes = 0;
  int device = 0;
  Result<void*> reserve(size_t n, cudaStream_t stream);
  ~Scratch();
};

// A communicator: its members (group order) and, for a send/recv pair
// {low rank, high rank}, the tag (-1 for group collectives). NCCL matches a
// pair's sends and recvs by order, not tag: one communicator per tag keeps
// the plans' FIFO-per-(src, dst, tag) semantics.
using CommKey = std::pair<std::vector<int64_t>, int64_t>;
// Every communicator of the plans, sorted: the same on every rank (the
// distributed mode hands out one NCCL id per key in this order).
std::vector<CommKey> communicatorKeys(const std::vector<codegen::Plan>& plans);

class LocalComm;
class LocalMailbox;

class CommSet {
 public:
  // Single process: rank r runs on devices[r].
  static Result<std::unique_ptr<CommSet>> create(const std::vector<codegen::Plan>& plans, const std::vector<int>& devices);
  // Distributed: this process is `rank` on `device`; ids[k] is the NCCL id
  // of communicatorKeys(plans)[k].
  static Result<std::unique_ptr<CommSet>> createDistributed(const std::vector<codegen::Plan>& plans, int64_t rank,
                                                            int device, const std::vector<ncclUniqueId>& ids);
  ~CommSet();

  // A group collective step of `rank` (its input and output buffers).
  Status collective(int64_t rank, const codegen::PlanStep& s, const DevTensor& in, const DevTensor& out,
                    cudaStream_t stream, Scratch& scratch, Abort& abort);
  // Send or recv step; `t` is the input (send) or output (recv).
  Status p2p(int64_t rank, const codegen::PlanStep& s, const DevTensor& t, cudaStream_t stream, Abort& abort);
  // Whether the step's communicator is NCCL (consecutive NCCL sends and
  // recvs are issued as one group, so exchanges do not deadlock).
  bool isNccl(int64_t rank, const codegen::PlanStep& s) const;
  // Aborts this process's NCCL communicators: kernels blocked in them return.
  void abortNccl();

 private:
  struct Entry {
    std::vector<int64_t> members;
    std::map<int64_t, ncclComm_t> nccl;  // by world rank, this process's members
    std::unique_ptr<LocalComm> local;
  };
  CommSet();
  const Entry& entry(const CommKey& key) const;
  Status ncclCollective(const Entry& e, size_t me, const codegen::PlanStep& s, const DevTensor& in,
                        const DevTensor& out, cudaStream_t stream, Scratch& scratch);
  Status localCollective(const Entry& e, size_t me, const codegen::PlanStep& s, const DevTensor& in,
                         const DevTensor& out, cudaStream_t stream, Scratch& scratch, Abort& abort);
  std::map<CommKey, Entry> entries_;
  std::unique_ptr<LocalMailbox> mail_;
};

}  // namespace sp::cuda_ref
