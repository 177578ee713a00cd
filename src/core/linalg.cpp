// matmul, mm, bmm, addmm and linear. Core shapes the problem as a batched GEMM on matrices
// that are contiguous in either orientation (a transposed view costs no copy), and the
// backend runs it. With grad, the result is computed once and then recorded (autograd/hooks.h).
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/backend_settings.h"
#include "core/kernel_table.h"
#include "core/linalg.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;
using autocast::Policy::Lower;

namespace {

// A 2-D matrix usable by GEMM without a copy: row-major (stride(1) == 1) or transposed.
// Returns the possibly copied matrix, whether it is transposed, and its leading dimension.
struct GemmOperand {
  Tensor t;
  bool trans;
  int64_t ld;
};

GemmOperand gemm_operand(const Tensor& m) {
  const int64_t r = m.size(0), c = m.size(1);
  if (m.stride(1) == 1 && (m.stride(0) >= std::max<int64_t>(c, 1) || r == 1))
    return {m, false, std::max<int64_t>(std::max<int64_t>(m.stride(0), c), 1)};
  if (m.stride(0) == 1 && (m.stride(1) >= std::max<int64_t>(r, 1) || c == 1))
    return {m, true, std::max<int64_t>(std::max<int64_t>(m.stride(1), r), 1)};
  Tensor cm = m.contiguous();
  return {cm, false, std::max<int64_t>(c, 1)};
}

void check_matmul_args(const Tensor& a, const Tensor& b, const char* op) {
  check_same_device(b, a.device(), op, "mat2");
  WICK_CHECK(a.dtype() == b.dtype(), TypeError, op,
             "expected m1 and m2 to have the same dtype, but got: ", a.dtype(), " != ", b.dtype());
  WICK_CHECK(a.dtype() != kBool, TypeError, op, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
}

}  // namespace

namespace {

// a @ b for matrices; op names the public function in errors.
Tensor mm_impl(const Tensor& a, const Tensor& b, const char* op) {
  WICK_CHECK(a.dim() == 2, ValueError, op, "self must be a matrix");
  WICK_CHECK(b.dim() == 2, ValueError, op, "mat2 must be a matrix");
  WICK_CHECK(a.size(1) == b.size(0), ValueError, op, "mat1 and mat2 shapes cannot be multiplied (", a.size(0),
             "x", a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  Tensor c = empty_for({a.size(0), b.size(1)}, a.options(), op);
  if (a.size(1) == 0) {
    fill_values(c, 0);
    return c;
  }
  GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
  GemmArgs g{oa.t,      ob.t,      c,       1,        a.size(0),
             b.size(1), a.size(1), oa.ld,   ob.ld,    std::max<int64_t>(b.size(1), 1),
             0,         0,         0,       oa.trans, ob.trans,
             1.0,       0.0,       Tensor()};
  kernel<&KernelTable::gemm>(a.device(), "matmul")(g);
  return c;
}

Tensor matmul_impl(const Tensor& a, const Tensor& b);
Tensor addmm_impl(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
                  const Scalar& alpha);

}  // namespace

namespace detail {

Tensor mm_with_sums(const Tensor& a, const Tensor& b, int which, Tensor& sums, const Tensor& out) {
  static const bool enabled = [] {
    const char* v = std::getenv("WICK_GEMM_BIAS_GRAD");
    return !(v && std::string(v) == "0");
  }();
  NoGradGuard no_grad;
  // CUDA's GEMM has the epilogue, for the dtypes below; whether an algorithm takes this problem
  // is the backend's to say (sums_done).
  const Dtype dt = a.dtype();
  const bool fused = enabled && a.is_cuda() && a.dim() == 2 && b.dim() == 2 && b.dtype() == dt &&
                     a.size(1) == b.size(0) && a.size(0) > 0 && b.size(1) > 0 && a.size(1) > 0 &&
                     (dt == kFloat32 || dt == kFloat16 || dt == kBFloat16) && b.device() == a.device();
  const bool into = out.defined() && a.dim() == 2 && b.dim() == 2 && out.dim() == 2 && out.is_contiguous() &&
                    out.size(0) == a.size(0) && out.size(1) == b.size(1) && out.dtype() == dt &&
                    out.device() == a.device();
  auto plain_sums = [&] { return which == 0 ? Tensor() : which == 1 ? a.sum(1) : b.sum(0); };
  if (!fused || (which == 0 && !into)) {
    sums = plain_sums();
    Tensor c = mm(a, b);
    if (!into) return c;
    Tensor dst = out;
    dst.copy_(c);
    return dst;
  }
  const int64_t m = a.size(0), n = b.size(1);
  Tensor c = into ? out : empty_for({m, n}, a.options(), "matmul");
  Tensor s = which == 0 ? Tensor() : empty_for({which == 1 ? m : n}, a.options(), "matmul");
  bool done = false;
  GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
  GemmArgs g{oa.t,     ob.t,     c,        1,        m,   n,   a.size(1), oa.ld, ob.ld, std::max<int64_t>(n, 1), 0,
             0,        0,        oa.trans, ob.trans, 1.0, 0.0, Tensor()};
  g.operand_sums = which;
  g.sums = s;
  g.sums_done = &done;
  kernel<&KernelTable::gemm>(a.device(), "matmul")(g);
  sums = done ? s : plain_sums();
  return c;
}

bool gelu_backward_with_bias(const Tensor& g, const Tensor& x, bool tanh_form, Tensor& grad_input,
                             Tensor& bias_grad) {
  const auto entry = backend(x.device()).gelu_backward_bias;
  // CUDA's kernel behind WICK_NEW_CUDA_KERNELS until it has passed its tests on a GPU.
  if (!entry || (x.is_cuda() && !new_cuda_kernels()) || g.dim() != 2 || !x.is_floating_point() || g.dtype() != x.dtype() || g.device() != x.device() ||
      g.sizes() != x.sizes())
    return false;
  NoGradGuard no_grad;
  Tensor gc = g.contiguous(), xc = x.contiguous();
  Tensor dx = empty(x.sizes(), x.options()), db = empty({x.size(1)}, x.options());
  if (!entry(dx, db, gc, xc, tanh_form)) return false;
  grad_input = dx;
  bias_grad = db;
  return true;
}

}  // namespace detail

Tensor mm(const Tensor& a, const Tensor& b) {
  check_defined(a, "mm", "self");
  check_defined(b, "mm", "b");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        Lower, Lower, "mm", [](const Tensor& x, const Tensor& y) { return mm(x, y); }, a, b);
  check_matmul_args(a, b, "mm");
  const bool grad = needs_grad(a, b);
  Tensor out = forward_once(grad, [&] { return mm_impl(a, b, "mm"); });
  if (grad) [[unlikely]] autograd::record_mm(a, b, out);
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_defined(a, "matmul", "self");
  check_defined(b, "matmul", "b");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        Lower, Lower, "matmul", [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, a, b);
  check_matmul_args(a, b, "matmul");
  const bool grad = needs_grad(a, b);
  Tensor out = forward_once(grad, [&] { return matmul_impl(a, b); });
  if (grad) [[unlikely]] autograd::record_matmul(a, b, out);
  return out;
}

namespace {

// matmul of checked operands: mm_impl for matrices, one strided-batched GEMM beyond.
Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  WICK_CHECK(da > 0 && db > 0, ValueError, "matmul",
             "both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db, "D");
  if (da == 1 && db == 1) {
    WICK_CHECK(a.size(0) == b.size(0), ValueError, "matmul", "inconsistent tensor size, expected tensor [",
               a.size(0), "] and src [", b.size(0), "] to have the same number of elements, but got ",
               a.size(0), " and ", b.size(0), " elements respectively");
    return mm_impl(a.unsqueeze(0), b.unsqueeze(1), "matmul").view(IntArrayRef{});
  }
  if (da == 2 && db == 1) return mm_impl(a, b.unsqueeze(1), "matmul").squeeze(1);
  if (da == 1 && db == 2) return mm_impl(a.unsqueeze(0), b, "matmul").squeeze(0);
  if (da == 2 && db == 2) return mm_impl(a, b, "matmul");
  // A batch of matrices times one matrix, as PyTorch folds it: the batch dims become rows of one
  // GEMM (linear without a bias on [B, T, C]). A batched GEMM of the broadcast matrix would give
  // b's gradient as one matrix per batch item, summed afterwards.
  if (da >= 3 && db == 2) {
    DimVector out_sizes(a.sizes().begin(), a.sizes().end() - 1);
    out_sizes.push_back(b.size(1));
    return mm_impl(a.reshape({-1, a.size(-1)}), b, "matmul").view(out_sizes);
  }

  // Batched: broadcast the batch dims, then one strided-batched GEMM.
  Tensor A = da == 1 ? a.unsqueeze(0) : a;
  Tensor B = db == 1 ? b.unsqueeze(1) : b;
  const int64_t n = A.size(-2), k = A.size(-1), k2 = B.size(-2), m = B.size(-1);
  WICK_CHECK(k == k2, ValueError, "matmul", "mat1 and mat2 shapes cannot be multiplied (", n, "x", k, " and ",
             k2, "x", m, ")");
  IntArrayRef ba(A.sizes().data(), size_t(A.dim() - 2)), bb(B.sizes().data(), size_t(B.dim() - 2));
  DimVector batch = broadcast_shapes(ba, bb, "matmul");
  const int64_t nb = checked_numel(batch, "matmul");
  DimVector ea(batch), eb(batch);
  ea.push_back(n);
  ea.push_back(k);
  eb.push_back(k);
  eb.push_back(m);
  Tensor A3 = A.expand(ea).reshape({nb, n, k});
  Tensor B3 = B.expand(eb).reshape({nb, k, m});
  auto per_matrix = [](const Tensor& t3) {
    // Batch items must be evenly spaced and each matrix usable by GEMM; else copy.
    GemmOperand o = gemm_operand(t3.select(0, 0));
    if (o.t.is_same(t3.select(0, 0)) || o.t.data_ptr() == t3.select(0, 0).data_ptr())
      return std::make_pair(t3, o);
    Tensor c = t3.contiguous();
    return std::make_pair(c, GemmOperand{c, false, std::max<int64_t>(c.size(2), 1)});
  };
  DimVector out_sizes(batch);
  out_sizes.push_back(n);
  out_sizes.push_back(m);
  Tensor C = empty_for({nb, n, m}, a.options(), "matmul");
  if (k == 0) fill_values(C, 0);
  else if (nb * n * m > 0) {
    auto [A3c, oa] = per_matrix(A3);
    auto [B3c, ob] = per_matrix(B3);
    GemmArgs g{A3c,
               B3c,
               C,
               nb,
               n,
               m,
               k,
               oa.ld,
               ob.ld,
               std::max<int64_t>(m, 1),
               A3c.stride(0),
               B3c.stride(0),
               n * m,
               oa.trans,
               ob.trans,
               1.0,
               0.0,
               Tensor()};
    kernel<&KernelTable::gemm>(a.device(), "matmul")(g);
  }
  Tensor out = C.view(out_sizes);
  if (da == 1) out = out.squeeze(-2);
  if (db == 1) out = out.squeeze(-1);
  return out;
}

}  // namespace

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_defined(a, "bmm", "self");
  check_defined(b, "bmm", "b");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        Lower, Lower, "bmm", [](const Tensor& x, const Tensor& y) { return bmm(x, y); }, a, b);
  check_matmul_args(a, b, "bmm");
  WICK_CHECK(a.dim() == 3, ValueError, "bmm", "batch1 must be a 3D tensor");
  WICK_CHECK(b.dim() == 3, ValueError, "bmm", "batch2 must be a 3D tensor");
  WICK_CHECK(a.size(0) == b.size(0), ValueError, "bmm",
             "batch1 and batch2 must have same number of batches, got ", a.size(0), " and ", b.size(0));
  WICK_CHECK(a.size(2) == b.size(1), ValueError, "bmm",
             "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ", a.size(2),
             "] but got: [", b.size(0), ", ", b.size(1), "].");
  // equal batch sizes: matmul's batched GEMM without broadcasting
  const bool grad = needs_grad(a, b);
  Tensor out = forward_once(grad, [&] { return matmul_impl(a, b); });
  if (grad) [[unlikely]] autograd::record_bmm(a, b, out);
  return out;
}

