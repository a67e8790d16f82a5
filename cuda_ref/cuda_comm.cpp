#include "cuda_ref/cuda_comm.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <tuple>

#include "ir/collectives.h"
#include "ir/shape.h"

namespace sp::cuda_ref {

namespace {

using codegen::Plan;
using codegen::PlanStep;
using codegen::StepKind;
using Dims = std::vector<int64_t>;

constexpr auto kPoll = std::chrono::milliseconds(50);

char* at(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }

// The g members' blocks of a gathered buffer (member-major, `nb` bytes each)
// to their places along `axis` of the output (all_gather on a non-leading dim).
Status unpackGathered(const Dims& in, const Dims& out, int64_t axis, size_t g, size_t nb, size_t es, void* src,
                      void* dst, cudaStream_t stream) {
  for (size_t i = 0; i < g; ++i)
    SP_TRY(copyBox({in, in, out, 0, 0, axis, int64_t(i) * in[size_t(axis)]}, es, at(src, i * nb), dst, stream));
  return okStatus();
}

int64_t prefix(const Dims& d, int64_t axis) {
  int64_t n = 1;
  for (int64_t k = 0; k < axis; ++k) n *= d[size_t(k)];
  return n;
}

Dims withAxis(Dims d, int64_t axis, int64_t extent) {
  d[size_t(axis)] = extent;
  return d;
}

CommKey keyOf(int64_t rank, const PlanStep& s) {
  if (s.kind == StepKind::Collective) return {s.members, -1};
  int64_t peer = ir::attrInt(s.attrs, "peer");
  return {{std::min(rank, peer), std::max(rank, peer)}, ir::attrInt(s.attrs, "tag")};
}

size_t indexIn(const std::vector<int64_t>& members, int64_t rank) {
  auto pos = std::find(members.begin(), members.end(), rank);
  SP_ASSERT(pos != members.end(), "checkPlans: a rank is a member of its communicators");
  return size_t(pos - members.begin());
}

Result<dev::RedOp> redOpOf(const ir::AttrMap& attrs, ir::DType t) {
  SP_ASSIGN(ir::ReduceOp r, ir::parseReduceOp(ir::attrStr(attrs, "reduce")));
  if (r == ir::ReduceOp::Avg && !ir::isFloat(t))
    return makeError("bad-reduce", "reduce avg needs a float dtype, got " + std::string(ir::dtypeName(t)));
  switch (r) {
    case ir::ReduceOp::Sum: return dev::RedOp::Sum;
    case ir::ReduceOp::Avg: return dev::RedOp::Mean;
    case ir::ReduceOp::Max: return dev::RedOp::Max;
    case ir::ReduceOp::Min: return dev::RedOp::Min;
  }
  return dev::RedOp::Sum;
}

Result<ncclDataType_t> ncclTypeOf(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return ncclFloat32;
    case ir::DType::F64: return ncclFloat64;
    case ir::DType::F16: return ncclFloat16;
    case ir::DType::BF16: return ncclBfloat16;
    case ir::DType::I64: return ncclInt64;
    case ir::DType::I32: return ncclInt32;
    case ir::DType::I8: return ncclInt8;
    case ir::DType::U8:
    case ir::DType::Bool: return ncclUint8;
    default: return makeError("nccl-dtype", "NCCL has no reduction over " + std::string(ir::dtypeName(t)));
  }
}

// Bool: sum and max are "or", min is "and" (ir/collectives.h).
ncclRedOp_t ncclOpOf(dev::RedOp r, ir::DType t) {
  bool b = t == ir::DType::Bool;
  switch (r) {
    case dev::RedOp::Sum: return b ? ncclMax : ncclSum;
    case dev::RedOp::Mean: return ncclAvg;
    case dev::RedOp::Max: return ncclMax;
    case dev::RedOp::Min: return ncclMin;
    case dev::RedOp::Prod: return ncclProd;
  }
  return ncclSum;
}

// The dims of one collective: the input's, the axis it splits or joins.
struct Along {
  int64_t axis = 0;
  Dims dims;
};
Result<Along> along(const PlanStep& s, const char* attr, const Dims& dims) {
  SP_ASSIGN(int64_t a, ir::normAxis(ir::attrInt(s.attrs, attr), int64_t(dims.size()), std::string(ir::opName(s.op))));
  return Along{a, dims};
}

}  // namespace

