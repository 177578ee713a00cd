// The seam between core and the backends (docs/design.md, "The backends' seam"). Core
// checks, plans and allocates; a backend only runs kernels, through one table per device type. CPU
// (src/cpu) and CUDA (src/cuda) fill the same table; a CPU-only build links src/no_cuda,
// whose CUDA table throws "built without CUDA".
//
// Ops are grouped into families (unary, binary, reduce, ...), each a single entry taking an
// op code, so that a backend instantiates one generic kernel per family and dtype rather
// than one per op: that keeps CUDA compile time inside its budget.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/tensor_iter.h"
#include "wick/detail/op_list.h"
#include "wick/tensor.h"

namespace wick::detail {

// Reductions over the middle dim of [outer, n, inner] (see reduce).
enum class ReduceOp : uint8_t { Sum, Mean, Max, Min, ArgMax, ArgMin, Var, Std, Norm };
enum class RandomOp : uint8_t { Uniform, Normal, RandInt };
// Inclusive scans along a dim (cumsum, cumprod; see scan).
enum class ScanOp : uint8_t { Sum, Prod };
// What scatter does with each value at its position: write it, or reduce it into the value
// there (scatter_add, scatter_reduce): add (bool: or), multiply (bool: and), max, min (NaN
// propagates, as PyTorch's amax/amin).
enum class ScatterOp : uint8_t { Write, Add, Prod, Max, Min };
// The elementwise families' op codes, one per line of wick/detail/op_list.h (the CUDA and CPU
// kernels name them: the codes keep their names). UnaryOp: ops of one tensor, Pow, RPow,
// Remainder and Clamp taking scalars (see unary); PointwiseOp: ops of two or three tensors
// beyond + - * /, the pieces of the fused losses among them.
#define WICK_X(Name, ...) Name,
enum class UnaryOp : uint8_t { WICK_UNARY_OPS(WICK_X) };
enum class BinaryOp : uint8_t { WICK_BINARY_OPS(WICK_X) };
enum class CompareOp : uint8_t { WICK_COMPARE_OPS(WICK_X) WICK_LOGICAL_OPS(WICK_X) };
enum class BitwiseOp : uint8_t { WICK_BITWISE_OPS(WICK_X) Not };
enum class PointwiseOp : uint8_t { WICK_POINTWISE_OPS(WICK_X) };
#undef WICK_X

// How a loss reduces its per-element values (PyTorch's "none", "mean", "sum").
enum class LossReduction : uint8_t { None, Mean, Sum };

// The op's name as PyTorch spells it in errors ("add", "eq", "clamp_min", ...), from the op
// list (src/core/op_names.cpp): the one table that core and every backend ask.
const char* op_name(BinaryOp op);
const char* op_name(CompareOp op);
const char* op_name(BitwiseOp op);
const char* op_name(UnaryOp op);  // Gelu and GeluTanh are "gelu"; Pow and RPow "pow"
const char* op_name(PointwiseOp op);
const char* op_name(ReduceOp op);

struct GemmArgs {
  // c[b] = alpha * op(a[b]) @ op(b[b]) + beta * c[b], row-major, for b in [0, batch).
  // Each matrix is contiguous in its last dim (lda etc. are row strides in elements);
  // trans_a/trans_b say that a/b are stored transposed (column-major).
  Tensor a, b, c;
  int64_t batch, m, n, k;
  int64_t lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c;  // between batch items, in elements (0 = broadcast)
  bool trans_a, trans_b;
  double alpha = 1, beta = 0;
  // CUDA only, batch 1: a contiguous row of n values added to every row of c after the product
  // (cuBLASLt's bias epilogue); c is not read (beta 0).
  Tensor bias;
  // CUDA only, batch 1, beta 0, no bias: when operand_sums is 1 (2), the contiguous vector sums
  // receives the sums over k of op(a) (of op(b)): m (n) values, a linear layer's bias gradient
  // made by cuBLASLt's bias-gradient epilogue. The backend sets *sums_done when it wrote them;
  // where the library has no such algorithm it leaves sums alone and the caller sums.
  int operand_sums = 0;
  Tensor sums = Tensor();
  bool* sums_done = nullptr;
  // CUDA only, batch 1, with bias: when gelu_aux is defined (c's shape, contiguous), it receives
  // the product plus bias and c its GELU (tanh form), by cuBLASLt's GELU_AUX_BIAS epilogue. The
  // backend sets *gelu_done when it did; where the library has no such algorithm it writes
  // neither and the caller computes them.
  Tensor gelu_aux = Tensor();
  bool* gelu_done = nullptr;
};

// A 2-D convolution's geometry: (h, w) pairs; weight [O, C / groups, kh, kw].
struct Conv2dParams {
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
};

// A 2-D pooling's geometry over x [N, C, H, W]: window (kh, kw), stride (sh, sw), padding
// (ph, pw), dilation (dh, dw), output (oh, ow), and (hp, wp) the padded extents the windows
// reach (left padding plus room on the right for ceil_mode's last windows).
struct Pool2dGeometry {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  int64_t hp, wp;
};

// One multi-tensor optimizer step (KernelTable's sgd_step and adam_step) over lists of
// parameters of one dtype and device: operand lists are parallel (element i of each list belongs
// to parameter i), every tensor contiguous with its parameter's numel. Each element is updated
// in one pass with the same operations, in the same order, as the per-parameter ops of
// src/optim (so float32/float64 results match them); 16-bit floats compute in float and round
// once. Scalars travel by value: no host synchronization.
struct SgdStepArgs {
  // d = (maximize ? -g : g) + weight_decay p; with momentum: buf = d when init_buf (the first
  // step's clone), else buf = momentum buf + (1 - dampening) d; d = nesterov ? d + momentum buf
  // : buf. Then p = p - lr d. bufs is empty when momentum is 0.
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize, init_buf;
};
struct AdamStepArgs {
  // g = maximize ? -g : g; decoupled: p = p (1 - lr wd), else g = g + wd p (when wd != 0);
  // m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g; amsgrad: vmax = max(vmax, v), used for v;
  // p = p - (lr / bias_correction1) m / (sqrt(v) / bias_correction2_sqrt + eps).
  // The bias corrections come from the step count on the host.
  double lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2_sqrt;
  bool decoupled, amsgrad, maximize;
};

struct KernelTable {
  // it.output = value, for any layout (it has no inputs; core builds it, see fill_values).
  void (*fill)(const TensorIter& it, const Scalar& value);
  // it.output = cast(it.input(0)), elementwise; operands on this device, any dtypes.
  void (*copy)(const TensorIter& it);
  // it.output = a op b, or a op scalar when it has one input. Operands share it.dtype(),
  // except the output of comparison ops. alpha scales b for Add and Sub.
  void (*binary)(BinaryOp op, const TensorIter& it, const Scalar* scalar, const Scalar& alpha);
  // The same for n (at most kFlatKernelMax) contiguous elements of dtype, on the calling thread,
  // without a plan: out[i] = a[i] op b[i], or a[i] op scalar when b is null. Core calls it for
  // the small ops whose plan would be build_flat's (tensor_iter.h), on devices whose table has it
  // (the CPU's); values are the binary entry's.
  void (*binary_flat)(BinaryOp op, Dtype dtype, void* out, const void* a, const void* b, const Scalar* scalar,
                      const Scalar& alpha, int64_t n);
  // For contiguous in [outer, n, inner] (core's DimPlan, src/core/dim_plan.h) and contiguous
  // values/indices of outer * inner elements, column o * inner + j reduces in[o, :, j].
  // Sum/Mean write values of in's dtype (core casts integer and bool inputs to int64 first;
  // 16-bit floats and float32 accumulate in float, float64 in double; an empty Mean is nan).
  // Max/Min write values and, when defined, int64 indices (first of equals; NaN wins);
  // ArgMax/ArgMin write indices only; Var/Std (arg = correction) and Norm (arg = p, inf
  // allowed) write values, accumulating 16-bit floats in float and float32 in double. n > 0
  // except for Sum, Mean, Var, Std and Norm with finite p >= 0.
  void (*reduce)(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg);
  void (*gemm)(const GemmArgs& args);
  // Fills contiguous out from the Philox-4x32-10 stream (seed, offset): element i of the draw
  // depends only on (seed, offset, i), on every device.
  void (*random)(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b);

