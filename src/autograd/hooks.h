// What core's op functions include to record a differentiable call. Such an op computes its
// result once and then records its node:
//
//   const bool grad = detail::needs_grad(a, b);
//   Tensor out = detail::forward_once(grad, [&] { return binary(BinaryOp::Mul, {}, a, b, 1); });
//   if (grad) [[unlikely]] autograd::record_binary(BinaryOp::Mul, a, &b, nullptr, 1, out);
//
// needs_grad reads a flag on each TensorImpl, then the thread's grad mode: no allocation, and
// nothing else on the path of tensors that do not require grad. The record hooks (one per op
// family, src/autograd/*_backward.cpp) hold the formulas only: autograd never runs an op's
// forward again.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "wick/autograd.h"
#include "wick/tensor.h"

namespace wick::detail {

struct Conv2dParams;
struct CrossEntropyRowsResult;
struct Pool2dGeometry;
struct CudnnRnnConfig;
struct CudnnRnnForwardResult;
enum class LossReduction : uint8_t;
enum class UnaryOp : uint8_t;
enum class BinaryOp : uint8_t;
enum class PointwiseOp : uint8_t;

template <class... Ts>
inline bool needs_grad(const Ts&... ts) {
  return ((ts.defined() && ts.impl()->requires_grad()) || ...) && GradMode::is_enabled();
}

inline bool needs_grad(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (t.defined() && t.impl()->requires_grad()) return GradMode::is_enabled();
  return false;
}

// Runs an op's computation once. When grad is true the op records one node for itself
// afterwards, so whatever the computation calls inside (a cast, the ops of a composite) runs
// with grad mode off and records nothing; otherwise it runs as it is, at no cost.
template <class F>
inline decltype(auto) forward_once(bool grad, F&& f) {
  if (grad) [[unlikely]] {
    NoGradGuard no_grad;
    return f();
  }
  return f();
}

}  // namespace wick::detail

namespace wick::autograd {

// ---- in-place ops (variable.cpp)
//
// Every in-place op records the same way: its out-of-place form runs on self and records
// its node, then self takes the result's values and history. A node saving a tensor that
// shares self's storage saves a clone of it instead (made before self is overwritten); a
// node saving its result saves self after adoption, so that a later in-place write to self
// fails its backward as in PyTorch. docs/design.md says why this won over one hand-written
// formula per in-place op.

// Throws for an in-place op on a leaf that requires grad, or on a view of one, or on self with
// repeated elements (call before changing self).
void check_inplace(const Tensor& self, const char* op);
// Its leaf half alone, for the in-place view ops, which write no element (an expanded self is fine).
void check_inplace_leaf(const Tensor& self, const char* op);
// Gives self result's values and result's place in the graph (op names a shape mismatch).
Tensor& adopt_result(Tensor& self, const Tensor& result, const char* op);

// The in-place view ops (unsqueeze_, t_, ...): self takes view's geometry (view: the op's
// view of self) and, when view was recorded, view's node as its history.
Tensor& adopt_view(Tensor& self, const Tensor& view);

// Marks self, for the scope's lifetime on this thread, as a tensor an in-place op is being
// recorded for (detail::to_save in function.h clones what shares its storage). Scopes nest.
class InplaceTarget {
 public:
  explicit InplaceTarget(const Tensor& self);
  ~InplaceTarget();
  InplaceTarget(const InplaceTarget&) = delete;
  InplaceTarget& operator=(const InplaceTarget&) = delete;
  // Whether t shares storage with the tensor of this scope or of an enclosing one.
  static bool overlaps_any(const Tensor& t);