// A rendezvous of the members of one communicator, call by call: each
// member publishes its input and reads everyone's (barrier), computes, and
// leaves (barrier) only when every member has finished reading.
class LocalComm {
 public:
  struct Slot {
    const void* ptr = nullptr;
    int device = 0;
  };
  explicit LocalComm(size_t g) : slots_(g) {}
  size_t size() const { return slots_.size(); }

  Result<std::vector<Slot>> publish(size_t i, Slot s, Abort& abort) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[i] = s;
    }
    SP_TRY(barrier(abort));
    std::lock_guard<std::mutex> lock(mu_);
    return slots_;
  }

  Status barrier(Abort& abort) {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t gen = generation_;
    if (++count_ == slots_.size()) {
      count_ = 0;
      ++generation_;
      cv_.notify_all();
      return okStatus();
    }
    while (generation_ == gen) {
      if (abort.failed) return abortedError();
      cv_.wait_for(lock, kPoll);
    }
    return okStatus();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  size_t count_ = 0;
  uint64_t generation_ = 0;
};

// Sends and recvs between ranks sharing a GPU: staged through host memory,
// FIFO per (src, dst, tag), as the CPU backend's mailbox.
class LocalMailbox {
 public:
  void post(int64_t src, int64_t dst, int64_t tag, std::vector<std::byte> bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    queues_[{src, dst, tag}].push_back(std::move(bytes));
    cv_.notify_all();
  }
  Result<std::vector<std::byte>> take(int64_t src, int64_t dst, int64_t tag, Abort& abort) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = queues_[{src, dst, tag}];
    while (q.empty()) {
      if (abort.failed) return abortedError();
      cv_.wait_for(lock, kPoll);
    }
    auto b = std::move(q.front());
    q.pop_front();
    return b;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<std::vector<std::byte>>> queues_;
};

Result<void*> Scratch::reserve(size_t n, cudaStream_t stream) {
  if (n <= bytes) return ptr;
  SP_TRY(cudaCheck(cudaStreamSynchronize(stream), "scratch: synchronize"));
  if (ptr) SP_TRY(cudaCheck(cudaFree(ptr), "scratch: cudaFree"));
  ptr = nullptr;
  bytes = 0;
  SP_TRY(cudaCheck(cudaMalloc(&ptr, n), ("scratch: cudaMalloc of " + std::to_string(n) + " bytes").c_str()));
  bytes = n;
  return ptr;
}

Scratch::~Scratch() {
  if (!ptr) return;
  cudaSetDevice(device);
  cudaFree(ptr);
}

std::vector<CommKey> communicatorKeys(const std::vector<Plan>& plans) {
  std::set<CommKey> keys;
  for (const Plan& p : plans)
    for (const PlanStep& s : p.steps)
      if (s.kind == StepKind::Collective || s.kind == StepKind::Send || s.kind == StepKind::Recv)
        keys.insert(keyOf(p.rank, s));
  return {keys.begin(), keys.end()};
}

CommSet::CommSet() : mail_(std::make_unique<LocalMailbox>()) {}

CommSet::~CommSet() {
  for (auto& [k, e] : entries_)
    for (auto& [r, c] : e.nccl) ncclCommDestroy(c);
}

