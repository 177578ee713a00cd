// DataParallel: one module run on several GPUs of this process, as torch.nn.DataParallel.
//
//   FooNet net(3, 3);
//   wick::nn::DataParallel dp(net);          // device_ids: every visible GPU; output on device_ids[0]
//   dp->to(wick::Device("cuda:0"));
//   auto y = dp(wick::randn({16, 3}).to(wick::Device("cuda:0")));   // 8 rows per replica on 2 GPUs
//   y.sum().backward();                      // net's parameters get the summed gradients
//
// Each forward scatters the input along dim (pieces as torch.chunk cuts them: 33 rows over 2
// GPUs are 17 and 16; fewer rows than GPUs use fewer GPUs), runs one replica per piece in
// parallel and gathers the outputs on output_device. The replica on device_ids[0] is the
// module itself; the others are built once (Module::replicate) and rebuilt only when the
// module's parameters or buffers change (another tensor registered, a size or dtype changed).
// Each forward broadcasts the module's parameters and buffers into them with one coalesced
// broadcast; their parameters are linked to the module's in the autograd graph
// (BroadcastBackward), so that backward sums every replica's gradient into the module's
// parameters, bucket by bucket as the buckets' gradients are ready. Buffers behave as in
// PyTorch: the replicas get the module's values, and what the replica on device_ids[0] writes
// (BatchNorm's running statistics) is the module's own. An exception in a replica reaches the
// caller as the same wick error type, prefixed "[DataParallel] Caught <type> in replica i on
// device cuda:d:". One thread per further GPU, kept for the life of the DataParallel, runs its
// replica with that GPU and its current stream (the caller's current stream of that GPU)
// current; the caller's thread runs the replica on device_ids[0].
//
// device_ids go through the holder as a std::vector<int> (DataParallel(net, std::vector<int>{0, 1}));
// a braced list alone cannot be forwarded by a holder's constructor.
//
// Supported forward signatures: Tensor forward(const Tensor&) (or taking Tensor by value),
// one tensor in and one tensor out, such as nn::Sequential, nn::Linear or a user's module.
// Outputs of zero dimensions (a per-replica loss) are gathered into a vector, one per replica.
// Without CUDA (or with device_ids empty and no GPU) forward calls the module directly.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wick/nn/module.h"

namespace wick::nn {

class DataParallelImpl : public Module {
 public:
  // module: a holder (FooNet, nn::Sequential, ...) or a std::shared_ptr to a module class with a
  // forward as above. device_ids: CUDA indices (empty: all visible GPUs); output_device: the
  // index the outputs are gathered on (-1: device_ids[0]); dim: the dimension scattered.
  template <class H, class = decltype(std::declval<H>().ptr())>
  explicit DataParallelImpl(const H& module, std::vector<int> device_ids = {}, int output_device = -1,
                            int64_t dim = 0)
      : DataParallelImpl(module.ptr(), forward_of<typename H::ContainedType>(), std::move(device_ids),
                         output_device, dim) {}
  template <class M>
  explicit DataParallelImpl(const std::shared_ptr<M>& module, std::vector<int> device_ids = {},
                            int output_device = -1, int64_t dim = 0)
      : DataParallelImpl(std::shared_ptr<Module>(module), forward_of<M>(), std::move(device_ids),
                         output_device, dim) {}
  ~DataParallelImpl() override;

  Tensor forward(const Tensor& input);

  // The wrapped module (registered as the child "module": state_dict keys "module.fc.weight").
  const std::shared_ptr<Module>& module() const;
  const std::vector<int>& device_ids() const;
  int output_device() const;
  int64_t dim() const;

 private:
  using Forward = std::function<Tensor(Module&, const Tensor&)>;
  template <class M>
  static Forward forward_of() {
    return [](Module& m, const Tensor& x) -> Tensor { return static_cast<M&>(m).forward(x); };
  }
  DataParallelImpl(std::shared_ptr<Module> module, Forward forward, std::vector<int> device_ids,
                   int output_device, int64_t dim);

  struct State;
  std::unique_ptr<State> state_;
};
WICK_MODULE(DataParallel);

}  // namespace wick::nn
