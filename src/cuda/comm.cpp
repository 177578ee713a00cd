// wick::cuda::comm: NCCL collectives over the GPUs of this process, peer copies without NCCL.
//
// Communicators: one ncclComm_t per device of a device list, made with ncclCommInitAll the
// first time that list (in that order) is used and kept for the life of the process. A list
// holds the source or root device first, so that rank 0 is always the root. Every collective
// of one call is issued inside one ncclGroupStart/End on the calling thread, each rank on its
// device's current stream; a mutex keeps two threads from interleaving groups on the same
// communicators. Inputs are detached first, so results carry no autograd history.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#ifdef WICK_HAVE_NCCL
#include <nccl.h>

#include "core/nccl_types.h"
#endif

#include "core/comm_plan.h"
#include "cuda/runtime.h"
#include "wick/cuda_comm.h"
#include "wick/ops.h"

namespace wick::cuda::comm {

namespace {

using wick::detail::raise;

std::string list_str(const std::vector<int>& devices) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < devices.size(); ++i) os << (i ? ", " : "") << "cuda:" << devices[i];
  os << ']';
  return os.str();
}

std::vector<int> devices_of(const std::vector<Tensor>& ts) {
  std::vector<int> out;
  for (const Tensor& t : ts) out.push_back(t.is_cuda() ? t.device().index() : -1);
  return out;
}

void check_devices(const std::vector<int>& devices, const char* op) {
  WICK_CHECK(!devices.empty(), ValueError, op, "expected at least one device");
  std::set<int> seen;
  for (int d : devices) {
    wick::detail::gpu::check_cuda_device(d, op);
    WICK_CHECK(seen.insert(d).second, ValueError, op, "devices must be distinct, got ", list_str(devices));
  }
}

Device cuda_device(int d) { return Device(kCUDA, d); }

// A contiguous one-dimensional view of t (a copy when t is not contiguous).
Tensor flat_view(const Tensor& t) { return t.contiguous().view({t.numel()}); }