Result<std::unique_ptr<CommSet>> CommSet::create(const std::vector<Plan>& plans, const std::vector<int>& devices) {
  std::unique_ptr<CommSet> cs(new CommSet());
  for (const CommKey& ck : communicatorKeys(plans)) {
    const std::vector<int64_t>& key = ck.first;
    Entry& e = cs->entries_[ck];
    e.members = key;
    std::set<int> devs;
    for (int64_t r : key) devs.insert(devices[size_t(r)]);
    if (devs.size() < key.size()) {  // NCCL refuses two members on one GPU
      e.local = std::make_unique<LocalComm>(key.size());
      continue;
    }
    ncclUniqueId id;
    SP_TRY(ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    std::vector<ncclComm_t> comms(key.size());
    SP_TRY(ncclCheck(ncclGroupStart(), "ncclGroupStart"));
    for (size_t i = 0; i < key.size(); ++i) {
      SP_TRY(cudaCheck(cudaSetDevice(devices[size_t(key[i])]), "cudaSetDevice"));
      SP_TRY(ncclCheck(ncclCommInitRank(&comms[i], int(key.size()), id, int(i)), "ncclCommInitRank"));
    }
    SP_TRY(ncclCheck(ncclGroupEnd(), "ncclGroupEnd (communicator init)"));
    for (size_t i = 0; i < key.size(); ++i) e.nccl[key[i]] = comms[i];
  }
  return cs;
}

Result<std::unique_ptr<CommSet>> CommSet::createDistributed(const std::vector<Plan>& plans, int64_t rank, int device,
                                                            const std::vector<ncclUniqueId>& ids) {
  auto keys = communicatorKeys(plans);
  if (ids.size() != keys.size())
    return makeError("rendezvous", "got " + std::to_string(ids.size()) + " NCCL ids for " +
                                       std::to_string(keys.size()) + " communicators");
  std::unique_ptr<CommSet> cs(new CommSet());
  SP_TRY(cudaCheck(cudaSetDevice(device), "cudaSetDevice"));
  // Every process initializes its communicators in the same (sorted) order,
  // so the blocking inits cannot wait on each other in a cycle.
  for (size_t k = 0; k < keys.size(); ++k) {
    const std::vector<int64_t>& members = keys[k].first;
    auto pos = std::find(members.begin(), members.end(), rank);
    if (pos == members.end()) continue;
    Entry& e = cs->entries_[keys[k]];
    e.members = members;
    ncclComm_t c;
    SP_TRY(ncclCheck(ncclCommInitRank(&c, int(members.size()), ids[k], int(pos - members.begin())),
                     "ncclCommInitRank"));
    e.nccl[rank] = c;
  }
  return cs;
}

const CommSet::Entry& CommSet::entry(const CommKey& key) const {
  auto it = entries_.find(key);
  SP_ASSERT(it != entries_.end(), "communicatorKeys covers every step");
  return it->second;
}

bool CommSet::isNccl(int64_t rank, const PlanStep& s) const {
  return !entry(keyOf(rank, s)).local;
}

void CommSet::abortNccl() {
  for (auto& [k, e] : entries_)
    for (auto& [r, c] : e.nccl) ncclCommAbort(c);
  for (auto& [k, e] : entries_) e.nccl.clear();
}

Status CommSet::collective(int64_t rank, const PlanStep& s, const DevTensor& in, const DevTensor& out,
                           cudaStream_t stream, Scratch& scratch, Abort& abort) {
  const Entry& e = entry(keyOf(rank, s));
  size_t me = indexIn(e.members, rank);
  if (e.local) return localCollective(e, me, s, in, out, stream, scratch, abort);
  return ncclCollective(e, me, s, in, out, stream, scratch);
}

Status CommSet::ncclCollective(const Entry& e, size_t me, const PlanStep& s, const DevTensor& in, const DevTensor& out,
                               cudaStream_t stream, Scratch& scratch) {
  ncclComm_t comm = e.nccl.at(e.members[me]);
  const size_t g = e.members.size(), nb = in.nbytes(), es = ir::dtypeSize(in.dtype);
  switch (s.op) {
    case ir::OpKind::AllReduce: {
      SP_ASSIGN(dev::RedOp r, redOpOf(s.attrs, in.dtype));
      SP_ASSIGN(ncclDataType_t t, ncclTypeOf(in.dtype));
      return ncclCheck(ncclAllReduce(in.ptr, out.ptr, size_t(in.numel()), t, ncclOpOf(r, in.dtype), comm, stream),
                       "ncclAllReduce");
    }
    case ir::OpKind::Broadcast:
      return ncclCheck(ncclBroadcast(in.ptr, out.ptr, nb, ncclUint8, int(ir::attrInt(s.attrs, "root")), comm, stream),
                       "ncclBroadcast");
    case ir::OpKind::AllGather: {
      SP_ASSIGN(Along a, along(s, "dim", in.dims));
      if (prefix(in.dims, a.axis) == 1)  // [g, x...] is the concat already
        return ncclCheck(ncclAllGather(in.ptr, out.ptr, nb, ncclUint8, comm, stream), "ncclAllGather");
      SP_ASSIGN(void* st, scratch.reserve(g * nb, stream));
      SP_TRY(ncclCheck(ncclAllGather(in.ptr, st, nb, ncclUint8, comm, stream), "ncclAllGather"));
      return unpackGathered(in.dims, out.dims, a.axis, g, nb, es, st, out.ptr, stream);
    }
    case ir::OpKind::ReduceScatter: {
      SP_ASSIGN(Along a, along(s, "dim", in.dims));
      SP_ASSIGN(dev::RedOp r, redOpOf(s.attrs, in.dtype));
      SP_ASSIGN(ncclDataType_t t, ncclTypeOf(in.dtype));
      const void* src = in.ptr;
      if (prefix(in.dims, a.axis) != 1) {  // pack the chunks member-major
        SP_ASSIGN(void* st, scratch.reserve(nb, stream));
        for (size_t i = 0; i < g; ++i)
          SP_TRY(copyBox({out.dims, in.dims, out.dims, a.axis, int64_t(i) * out.dims[size_t(a.axis)], 0, 0}, es, in.ptr,
                         at(st, i * out.nbytes()), stream));
        src = st;
      }
      return ncclCheck(ncclReduceScatter(src, out.ptr, size_t(out.numel()), t, ncclOpOf(r, in.dtype), comm, stream),
                       "ncclReduceScatter");
    }
    case ir::OpKind::AllToAll: {
      SP_ASSIGN(Along sp, along(s, "split_dim", in.dims));
      SP_ASSIGN(Along cc, along(s, "concat_dim", in.dims));
      Dims chunk = withAxis(in.dims, sp.axis, in.dims[size_t(sp.axis)] / int64_t(g));
      size_t cb = nb / g;
      SP_ASSIGN(void* st, scratch.reserve(2 * nb, stream));
      for (size_t j = 0; j < g; ++j)
        SP_TRY(copyBox({chunk, in.dims, chunk, sp.axis, int64_t(j) * chunk[size_t(sp.axis)], 0, 0}, es, in.ptr,
                       at(st, j * cb), stream));
      SP_TRY(ncclCheck(ncclGroupStart(), "ncclGroupStart"));
      for (size_t j = 0; j < g; ++j) {
        SP_TRY(ncclCheck(ncclSend(at(st, j * cb), cb, ncclUint8, int(j), comm, stream), "ncclSend"));
        SP_TRY(ncclCheck(ncclRecv(at(st, nb + j * cb), cb, ncclUint8, int(j), comm, stream), "ncclRecv"));
      }
      SP_TRY(ncclCheck(ncclGroupEnd(), "ncclGroupEnd (all_to_all)"));
      for (size_t i = 0; i < g; ++i)
        SP_TRY(copyBox({chunk, chunk, out.dims, 0, 0, cc.axis, int64_t(i) * chunk[size_t(cc.axis)]}, es,
                       at(st, nb + i * cb), out.ptr, stream));
      return okStatus();
    }
    default: return makeError("not-a-group-collective", std::string(ir::opName(s.op)) + " is not a group collective");
  }
}

Status CommSet::localCollective(const Entry& e, size_t me, const PlanStep& s, const DevTensor& in,
                                const DevTensor& out, cudaStream_t stream, Scratch& scratch, Abort& abort) {
  int device = 0;
  SP_TRY(cudaCheck(cudaGetDevice(&device), "cudaGetDevice"));
  SP_TRY(cudaCheck(cudaStreamSynchronize(stream), "collective: inputs"));
  SP_ASSIGN(auto slots, e.local->publish(me, {in.ptr, device}, abort));
  const size_t g = e.members.size(), nb = in.nbytes(), es = ir::dtypeSize(in.dtype);
  Status st = [&]() -> Status {
    if (s.op == ir::OpKind::Broadcast) {
      int64_t root = ir::attrInt(s.attrs, "root");
      if (root < 0 || root >= int64_t(g))
        return makeError("bad-root", "broadcast: root " + std::to_string(root) + " is outside the group of size " +
                                         std::to_string(g));
      const auto& r = slots[size_t(root)];
      return cudaCheck(cudaMemcpyPeerAsync(out.ptr, device, r.ptr, r.device, nb, stream), "broadcast copy");
    }
    // Every member's input, stacked in member order, then one more block.
    SP_ASSIGN(void* stack, scratch.reserve((g + 1) * nb, stream));
    for (size_t m = 0; m < g; ++m)
      SP_TRY(cudaCheck(cudaMemcpyPeerAsync(at(stack, m * nb), device, slots[m].ptr, slots[m].device, nb, stream),
                       "collective copy"));
    auto reduced = [&](void* dst) -> Status {
      SP_ASSIGN(dev::RedOp r, redOpOf(s.attrs, in.dtype));
      auto elt = eltOf(in.dtype);
      if (!elt) return makeError("cuda-dtype", "no device reduction over " + std::string(ir::dtypeName(in.dtype)));
      return cudaCheck(dev::reduceMembers(r, *elt, in.dtype == ir::DType::Bool, int64_t(g), in.numel(), stack, dst,
                                          stream),
                       "member reduction");
    };
    switch (s.op) {
      case ir::OpKind::AllReduce: return reduced(out.ptr);
      case ir::OpKind::ReduceScatter: {
        SP_ASSIGN(Along a, along(s, "dim", in.dims));
        SP_TRY(reduced(at(stack, g * nb)));
        return copyBox({out.dims, in.dims, out.dims, a.axis, int64_t(me) * out.dims[size_t(a.axis)], 0, 0}, es,
                       at(stack, g * nb), out.ptr, stream);
      }
      case ir::OpKind::AllGather: {
        SP_ASSIGN(Along a, along(s, "dim", in.dims));
        return unpackGathered(in.dims, out.dims, a.axis, g, nb, es, stack, out.ptr, stream);
      }
      case ir::OpKind::AllToAll: {
        SP_ASSIGN(Along sp, along(s, "split_dim", in.dims));
        SP_ASSIGN(Along cc, along(s, "concat_dim", in.dims));
        Dims chunk = withAxis(in.dims, sp.axis, in.dims[size_t(sp.axis)] / int64_t(g));
        for (size_t i = 0; i < g; ++i)
          SP_TRY(copyBox({chunk, in.dims, out.dims, sp.axis, int64_t(me) * chunk[size_t(sp.axis)], cc.axis,
                          int64_t(i) * chunk[size_t(cc.axis)]},
                         es, at(stack, i * nb), out.ptr, stream));
        return okStatus();
      }
      default: return makeError("not-a-group-collective", std::string(ir::opName(s.op)) + " is not a group collective");
    }
  }();
  // Leave only when every member has read every input.
  Status synced = cudaCheck(cudaStreamSynchronize(stream), "collective");
  Status left = e.local->barrier(abort);
  if (!st) return st;
  if (!synced) return synced;
  return left;
}

Status CommSet::p2p(int64_t rank, const PlanStep& s, const DevTensor& t, cudaStream_t stream, Abort& abort) {
  int64_t peer = ir::attrInt(s.attrs, "peer"), tag = ir::attrInt(s.attrs, "tag");
  const Entry& e = entry(keyOf(rank, s));
  bool send = s.kind == StepKind::Send;
  if (!e.local) {
    ncclComm_t comm = e.nccl.at(rank);
    int p = int(indexIn(e.members, peer));
    return send ? ncclCheck(ncclSend(t.ptr, t.nbytes(), ncclUint8, p, comm, stream), "ncclSend")
                : ncclCheck(ncclRecv(t.ptr, t.nbytes(), ncclUint8, p, comm, stream), "ncclRecv");
  }
  if (send) {
    std::vector<std::byte> bytes(t.nbytes());
    SP_TRY(cudaCheck(cudaMemcpyAsync(bytes.data(), t.ptr, bytes.size(), cudaMemcpyDeviceToHost, stream), "send copy"));
    SP_TRY(cudaCheck(cudaStreamSynchronize(stream), "send"));
    mail_->post(rank, peer, tag, std::move(bytes));
    return okStatus();
  }
  SP_ASSIGN(auto bytes, mail_->take(peer, rank, tag, abort));
  if (bytes.size() != t.nbytes())
    return makeError("collective-type-mismatch", "recv of " + std::to_string(t.nbytes()) + " bytes got " +
                                                     std::to_string(bytes.size()) + " from rank " + std::to_string(peer));
  SP_TRY(cudaCheck(cudaMemcpyAsync(t.ptr, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream), "recv copy"));
  return cudaCheck(cudaStreamSynchronize(stream), "recv");
}

}  // namespace sp::cuda_ref
