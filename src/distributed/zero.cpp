// ZeroRedundancyOptimizer: the optimizer state sharded over the ranks (ZeRO stage 1), built on
// the process group's broadcast only (docs/design.md, "Distributed").
#include "wick/distributed/zero.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "wick/autograd.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::distributed::optim {

namespace {

using wick::optim::OptimizerParamGroup;
using wick::optim::ParamState;
using Json = nlohmann::json;
constexpr const char* kOp = "ZeroRedundancyOptimizer";

std::string type_name(const Tensor& t) {
  std::ostringstream s;
  s << t.dtype() << " on " << t.device();
  return s.str();
}

// ValueError unless every parameter of groups (and first, when given) is of first's dtype and
// device, and that device is one the group's backend takes.
void check_params(const std::vector<OptimizerParamGroup>& groups, const Tensor* first, const ProcessGroup& pg,
                  const char* op) {
  for (const auto& g : groups)
    for (const Tensor& p : g.params()) {
      WICK_CHECK(p.defined(), ValueError, op, "optimizer got an undefined parameter");
      if (!first) first = &p;
      WICK_CHECK(p.dtype() == first->dtype() && p.device() == first->device(), ValueError, op,
                 "ZeroRedundancyOptimizer only supports using the same dense type for all parameters, got ",
                 type_name(*first), " and ", type_name(p));
    }
  if (!first) return;
  const bool nccl = pg.backend() == "nccl";
  WICK_CHECK(nccl == first->is_cuda(), DeviceError, op, "the parameters are on ", first->device(), "; the ",
             pg.backend(), " backend takes ", nccl ? "CUDA" : "CPU", " tensors");
}

std::vector<OptimizerParamGroup> params_group(std::vector<Tensor> params) {
  std::vector<OptimizerParamGroup> g;
  g.emplace_back(std::move(params));
  return g;
}

// A uint8 tensor of s's bytes on device, and back.
Tensor bytes_tensor(const std::string& s, Device device) {
  Tensor t = empty({int64_t(s.size())}, kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t.to(device);
}
std::string tensor_bytes(const Tensor& t) {
  Tensor c = t.cpu().contiguous();
  std::string s(size_t(c.numel()), '\0');
  if (!s.empty()) std::memcpy(s.data(), c.data_ptr(), s.size());
  return s;
}

// "state.<i>.<name>" -> i, or -1.
int64_t state_index(const std::string& key) {
  if (!key.starts_with("state.")) return -1;
  const size_t dot = key.find('.', 6);
  if (dot == std::string::npos) return -1;
  const std::string id = key.substr(6, dot - 6);
  if (id.empty() || id.size() >= 19 || id.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(id);
}

}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, OptimizerClass optimizer_class,
                                                 std::shared_ptr<ProcessGroup> group)
    : ZeroRedundancyOptimizer(params.empty() ? std::vector<OptimizerParamGroup>{} : params_group(std::move(params)),
                              std::move(optimizer_class), std::move(group)) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<OptimizerParamGroup> groups,
                                                 OptimizerClass optimizer_class, std::shared_ptr<ProcessGroup> group)
    : Optimizer(std::move(groups), [&] {
        WICK_CHECK(optimizer_class.defaults && optimizer_class.make, ValueError, kOp,
                   "the optimizer class has no defaults or no constructor");
        return optimizer_class.defaults->clone();
      }()),
      group_([&] {
        WICK_CHECK(group || is_initialized(), DistributedError, kOp,
                   "Default process group has not been initialized, please make sure to call init_process_group");
        return group ? std::move(group) : default_group();
      }()),
      class_(std::move(optimizer_class)) {
  size_t n = 0;
  for (const auto& g : groups_) n += g.params().size();
  WICK_CHECK(n > 0, ValueError, kOp, "ZeroRedundancyOptimizer did not receive any parameters");
  check_params(groups_, nullptr, *group_, kOp);
  rank_numel_.assign(size_t(group_->size()), 0);
  for (size_t g = 0; g < groups_.size(); ++g) partition_group(g);
  std::vector<OptimizerParamGroup> local;
  size_t i = 0;
  for (const auto& g : groups_) {
    std::vector<Tensor> mine;
    for (const Tensor& p : g.params())
      if (owner_[i++] == group_->rank()) mine.push_back(p);
    OptimizerParamGroup lg(std::move(mine), g.options().clone());
    lg.initial_lr() = g.initial_lr();
    local.push_back(std::move(lg));
  }
  local_ = class_.make(std::move(local));
}