// Views of a flat buffer with the sizes of like, in order.
std::vector<Tensor> unflatten(const Tensor& flat, const std::vector<Tensor>& like) {
  std::vector<Tensor> out;
  int64_t off = 0;
  for (const Tensor& t : like) {
    out.push_back(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
  return out;
}

Tensor flatten_all(const std::vector<Tensor>& ts) {
  if (ts.size() == 1) return flat_view(ts[0]);
  std::vector<Tensor> flats;
  flats.reserve(ts.size());
  for (const Tensor& t : ts) flats.push_back(flat_view(t));
  return cat(flats, 0);
}

#ifdef WICK_HAVE_NCCL

std::mutex& nccl_mutex() {
  static std::mutex m;
  return m;
}

void nccl_check(ncclResult_t r, const char* op, const std::vector<int>& devices) {
  if (r != ncclSuccess) [[unlikely]]
    raise<DeviceError>(op, "NCCL error on devices ", list_str(devices), ": ", ncclGetErrorString(r));
}

// The communicators of a device list (rank i on devices[i]); call with nccl_mutex() held.
const std::vector<ncclComm_t>& communicators(const std::vector<int>& devices, const char* op) {
  // Never destroyed: tearing communicators down at exit races the CUDA runtime's own teardown.
  static auto* cache = new std::map<std::vector<int>, std::vector<ncclComm_t>>();
  if (auto it = cache->find(devices); it != cache->end()) return it->second;
  std::vector<ncclComm_t> comms(devices.size());
  for (int d : devices) wick::detail::gpu::mark_device_used(d);
  nccl_check(ncclCommInitAll(comms.data(), int(devices.size()), devices.data()), op, devices);
  return cache->emplace(devices, std::move(comms)).first->second;
}

// srcs[b] (on devices[0], contiguous) into dsts[b][i] (on devices[i], i >= 1), as bytes.
void nccl_broadcast(const std::vector<Tensor>& srcs, const std::vector<std::vector<Tensor>>& dsts,
                    const std::vector<int>& devices, const char* op) {
  std::lock_guard<std::mutex> lock(nccl_mutex());
  const auto& comms = communicators(devices, op);
  nccl_check(ncclGroupStart(), op, devices);
  for (size_t b = 0; b < srcs.size(); ++b) {
    const size_t n = size_t(srcs[b].nbytes());
    if (n == 0) continue;
    for (size_t i = 0; i < devices.size(); ++i) {
      void* buf = i == 0 ? srcs[b].data_ptr() : dsts[b][i].data_ptr();
      ncclResult_t r = ncclBroadcast(buf, buf, n, ncclUint8, 0, comms[i],
                                     wick::detail::gpu::current_cuda_stream(devices[i]));
      if (r != ncclSuccess) {
        (void)ncclGroupEnd();
        nccl_check(r, op, devices);
      }
    }
  }
  nccl_check(ncclGroupEnd(), op, devices);
}

#endif  // WICK_HAVE_NCCL

// Broadcasts each of srcs (one device, CUDA or CPU) to every device of targets (not the
// source's): out[b][i] on targets[i].
std::vector<std::vector<Tensor>> broadcast_many(const std::vector<Tensor>& srcs,
                                                const std::vector<int>& targets, const char* op) {
  std::vector<std::vector<Tensor>> out(srcs.size(), std::vector<Tensor>(targets.size()));
  if (targets.empty()) return out;
#ifdef WICK_HAVE_NCCL
  if (!srcs.empty() && srcs[0].is_cuda()) {
    std::vector<int> devices{srcs[0].device().index()};
    devices.insert(devices.end(), targets.begin(), targets.end());
    std::vector<Tensor> contiguous;
    std::vector<std::vector<Tensor>> dsts(srcs.size(), std::vector<Tensor>(devices.size()));
    for (size_t b = 0; b < srcs.size(); ++b) {
      contiguous.push_back(srcs[b].contiguous());
      for (size_t i = 0; i < targets.size(); ++i) {
        out[b][i] =
            empty(srcs[b].sizes(), TensorOptions().dtype(srcs[b].dtype()).device(cuda_device(targets[i])));
        dsts[b][i + 1] = out[b][i];
      }
    }
    nccl_broadcast(contiguous, dsts, devices, op);
    return out;
  }
#endif
  for (size_t b = 0; b < srcs.size(); ++b)
    for (size_t i = 0; i < targets.size(); ++i) out[b][i] = srcs[b].to(cuda_device(targets[i]), false, true);
  return out;
}

}  // namespace

bool nccl_available() {
#ifdef WICK_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<int>& devices) {
  static const char* op = "comm.broadcast";
  WICK_CHECK(tensor.defined(), ValueError, op, "tensor is undefined");
  check_devices(devices, op);
  const int src = tensor.is_cuda() ? tensor.device().index() : -1;
  std::vector<int> targets;
  for (int d : devices)
    if (d != src) targets.push_back(d);
  auto copies = broadcast_many({tensor.detach()}, targets, op);
  std::vector<Tensor> out;
  size_t k = 0;
  for (int d : devices) out.push_back(d == src ? tensor : copies[0][k++]);
  return out;
}

std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>& tensors,
                                                     const std::vector<int>& devices, int64_t buffer_size) {
  static const char* op = "comm.broadcast_coalesced";
  check_devices(devices, op);
  for (size_t i = 0; i < tensors.size(); ++i) {
    WICK_CHECK(tensors[i].defined(), ValueError, op, "tensor ", i, " is undefined");
    WICK_CHECK(tensors[i].is_cuda() && tensors[i].device().index() == devices[0], DeviceError, op,
               "all tensors must be on devices[0] (cuda:", devices[0], "), but tensor ", i, " is on ",
               tensors[i].device(), " (devices ", list_str(devices), ")");
  }
  std::vector<std::vector<Tensor>> out(devices.size(), std::vector<Tensor>(tensors.size()));
  out[0] = tensors;
  if (devices.size() == 1 || tensors.empty()) return out;
  const auto buckets = wick::detail::bucket_indices(tensors, buffer_size);
  std::vector<Tensor> flats;
  std::vector<std::vector<Tensor>> members;
  for (const auto& b : buckets) {
    std::vector<Tensor> ts;
    for (size_t i : b) ts.push_back(tensors[i].detach());
    flats.push_back(flatten_all(ts));
    members.push_back(std::move(ts));
  }
  const std::vector<int> targets(devices.begin() + 1, devices.end());
  auto copies = broadcast_many(flats, targets, op);
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t k = 0; k < targets.size(); ++k) {
      auto views = unflatten(copies[b][k], members[b]);
      for (size_t j = 0; j < buckets[b].size(); ++j) out[k + 1][buckets[b][j]] = views[j];
    }
  }
  return out;
}