namespace {

void check_addmm_args(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
                      const Scalar& alpha, const char* op) {
  check_matmul_args(a, b, op);
  check_same_device(input, a.device(), op, "self");
  WICK_CHECK(input.dtype() == a.dtype(), TypeError, op, "self and mat2 must have the same dtype, but got ",
             input.dtype(), " and ", a.dtype());
  WICK_CHECK(is_floating_point(a.dtype()) || (!beta.is_floating_point() && !alpha.is_floating_point()),
             ValueError, op, "For integral input tensors, argument beta and alpha must not be floating point numbers.");
  WICK_CHECK(a.dim() == 2, ValueError, op, "mat1 must be a matrix, got ", a.dim(), "-D tensor");
  WICK_CHECK(b.dim() == 2, ValueError, op, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
  WICK_CHECK(a.size(1) == b.size(0), ValueError, op, "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
             a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  const int64_t n = a.size(0), m = b.size(1);
  WICK_CHECK(IntArrayRef(broadcast_shapes(input.sizes(), {n, m}, op)).equals({n, m}), ValueError, op,
             "self of shape ", input.sizes(), " can't be broadcast to the result's [", n, ", ", m, "]");
}

// Whether linear's case (a contiguous bias row, beta 1, a 16-bit or float32 product on a GPU)
// can take the GEMM's bias epilogue.
bool bias_epilogue(const Tensor& input, const Tensor& a, const Tensor& b, double beta) {
  const int64_t n = a.size(0), m = b.size(1);
  return a.is_cuda() && beta == 1 && n > 0 && m > 0 && a.size(1) > 0 && input.numel() == m && input.dim() >= 1 &&
         input.size(-1) == m && input.is_contiguous() &&
         (a.dtype() == kFloat32 || a.dtype() == kFloat16 || a.dtype() == kBFloat16) &&
         reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 == 0;
}

}  // namespace

// beta * input + alpha * (a @ b): input is broadcast into the result, which GEMM accumulates
// into (beta == 0 ignores input, nan and inf included, as BLAS and PyTorch do).
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  check_defined(input, "addmm", "self");
  check_defined(a, "addmm", "a");
  check_defined(b, "addmm", "b");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        Lower, Lower, "addmm",
        [&](const Tensor& i, const Tensor& x, const Tensor& y) { return addmm(i, x, y, beta, alpha); }, input,
        a, b);
  check_addmm_args(input, a, b, beta, alpha, "addmm");
  const bool grad = needs_grad(input, a, b);
  Tensor out = forward_once(grad, [&] { return addmm_impl(input, a, b, beta, alpha); });
  if (grad) [[unlikely]] autograd::record_addmm(input, a, b, out, beta, alpha);
  return out;
}

