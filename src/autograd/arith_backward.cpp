// Backward formulas of + - * / (their in-place forms record through autograd::inplace). The
// engine sums broadcast dims away and casts to each input's dtype, so formulas work in the
// output's shape and dtype.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/kernel_table.h"
#include "wick/ops.h"

namespace wick::autograd {

using wick::detail::BinaryOp;

namespace {

bool is_one(const Scalar& s) { return s.to<double>() == 1.0; }
Tensor scaled(const Tensor& g, const Scalar& s) { return is_one(s) ? g : g * s; }
Tensor if_needed(bool r, const Tensor& t) { return r ? t : Tensor(); }

// a op b for a tensor b: AddBackward0, SubBackward0, MulBackward0, DivBackward0.
void record_tensors(BinaryOp op, const Tensor& a, const Tensor& b, const Scalar& alpha, const Tensor& out) {
  switch (op) {
    case BinaryOp::Add:
      record("AddBackward0", {a, b}, out, {}, [alpha](BackwardContext& c) -> variable_list {
        return {c.grad(), c.needs(1) ? scaled(c.grad(), alpha) : Tensor()};
      });
      return;
    case BinaryOp::Sub:
      record("SubBackward0", {a, b}, out, {}, [alpha](BackwardContext& c) -> variable_list {
        return {c.grad(), c.needs(1) ? c.grad() * (-alpha.to<double>()) : Tensor()};
      });
      return;
    case BinaryOp::Mul:
      record("MulBackward0", {a, b}, out, {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b)},
             [](BackwardContext& c) -> variable_list {
               return {c.needs(0) ? c.grad() * c.saved(1) : Tensor(), c.needs(1) ? c.grad() * c.saved(0) : Tensor()};
             });
      return;
    case BinaryOp::Div:
      record("DivBackward0", {a, b}, out, {if_needed(b.requires_grad(), a), b}, [](BackwardContext& c) -> variable_list {
        Tensor bb = c.saved(1);
        return {c.needs(0) ? c.grad() / bb : Tensor(), c.needs(1) ? -c.grad() * c.saved(0) / (bb * bb) : Tensor()};
      });
      return;
  }
}

// a op s for a scalar s: AddBackward1 ... DivBackward1.
void record_scalar(BinaryOp op, const Tensor& a, const Scalar& s, const Tensor& out) {
  switch (op) {
    case BinaryOp::Add:
      record("AddBackward1", {a}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
      return;
    case BinaryOp::Sub:
      record("SubBackward1", {a}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
      return;
    case BinaryOp::Mul:
      record("MulBackward1", {a}, out, {}, [s](BackwardContext& c) -> variable_list { return {c.grad() * s}; });
      return;
    case BinaryOp::Div:
      record("DivBackward1", {a}, out, {}, [s](BackwardContext& c) -> variable_list { return {c.grad() / s}; });
      return;
  }
}

}  // namespace

void record_binary(BinaryOp op, const Tensor& a, const Tensor* b, const Scalar* scalar, const Scalar& alpha,
                   const Tensor& out) {
  if (b) record_tensors(op, a, *b, alpha, out);
  else record_scalar(op, a, *scalar, out);
}

}  // namespace wick::autograd