namespace {

// Checks the lists of a reduction and returns the index of the root (the destination's list).
size_t check_reduce(const std::vector<std::vector<Tensor>>& lists, const std::optional<int>& destination,
                    const char* op) {
  WICK_CHECK(!lists.empty(), ValueError, op, "expected at least one input");
  std::vector<int> devices;
  for (size_t i = 0; i < lists.size(); ++i) {
    WICK_CHECK(lists[i].size() == lists[0].size(), ValueError, op, "input ", i, " has ", lists[i].size(),
               " tensors but input 0 has ", lists[0].size());
    int d = -1;
    for (size_t j = 0; j < lists[i].size(); ++j) {
      const Tensor& t = lists[i][j];
      WICK_CHECK(t.defined() && t.is_cuda(), DeviceError, op, "expected CUDA tensors, but input ", i,
                 " holds ", t.defined() ? t.device() : Device(kCPU), " tensors");
      WICK_CHECK(d == -1 || t.device().index() == d, DeviceError, op, "the tensors of input ", i,
                 " must be on one device, found cuda:", d, " and ", t.device());
      d = t.device().index();
      const Tensor& ref = lists[0][j];
      WICK_CHECK(t.sizes().equals(ref.sizes()) && t.dtype() == ref.dtype(), ValueError, op, "input ", i,
                 " tensor ", j, " has sizes ", t.sizes(), " and dtype ", t.dtype(), ", but input 0 has ",
                 ref.sizes(), " and ", ref.dtype());
    }
    devices.push_back(d);
  }
  const int dest = destination ? *destination : current_device();
  wick::detail::gpu::check_cuda_device(dest, op);
  std::set<int> seen;
  for (int d : devices)
    if (d >= 0)
      WICK_CHECK(seen.insert(d).second, ValueError, op, "inputs must be on distinct devices, got ",
                 list_str(devices));
  auto it = std::find(devices.begin(), devices.end(), dest);
  WICK_CHECK(it != devices.end(), DeviceError, op, "reduce_add expects destination cuda:", dest,
             " to be the device of one of the inputs, which are on ", list_str(devices));
  return size_t(it - devices.begin());
}

// flats[i] on the device of input i: their sum on the root's device.
std::vector<Tensor> reduce_flats(const std::vector<std::vector<Tensor>>& flats, size_t root, const char* op) {
  const size_t n_inputs = flats.size(), n_buckets = flats[root].size();
  std::vector<Tensor> out(n_buckets);
#ifdef WICK_HAVE_NCCL
  std::vector<int> devices{flats[root][0].device().index()};
  std::vector<size_t> order{root};
  for (size_t i = 0; i < n_inputs; ++i)
    if (i != root) {
      order.push_back(i);
      devices.push_back(flats[i][0].device().index());
    }
  bool nccl = n_inputs > 1;
  for (size_t b = 0; b < n_buckets && nccl; ++b) nccl = wick::detail::nccl_type(flats[root][b].dtype()).has_value();
  if (nccl) {
    // Every bucket is one reduction of its own dtype, all in one group.
    std::lock_guard<std::mutex> lock(nccl_mutex());
    const auto& comms = communicators(devices, op);
    nccl_check(ncclGroupStart(), op, devices);
    for (size_t b = 0; b < n_buckets; ++b) {
      out[b] = empty_like(flats[root][b], {}, MemoryFormat::Contiguous);
      const size_t n = size_t(out[b].numel());
      if (n == 0) continue;
      const ncclDataType_t type = *wick::detail::nccl_type(out[b].dtype());
      for (size_t r = 0; r < order.size(); ++r) {
        void* recv = r == 0 ? out[b].data_ptr() : nullptr;
        ncclResult_t res = ncclReduce(flats[order[r]][b].data_ptr(), recv, n, type, ncclSum, 0, comms[r],
                                      wick::detail::gpu::current_cuda_stream(devices[r]));
        if (res != ncclSuccess) {
          (void)ncclGroupEnd();
          nccl_check(res, op, devices);
        }
      }
    }
    nccl_check(ncclGroupEnd(), op, devices);
    return out;
  }
#endif
  const Device dest = flats[root][0].device();
  for (size_t b = 0; b < n_buckets; ++b) {
    out[b] = flats[root][b].clone();
    for (size_t i = 0; i < n_inputs; ++i)
      if (i != root) out[b].add_(flats[i][b].to(dest));
  }
  return out;
}

}  // namespace