// activation(addmm(...)). On a GPU, linear's case is one GEMM: cuBLASLt's GELU_AUX_BIAS epilogue
// writes the activation and, for the backward, the value before it (docs/design.md §8, "GEMM");
// elsewhere, or where the library has no such algorithm, addmm then the activation.
// One node either way (AddmmActivationBackward0), which keeps the value before the activation.
Tensor _addmm_activation(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
                         const Scalar& alpha, bool use_gelu) {
  constexpr const char* kOp = "_addmm_activation";
  check_defined(input, kOp, "self");
  check_defined(a, kOp, "mat1");
  check_defined(b, kOp, "mat2");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        Lower, Lower, kOp,
        [&](const Tensor& i, const Tensor& x, const Tensor& y) {
          return _addmm_activation(i, x, y, beta, alpha, use_gelu);
        },
        input, a, b);
  check_addmm_args(input, a, b, beta, alpha, kOp);
  WICK_CHECK(!use_gelu || is_floating_point(a.dtype()), TypeError, kOp,
             "GELU needs a floating-point dtype, got ", a.dtype());
  const bool grad = needs_grad(input, a, b);
  Tensor pre, out;
  wick::detail::as_op(kOp, [&] {
    NoGradGuard no_grad;
    const double be = beta.to<double>(), al = alpha.to<double>();
    if (use_gelu && bias_epilogue(input, a, b, be)) {
      const int64_t n = a.size(0), m = b.size(1);
      Tensor c = empty_for({n, m}, a.options(), kOp), aux = empty_for({n, m}, a.options(), kOp);
      bool done = false;
      GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
      GemmArgs g{oa.t, ob.t, c, 1, n, m, a.size(1), oa.ld, ob.ld, m, 0, 0, 0, oa.trans, ob.trans, al, 0, input};
      g.gelu_aux = aux;
      g.gelu_done = &done;
      kernel<&KernelTable::gemm>(a.device(), "matmul")(g);
      if (done) {
        pre = aux;
        out = c;
        return 0;
      }
    }
    pre = addmm_impl(input, a, b, beta, alpha);
    out = use_gelu ? gelu(pre, "tanh") : relu(pre);
    return 0;
  });
  if (grad) [[unlikely]] autograd::record_addmm_activation(input, a, b, out, pre, beta, alpha, use_gelu);
  return out;
}