  // it.output = op(it.input(0)), one dtype throughout. Scalars: Pow x**a, RPow a**x,
  // Remainder x mod a (sign of a, as Python), Clamp between a and b (a null bound is absent).
  void (*unary)(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b);
  // it.output = op(inputs), one dtype throughout: Pow/Remainder/ClampMin/ClampMax take
  // (x, y), Clamp takes (x, lo, hi). Integer Remainder throws on a zero divisor before writing.
  void (*pointwise)(PointwiseOp op, const TensorIter& it);
  // it.output (bool) = a op b, or a op scalar when it has one input; inputs share it.dtype().
  // The logical ops are among them: a op b of (a != 0) and (b != 0).
  void (*compare)(CompareOp op, const TensorIter& it, const Scalar* scalar);
  // it.output = a op b, or a op scalar when it has one input (Not: ~a, one input, no scalar);
  // every operand of it.dtype(), bool or an integer (core rejects the rest, and bool shifts).
  void (*bitwise)(BitwiseOp op, const TensorIter& it, const Scalar* scalar);
  // it.output = cond ? a : b for inputs (cond, a, b): cond is bool, a and b share it.dtype().
  void (*where)(const TensorIter& it);
  // out = softmax (or log_softmax) of contiguous in [outer, n, inner] over n; same dtype.
  void (*softmax)(bool log, const Tensor& out, const Tensor& in);
  // The input gradient of softmax (log: of log_softmax) over n, all three contiguous
  // [outer, n, inner] of one dtype, from its result y and incoming gradient g:
  // softmax y * (g - sum_n(g * y)), log_softmax g - exp(y) * sum_n(g), in one kernel.
  void (*softmax_backward)(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result);
  // softmax over the last dim with a causal mask, in one pass: contiguous in and out [rows, n]
  // of one floating dtype, rows a multiple of l (the query length). Row r attends the columns
  // j <= r % l (attention's upper-left causal mask); out is softmax over those and 0 beyond.
  void (*causal_softmax)(const Tensor& out, const Tensor& in, int64_t l);
  // LayerNorm (rms false) and RMSNorm (rms true) over each row of contiguous x [m, n], m > 0
  // and n > 0 (core handles empty tensors), in one pass over x: with mu the row's mean (0 for
  // RMSNorm), var its biased variance (RMSNorm: the mean of x^2) and rstd = 1 / sqrt(var + eps),
  // y = (x - mu) rstd weight + bias, into contiguous y [m, n] of x's dtype. weight and bias are
  // contiguous [n] or undefined (ones, zeros), of x's dtype or float32 with a 16-bit x (bias is
  // undefined for RMSNorm). mean and rstd, contiguous [m] of float32 (float64 for a float64 x),
  // are written when defined (mean never for RMSNorm). 16-bit floats and float32 compute in
  // float, float64 in double; y is rounded once.
  void (*norm_forward)(bool rms, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, double eps);
  // The gradients of norm_forward from dy (contiguous [m, n], x's dtype), x, mean (undefined for
  // RMSNorm) and rstd as the forward wrote them, and weight (or undefined): with xhat = (x - mu)
  // rstd and g = dy weight, dx = rstd (g - mean_n(g) - xhat mean_n(g xhat)) (RMSNorm: without
  // the mean_n(g) term); dweight = sum over rows of dy xhat, dbias = sum over rows of dy, each of
  // its parameter's dtype. Each of dx, dweight, dbias is written only when defined; the row sums
  // are deterministic (partial sums over fixed groups of rows, added in a fixed order).
  void (*norm_backward)(bool rms, const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                        const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);
  // add_layer_norm and add_rms_norm (nn::functional): norm_forward over the rows of s = x + delta
  // and the sum itself, in one pass. x is contiguous float32 [m, n] (m, n > 0); delta contiguous
  // [m, n] of float32 or y's 16-bit dtype, or undefined (then s is x and not written); s, when
  // delta is, contiguous float32 [m, n] = x + float(delta) in float32. y, contiguous [m, n] of
  // float32, float16 or bfloat16, is norm_forward's y of s rounded once to its dtype; weight
  // and bias float32 or undefined; mean and rstd as norm_forward. A backend without it leaves
  // it null: core composes the same values from add, norm_forward and a cast.
  void (*add_norm_forward)(bool rms, const Tensor& s, const Tensor& y, const Tensor& mean, const Tensor& rstd,
                           const Tensor& x, const Tensor& delta, const Tensor& weight, const Tensor& bias,
                           double eps);
  // Its gradients: with d the norm_backward dx of s from gy (contiguous [m, n] of y's dtype),
  // dx = gs + d in float32 (gs contiguous float32 [m, n], or undefined for 0), written when
  // defined; ddelta (delta's dtype) = that sum rounded once, when defined; dweight and dbias
  // (float32) as norm_backward's. s, mean, rstd as add_norm_forward left them (s: x where
  // delta was undefined).
  void (*add_norm_backward)(bool rms, const Tensor& dx, const Tensor& ddelta, const Tensor& dweight,
                            const Tensor& dbias, const Tensor& gy, const Tensor& gs, const Tensor& s,
                            const Tensor& mean, const Tensor& rstd, const Tensor& weight);
  // The backward of a linear layer's GELU (AddmmActivationBackward0): grad_input = grad *
  // gelu'(input) (tanh_form: the tanh approximation's derivative) for contiguous grad, input and
  // grad_input [m, n] of one floating dtype, and bias_grad [n] (that dtype) = the column sums of
  // grad_input as rounded, accumulated in float (double for float64) in an order fixed by the
  // device (runs repeat bit for bit): one pass over the rows instead of the elementwise kernel
  // and a second read of its result for the sums. Returns false, writing nothing, for a
  // problem it does not take (then core computes the two separately); null where a backend has
  // no such kernel (the CPU).
  bool (*gelu_backward_bias)(const Tensor& grad_input, const Tensor& bias_grad, const Tensor& grad,
                             const Tensor& input, bool tanh_form);
  // out[o, i, j] = in[o, 0, j] op ... op in[o, i, j] (reverse: in[o, i, j] op ... op in[o, n-1, j])
  // for contiguous in and out [outer, n, inner] of one dtype (any but bool: core scans bool
  // as int64). 16-bit floats accumulate in float, integers in their own dtype.
  void (*scan)(ScanOp op, const Tensor& out, const Tensor& in, bool reverse);
  // it.output = *(input(0) + index * dim_stride) for inputs (src, index): src is restrided with
  // stride 0 along the gathered dim, index (int32/int64) keeps its dtype; dim_stride is in
  // bytes. Throws IndexError naming op, before writing, if an index is outside [0, size).
  void (*gather)(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op);
  // scatter, scatter_add, index_add, index_copy: out, src and index (int32/int64) share their
  // sizes, with any strides (in elements; out's is 0 along the scattered dim), src of out's
  // dtype. Element i writes src[i] at &out[i] + index[i] * dim_stride, or reduces it into the
  // value there (ScatterOp). Throws IndexError naming op, before writing, if an index is
  // outside [0, size). Repeated indices: the reductions take them all (atomics on CUDA, so
  // the order of a float sum or product is unspecified there); a write keeps one of them.
  void (*scatter)(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size,
                  ScatterOp sop, const char* op);
  // sort, argsort and topk: writes contiguous int64 indices [rows, k] (0 < k <= n), the
  // positions of the first k elements of each row of contiguous in [rows, n] once the row is
  // sorted ascending (descending): NaN above everything, -0.0 equal to 0.0, equal elements in
  // the order of their indices (a stable sort), so every backend gives the same indices.
  void (*sort)(const Tensor& indices, const Tensor& in, int64_t k, bool descending);
  // multinomial with replacement: out int64 [rows, s] from contiguous probs [rows, n] (floating,
  // checked non-negative and finite with positive row sums) and contiguous float64 uniforms
  // [rows, s] in [0, 1). With cdf a row's running sum in double, added in index order, out[r, j]
  // is the first c with cdf[c] > u[r, j] * cdf[n - 1], else the last c of non-zero weight.
  void (*multinomial)(const Tensor& out, const Tensor& probs, const Tensor& uniforms);

