// The op names of the kernel families' op codes, as PyTorch spells them in errors: the one
// table core and every backend ask (declared in kernel_table.h). The elementwise families'
// come from their lines in wick/detail/op_list.h.
#include "core/kernel_table.h"

namespace wick::detail {

const char* op_name(BinaryOp op) {
  switch (op) {
#define WICK_X(Name, name, ...) \
  case BinaryOp::Name: return #name;
    WICK_BINARY_OPS(WICK_X)
#undef WICK_X
  }
  return "binary";
}

const char* op_name(CompareOp op) {
  switch (op) {
#define WICK_X(Name, name, ...) \
  case CompareOp::Name: return #name;
    WICK_COMPARE_OPS(WICK_X)
    WICK_LOGICAL_OPS(WICK_X)
#undef WICK_X
  }
  return "compare";
}

const char* op_name(BitwiseOp op) {
  switch (op) {
#define WICK_X(Name, name) \
  case BitwiseOp::Name: return #name;
    WICK_BITWISE_OPS(WICK_X)
#undef WICK_X
    case BitwiseOp::Not: return "bitwise_not";
  }
  return "bitwise";
}

const char* op_name(UnaryOp op) {
  switch (op) {
#define WICK_X(Name, name, ...) \
  case UnaryOp::Name: return #name;
    WICK_UNARY_OPS(WICK_X)
#undef WICK_X
  }
  return "unary";
}

const char* op_name(PointwiseOp op) {
  switch (op) {
#define WICK_X(Name, name) \
  case PointwiseOp::Name: return name;
    WICK_POINTWISE_OPS(WICK_X)
#undef WICK_X
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