namespace {

// beta * input + alpha * (a @ b) of checked operands.
Tensor addmm_impl(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
                  const Scalar& alpha) {
  const int64_t n = a.size(0), m = b.size(1);
  Tensor c = empty_for({n, m}, a.options(), "addmm");
  const double be = beta.to<double>(), al = alpha.to<double>();
  // linear's case on a GPU: a bias row added by the GEMM's epilogue instead of copied into c
  // first (one kernel and one pass over c less per layer).
  if (bias_epilogue(input, a, b, be)) {
    GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
    GemmArgs g{oa.t, ob.t, c, 1, n, m, a.size(1), oa.ld, ob.ld, m, 0, 0, 0, oa.trans, ob.trans, al, 0, input};
    kernel<&KernelTable::gemm>(a.device(), "matmul")(g);
    return c;
  }
  if (be == 0) fill_values(c, 0);
  else copy_values(c, input, false);
  if (n == 0 || m == 0) return c;
  if (a.size(1) == 0) {  // no products: beta * input
    if (be != 1 && be != 0) c.mul_(beta);
    return c;
  }
  GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
  GemmArgs g{oa.t, ob.t, c, 1,        n,        m,  a.size(1), oa.ld,   ob.ld, std::max<int64_t>(m, 1),
             0,    0,    0, oa.trans, ob.trans, al, be,        Tensor()};
  kernel<&KernelTable::gemm>(a.device(), "matmul")(g);
  return c;
}

}  // namespace