 private:
  const Tensor& self_;
  const InplaceTarget* prev_;
};

// self.op_(...) with grad: f is the recorded out-of-place op, f(self) == op(self, ...).
template <class F>
Tensor& inplace(Tensor& self, const char* op, F&& f) {
  check_inplace(self, op);
  Tensor result;
  {
    InplaceTarget target(self);
    result = f(static_cast<const Tensor&>(self));
  }
  return adopt_result(self, result, op);
}

// ---- the elementwise families: each hook records out, the result its op computed (under
// forward_once), with the family's formulas, one switch arm per op (docs/design.md, "Adding an
// op"). Node names are PyTorch's.

// out = a op b, or a op *scalar when b is null (arith_backward.cpp).
void record_binary(wick::detail::BinaryOp op, const Tensor& a, const Tensor* b, const Scalar* scalar,
                   const Scalar& alpha, const Tensor& out);
// out = op(self) with the op's scalars a and b, as UnaryOp's kernel takes them (RPow: self is
// the exponent, a the base); name: the op as called when it is not op_name(op) (clamp_min and
// clamp_max record nodes of their own). unary_backward.cpp.
void record_unary(wick::detail::UnaryOp op, const Tensor& self, const Tensor& out, const Scalar* a = nullptr,
                  const Scalar* b = nullptr, const char* name = nullptr);
// out = op(x, y[, z]) for the tensor forms of pow, remainder and clamp (Clamp: y and z the
// bounds, either undefined). unary_backward.cpp.
void record_pointwise(wick::detail::PointwiseOp op, const Tensor& x, const Tensor& y, const Tensor& z,
                      const Tensor& out);
// out = maximum(a, b) (is_max) or minimum(a, b), broadcast: MaximumBackward0/MinimumBackward0,
// the gradient split in halves where a == b (unary_backward.cpp).
void record_maximum(const Tensor& a, const Tensor& b, const Tensor& out, bool is_max);
// out = where(cond, a, b), a null operand a scalar; out = masked_fill(self, mask, value), a
// null value a scalar (index_backward.cpp).
void record_where(const Tensor& cond, const Tensor* a, const Tensor* b, const Tensor& out);
void record_masked_fill(const Tensor& self, const Tensor& mask, const Tensor* value, const Tensor& out);
// out = index_fill(self, dim, index, value) computed as a masked fill with mask (bool,
// broadcastable to self: true along dim at the filled slices); a null value a scalar
// (IndexFillBackward0, else IndexFillBackward1). out = masked_scatter(self, mask, source)
// with mask broadcast to out's shape (MaskedScatterBackward0). out = round(self, decimals):
// RoundBackward1, zero. index_backward.cpp.
void record_index_fill(const Tensor& self, const Tensor& mask, const Tensor* value, const Tensor& out);
void record_masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, const Tensor& out);
void record_round_decimals(const Tensor& self, const Tensor& out);

// ---- reductions (reduce_backward.cpp)
//
// The ops of the record_ declarations (here and in the sections of linear algebra, softmax,
// indexing, convolution, pooling, losses and views) compute their result once, through
// detail::forward_once, then record their node: record_<op>(inputs..., outputs..., what the
// formula needs), called when detail::needs_grad held, after the op's checks passed.
void record_sum(const Tensor& t, const Tensor& out);
// trace(t) of a matrix t: TraceBackward0, the gradient on the main diagonal.
void record_trace(const Tensor& t, const Tensor& out);
void record_sum(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim);
void record_mean(const Tensor& t, const Tensor& out);
void record_mean(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim);

// ---- linear algebra (linalg_backward.cpp)
void record_mm(const Tensor& a, const Tensor& b, const Tensor& out);
void record_matmul(const Tensor& a, const Tensor& b, const Tensor& out);
void record_bmm(const Tensor& a, const Tensor& b, const Tensor& out);
void record_addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Tensor& out,
                  const Scalar& beta, const Scalar& alpha);
// _addmm_activation: out = activation(pre), pre = beta * input + alpha * (a @ b).
void record_addmm_activation(const Tensor& input, const Tensor& a, const Tensor& b, const Tensor& out,
                             const Tensor& pre, const Scalar& beta, const Scalar& alpha, bool use_gelu);
// GELU's backward at x (unary_backward.cpp): one kernel outside double backward.
Tensor gelu_backward(const Tensor& g, const Tensor& x, bool tanh_form);

// ---- softmax, selections, moments, norms (reduce_ops_backward.cpp)
void record_softmax(const Tensor& t, const Tensor& out, int64_t dim);
// Records LogSoftmaxBackward0 for out = log_softmax(t, dim) already computed; returns out.
Tensor record_log_softmax(const Tensor& t, const Tensor& out, int64_t dim);
// max(t) and min(t) over all elements.
void record_max(const Tensor& t, const Tensor& out);
void record_min(const Tensor& t, const Tensor& out);
// (values, indices) = max(t, dim, keepdim), min(...): the node is values'; indices are saved.
void record_max(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim);
void record_min(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim);
void record_var(const Tensor& t, const Tensor& out, IntArrayRef dims, double correction, bool keepdim);
void record_std(const Tensor& t, const Tensor& out, IntArrayRef dims, double correction, bool keepdim);
// One VarMeanBackward0 node for both results of var_mean.
void record_var_mean(const Tensor& t, const Tensor& var, const Tensor& mean, IntArrayRef dims, double correction,
                     bool keepdim);