Tensor reduce_add(const std::vector<Tensor>& inputs, std::optional<int> destination) {
  static const char* op = "comm.reduce_add";
  std::vector<std::vector<Tensor>> lists;
  for (const Tensor& t : inputs) lists.push_back({t});
  const size_t root = check_reduce(lists, destination, op);
  std::vector<std::vector<Tensor>> flats;
  for (const Tensor& t : inputs) flats.push_back({flat_view(t.detach())});
  return reduce_flats(flats, root, op)[0].view(inputs[root].sizes());
}

std::vector<Tensor> reduce_add_coalesced(const std::vector<std::vector<Tensor>>& inputs,
                                         std::optional<int> destination, int64_t buffer_size) {
  static const char* op = "comm.reduce_add_coalesced";
  if (!inputs.empty() && inputs[0].empty()) {
    for (size_t i = 0; i < inputs.size(); ++i)
      WICK_CHECK(inputs[i].empty(), ValueError, op, "input ", i, " has ", inputs[i].size(),
                 " tensors but input 0 has 0");
    return {};
  }
  const size_t root = check_reduce(inputs, destination, op);
  const auto buckets = wick::detail::bucket_indices(inputs[root], buffer_size);
  std::vector<std::vector<Tensor>> flats(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const auto& b : buckets) {
      std::vector<Tensor> ts;
      for (size_t j : b) ts.push_back(inputs[i][j].detach());
      flats[i].push_back(flatten_all(ts));
    }
  }
  auto sums = reduce_flats(flats, root, op);
  std::vector<Tensor> out(inputs[root].size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    std::vector<Tensor> like;
    for (size_t j : buckets[b]) like.push_back(inputs[root][j]);
    auto views = unflatten(sums[b], like);
    for (size_t k = 0; k < buckets[b].size(); ++k) out[buckets[b][k]] = views[k];
  }
  return out;
}

