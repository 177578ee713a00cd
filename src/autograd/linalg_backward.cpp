// Backward formulas of mm and matmul: d(a @ b) = g @ b^T for a and a^T @ g for b; matmul's
// broadcast batch dims are summed away and 1-D operands get their dim back. Core's ops record
// these after their forward (hooks.h).
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/linalg.h"
#include "core/loss.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

Tensor if_needed(bool r, const Tensor& t) { return r ? t : Tensor(); }
Tensor mT(const Tensor& t) { return t.transpose(-1, -2); }

// PyTorch's node for matmul of these ranks (it lowers matmul to dot, mv, mm or a batched form).
const char* matmul_name(int64_t da, int64_t db) {
  if (da == 1 && db == 1) return "DotBackward0";
  if (da == 2 && db == 1) return "MvBackward0";
  if (da == 2 && db == 2) return "MmBackward0";
  if (da == 1 && db == 2) return "SqueezeBackward4";
  return "UnsafeViewBackward0";
}

// Whether a 2-D operand is the transpose of a contiguous matrix (w.t() of a weight).
bool column_major(const Tensor& t) {
  return t.dim() == 2 && t.stride(0) == 1 && t.stride(1) == std::max<int64_t>(t.size(0), 1) && t.size(1) > 1;
}

// The gradients of a @ b laid out as their operands are, as PyTorch's mm_mat1_backward and
// mm_mat2_backward do: for b = w.t() (linear's weight), b's gradient is computed as
// (g^T @ a)^T, so that after the transpose's backward the weight's gradient is contiguous and
// everything after it (a cast back to float32 under autocast, the accumulation into .grad)
// reads it in order instead of through a transposed view.
// `a_cm`/`b_cm`: whether the operand was column_major in the forward (only the other operand is
// saved).
Tensor mm_a_grad(const Tensor& g, const Tensor& b, bool a_cm) {
  return a_cm ? wick::mm(b, g.t()).t() : wick::mm(g, b.t());
}
Tensor mm_b_grad(const Tensor& g, const Tensor& a, bool b_cm) {
  return b_cm ? wick::mm(g.t(), a).t() : wick::mm(a.t(), g);
}

}  // namespace

void record_mm(const Tensor& a, const Tensor& b, const Tensor& out) {
  record("MmBackward0", {a, b}, out, {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b)},
         [a_cm = column_major(a), b_cm = column_major(b)](BackwardContext& c) -> variable_list {
           return {c.needs(0) ? mm_a_grad(c.grad(), c.saved(1), a_cm) : Tensor(),
                   c.needs(1) ? mm_b_grad(c.grad(), c.saved(0), b_cm) : Tensor()};
         });
}

void record_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t da = a.dim(), db = b.dim();
  record(matmul_name(da, db), {a, b}, out, {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b)},
         [da, db, sa = DimVector(a.sizes()), sb = DimVector(b.sizes()), a_cm = column_major(a),
          b_cm = column_major(b)](BackwardContext& c) -> variable_list {
           Tensor g = c.grad();
           if (da == 2 && db == 2)
             return {c.needs(0) ? mm_a_grad(g, c.saved(1), a_cm) : Tensor(),
                     c.needs(1) ? mm_b_grad(g, c.saved(0), b_cm) : Tensor()};
           if (da >= 3 && db == 2) {  // the forward's folded GEMM: the batch dims are rows
             Tensor g2 = g.reshape({-1, g.size(-1)});
             return {c.needs(0) ? mm_a_grad(g2, c.saved(1), false).reshape(sa) : Tensor(),
                     c.needs(1) ? mm_b_grad(g2, c.saved(0).reshape({-1, sa.back()}), b_cm) : Tensor()};
           }
           // Work with both operands at least 2-D, as the forward did.
           if (da == 1) g = g.unsqueeze(db == 1 ? 0 : -2);
           if (db == 1) g = g.unsqueeze(-1);
           variable_list r(2);
           if (c.needs(0)) {
             Tensor B = c.saved(1);
             if (db == 1) B = B.unsqueeze(1);
             Tensor ga = wick::matmul(g, mT(B));
             DimVector s2 = sa;
             if (da == 1) s2.insert(s2.begin(), 1);
             r[0] = sum_to(ga, s2).reshape(sa);
           }
           if (c.needs(1)) {
             Tensor A = c.saved(0);
             if (da == 1) A = A.unsqueeze(0);
             Tensor gb = wick::matmul(mT(A), g);
             DimVector s2 = sb;
             if (db == 1) s2.push_back(1);
             r[1] = sum_to(gb, s2).reshape(sb);
           }
           return r;
         });
}

void record_bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  record("BmmBackward0", {a, b}, out, {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b)},
         [](BackwardContext& c) -> variable_list {
           return {c.needs(0) ? wick::bmm(c.grad(), mT(c.saved(1))) : Tensor(),
                   c.needs(1) ? wick::bmm(mT(c.saved(0)), c.grad()) : Tensor()};
         });
}