void ZeroRedundancyOptimizer::partition_group(size_t g) {
  // Largest first (ties in order), each to the rank with the fewest elements so far (the lowest
  // such rank), as PyTorch's greedy partition.
  const auto& params = groups_[g].params();
  std::vector<size_t> order(params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return params[a].numel() > params[b].numel(); });
  const size_t base = owner_.size();
  owner_.resize(base + params.size(), 0);
  for (size_t i : order) {
    size_t r = 0;
    for (size_t k = 1; k < rank_numel_.size(); ++k)
      if (rank_numel_[k] < rank_numel_[r]) r = k;
    owner_[base + i] = int(r);
    rank_numel_[r] += params[i].numel();
  }
}

void ZeroRedundancyOptimizer::sync_local_groups() {
  auto& local = local_->param_groups();
  for (size_t g = 0; g < groups_.size(); ++g) {
    local[g].set_options(groups_[g].options().clone());
    local[g].initial_lr() = groups_[g].initial_lr();
  }
}

void ZeroRedundancyOptimizer::step() {
  sync_local_groups();
  local_->step();
  consolidated_.reset();
  const int world = group_->size(), me = group_->rank();
  if (world == 1) return;
  NoGradGuard no_grad;
  // Each rank's partition as one flat bucket, broadcast from its owner.
  std::vector<Tensor> all;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params()) all.push_back(p);
  for (int r = 0; r < world; ++r) {
    std::vector<Tensor> owned;
    int64_t numel = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (owner_[i] == r) {
        owned.push_back(all[i].detach());
        numel += all[i].numel();
      }
    if (numel == 0) continue;
    Tensor flat;
    if (r == me) {
      std::vector<Tensor> pieces;
      for (const Tensor& p : owned) pieces.push_back(p.reshape({-1}));
      flat = cat(pieces);
    } else {
      flat = empty({numel}, TensorOptions(owned[0].dtype()).device(owned[0].device()));
    }
    broadcast(flat, r, false, group_);
    if (r == me) continue;
    int64_t off = 0;
    for (Tensor& p : owned) {
      p.copy_(flat.narrow(0, off, p.numel()).view(p.sizes()));
      off += p.numel();
    }
  }
}

void ZeroRedundancyOptimizer::add_param_group(const OptimizerParamGroup& group) {
  const Tensor* first = nullptr;
  for (const auto& g : groups_)
    if (!g.params().empty()) first = &g.params()[0];
  check_params({group}, first, *group_, "add_param_group");
  Optimizer::add_param_group(group);
  const size_t g = groups_.size() - 1;
  const size_t base = owner_.size();
  const std::vector<int64_t> numel_before = rank_numel_;
  partition_group(g);
  std::vector<Tensor> mine;
  for (size_t i = 0; i < groups_[g].params().size(); ++i)
    if (owner_[base + i] == group_->rank()) mine.push_back(groups_[g].params()[i]);
  OptimizerParamGroup lg(std::move(mine), groups_[g].options().clone());
  lg.initial_lr() = groups_[g].initial_lr();
  try {
    local_->add_param_group(lg);
  } catch (...) {
    groups_.pop_back();
    owner_.resize(base);
    rank_numel_ = numel_before;
    throw;
  }
  consolidated_.reset();
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  const int world = group_->size(), me = group_->rank();
  WICK_CHECK(to >= 0 && to < world, ValueError, "consolidate_state_dict", "to is ", to, ", the group has ranks 0 to ",
             world - 1);
  sync_local_groups();
  std::vector<Tensor> all;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params()) all.push_back(p);
  const Device device = all[0].device();
  std::map<size_t, ParamState> gathered;  // on rank to
  NoGradGuard no_grad;
  for (int r = 0; r < world; ++r) {
    // The owner's header: per parameter with a state "i step count", then per tensor
    // "name dtype ndim sizes...".
    std::vector<std::pair<size_t, std::string>> order;  // (parameter, tensor name) in broadcast order
    std::vector<Tensor> sends;
    std::string header;
    if (r == me) {
      std::ostringstream h;
      for (size_t i = 0; i < all.size(); ++i) {
        if (owner_[i] != me) continue;
        auto it = local_->state().find(all[i].impl());
        if (it == local_->state().end()) continue;
        const ParamState& st = it->second;
        h << i << ' ' << st.step << ' ' << st.tensors.size() << '\n';
        for (const auto& [name, t] : st.tensors) {
          h << name << ' ' << int(t.dtype()) << ' ' << t.dim();
          for (int64_t d = 0; d < t.dim(); ++d) h << ' ' << t.size(d);
          h << '\n';
          sends.push_back(t.device() == device ? t.contiguous() : t.to(device).contiguous());
        }
      }
      header = h.str();
    }
    Tensor len = full({1}, double(header.size()), TensorOptions(kInt64).device(device));
    broadcast(len, r, false, group_);
    const int64_t n = len.cpu().to_vector<int64_t>()[0];
    Tensor bytes = r == me ? bytes_tensor(header, device) : empty({n}, TensorOptions(kUInt8).device(device));
    if (n > 0) broadcast(bytes, r, false, group_);
    if (r != me) header = tensor_bytes(bytes);
    std::istringstream in(header);
    size_t i = 0, count = 0, k = 0;
    int64_t step = 0;
    while (in >> i >> step >> count) {
      if (me == to) gathered[i].step = step;
      for (size_t c = 0; c < count; ++c) {
        std::string name;
        int dtype = 0;
        int64_t ndim = 0;
        in >> name >> dtype >> ndim;
        std::vector<int64_t> sizes(static_cast<size_t>(ndim));
        for (auto& s : sizes) in >> s;
        Tensor t = r == me ? sends[k] : empty(sizes, TensorOptions(Dtype(dtype)).device(device));
        ++k;
        broadcast(t, r, false, group_);
        if (me == to) gathered[i].tensors[name] = r == me ? t.clone() : t;
      }
    }
  }
  if (me != to) {
    consolidated_.reset();
    return;
  }
  auto whole = class_.make(groups_);
  for (auto& [i, st] : gathered) whole->state(all[i]) = std::move(st);
  consolidated_ = whole->state_dict();
}