  // nll_loss over contiguous input [N, C, S] (S = 1 for [N, C]; log-probabilities, or logits
  // when logits is set: then log_softmax over C is taken on the fly, which is cross_entropy's
  // forward without writing log_softmax) and contiguous int64 target [N, S]; weight is a
  // contiguous [C] of input's dtype or undefined (all ones). Per element: -weight[t] * input[n,
  // t, s], 0 where t == ignore_index. None writes out [N, S]; Mean and Sum write 0-d out and
  // total_weight (the sum of weight[t] over the targets not ignored; Mean divides by it), both
  // of input's dtype. A target outside [0, C) that is not ignore_index: the CPU throws
  // IndexError "Target v is out of bounds." before writing; CUDA does not wait for the device
  // to check (see src/cuda/kernels/loss.cu): the element's loss is NaN and the error is raised
  // by a later call.
  void (*nll_loss_forward)(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                           const Tensor& target, const Tensor& weight, int64_t ignore_index,
                           LossReduction reduction, bool logits);
  // nll_loss's input gradient, written whole into contiguous grad_input [N, C, S]:
  // -weight[t] * g at class t of each element not ignored, 0 elsewhere. g is grad_out [N, S]
  // for None, 0-d otherwise (divided by total_weight for Mean). Bad targets as above (on CUDA
  // their rows are left 0).
  void (*nll_loss_backward)(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                            const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                            LossReduction reduction);
  // cross_entropy's forward from logits that need grad, in one kernel: contiguous input [N, C]
  // (small: the CUDA entry is one thread block; see docs/design.md), target [N] and weight as
  // above. Writes logp [N, C] = log_softmax of input over C (the values the softmax entry
  // writes), then out and total_weight of nll_loss_forward(logp) (bad targets as there).
  // CUDA only (null on the CPU, where cross_entropy takes log_softmax then nll_loss).
  void (*log_softmax_nll_loss_forward)(const Tensor& logp, const Tensor& out, const Tensor& total_weight,
                                       const Tensor& input, const Tensor& target, const Tensor& weight,
                                       int64_t ignore_index, LossReduction reduction);
  // cross_entropy's backward to the logits in one kernel, for the logits whose forward was
  // log_softmax_nll_loss_forward: contiguous grad_input [N, C] = what nll_loss_backward then
  // softmax_backward (log) write, bit for bit. With gt the value nll_loss_backward writes at
  // class t of row n (0 for a row ignored or of a bad target), grad_input[n, k] =
  // ([k == t] ? gt : 0) - exp(logp[n, k]) * gt. logp is contiguous [N, C], grad_out [N] (None;
  // any stride) or 0-d, target contiguous int64 [N], weight contiguous [C] of logp's dtype or
  // undefined. CUDA only (null on the CPU, where cross_entropy never takes this path).
  void (*log_softmax_nll_loss_backward)(const Tensor& grad_input, const Tensor& grad_out, const Tensor& logp,
                                        const Tensor& target, const Tensor& weight, const Tensor& total_weight,
                                        int64_t ignore_index, LossReduction reduction);
  // cross_entropy's rows over contiguous logits [N, C] (any floating dtype) and contiguous
  // int64 target [N], computed in opmath (float for 16-bit x) and written to contiguous
  // opmath-typed lse and nll [N]: lse[n] = log sum_c exp(x[n, c]), nll[n] = lse[n] - x[n, t]
  // (0 where t == ignore_index). One read of the logits, nothing [N, C] written. Bad targets
  // as nll_loss_forward's (CPU: IndexError before writing; CUDA: NaN and the deferred error).
  // With grad_input defined (contiguous [N, C] of x's dtype) the same pass also writes the
  // gradient that cross_entropy_rows_backward would write for coef (opmath-typed [N]): a row
  // is read once from memory for both.
  void (*cross_entropy_rows)(const Tensor& lse, const Tensor& nll, const Tensor& input, const Tensor& target,
                             int64_t ignore_index, const Tensor& grad_input, const Tensor& coef);
  // Their gradient to the logits, written whole into contiguous grad_input [N, C] of x's
  // dtype: coef[n] * scale * (exp(x[n, c] - lse[n]) - [c == t[n]]), 0 on ignored rows; coef,
  // lse opmath-typed [N]. One read of the logits, one write. scale: undefined (1), or a 0-d
  // opmath tensor read where the kernel runs; when it is 1, grad_input is taken to hold the
  // gradient already (the forward wrote it for coef) and nothing is written.
  void (*cross_entropy_rows_backward)(const Tensor& grad_input, const Tensor& coef, const Tensor& scale,
                                      const Tensor& input, const Tensor& lse, const Tensor& target,
                                      int64_t ignore_index);

