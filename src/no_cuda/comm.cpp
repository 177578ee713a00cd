// wick::cuda::comm in a build without CUDA: every operation throws DeviceError.
#include "wick/cuda_comm.h"
#include "wick/error.h"

namespace wick::cuda::comm {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  wick::detail::raise<DeviceError>(op, "wick was built without CUDA");
}
}  // namespace

bool nccl_available() { return false; }
std::vector<Tensor> broadcast(const Tensor&, const std::vector<int>&) { no_cuda("comm.broadcast"); }
std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>&, const std::vector<int>&,
                                                     int64_t) {
  no_cuda("comm.broadcast_coalesced");
}
Tensor reduce_add(const std::vector<Tensor>&, std::optional<int>) { no_cuda("comm.reduce_add"); }
std::vector<Tensor> reduce_add_coalesced(const std::vector<std::vector<Tensor>>&, std::optional<int>,
                                         int64_t) {
  no_cuda("comm.reduce_add_coalesced");
}
std::vector<Tensor> scatter(const Tensor&, const std::vector<int>&,
                            const std::optional<std::vector<int64_t>>&, int64_t) {
  no_cuda("comm.scatter");
}
Tensor gather(const std::vector<Tensor>&, int64_t, std::optional<Device>) { no_cuda("comm.gather"); }

}  // namespace wick::cuda::comm
