// CPU backend of the reference executor (executor.h): rank threads, one per
// stream, over one arena per rank.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "codegen/step_order.h"
#include "cuda_ref/abort.h"
#include "cuda_ref/executor.h"
#include "ir/collectives.h"
#include "ir/interpreter_impl.h"

namespace sp::cuda_ref {

namespace {

using codegen::Plan;
using codegen::PlanStep;
using codegen::StepKind;

constexpr auto kPoll = std::chrono::milliseconds(50);

// One in-memory communicator: a rendezvous of its members, call by call.
class Communicator {
 public:
  explicit Communicator(size_t size) : size_(size), inputs_(size), results_(size) {}

  // Member `i` contributes `in` to this call and gets its result.
  Result<ir::Tensor> call(size_t i, const PlanStep& s, const ir::Tensor& in, Abort& abort) {
    std::unique_lock<std::mutex> lock(mu_);
    // Wait until the previous call has handed out every result.
    while (taken_ > 0 || arrived_ == size_) {
      if (abort.failed) return aborted();
      cv_.wait_for(lock, kPoll);
    }
    if (arrived_ == 0) {
      op_ = s.op;
      attrs_ = s.attrs;
    } else if (s.op != op_) {
      return makeError("collective-mismatch", "members of one communicator call meet at " +
                                                  std::string(ir::opName(op_)) + " and " + std::string(ir::opName(s.op)));
    }
    inputs_[i] = in;
    uint64_t gen = generation_;
    if (++arrived_ == size_) {
      auto out = ir::execCollective(op_, attrs_, inputs_);
      if (!out) {
        abort.fail(out.error());
        cv_.notify_all();
        return out.error();
      }
      results_ = std::move(*out);
      ++generation_;
      cv_.notify_all();
    }
    while (generation_ == gen) {
      if (abort.failed) return aborted();
      cv_.wait_for(lock, kPoll);
    }
    ir::Tensor r = std::move(results_[i]);
    inputs_[i] = ir::Tensor();
    if (++taken_ == size_) {
      taken_ = 0;
      arrived_ = 0;
      cv_.notify_all();
    }
    return r;
  }

 private:
  static Error aborted() { return makeError("aborted", "another rank failed"); }
  size_t size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ir::Tensor> inputs_, results_;
  size_t arrived_ = 0, taken_ = 0;
  uint64_t generation_ = 0;
  ir::OpKind op_{};
  ir::AttrMap attrs_;
};

// The communicators of a run, created on first use.
struct Communicators {
  std::mutex mu;
  std::map<std::vector<int64_t>, Communicator> byMembers;
  Communicator& get(const std::vector<int64_t>& members) {
    std::lock_guard<std::mutex> lock(mu);
    return byMembers.try_emplace(members, members.size()).first->second;
  }
};

// Sends and recvs: FIFO per (src, dst, tag).
class Mailbox {
 public:
  void send(int64_t src, int64_t dst, int64_t tag, ir::Tensor t) {
    std::lock_guard<std::mutex> lock(mu_);
    queues_[{src, dst, tag}].push_back(std::move(t));
    cv_.notify_all();
  }
  Result<ir::Tensor> recv(int64_t src, int64_t dst, int64_t tag, Abort& abort) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = queues_[{src, dst, tag}];
    while (q.empty()) {
      if (abort.failed) return makeError("aborted", "another rank failed");
      cv_.wait_for(lock, kPoll);
    }
    ir::Tensor t = std::move(q.front());
    q.pop_front();
    return t;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<ir::Tensor>> queues_;
};

ir::Tensor deepCopy(const ir::Tensor& t) {
  ir::Tensor out(t.dtype(), t.dims());
  if (t.nbytes() > 0) std::memcpy(out.mutableRaw(), t.raw(), t.nbytes());
  return out;
}

class RankRun {
 public:
  RankRun(const Plan& plan, Abort& abort, Mailbox& mail, Communicators& comms)
      : plan_(plan), order_(plan), abort_(abort), mail_(mail), comms_(comms),
        finished_(size_t(plan.streams)) {
    for (auto& f : finished_) f = 0;
  }

  // Allocates the arena and writes the inputs and params into it.
  Status load(const ir::TensorMap& inputs) {
    size_t bytes = size_t(plan_.arenaBytes);
    arena_ = std::shared_ptr<std::byte[]>(new std::byte[bytes]);
    for (const codegen::PlanBuffer& b : plan_.buffers) {
      SP_ASSIGN(auto d, codegen::concreteDims(b.type, plan_.bindings));
      dims_.push_back(std::move(d));
    }
    for (size_t b = 0; b < plan_.buffers.size(); ++b) {
      if (plan_.buffers[b].kind == codegen::BufferKind::Temp) continue;
      auto it = inputs.find(plan_.buffers[b].name);
      SP_ASSERT(it != inputs.end(), "prepareInputs fills every input and param");
      SP_TRY(store(b, it->second));
    }
    return okStatus();
  }

