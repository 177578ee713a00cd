// What core's op functions include to hand a differentiable call to autograd. Each such op
// begins with one line:
//
//   if (detail::needs_grad(a, b)) [[unlikely]] return autograd::add(a, b, alpha);
//
// needs_grad reads a flag on each TensorImpl, then the thread's grad mode: no allocation, and
// nothing else on the path of tensors that do not require grad. The autograd:: form runs the
// op again with grad mode off and records its node (src/autograd/*_backward.cpp).
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "wick/autograd.h"
#include "wick/tensor.h"

namespace wick::detail {

struct Conv2dParams;
struct Pool2dGeometry;
enum class LossReduction : uint8_t;

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

// Throws for an in-place op on a leaf that requires grad (call before changing self).
void check_inplace(const Tensor& self, const char* op);
// Gives self result's values and result's place in the graph (op names a shape mismatch).
Tensor& adopt_result(Tensor& self, const Tensor& result, const char* op);

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

// ---- arithmetic (arith_backward.cpp)
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha);
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& sub_(Tensor& self, const Scalar& other, const Scalar& alpha);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, const Scalar& other);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Scalar& other);

// ---- reductions (reduce_backward.cpp)
//
// The ops of the record_ declarations (here and in the sections of linear algebra, softmax,
// indexing, convolution, pooling, losses and views) compute their result once, through
// detail::forward_once, then record their node: record_<op>(inputs..., outputs..., what the
// formula needs), called when detail::needs_grad held, after the op's checks passed.
void record_sum(const Tensor& t, const Tensor& out);
void record_sum(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim);
void record_mean(const Tensor& t, const Tensor& out);
void record_mean(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim);

// ---- linear algebra (linalg_backward.cpp)
void record_mm(const Tensor& a, const Tensor& b, const Tensor& out);
void record_matmul(const Tensor& a, const Tensor& b, const Tensor& out);
void record_bmm(const Tensor& a, const Tensor& b, const Tensor& out);
void record_addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Tensor& out,
                  const Scalar& beta, const Scalar& alpha);

// ---- elementwise math (unary_backward.cpp)
Tensor neg(const Tensor& t);
Tensor abs(const Tensor& t);
Tensor exp(const Tensor& t);
Tensor expm1(const Tensor& t);
Tensor log(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor sin(const Tensor& t);
Tensor cos(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor relu(const Tensor& t);
Tensor gelu(const Tensor& t, std::string_view approximate);
Tensor silu(const Tensor& t);
Tensor pow(const Tensor& t, const Scalar& exponent);
Tensor pow(const Tensor& t, const Tensor& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor remainder(const Tensor& t, const Scalar& other);
Tensor remainder(const Tensor& t, const Tensor& other);
Tensor clamp(const Tensor& t, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
Tensor clamp(const Tensor& t, const std::optional<Tensor>& min, const std::optional<Tensor>& max);
Tensor clamp_min(const Tensor& t, const Scalar& min);
Tensor clamp_min(const Tensor& t, const Tensor& min);
Tensor clamp_max(const Tensor& t, const Scalar& max);
Tensor clamp_max(const Tensor& t, const Tensor& max);

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
// norm(t, p) is norm(t, p, {}, false).
void record_norm(const Tensor& t, const Tensor& out, const Scalar& p, IntArrayRef dims, bool keepdim);

// ---- indexing and joining (index_backward.cpp)
void record_index_select(const Tensor& t, const Tensor& index, const Tensor& out, int64_t dim);
void record_gather(const Tensor& t, const Tensor& index, const Tensor& out, int64_t dim);
// out = weight's rows at flat_indices (indices.reshape(-1)), [*indices.sizes, dim];
// padding_idx (in [0, rows)) gets no gradient.
void record_embedding(const Tensor& weight, const Tensor& flat_indices, const Tensor& out,
                      std::optional<int64_t> padding_idx);
void record_cat(const std::vector<Tensor>& tensors, const Tensor& out, int64_t dim);
void record_stack(const std::vector<Tensor>& tensors, const Tensor& out, int64_t dim);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value);

// ---- convolution (conv_backward.cpp)
void record_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
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

// ---- views (view_backward.cpp): dims and indices as the op took them
void record_view(const Tensor& t, const Tensor& out);
void record_reshape(const Tensor& t, const Tensor& out);
void record_permute(const Tensor& t, const Tensor& out, IntArrayRef dims);
void record_transpose(const Tensor& t, const Tensor& out, int64_t d0, int64_t d1);
void record_t(const Tensor& self, const Tensor& out);
void record_unsqueeze(const Tensor& t, const Tensor& out);
void record_squeeze(const Tensor& t, const Tensor& out);               // squeeze()
void record_squeeze(const Tensor& t, const Tensor& out, int64_t dim);  // squeeze(dim)
void record_expand(const Tensor& t, const Tensor& out);
void record_narrow(const Tensor& t, const Tensor& out, int64_t d, int64_t start, int64_t length);
void record_select(const Tensor& t, const Tensor& out, int64_t d, int64_t index);
void record_slice(const Tensor& t, const Tensor& out, int64_t d, std::optional<int64_t> start,
                  std::optional<int64_t> end, int64_t step);

// ---- copies (copy_backward.cpp)
Tensor to(const Tensor& t, Device device, Dtype dtype, bool non_blocking, bool copy,
          std::optional<MemoryFormat> memory_format);
Tensor clone(const Tensor& t, std::optional<MemoryFormat> memory_format);
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking);
Tensor& fill_(Tensor& self, const Scalar& value);
Tensor& zero_(Tensor& self);

}  // namespace wick::autograd
