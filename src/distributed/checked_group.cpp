// The cross-rank check of collectives (checked_group.h).
#include "distributed/checked_group.h"

#include <array>
#include <atomic>
#include <bit>
#include <sstream>

#include "wick/error.h"
#include "wick/ops.h"

namespace wick::distributed::detail {
namespace {

constexpr int kFields = 16, kMaxDims = 6;
enum Field { kOp, kReduce, kPeer, kDtype, kNdim, kSize0, kListLen = kSize0 + kMaxDims, kListHash, kNumel };
const char* const kOpNames[] = {"?",          "all_reduce",     "broadcast", "reduce",
                                "all_gather", "reduce_scatter", "barrier"};
enum OpCode { kOpAllReduce = 1, kOpBroadcast, kOpReduce, kOpAllGather, kOpReduceScatter, kOpBarrier };

using Fingerprint = std::array<int64_t, kFields>;

Fingerprint fingerprint(OpCode op, const Tensor* t, int reduce = -1, int peer = -1,
                        const std::vector<Tensor>* list = nullptr) {
  Fingerprint f;
  f.fill(-1);
  f[kOp] = op;
  f[kReduce] = reduce;
  f[kPeer] = peer;
  if (t) {
    if (!t->defined()) {
      f[kDtype] = -2;
    } else {
      f[kDtype] = int(t->dtype());
      f[kNdim] = t->dim();
      for (int d = 0; d < t->dim() && d < kMaxDims; ++d) f[kSize0 + d] = t->size(d);
      f[kNumel] = t->numel();
    }
  }
  if (list) {
    f[kListLen] = int64_t(list->size());
    uint64_t h = 1469598103934665603ull;  // FNV-1a over every tensor's dtype and sizes
    auto mix = [&](int64_t v) { h = (h ^ uint64_t(v)) * 1099511628211ull; };
    for (const Tensor& x : *list) {
      mix(x.defined() ? int(x.dtype()) : -2);
      mix(x.defined() ? x.dim() : -1);
      if (x.defined())
        for (int64_t s : x.sizes()) mix(s);
    }
    f[kListHash] = int64_t(h & 0x7fffffffffffffffull);
  }
  return f;
}

std::string describe(const Fingerprint& f) {
  std::ostringstream os;
  int op = f[kOp] >= 1 && f[kOp] <= 6 ? int(f[kOp]) : 0;
  os << kOpNames[op];
  std::vector<std::string> args;
  if (op == kOpBroadcast) args.push_back("src=" + std::to_string(f[kPeer]));
  if (op == kOpReduce) args.push_back("dst=" + std::to_string(f[kPeer]));
  if (f[kReduce] >= 0 && f[kReduce] <= 4)
    args.push_back(std::string("op=") + reduce_op_name(ReduceOp(f[kReduce])));
  if (!args.empty()) {
    os << '(';
    for (size_t i = 0; i < args.size(); ++i) os << (i ? ", " : "") << args[i];
    os << ')';
  }
  if (f[kDtype] == -2) os << " on an undefined tensor";
  if (f[kDtype] >= 0 && f[kDtype] < kNumDtypes) {
    os << " on " << Dtype(f[kDtype]) << '[';
    for (int d = 0; d < f[kNdim]; ++d) {
      if (d == kMaxDims) {
        os << ", ...";
        break;
      }
      os << (d ? ", " : "") << f[kSize0 + d];
    }
    os << ']';
  }
  if (f[kListLen] >= 0) os << " with a list of " << f[kListLen] << " tensors";
  return os.str();
}

class CheckedGroup final : public ProcessGroup {
 public:
  CheckedGroup(std::shared_ptr<ProcessGroup> inner, Device device, CheckMode mode)
      : inner_(std::move(inner)), device_(device), mode_(mode) {}
  std::string backend() const override { return inner_->backend(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::chrono::milliseconds timeout() const override { return inner_->timeout(); }

  Work all_reduce(Tensor& tensor, ReduceOp op) override {
    if (due(kOpAllReduce)) check("all_reduce", fingerprint(kOpAllReduce, &tensor, int(op)));
    return inner_->all_reduce(tensor, op);
  }
  Work broadcast(Tensor& tensor, int src) override {
    if (due(kOpBroadcast)) check("broadcast", fingerprint(kOpBroadcast, &tensor, -1, src));
    return inner_->broadcast(tensor, src);
  }
  Work reduce(Tensor& tensor, int dst, ReduceOp op) override {
    if (due(kOpReduce)) check("reduce", fingerprint(kOpReduce, &tensor, int(op), dst));
    return inner_->reduce(tensor, dst, op);
  }
  Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) override {
    if (due(kOpAllGather)) check("all_gather", fingerprint(kOpAllGather, &input, -1, -1, &outputs), true);
    return inner_->all_gather(outputs, input);
  }
  Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    if (due(kOpReduceScatter))
      check("reduce_scatter", fingerprint(kOpReduceScatter, &output, int(op), -1, &inputs), true);
    return inner_->reduce_scatter(output, inputs, op);
  }
  Work barrier() override {
    if (due(kOpBarrier)) check("barrier", fingerprint(kOpBarrier, nullptr));
    return inner_->barrier();
  }
  Work send(const Tensor& tensor, int dst, int tag) override { return inner_->send(tensor, dst, tag); }
  Work recv(Tensor& tensor, int src, int tag) override { return inner_->recv(tensor, src, tag); }
  // DistributedDataParallel's buckets, whose parameters it compares across ranks at
  // construction: checked only when every call is, and not counted otherwise.
  Work all_reduce_beside_compute(Tensor& tensor, ReduceOp op) override {
    if (mode_ == CheckMode::kEvery && due(kOpAllReduce))
      check("all_reduce", fingerprint(kOpAllReduce, &tensor, int(op)));
    return inner_->all_reduce_beside_compute(tensor, op);
  }
  void prepare_beside_compute() override { inner_->prepare_beside_compute(); }