namespace {

// What addmm's gradients need beside the saved a (saved 0) and b (saved 1).
struct AddmmShape {
  Scalar beta, alpha;
  bool a_cm, b_cm;  // a (b) stored column-major
  DimVector in_sizes;
  bool row;  // input is one row added to every row of the product (linear's bias)
};

AddmmShape addmm_shape(const Tensor& input, const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& beta,
                       const Scalar& alpha) {
  return {beta,
          alpha,
          column_major(a),
          column_major(b),
          DimVector(input.sizes()),
          input.dim() >= 1 && input.numel() == out.size(1) && input.size(-1) == out.size(1)};
}

// Whether addmm_grads takes linear's path: the bias (one row added to every row of the product)
// and the weight both wanting their gradients, beta and alpha 1.
bool linear_grads(const BackwardContext& c, const Tensor& g, const AddmmShape& s) {
  return s.row && s.beta.to<double>() == 1 && s.alpha.to<double>() == 1 && c.needs(0) && c.needs(2) &&
         g.dim() == 2 && !creating_graph();
}

// The gradients of input, a and b for the gradient g of beta * input + alpha * (a @ b).
// bias_grad: the bias's gradient already summed with g (linear_grads' path only), or undefined.
variable_list addmm_grads(BackwardContext& c, const Tensor& g, const AddmmShape& s,
                          const Tensor& bias_grad = Tensor()) {
  const double be = s.beta.to<double>(), al = s.alpha.to<double>();
  variable_list r(3);
  // linear's bias and weight: the bias gradient, g summed over the batch, with the weight
  // gradient (one GEMM where the backend can, mm_with_sums), unless it came with g.
  if (linear_grads(c, g, s)) {
    Tensor sums = bias_grad;
    const int which = bias_grad.defined() ? 0 : s.b_cm ? 1 : 2;
    // Straight into the weight's gradient destination when it has one (a DDP bucket).
    Tensor dst = take_grad_destination(c.node(), 2);
    r[2] = s.b_cm ? wick::detail::mm_with_sums(g.t(), c.saved(0), which, sums, dst.defined() ? dst.t() : dst).t()
                  : wick::detail::mm_with_sums(c.saved(0).t(), g, which, sums, dst);
    if (bias_grad.defined()) sums = bias_grad;
    r[0] = sums.view(s.in_sizes);
    if (c.needs(1)) r[1] = mm_a_grad(g, c.saved(1), s.a_cm);
    return r;
  }
  if (c.needs(0)) r[0] = be == 1 ? g : g * be;
  auto scaled = [al](Tensor t) { return al == 1 ? t : t * al; };
  if (c.needs(1)) r[1] = scaled(mm_a_grad(g, c.saved(1), s.a_cm));
  if (c.needs(2)) r[2] = scaled(mm_b_grad(g, c.saved(0), s.b_cm));
  return r;
}

}  // namespace

void record_addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Tensor& out,
                  const Scalar& beta, const Scalar& alpha) {
  record("AddmmBackward0", {input, a, b}, out, {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b)},
         [s = addmm_shape(input, a, b, out, beta, alpha)](BackwardContext& c) -> variable_list {
           return addmm_grads(c, c.grad(), s);
         });
}

void record_addmm_activation(const Tensor& input, const Tensor& a, const Tensor& b, const Tensor& out,
                             const Tensor& pre, const Scalar& beta, const Scalar& alpha, bool use_gelu) {
  record("AddmmActivationBackward0", {input, a, b}, out,
         {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b), use_gelu ? pre : out},
         [s = addmm_shape(input, a, b, out, beta, alpha), use_gelu](BackwardContext& c) -> variable_list {
           // The value before the activation was made outside the graph (by the GEMM's epilogue
           // on a GPU): its own gradient cannot be recorded.
           if (creating_graph()) [[unlikely]]
             wick::detail::raise<NotImplementedError>("_addmm_activation",
                                                      "double backward is not implemented for "
                                                      "AddmmActivationBackward0; compose addmm and the activation "
                                                      "to differentiate twice");
           // GELU's gradient and the bias's column sums of it in one pass where the device can.
           Tensor g, bias_grad;
           if (use_gelu && linear_grads(c, c.grad(), s) &&
               wick::detail::gelu_backward_with_bias(c.grad(), c.saved(2), /*tanh_form=*/true, g, bias_grad))
             return addmm_grads(c, g, s, bias_grad);
           g = use_gelu ? gelu_backward(c.grad(), c.saved(2), /*tanh_form=*/true)
                        : wick::detail::threshold_backward(c.grad(), c.saved(2));
           return addmm_grads(c, g, s);
         });
}

}  // namespace wick::autograd
