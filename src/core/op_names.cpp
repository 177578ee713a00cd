// The op names of the kernel families' op codes, as PyTorch spells them in errors: the one
// table core and every backend ask (declared in kernel_table.h).
#include "core/kernel_table.h"

namespace wick::detail {

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
  }
  return "binary";
}

const char* op_name(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "eq";
    case CompareOp::Ne: return "ne";
    case CompareOp::Lt: return "lt";
    case CompareOp::Le: return "le";
    case CompareOp::Gt: return "gt";
    case CompareOp::Ge: return "ge";
  }
  return "compare";
}

const char* op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "neg";
    case UnaryOp::Abs: return "abs";
    case UnaryOp::Exp: return "exp";
    case UnaryOp::Expm1: return "expm1";
    case UnaryOp::Log: return "log";
    case UnaryOp::Sqrt: return "sqrt";
    case UnaryOp::Rsqrt: return "rsqrt";
    case UnaryOp::Sin: return "sin";
    case UnaryOp::Cos: return "cos";
    case UnaryOp::Tanh: return "tanh";
    case UnaryOp::Sigmoid: return "sigmoid";
    case UnaryOp::Relu: return "relu";
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh: return "gelu";
    case UnaryOp::Silu: return "silu";
    case UnaryOp::Pow:
    case UnaryOp::RPow: return "pow";
    case UnaryOp::Remainder: return "remainder";
    case UnaryOp::Clamp: return "clamp";
  }
  return "unary";
}

const char* op_name(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::Pow: return "pow";
    case PointwiseOp::Remainder: return "remainder";
    case PointwiseOp::ClampMin: return "clamp_min";
    case PointwiseOp::ClampMax: return "clamp_max";
    case PointwiseOp::Clamp: return "clamp";
    case PointwiseOp::ThresholdBackward: return "threshold_backward";
    case PointwiseOp::MseLoss: return "mse_loss";
    case PointwiseOp::MseBackward: return "mse_loss_backward";
    case PointwiseOp::BceLogits:
    case PointwiseOp::BceLogitsPosWeight: return "binary_cross_entropy_with_logits";
    case PointwiseOp::BceLogitsBackward: return "binary_cross_entropy_with_logits_backward";
  }
  return "pointwise";
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::ArgMax: return "argmax";
    case ReduceOp::ArgMin: return "argmin";
    case ReduceOp::Var: return "var";
    case ReduceOp::Std: return "std";
    case ReduceOp::Norm: return "norm";
  }
  return "reduce";
}

}  // namespace wick::detail