// out = amax(t, dims) (is_max) or amin (dims empty: all): AmaxBackward0/AminBackward0, the
// gradient shared equally by the elements equal to the result.
void record_amax(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim, bool is_max);
// out = prod(t) (dim empty: ProdBackward0) or prod(t, *dim, keepdim) (ProdBackward1).
void record_prod(const Tensor& t, const Tensor& out, std::optional<int64_t> dim, bool keepdim);
// out = median(t): MedianBackward0, the gradient shared equally by the elements equal to the
// result (NaN counting as equal to a NaN result); (values, indices) = median(t, dim, keepdim):
// MedianBackward1, the gradient to the returned index.
void record_median(const Tensor& t, const Tensor& out);
void record_median(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim);
// norm(t, p) is norm(t, p, {}, false).
void record_norm(const Tensor& t, const Tensor& out, const Scalar& p, IntArrayRef dims, bool keepdim);

// ---- the fused normalizations (norm_backward.cpp): y = layer_norm(x, ...) over x's last k
// dims (rms: rms_norm, bias undefined), computed by the norm_forward entry, with mean (undefined
// for rms_norm) and rstd its [m] statistics and eps the one it used. Records
// NativeLayerNormBackward0 or FusedRmsNormBackward0: the norm_backward entry, or the formula in
// differentiable ops when the backward itself is recorded.
void record_norm_layer(bool rms, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& y,
                       const Tensor& mean, const Tensor& rstd, int64_t k, double eps);
// add_layer_norm / add_rms_norm's fused path (one node, outputs s = x + delta and y; y alone
// when delta is undefined and s is x, contiguous as the kernel read it).
void record_add_norm(bool rms, const Tensor& x, const Tensor& delta, const Tensor& weight, const Tensor& bias,
                     const Tensor& s, const Tensor& y, const Tensor& mean, const Tensor& rstd, int64_t k, double eps);
// y = batch_norm(x, ...) in training mode by cuDNN (core/cudnn_batch_norm.h), with save_mean and
// save_invstd the float32 [C] statistics it saved. Records CudnnBatchNormBackward0: cuDNN's
// backward, or the formula in differentiable ops when the backward itself is recorded.
void record_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& y,
                       const Tensor& save_mean, const Tensor& save_invstd, double eps);

// ---- shape, scan and reduction ops (shape_ops_backward.cpp)
void record_tril(const Tensor& t, const Tensor& out, int64_t diagonal);
void record_triu(const Tensor& t, const Tensor& out, int64_t diagonal);
// out may have another dtype than t (cumsum's dtype argument): t's gradient is cast back.
void record_cumsum(const Tensor& t, const Tensor& out, int64_t dim);
void record_cumprod(const Tensor& t, const Tensor& out, int64_t dim);
void record_logsumexp(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim);
void record_repeat(const Tensor& t, const Tensor& out, IntArrayRef repeats);
// out = roll(t, shifts, dims) (dims empty: over the flattened t): RollBackward0.
void record_roll(const Tensor& t, const Tensor& out, const std::vector<int64_t>& shifts,
                 const std::vector<int64_t>& dims);
// out = lerp(start, end, weight), weight a tensor or (null) the scalar w.
void record_lerp(const Tensor& start, const Tensor& end, const Tensor* weight, const Scalar& w, const Tensor& out);
void record_baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Tensor& out, const Scalar& beta,
                    const Scalar& alpha);

// ---- indexing and joining (index_backward.cpp)
void record_index_select(const Tensor& t, const Tensor& index, const Tensor& out, int64_t dim);
// out = input[indices] for input of in_sizes (after broadcasting; the engine sums the gradient to
// input's shape), recorded as name (IndexBackward0, MaskedSelectBackward0).
void record_index(const char* name, const Tensor& input, std::vector<indexing::TensorIndex> indices, const Tensor& out,
                  IntArrayRef in_sizes);
// out = self with self[indices] = values (added with accumulate): IndexPutBackward0.
void record_index_put(const Tensor& self, const Tensor& values, std::vector<indexing::TensorIndex> indices,
                      bool accumulate, const Tensor& out);
void record_gather(const Tensor& t, const Tensor& index, const Tensor& out, int64_t dim);
// out = weight's rows at flat_indices (indices.reshape(-1)), [*indices.sizes, dim];
// padding_idx (in [0, rows)) gets no gradient; scale_grad_by_freq divides each lookup's
// gradient by its row's count of lookups.
void record_embedding(const Tensor& weight, const Tensor& flat_indices, const Tensor& out,
                      std::optional<int64_t> padding_idx, bool scale_grad_by_freq = false);