// x @ w.T + b, with x of any rank >= 1; 2-D and higher inputs with a bias take one addmm.
namespace {
Tensor linear_impl(const Tensor& x, const Tensor& w, const Tensor& b) {
  check_defined(x, "linear", "input");
  check_defined(w, "linear", "weight");
  WICK_CHECK(w.dim() == 2, ValueError, "linear", "weight must be 2-D, got ", w.dim(), "-D");
  WICK_CHECK(x.dim() >= 1, ValueError, "linear", "input must have at least 1 dimension");
  WICK_CHECK(x.size(-1) == w.size(1), ValueError, "linear", "mat1 and mat2 shapes cannot be multiplied (",
             x.numel() / std::max<int64_t>(x.size(-1), 1), "x", x.size(-1), " and ", w.size(1), "x",
             w.size(0), ")");
  if (b.defined() && x.dim() >= 2) {
    DimVector out_sizes(x.sizes());
    out_sizes.back() = w.size(0);
    Tensor x2 = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
    Tensor y = addmm(b, x2, w.t());
    return x.dim() == 2 ? y : y.view(out_sizes);  // 2-D: grad_fn=<AddmmBackward0>, as PyTorch
  }
  Tensor y = matmul(x, w.t());
  return b.defined() ? add(y, b) : y;
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        Lower, Lower, "linear",
        [](const Tensor& i, const Tensor& m, const Tensor& c) { return linear(i, m, c); }, x, w, b);
  return wick::detail::as_op("linear", [&] { return linear_impl(x, w, b); });
}

Tensor Tensor::matmul(const Tensor& other) const { return wick::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return wick::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return wick::bmm(*this, other); }
Tensor Tensor::addmm(const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) const {
  check_defined(*this, "addmm", "self");
  check_defined(a, "addmm", "a");
  check_defined(b, "addmm", "b");
  return wick::addmm(*this, a, b, beta, alpha);
}

}  // namespace wick