  // 2-D convolution (cross-correlation), checked by core (src/core/conv.cpp): x [N, C, H, W],
  // w [O, C / groups, kh, kw], b [O] or undefined, one dtype and device, output at least 1x1.
  // Unlike the families above, a convolution entry allocates its results: the generic one
  // (im2col + GEMM, core/conv.h) is built from ops, and a library such as cuDNN picks its own.
  // forward: y = conv(x, w) + b, [N, O, OH, OW].
  Tensor (*conv2d_forward)(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
  // {dx, dw, db} from dy [N, O, OH, OW]: each one defined when needs[i], undefined otherwise.
  std::array<Tensor, 3> (*conv2d_backward)(const Tensor& dy, const Tensor& x, const Tensor& w,
                                           const Conv2dParams& p, std::array<bool, 3> needs);

  // 2-D max pooling, run by core's op (src/core/pool.cpp) on checked arguments: x [N, C, H, W]
  // of a floating dtype and its geometry g. Like convolution's entries these allocate their
  // results; a backend that leaves them null gets core's generic windows implementation
  // (core/pool.h), not an error.
  // forward: {values, offsets}, both [N, C, OH, OW]: each window's max over its elements inside
  // x (the first NaN, else the first maximum, in row-major window order) and the int64 offset
  // i * kw + j of that element in the window.
  std::array<Tensor, 2> (*max_pool2d_forward)(const Tensor& x, const Pool2dGeometry& g);
  // The input gradient, [N, C, H, W] of x_sizes: each dy [N, C, OH, OW] element added at the
  // input position of its window's offset (offsets as the forward wrote them).
  Tensor (*max_pool2d_backward)(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                                const Pool2dGeometry& g);

  // Multi-tensor optimizer steps (see SgdStepArgs, AdamStepArgs): floating dtypes; CUDA runs
  // one launch per table of up to a few dozen tensors (src/cuda/kernels/optim.cu).
  void (*sgd_step)(std::span<const Tensor> params, std::span<const Tensor> grads,
                   std::span<const Tensor> bufs, const SgdStepArgs& args);
  // max_exp_avg_sqs is empty unless args.amsgrad.
  void (*adam_step)(std::span<const Tensor> params, std::span<const Tensor> grads,
                    std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
                    std::span<const Tensor> max_exp_avg_sqs, const AdamStepArgs& args);
  // GradScaler's unscale: every gradient (contiguous, one floating dtype, this device) times
  // inv_scale (a float32 [1] on the device), in place, in one multi-tensor pass that also sets
  // found_inf (a float32 [1] on the device) to 1 when any element is inf or NaN (it is never
  // reset here). Both scalars stay on the device: nothing waits for it.
  void (*unscale_check)(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale);
  // clip_grad_norm_'s foreach path: tensors of one floating dtype (not float64), on this device,
  // each contiguous. Returns a vector on the device (float32), one element a chunk of a tensor,
  // whose sum is the sum of the squares of all their elements (inf_norm false), or whose max is
  // the largest |element| (inf_norm true; NaN where an element is NaN); nothing waits for the
  // device. Null where a norm per tensor is as fast (core takes norm() of each).
  Tensor (*foreach_norm_partials)(std::span<const Tensor> tensors, bool inf_norm);

  // Capabilities, read by core's planning (not kernels).
  // binary takes a float32 operand with a float16/bfloat16 one as it is (IterConfig::keep_dtype:
  // the 16-bit one read in its own dtype and computed in float32, the values a cast first would
  // give), instead of core casting it to float32 first.
  bool binary_mixed_float = false;
};

// The most elements binary_flat is called for: small enough to run on one thread (the CPU
// backend runs ops of up to 32768 elements on one).
inline constexpr int64_t kFlatKernelMax = 4096;

const KernelTable& cpu_kernels();
const KernelTable& cuda_kernels();  // throws "built without CUDA" in a CPU-only build

// The table of device's backend, for the entries a backend may leave null (core composes the
// op then) and the capabilities: backend(d).add_norm_forward != nullptr.
inline const KernelTable& backend(Device device) { return device.is_cpu() ? cpu_kernels() : cuda_kernels(); }

// The one way core reaches a kernel: kernel<&KernelTable::unary>(device, "exp")(...).
// Every family is checked alike: a backend that leaves an entry null makes the call throw
// NotImplementedError "[op] not implemented on cuda" instead of crashing. The form taking a
// table is the same lookup in a given table (device names the device in the message).
template <auto Entry>
auto kernel(const KernelTable& table, Device device, const char* op) {
  auto entry = table.*Entry;
  if (!entry) [[unlikely]] raise<NotImplementedError>(op, "not implemented on ", device.type() == kCPU ? "cpu" : "cuda");
  return entry;
}

template <auto Entry>
auto kernel(Device device, const char* op) {
  return kernel<Entry>(backend(device), device, op);
}

}  // namespace wick::detail
