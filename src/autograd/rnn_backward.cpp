// The recurrent layers' cuDNN node, CudnnRnnBackward0 as PyTorch names it: one node for output,
// h_n and c_n, whose formula is cuDNN's backward data (dx, dhx, dcx) then backward weights (the
// flat weight gradient, mapped back onto each parameter), both reading the reserve space the
// training forward kept. Like PyTorch's, it has no double backward. The parameters' gradients
// are views of the flat gradient, handed over to AccumulateGrad (autograd/meta.h), so that each
// becomes its parameter's grad() without a copy.
#include <cctype>
#include <string>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "autograd/meta.h"
#include "core/cudnn_rnn.h"
#include "wick/ops.h"

namespace wick::autograd {

void record_cudnn_rnn(const char* op, const wick::detail::CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx,
                      const Tensor& cx, const std::vector<Tensor>& weights,
                      const wick::detail::CudnnRnnForwardResult& f) {
  using wick::detail::CudnnRnnMode;
  const bool lstm = cfg.mode == CudnnRnnMode::Lstm;
  const size_t states = lstm ? 3 : 2;  // inputs before the weights: x, hx (, cx)
  std::vector<Tensor> inputs{x, hx};
  if (lstm) inputs.push_back(cx);
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  std::vector<std::vector<int64_t>> sizes;
  sizes.reserve(weights.size());
  for (const Tensor& w : weights) sizes.emplace_back(w.sizes().begin(), w.sizes().end());
  std::string lower(op);
  for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));

  auto formula = [cfg, lstm, states, sizes = std::move(sizes), pieces = f.pieces, seed = f.dropout_seed,
                  lower = std::move(lower)](BackwardContext& c) -> variable_list {
    if (creating_graph()) [[unlikely]]
      wick::detail::raise<NotImplementedError>(lower.c_str(),
                                               "double backward is not implemented for CudnnRnnBackward0 (cuDNN's "
                                               "RNN backward is not differentiable); call backward without "
                                               "create_graph");
    const Tensor x = c.saved(0), hx = c.saved(1), cx = c.saved(2), y = c.saved(3), weight_buf = c.saved(4),
                 reserve = c.saved(5), dropout_state = c.saved(6);
    const Tensor dy = c.grad(0).defined() ? c.grad(0).to(y.dtype()).contiguous() : wick::zeros_like(y);
    const Tensor dhy = c.grad(1).defined() ? c.grad(1).to(y.dtype()).contiguous() : Tensor();
    const Tensor dcy = lstm && c.grad(2).defined() ? c.grad(2).to(y.dtype()).contiguous() : Tensor();
    bool need_weights = false;
    for (size_t i = 0; i < sizes.size(); ++i) need_weights = need_weights || c.needs(states + i);
    wick::detail::CudnnRnnGrads g = wick::detail::cuda_cudnn_rnn_backward(
        cfg, x, hx, cx, y, dy, dhy, dcy, weight_buf, reserve, dropout_state, seed, need_weights);
    variable_list r(states + sizes.size());
    if (c.needs(0)) r[0] = g.dx;
    if (c.needs(1)) r[1] = g.dhx;
    if (lstm && c.needs(2)) r[2] = g.dcx;
    if (need_weights) {
      std::vector<Tensor> gw = wick::detail::cudnn_rnn_weight_grads(g.dweight, pieces, sizes);
      size_t views = 0;  // those returned that are views of dweight (a parameter in one piece)
      for (size_t i = 0; i < gw.size(); ++i) {
        if (!c.needs(states + i)) continue;
        r[states + i] = std::move(gw[i]);
        views += r[states + i].impl()->storage() == g.dweight.impl()->storage();
      }
      hand_over_grad_views(g.dweight, views);
    }
    return r;
  };
  auto node = std::make_shared<FunctionNode<decltype(formula)>>("CudnnRnnBackward0", std::move(formula));
  node->num_outputs_ = lstm ? 3 : 2;
  // what cuDNN read (x, hx, cx contiguous, the inputs themselves when they were), its output y and buffers
  node->saved_.reserve(7);
  node->saved_.emplace_back(detail::to_save(f.x), false);
  node->saved_.emplace_back(detail::to_save(f.hx), false);
  node->saved_.emplace_back(detail::to_save(f.cx), false);
  node->saved_.emplace_back(f.y, true, 0);
  node->saved_.emplace_back(f.weight_buf, false);
  node->saved_.emplace_back(f.reserve, false);
  node->saved_.emplace_back(f.dropout_state, false);
  detail::init_node(*node, inputs);
  set_history(f.y, node, 0);
  set_history(f.hy, node, 1);
  if (lstm) set_history(f.cy, node, 2);
}

}  // namespace wick::autograd