std::vector<Tensor> scatter(const Tensor& tensor, const std::vector<int>& devices,
                            const std::optional<std::vector<int64_t>>& chunk_sizes, int64_t dim) {
  static const char* op = "comm.scatter";
  WICK_CHECK(tensor.defined(), ValueError, op, "tensor is undefined");
  check_devices(devices, op);
  WICK_CHECK(tensor.dim() > 0, ValueError, op, "cannot scatter a zero-dimensional tensor");
  const int64_t d = dim < 0 ? dim + tensor.dim() : dim;
  WICK_CHECK(d >= 0 && d < tensor.dim(), IndexError, op,
             "Dimension out of range (expected to be in range of [", -tensor.dim(), ", ", tensor.dim() - 1,
             "], but got ", dim, ")");
  std::vector<int64_t> sizes;
  if (chunk_sizes) {
    WICK_CHECK(chunk_sizes->size() == devices.size(), ValueError, op,
               "Expected devices and chunk_sizes to be of ",
               "same length, but got len(devices) = ", devices.size(),
               " and len(chunk_sizes) = ", chunk_sizes->size());
    int64_t total = 0;
    for (int64_t s : *chunk_sizes) {
      WICK_CHECK(s >= 0, ValueError, op, "Expected non-negative chunk sizes, got ", s);
      total += s;
    }
    WICK_CHECK(total == tensor.size(d), ValueError, op, "Expected chunk sizes to sum to ", tensor.size(d),
               ", but got ", total, " (devices ", list_str(devices), ")");
    sizes = *chunk_sizes;
  } else {
    sizes = wick::detail::chunk_sizes(tensor.size(d), int64_t(devices.size()));
  }
  std::vector<Tensor> out;
  int64_t off = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor piece = tensor.detach().narrow(d, off, sizes[i]);
    off += sizes[i];
    const Device target = cuda_device(devices[i]);
    out.push_back(piece.device() == target ? piece : piece.to(target));
  }
  return out;
}

Tensor gather(const std::vector<Tensor>& tensors, int64_t dim, std::optional<Device> destination) {
  static const char* op = "comm.gather";
  WICK_CHECK(!tensors.empty(), ValueError, op, "expected at least one tensor to gather from");
  const Tensor& first = tensors[0];
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    WICK_CHECK(t.defined() && t.is_cuda(), DeviceError, op,
               "Expected all input tensors to be CUDA tensors, but ", "tensor at index ", i, " is on ",
               t.defined() ? t.device() : Device(kCPU), " (devices ", list_str(devices_of(tensors)), ")");
    WICK_CHECK(t.dim() == first.dim() && t.dim() > 0, ValueError, op,
               "Expected all input tensors to have the same ",
               "number of dimensions (at least one), but tensor at index ", i, " has ", t.dim(),
               " and tensor 0 has ", first.dim());
    WICK_CHECK(t.dtype() == first.dtype(), TypeError, op,
               "Expected all input tensors to have the same dtype, ", "but tensor at index ", i, " is ",
               t.dtype(), " and tensor 0 is ", first.dtype());
  }
  const int64_t d = dim < 0 ? dim + first.dim() : dim;
  WICK_CHECK(d >= 0 && d < first.dim(), IndexError, op,
             "Dimension out of range (expected to be in range of [", -first.dim(), ", ", first.dim() - 1,
             "], but got ", dim, ")");
  DimVector sizes(first.sizes());
  sizes[size_t(d)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (int64_t k = 0; k < first.dim(); ++k)
      WICK_CHECK(k == d || tensors[i].size(k) == first.size(k), ValueError, op, "Input tensor at index ", i,
                 " has invalid shape ", tensors[i].sizes(), ", but expected ", first.sizes(),
                 " except along dim ", d);
    sizes[size_t(d)] += tensors[i].size(d);
  }
  Device dest = destination ? *destination : Device(kCUDA, current_device());
  if (dest.is_cuda()) {
    if (!dest.has_index()) dest = Device(kCUDA, current_device());
    wick::detail::gpu::check_cuda_device(dest.index(), op);
  }
  Tensor out = empty(IntArrayRef(sizes), TensorOptions().dtype(first.dtype()).device(dest));
  int64_t off = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.size(d);
    if (n > 0) {
      Tensor part = out.narrow(d, off, n);
      if (d == 0) part.copy_(t.detach().contiguous());  // a contiguous slab: one copy
      else part.copy_(t.detach().to(dest));
    }
    off += n;
  }
  return out;
}

}  // namespace wick::cuda::comm