Checkpoint ZeroRedundancyOptimizer::state_dict() const {
  WICK_CHECK(consolidated_.has_value(), Error, "state_dict",
             "Optimizer state has not been consolidated on this rank. Please call `consolidate_state_dict(to)` on "
             "all ranks beforehand if you meant to save the global state (and again after every step)");
  return *consolidated_;
}

void ZeroRedundancyOptimizer::load_state_dict(const Checkpoint& state) {
  std::vector<Tensor> all;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params()) all.push_back(p);
  const int me = group_->rank();
  auto mine = [&](int64_t i) { return i >= 0 && size_t(i) < all.size() && owner_[size_t(i)] == me; };
  // This rank's part of the state: the other partitions' entries and tensors left out (the
  // hyperparameters, and any malformed entry, kept for the wrapped class to check).
  Checkpoint part;
  part.metadata = state.metadata;
  auto it = state.metadata.find("state");
  Json entries;
  bool parsed = false;
  if (it != state.metadata.end()) {
    try {
      entries = Json::parse(it->second);
      parsed = entries.is_object();
    } catch (const Json::exception&) {
    }
  }
  std::set<int64_t> others;
  if (parsed) {
    Json kept = Json::object();
    for (const auto& [key, entry] : entries.items()) {
      const int64_t i = state_index("state." + key + ".");
      if (i >= 0 && size_t(i) < all.size() && !mine(i)) {
        others.insert(i);
        continue;
      }
      kept[key] = entry;
    }
    part.metadata["state"] = kept.dump();
  }
  for (const auto& [key, t] : state.tensors) {
    const int64_t i = state_index(key);
    if (parsed && others.count(i)) continue;
    part.tensors.emplace(key, t);
  }
  auto whole = class_.make(groups_);
  whole->load_state_dict(part);
  // The new local optimizer, with the loaded hyperparameters and this partition's state.
  std::vector<OptimizerParamGroup> local;
  size_t i = 0;
  for (const auto& g : whole->param_groups()) {
    std::vector<Tensor> ps;
    for (const Tensor& p : g.params())
      if (owner_[i++] == me) ps.push_back(p);
    OptimizerParamGroup lg(std::move(ps), g.options().clone());
    lg.initial_lr() = g.initial_lr();
    local.push_back(std::move(lg));
  }
  auto next = class_.make(std::move(local));
  for (const Tensor& p : all) {
    auto s = whole->state().find(p.impl());
    if (s != whole->state().end()) next->state(p) = s->second;
  }
  // Nothing below throws.
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].set_options(whole->param_groups()[g].options().clone());
    groups_[g].initial_lr() = whole->param_groups()[g].initial_lr();
  }
  local_ = std::move(next);
  consolidated_.reset();
}

}  // namespace wick::distributed::optim
