// The recurrent layers' cuDNN path on the core side (docs/design.md §18, "The cuDNN path"): the
// forward once, its node recorded, the flat weight gradient mapped back onto the parameters, and
// the checks by which the module makes its parameters views of one weight space.
#include "core/cudnn_rnn.h"

#include <algorithm>

#include "autograd/hooks.h"
#include "core/cuda_hooks.h"
#include "core/generator.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

constexpr int64_t kIntMax = 2147483647;

// Whether cuDNN's RNN API may take cfg's layers with these weights in dtype dt on device: a CUDA
// device, a dtype cuDNN's RNNs have, every weight of that dtype and device, sizes within
// cuDNN's int, and a build with cuDNN.
bool cudnn_rnn_takes_weights(const CudnnRnnConfig& cfg, Dtype dt, Device device,
                             std::span<const Tensor> weights) {
  if (!device.is_cuda()) return false;
  if (dt != kFloat32 && dt != kFloat16 && dt != kBFloat16) return false;
  for (const Tensor& w : weights)
    if (!w.defined() || w.dtype() != dt || w.device() != device) return false;
  if (cfg.input_size == 0 || cfg.input_size > kIntMax / 4 || cfg.hidden_size > kIntMax / 4) return false;
  return cuda_cudnn_rnn_built();
}

// Whether cuDNN's RNN API may take the problem: the weights' conditions above for the input's
// dtype and device, states of that dtype and device (the ops path promotes or raises as it
// always has), something to run, and sizes within cuDNN's int.
bool cudnn_rnn_takes(const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx, const Tensor& cx,
                     const std::vector<Tensor>& weights) {
  if (!x.is_cuda()) return false;
  const Dtype dt = x.dtype();
  for (const Tensor* t : {&hx, &cx})
    if (t->defined() && (t->dtype() != dt || t->device() != x.device())) return false;
  if (cfg.batch_sizes.empty() || cfg.batch_sizes[0] == 0) return false;
  if (int64_t(cfg.batch_sizes.size()) > kIntMax || x.numel() > kIntMax) return false;
  return cudnn_rnn_takes_weights(cfg, dt, x.device(), weights);
}

}  // namespace

std::optional<CudnnRnnOutputs> cudnn_rnn(const char* op, const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx,
                                         const Tensor& cx, const std::vector<Tensor>& weights) {
  if (!cudnn_rnn_takes(cfg, x, hx, cx, weights)) return std::nullopt;
  const bool lstm = cfg.mode == CudnnRnnMode::Lstm;
  const bool grad = needs_grad(x, hx, cx) || needs_grad(weights);
  uint64_t seed = 0;
  if (cfg.dropout > 0) {
    cuda_check_not_capturing(x.device(), op, "every replay would draw the same dropout mask again");
    const PhiloxState s = next_offset(x.device(), 1);
    seed = s.seed ^ (s.offset * 0x9E3779B97F4A7C15ull);
  }
  CudnnRnnForwardResult f = forward_once(grad, [&] {
    std::vector<Tensor> w;
    w.reserve(weights.size());
    for (const Tensor& t : weights) w.push_back(t.contiguous());
    // training mode when a backward may come, and whenever dropout acts (cuDNN's inference
    // mode drops nothing; PyTorch too picks the mode by the module's training flag)
    CudnnRnnForwardResult r = cuda_cudnn_rnn_forward(cfg, x.contiguous(), hx.contiguous(),
                                                     lstm ? cx.contiguous() : Tensor(), w, grad || cfg.dropout > 0,
                                                     seed);
    return r;
  });
  if (!f.ran) return std::nullopt;
  if (grad) [[unlikely]]
    autograd::record_cudnn_rnn(op, cfg, x, hx, cx, weights, f);
  return CudnnRnnOutputs{f.y, f.hy, f.cy};
}

std::vector<Tensor> cudnn_rnn_weight_grads(const Tensor& dweight, const std::vector<CudnnRnnWeightPiece>& pieces,
                                           const std::vector<std::vector<int64_t>>& param_sizes) {
  std::vector<Tensor> grads(param_sizes.size());
  // a parameter in one piece is a view of dweight; one in several is gathered
  std::vector<int> count(param_sizes.size(), 0);
  for (const CudnnRnnWeightPiece& p : pieces) ++count[size_t(p.param)];
  for (const CudnnRnnWeightPiece& p : pieces) {
    Tensor& g = grads[size_t(p.param)];
    const std::vector<int64_t>& sizes = param_sizes[size_t(p.param)];
    if (count[size_t(p.param)] == 1) {
      g = dweight.narrow(0, p.flat_offset, p.numel).view(sizes);
      continue;
    }
    if (!g.defined()) g = wick::empty(sizes, dweight.options());
    g.view({-1}).narrow(0, p.param_offset, p.numel).copy_(dweight.narrow(0, p.flat_offset, p.numel));
  }
  return grads;
}

std::optional<CudnnRnnWeightSpace> cudnn_rnn_weight_space(const CudnnRnnConfig& cfg,
                                                          std::span<const Tensor> weights) {
  if (weights.empty() || !weights[0].defined()) return std::nullopt;
  if (!cudnn_rnn_takes_weights(cfg, weights[0].dtype(), weights[0].device(), weights)) return std::nullopt;
  return cuda_cudnn_rnn_weight_space(cfg, weights[0].dtype(), weights[0].device());
}

bool cudnn_rnn_one_piece_each(std::span<const Tensor> weights,
                              const std::vector<CudnnRnnWeightPiece>& pieces) {
  if (pieces.size() != weights.size()) return false;
  std::vector<bool> seen(weights.size(), false);
  for (const CudnnRnnWeightPiece& p : pieces) {
    if (p.param < 0 || size_t(p.param) >= weights.size() || seen[size_t(p.param)]) return false;
    seen[size_t(p.param)] = true;
    if (p.param_offset != 0 || p.numel != weights[size_t(p.param)].numel()) return false;
  }
  return true;
}

bool cudnn_rnn_weights_flat(std::span<const Tensor> weights, int64_t space_numel,
                            const std::vector<CudnnRnnWeightPiece>& pieces) {
  if (weights.empty() || !weights[0].defined() || !cudnn_rnn_one_piece_each(weights, pieces)) return false;
  const StorageImpl* s = weights[0].impl()->storage().get();
  const Dtype dt = weights[0].dtype();
  if (s == nullptr || s->nbytes() != size_t(space_numel) * element_size(dt)) return false;
  for (const CudnnRnnWeightPiece& p : pieces) {
    const Tensor& w = weights[size_t(p.param)];
    if (w.impl()->storage().get() != s || w.dtype() != dt || !w.is_contiguous() ||
        w.storage_offset() != p.flat_offset)
      return false;
  }
  return true;
}

}  // namespace wick::detail