void record_cat(const std::vector<Tensor>& tensors, const Tensor& out, int64_t dim);
void record_stack(const std::vector<Tensor>& tensors, const Tensor& out, int64_t dim);

// ---- sorting and scattering (sort_scatter_backward.cpp): d is the wrapped dim
// (values, indices) = sort(t, dim) or topk(t, ..., dim): name is SortBackward0 or TopkBackward0;
// the node is values'; indices are saved.
void record_sort(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, const char* name);
// out = scatter(self, d, index, *src), or with a scalar value when src is null.
void record_scatter(const Tensor& self, const Tensor& index, const Tensor* src, const Tensor& out, int64_t d);
void record_scatter_add(const Tensor& self, const Tensor& index, const Tensor& src, const Tensor& out, int64_t d);
// out = scatter_reduce(self, d, index, src, reduce, include_self); reduce one of "sum", "prod",
// "mean", "amax", "amin".
void record_scatter_reduce(const Tensor& self, const Tensor& index, const Tensor& src, std::string_view reduce,
                           bool include_self, const Tensor& out, int64_t d);
// out = scatter(self, d, index, src or a value, reduce): a node whose backward raises, as
// PyTorch's has no derivative for it.
void record_scatter_with_reduce(const Tensor& self, const Tensor* src, const Tensor& out);
void record_index_add(const Tensor& self, const Tensor& index, const Tensor& source, const Scalar& alpha,
                      const Tensor& out, int64_t d);
void record_index_copy(const Tensor& self, const Tensor& index, const Tensor& source, const Tensor& out, int64_t d);

// ---- convolution (conv_backward.cpp)
void record_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                   const wick::detail::Conv2dParams& p);
// conv1d's node: conv2d's formulas over the 3-D tensors made [N, C, 1, L].
void record_conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                   const wick::detail::Conv2dParams& p);
void record_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                             const wick::detail::Conv2dParams& p);

// ---- pooling (pool_backward.cpp): MaxPool2DWithIndicesBackward0 saves the forward's window
// offsets, AvgPool2DBackward0 its divisor (core/pool.h)
void record_max_pool2d(const Tensor& x, const Tensor& values, const Tensor& offsets,
                       const wick::detail::Pool2dGeometry& g);
void record_avg_pool2d(const Tensor& x, const Tensor& y, const Tensor& divisor,
                       const wick::detail::Pool2dGeometry& g);

// ---- fused losses (loss_backward.cpp)
// Records nll_loss's node (NllLossBackward0, NllLoss2DBackward0) for (loss, total_weight) =
// nll_loss(input, ...) already computed; returns them, loss now with its history.
std::tuple<Tensor, Tensor> record_nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                           int64_t ignore_index, wick::detail::LossReduction reduction,
                                           const Tensor& loss, const Tensor& total_weight);
// cross_entropy of 16-bit logits through core/loss.h's cross_entropy_rows (its result f): one
// node, NllLossBackward0, whose backward writes the logits' gradient in one kernel (composed of
// recording ops under create_graph), or hands out the gradient the forward wrote (f.grad) in a
// pass that frees the graph; returns f.loss with its history.
Tensor record_cross_entropy_rows(const Tensor& input, const wick::detail::CrossEntropyRowsResult& f,
                                 int64_t ignore_index, wick::detail::LossReduction reduction);
// Records cross_entropy's one-kernel forward of input [N, C] (logp = log_softmax(input, 1), then
// (loss, total_weight) = nll_loss(logp, ...), already computed) as PyTorch records the two ops:
// LogSoftmaxBackward0 under NllLossBackward0; returns loss with its history. Their backward is
// one kernel straight to the logits (core/loss.h's log_softmax_nll_loss_backward) wherever
// nothing can observe the gradient wrt logp, else the two nodes' own kernels.
Tensor record_log_softmax_nll_loss(const Tensor& input, const Tensor& logp, const Tensor& target,
                                  const Tensor& weight, int64_t ignore_index, wick::detail::LossReduction reduction,
                                  const Tensor& loss, const Tensor& total_weight);
void record_mse_loss(const Tensor& input, const Tensor& target, const Tensor& out,
                     wick::detail::LossReduction reduction);
void record_binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                             const Tensor& pos_weight, const Tensor& out,
                                             wick::detail::LossReduction reduction);
// binary_cross_entropy on probabilities (BinaryCrossEntropyBackward0): d/dinput
// weight (input - target) / max(input (1 - input), 1e-12), d/dtarget weight (log(1 - input) -
// log(input)), each log clamped to >= -100, as PyTorch's formulas.
void record_binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, const Tensor& out,
                                 wick::detail::LossReduction reduction);