  CheckMode mode() const { return mode_; }
  const std::shared_ptr<ProcessGroup>& inner() const { return inner_; }

 private:
  // sizes_per_rank: the op's own tensor may differ from rank to rank (all_gather's input,
  // reduce_scatter's output); the list's sizes may not.
  void check(const char* op, const Fingerprint& mine, bool sizes_per_rank = false) {
    int world = size();
    Tensor in = from_fingerprint(mine);
    std::vector<Tensor> all;
    for (int r = 0; r < world; ++r) all.push_back(empty({kFields}, TensorOptions(kInt64).device(device_)));
    try {
      inner_->all_gather(all, in).wait();
    } catch (const DistributedError& e) {
      // The exchange's failure (a timeout, a broken group), named as the call made.
      std::string m = e.what();
      const std::string own = "[all_gather] ";
      if (m.rfind(own, 0) == 0) m.erase(0, own.size());
      ::wick::detail::raise<DistributedError>(op, m);
    }
    std::vector<Fingerprint> fps(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      auto v = all[size_t(r)].cpu().to_vector<int64_t>();
      std::copy(v.begin(), v.end(), fps[size_t(r)].begin());
    }
    auto key = [&](Fingerprint f) {
      if (sizes_per_rank) {
        for (int d = 0; d < kMaxDims; ++d) f[kSize0 + d] = -1;
        f[kNdim] = f[kNumel] = -1;
      }
      return f;
    };
    for (int r = 1; r < world; ++r) {
      if (key(fps[size_t(r)]) == key(fps[0])) continue;
      std::string a = describe(fps[size_t(r)]), b = describe(fps[0]);
      if (a == b) a += " (the sizes in its tensor list differ)";
      ::wick::detail::raise<DistributedError>(op, "rank ", r, " called ", a, ", rank 0 called ", b,
                                              mode_ == CheckMode::kEvery
                                                  ? " (WICK_DISTRIBUTED_DEBUG)"
                                                  : " (the ranks' collectives must match; checked by default, "
                                                    "WICK_DISTRIBUTED_DEBUG=1 checks every call)");
    }
  }

  Tensor from_fingerprint(const Fingerprint& f) {
    Tensor t = empty({kFields}, TensorOptions(kInt64));
    std::copy(f.begin(), f.end(), t.data_ptr<int64_t>());
    return device_.is_cpu() ? t : t.to(device_);
  }

  // Whether this call is checked: it counts the call (see checked_group.h).
  bool due(OpCode op) {
    const uint64_t n = calls_.fetch_add(1, std::memory_order_relaxed) + 1;
    const uint32_t bit = 1u << op;
    const bool first = (seen_.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
    return mode_ == CheckMode::kEvery || first || std::has_single_bit(n);
  }

  std::shared_ptr<ProcessGroup> inner_;
  Device device_;
  CheckMode mode_;
  std::atomic<uint64_t> calls_{0};  // the group's collectives so far
  std::atomic<uint32_t> seen_{0};   // the op kinds called so far, a bit each
};

}  // namespace

std::shared_ptr<ProcessGroup> make_checked_group(std::shared_ptr<ProcessGroup> inner, Device device,
                                                 CheckMode mode) {
  return std::make_shared<CheckedGroup>(std::move(inner), device, mode);
}

std::shared_ptr<ProcessGroup> unchecked(const std::shared_ptr<ProcessGroup>& group, CheckMode* mode) {
  auto* checked = dynamic_cast<CheckedGroup*>(group.get());
  if (!checked) return group;
  if (mode) *mode = checked->mode();
  return checked->inner();
}

}  // namespace wick::distributed::detail
