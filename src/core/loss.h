// The fused losses in core: nll_loss (and cross_entropy's forward from logits), mse_loss and
// binary_cross_entropy_with_logits, each a kernel-table entry or pointwise op with one backward
// node named as PyTorch names it (NllLossBackward0, MseLossBackward0,
// BinaryCrossEntropyWithLogitsBackward0), plus ReLU's one-kernel backward. nn::functional
// checks the arguments that only it sees (reduction strings, label smoothing) and composes
// cross_entropy from log_softmax and nll_loss.
#pragma once

#include <string>

#include "core/kernel_table.h"
#include "wick/tensor.h"

namespace wick::detail {

// "none", "mean", "sum"; anything else is a ValueError naming op.
LossReduction loss_reduction(const std::string& reduction, const char* op);

struct NllResult {
  Tensor loss;
  Tensor total_weight;  // 0-d, the sum of the weights of the targets not ignored (mean and sum only)
};

// nll_loss of input [C] (target 0-d), [N, C] (target [N]) or [N, C, d...] (target [N, d...]):
// checks as PyTorch's, then one kernel; recorded as NllLossBackward0 when input needs grad.
// logits: input holds logits and log_softmax over the class dim is taken inside the kernel
// (cross_entropy's forward when nothing needs grad; never recorded).
NllResult nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                   LossReduction reduction, bool logits = false);

struct LogSoftmaxNllResult {
  Tensor logp;  // log_softmax(input, 1)
  Tensor loss;
  Tensor total_weight;  // as NllResult's
};
// Whether cross_entropy of these logits (grad wanted, no label smoothing) takes
// log_softmax_nll_loss: a CUDA [N, C] floating input with 1 <= C <= 1024 and N * C <= 65536
// (one thread block's work; the reasons in docs/design.md), unless the environment sets
// WICK_CE_FUSED=0 (read once).
bool log_softmax_nll_loss_applies(const Tensor& input);
// log_softmax(input, 1) and nll_loss of it, for input [N, C] and target [N], in one kernel
// (the device's log_softmax_nll_loss_forward): the values of the two ops, with nll_loss's
// checks and errors. No recording: cross_entropy records the two ops' nodes over the results.
LogSoftmaxNllResult log_softmax_nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                         int64_t ignore_index, LossReduction reduction);
// cross_entropy's gradient wrt the logits [N, C] of log_softmax_nll_loss, from the loss's
// gradient grad ([N] for None, 0-d otherwise, logp's dtype), the saved logp and nll_loss's
// saved target, weight and total_weight: nll_loss_backward then log_softmax's backward, bit for
// bit, in one kernel (the device's log_softmax_nll_loss_backward; CUDA only, as the forward).
Tensor log_softmax_nll_loss_backward(const Tensor& grad, const Tensor& logp, const Tensor& target,
                                     const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                                     LossReduction reduction);
// cross_entropy of 16-bit logits [N, C] (target int64 [N], weight [C] or undefined) without a
// float32 copy of them and without log_softmax's [N, C] result: the device's cross_entropy_rows
// entry reads the logits once for each row's log-sum-exp and loss (in float), then [N]-sized
// ops apply the weights and the reduction. The loss is of out_dtype (float32 under autocast, as
// PyTorch's cast-first policy gives; the logits' dtype otherwise). Checks and bad targets as
// nll_loss's. No recording: cross_entropy records one node over the results.
// Whether cross_entropy takes cross_entropy_rows: 16-bit logits [N, C] with class targets [N]
// on their device, no label smoothing, weight undefined or [C] not requiring grad (of the logits'
// dtype, or any floating dtype under_autocast, which casts it), unless log_softmax_nll_loss
// takes them. Everything else,
// every bad argument included, takes the general path, which raises PyTorch's errors.
bool cross_entropy_rows_applies(const Tensor& input, const Tensor& target, const Tensor& weight,
                                double label_smoothing, bool under_autocast);
struct CrossEntropyRowsResult {
  Tensor loss;
  Tensor lse;           // [N], float32: each row's log-sum-exp
  Tensor weights;       // [N], float32: weight[t] of each row, 0 where ignored
  Tensor total_weight;  // 0-d float32: their sum
  Tensor target;        // contiguous target
  // With write_grad: the gradient wrt the logits for a loss gradient of 1, written by the same
  // pass over the logits (contiguous, the logits' dtype), and each row's factor of it, [N]
  // float32 (weights, / total_weight for mean). Undefined otherwise.
  Tensor grad;
  Tensor coef;
};
// write_grad (mean and sum only; a training step's loss, whose backward follows) writes the
// gradient in the forward's pass: the backward then has nothing left to do when the loss's
// gradient is 1 (cross_entropy_rows_backward_into), and reads the logits once more otherwise.
CrossEntropyRowsResult cross_entropy_rows(const Tensor& input, const Tensor& target, const Tensor& weight,
                                          int64_t ignore_index, LossReduction reduction, Dtype out_dtype,
                                          bool write_grad = false);
// Its gradient wrt the logits, in their dtype, from the loss's gradient grad ([N] for None,
// 0-d otherwise): weights * grad (/ total_weight for mean) times softmax minus the target's
// one-hot, in one kernel (the device's cross_entropy_rows_backward).
Tensor cross_entropy_rows_backward(const Tensor& grad, const Tensor& input, const Tensor& lse, const Tensor& target,
                                   const Tensor& weights, const Tensor& total_weight, int64_t ignore_index,
                                   LossReduction reduction);
// The same gradient into the forward's result f.grad (returned): nothing to do where grad (0-d)
// is 1, checked where the kernel runs (no synchronization); otherwise f.grad is overwritten
// with coef * grad * (softmax minus the one-hot), from the logits.
Tensor cross_entropy_rows_backward_into(const Tensor& precomputed, const Tensor& coef, const Tensor& grad,
                                        const Tensor& input, const Tensor& lse, const Tensor& target,
                                        int64_t ignore_index);
// nll_loss's input gradient (input_sizes) from grad, in one kernel.
Tensor nll_loss_backward(const Tensor& grad, IntArrayRef input_sizes, const Tensor& target,
                         const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                         LossReduction reduction);

// (input - target)^2 reduced; input and target of one shape. MseLossBackward0.
Tensor mse_loss(const Tensor& input, const Tensor& target, LossReduction reduction);
// The stable binary cross entropy of logits, weight and pos_weight broadcast against input
// (either may be undefined). BinaryCrossEntropyWithLogitsBackward0.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, LossReduction reduction);

// PyTorch's threshold_backward at 0: grad where result > 0, else 0 (ReLU's backward), one kernel.
Tensor threshold_backward(const Tensor& grad, const Tensor& result);
// out = op(inputs) through the pointwise family (floating dtypes only), broadcast and promoted.
Tensor loss_pointwise(PointwiseOp op, std::initializer_list<Tensor> inputs, const char* name);

}  // namespace wick::detail
