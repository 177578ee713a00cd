// Collectives between the GPUs of one process, as torch.cuda.comm: broadcast a tensor to
// several devices, sum tensors of several devices into one, scatter a batch over devices and
// gather the pieces back.
//
//   auto copies = wick::cuda::comm::broadcast(w, {0, 1});        // w itself, then a copy on cuda:1
//   auto sum = wick::cuda::comm::reduce_add({a0, a1}, 0);        // a0 + a1 on cuda:0
//   auto parts = wick::cuda::comm::scatter(x, {0, 1});           // 33 rows: 17 on cuda:0, 16 on cuda:1
//   auto y = wick::cuda::comm::gather(parts, 0, wick::Device("cuda:0"));
//
// With NCCL (wick built with it: nccl_available()) broadcasts and reductions run as NCCL
// collectives over a communicator made once per set of devices and kept; without it they are
// peer copies (and additions on the destination). Every operation is queued on the current
// stream of each device it touches, so it follows work queued there before it, and work on
// other streams must be ordered against those streams (Stream::wait_stream, Event). Results
// carry no autograd history. Errors are DeviceError or ValueError naming the operation
// ("[comm.broadcast] ...") and the devices.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "wick/tensor.h"

namespace wick::cuda::comm {

// PyTorch's default bucket for the coalesced operations: 10 MiB.
inline constexpr int64_t kDefaultBufferSize = 10 * 1024 * 1024;

// Whether wick was built with NCCL (else every operation uses peer copies).
bool nccl_available();

// tensor on each of devices (CUDA indices, distinct): the output for tensor's own device is
// tensor itself, the others new contiguous copies. tensor may be on the CPU.
std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<int>& devices);

// Broadcasts tensors (all on devices[0]) to devices in buckets of about buffer_size bytes
// (one dtype per bucket; a larger tensor is a bucket of its own), all buckets in one group of
// collectives. Returns, per device, the tensors in their order: for devices[0] the inputs
// themselves, elsewhere views into the bucket's buffer on that device.
std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>& tensors,
                                                     const std::vector<int>& devices,
                                                     int64_t buffer_size = kDefaultBufferSize);

// The sum of inputs (same sizes and dtype, each on a different GPU) as a new tensor on
// destination (default: the current device), which must hold one of the inputs.
Tensor reduce_add(const std::vector<Tensor>& inputs, std::optional<int> destination = std::nullopt);

// inputs[d] is a list of tensors on one GPU (the same sizes and dtypes in each list): the
// elementwise sums, on destination, reduced in buckets of about buffer_size bytes.
std::vector<Tensor> reduce_add_coalesced(const std::vector<std::vector<Tensor>>& inputs,
                                         std::optional<int> destination = std::nullopt,
                                         int64_t buffer_size = kDefaultBufferSize);

// Splits tensor along dim and copies piece i to devices[i]. Without chunk_sizes the pieces are
// those of tensor.chunk(devices.size(), dim) (33 rows over 2 devices: 17 and 16; there may be
// fewer pieces than devices, as torch.chunk gives); with them, one size per device, summing to
// tensor.size(dim). A piece already on its device is a view of tensor.
std::vector<Tensor> scatter(const Tensor& tensor, const std::vector<int>& devices,
                            const std::optional<std::vector<int64_t>>& chunk_sizes = std::nullopt,
                            int64_t dim = 0);

// Concatenates tensors (CUDA, equal sizes except along dim) along dim on destination: a CUDA
// device or the CPU; default the current CUDA device.
Tensor gather(const std::vector<Tensor>& tensors, int64_t dim = 0,
              std::optional<Device> destination = std::nullopt);

}  // namespace wick::cuda::comm