// ---- views (view_backward.cpp): dims and indices as the op took them
void record_view(const Tensor& t, const Tensor& out);
void record_reshape(const Tensor& t, const Tensor& out);
void record_permute(const Tensor& t, const Tensor& out, IntArrayRef dims);
// name: the in-place form's node (transpose_: TransposeBackward1 ...) when given.
void record_transpose(const Tensor& t, const Tensor& out, int64_t d0, int64_t d1,
                      const char* name = "TransposeBackward0");
void record_t(const Tensor& self, const Tensor& out, const char* name = "TBackward0");
void record_unsqueeze(const Tensor& t, const Tensor& out, const char* name = "UnsqueezeBackward0");
void record_squeeze(const Tensor& t, const Tensor& out, const char* name = "SqueezeBackward0");  // squeeze()
void record_squeeze(const Tensor& t, const Tensor& out, int64_t dim,
                    const char* name = "SqueezeBackward1");  // squeeze(dim)
void record_expand(const Tensor& t, const Tensor& out);
void record_narrow(const Tensor& t, const Tensor& out, int64_t d, int64_t start, int64_t length);
// out = t.unfold(d, size, step), d wrapped (0 for a 0-dim t).
void record_unfold(const Tensor& t, const Tensor& out, int64_t d, int64_t size, int64_t step);
void record_select(const Tensor& t, const Tensor& out, int64_t d, int64_t index);
// out = t.diagonal(offset, d1, d2), d1 != d2 wrapped.
void record_diagonal(const Tensor& t, const Tensor& out, int64_t offset, int64_t d1, int64_t d2);
// outs = the pieces of t along d (split: "SplitBackward0", split with sizes:
// "SplitWithSizesBackward0"), one node for all of them: their gradients concatenated, zeros
// for a piece without one. d wrapped.
void record_split(const Tensor& t, const std::vector<Tensor>& outs, int64_t d, const char* name);
// outs = t.unbind(d), d wrapped: one "UnbindBackward0" node, the gradients stacked.
void record_unbind(const Tensor& t, const std::vector<Tensor>& outs, int64_t d);
void record_slice(const Tensor& t, const Tensor& out, int64_t d, std::optional<int64_t> start,
                  std::optional<int64_t> end, int64_t step);

// ---- attention (attention_backward.cpp)
// out = scaled_dot_product_attention(q, k, v) by the flash path (core/flash_attention.h), with
// lse its rows' log-sum-exp and (seed, offset) its dropout draw:
// ScaledDotProductFlashAttentionBackward0, whose formula is the flash backward kernel (no
// double backward, as in PyTorch).
void record_flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                            double scale, bool causal, double dropout_p, uint64_t seed, uint64_t offset);
// The same by cuDNN's fused attention (core/cudnn_attention.h), stats its rows' log-sum-exp:
// ScaledDotProductCudnnAttentionBackward0, whose formula is cuDNN's backward graph (no double
// backward, as in PyTorch).
void record_cudnn_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& stats, double scale, bool causal);

// ---- recurrent layers (rnn_backward.cpp)
// output, h_n (and c_n) = the layers of cfg on x, hx (cx for LSTM) and the weights in the
// module's order, by cuDNN's RNN API (core/cudnn_rnn.h): CudnnRnnBackward0, one node for every
// output, whose formula is cuDNN's backward data and weights from the saved reserve space (no
// double backward, as in PyTorch). op names errors.
void record_cudnn_rnn(const char* op, const wick::detail::CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx,
                      const Tensor& cx, const std::vector<Tensor>& weights, const wick::detail::CudnnRnnForwardResult& f);

// ---- copies (copy_backward.cpp): out = self.to(...) or self.clone(), or the value
// copy_(src), fill_ or zero_ gives self (recorded under inplace() on the value, then adopted).
enum class CopyOp : uint8_t { To, Clone, Copy, Fill, Zero };
void record_copy(CopyOp op, const Tensor& self, const Tensor& src, const Tensor& out);
// A node whose inputs all get zero gradients, as PyTorch defines them: a draw's parameters
// (normal with tensor mean or std: NormalBackward1/2/3), a piecewise constant op (div with a
// rounding mode: DivBackward2/3). One node of that name over the inputs (all defined).
void record_zero_gradients(const char* name, std::initializer_list<Tensor> inputs, const Tensor& out);

}  // namespace wick::autograd