  void runStream(int stream) {
    for (size_t i = 0; i < plan_.steps.size() && !abort_.failed; ++i) {
      const PlanStep& s = plan_.steps[i];
      if (s.stream != stream) continue;
      auto st = step(i);
      if (!st) {
        if (st.error().id != "aborted") {
          Error e = st.error();
          e.message = "rank " + std::to_string(plan_.rank) + ": " + plan_.stepWhere(i) + " (" +
                      std::string(s.kind == StepKind::Wait ? "wait" : ir::opName(s.op)) + " '" + s.name + "'): " + e.message;
          abort_.fail(std::move(e));
        }
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++finished_[size_t(stream)];
      cv_.notify_all();
    }
  }

  ir::TensorMap outputs() const {
    ir::TensorMap out;
    for (int o : plan_.outputs) out[plan_.buffers[size_t(o)].name] = deepCopy(view(size_t(o)));
    return out;
  }

 private:
  ir::Tensor view(size_t b) const {
    const codegen::PlanBuffer& buf = plan_.buffers[b];
    return ir::Tensor::view(buf.type.dtype, dims_[b], arena_, size_t(plan_.arenaBytes), size_t(buf.offset));
  }

  Status store(size_t b, const ir::Tensor& t) {
    const codegen::PlanBuffer& buf = plan_.buffers[b];
    if (t.dtype() != buf.type.dtype || t.dims() != dims_[b])
      return makeError("exec-type-mismatch", "buffer " + buf.name + " is " +
                                                 ir::TensorType{buf.type.dtype, ir::shapeOf(dims_[b])}.str() +
                                                 " but the value is " + t.type().str());
    if (t.nbytes() > 0) std::memmove(arena_.get() + buf.offset, t.raw(), t.nbytes());
    return okStatus();
  }

  Status step(size_t i) {
    const PlanStep& s = plan_.steps[i];
    if (s.kind == StepKind::Wait) {
      int want = order_.issuedBefore(i, s.waitFor);
      std::unique_lock<std::mutex> lock(mu_);
      while (finished_[size_t(s.waitFor)] < want) {
        if (abort_.failed) return makeError("aborted", "another rank failed");
        cv_.wait_for(lock, kPoll);
      }
      return okStatus();
    }
    std::vector<ir::Tensor> in;
    for (int b : s.inputs) in.push_back(view(size_t(b)));
    if (s.kind == StepKind::Send) {
      mail_.send(plan_.rank, ir::attrInt(s.attrs, "peer"), ir::attrInt(s.attrs, "tag"), deepCopy(in[0]));
      return okStatus();
    }
    if (s.kind == StepKind::Recv) {
      SP_ASSIGN(ir::Tensor t, mail_.recv(ir::attrInt(s.attrs, "peer"), plan_.rank, ir::attrInt(s.attrs, "tag"), abort_));
      return store(size_t(s.outputs[0]), t);
    }
    if (s.kind == StepKind::Collective) {
      auto pos = std::find(s.members.begin(), s.members.end(), plan_.rank);
      SP_ASSERT(pos != s.members.end(), "checkPlans: a rank is a member of its communicators");
      SP_ASSIGN(ir::Tensor t, comms_.get(s.members).call(size_t(pos - s.members.begin()), s, in[0], abort_));
      return store(size_t(s.outputs[0]), t);
    }
    SP_ASSIGN(ir::AttrMap attrs, ir::detail::bindAttrs(s.attrs, plan_.bindings));
    SP_ASSIGN(auto out, ir::detail::runKernel(s.op, attrs, in));
    for (size_t k = 0; k < s.outputs.size(); ++k) SP_TRY(store(size_t(s.outputs[k]), out[k]));
    return okStatus();
  }

  const Plan& plan_;
  codegen::StepOrder order_;
  Abort& abort_;
  Mailbox& mail_;
  Communicators& comms_;
  std::shared_ptr<std::byte[]> arena_;
  std::vector<std::vector<int64_t>> dims_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> finished_;  // per stream, steps finished
};

}  // namespace

Result<ExecResult> runPlansCpu(const std::vector<Plan>& plans, const ir::Program& program,
                               const std::vector<ir::TensorMap>& given, const ExecOptions& opts) {
  SP_ASSERT(int64_t(plans.size()) == program.worldSize(), "one plan per rank");
  if (!given.empty() && given.size() != plans.size())
    return makeError("bad-given", "inputs given for " + std::to_string(given.size()) + " ranks but the plans have " +
                                      std::to_string(plans.size()));
  Abort abort;
  Mailbox mail;
  Communicators comms;
  std::vector<std::unique_ptr<RankRun>> ranks;
  static const ir::TensorMap kNone;
  for (size_t r = 0; r < plans.size(); ++r) {
    ir::RunOptions ro;
    ro.seed = opts.seed;
    ro.symbols = plans[r].bindings;
    // The plan's bindings are fixed: an input that binds a symbol otherwise is an error.
    auto in = ir::prepareInputs(program.rank(int64_t(r)), given.empty() ? kNone : given[r], ro);
    if (!in) return makeError(in.error().id, "rank " + std::to_string(r) + ": " + in.error().message, in.error().location);
    ranks.push_back(std::make_unique<RankRun>(plans[r], abort, mail, comms));
    SP_TRY(ranks.back()->load(*in));
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t r = 0; r < plans.size(); ++r)
    for (int s = 0; s < plans[r].streams; ++s) threads.emplace_back([&, r, s] { ranks[r]->runStream(s); });
  for (auto& t : threads) t.join();
  if (abort.error) return *abort.error;
  ExecResult out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& rr : ranks) out.outputs.push_back(rr->outputs());
  return out;
}

}  // namespace sp::cuda_ref
