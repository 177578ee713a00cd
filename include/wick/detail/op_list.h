// The elementwise ops, one line each (docs/design.md, "Adding an op"). Each family is an
// X-macro: a reader defines X over a line's columns and expands the list. ops.h and tensor.h
// expand it for the public declarations, core's kernel_table.h for the op codes of the kernel
// families, op_names.cpp for the names errors take, core for the simple ops' definitions and
// autograd for their node names, so an op's line is the one place that names it.
#pragma once

// ---- one tensor: X(Name, name, kind, autocast, form)
//   Name      the UnaryOp code; autograd's node is NameBackward0 for the generated ops
//   name      the op as PyTorch spells it (function, method, in-place method name_, errors)
//   kind      Float: integer and bool inputs give the default float; Numeric: dtype kept,
//             bool rejected; FloatOnly: non-float inputs rejected
//   autocast  the policy under an autocast region on CUDA (Fp32: run in float32); None
//   form      Methods: wick::name(t), t.name() and t.name_() generated from this line;
//             Function: wick::name(t) only (PyTorch has no method); Manual: declared and
//             defined by hand (the op takes more than a tensor), sharing the code and hook
// Scalars of the Manual ops: Pow x**a, RPow a**x, Remainder x mod a, Fmod C's fmod(x, a) (the
// dividend's sign), DivTrunc x / a rounded toward zero, DivFloor and FloorDivide x / a rounded
// toward -inf (FloorDivide: floor_divide, whose node is PyTorch's NotImplemented), Polygamma the
// a-th derivative of digamma, Clamp between a and b.
#define WICK_UNARY_OPS(X)                              \
  X(Neg, neg, Numeric, None, Methods)                  \
  X(Abs, abs, Numeric, None, Methods)                  \
  X(Exp, exp, Float, Fp32, Methods)                    \
  X(Expm1, expm1, Float, None, Methods) /* exp - 1 */  \
  X(Log, log, Float, Fp32, Methods)                    \
  X(Sqrt, sqrt, Float, None, Methods)                  \
  X(Rsqrt, rsqrt, Float, Fp32, Methods)                \
  X(Sin, sin, Float, None, Methods)                    \
  X(Cos, cos, Float, None, Methods)                    \
  X(Tan, tan, Float, Fp32, Methods)                    \
  X(Asin, asin, Float, Fp32, Methods)                  \
  X(Acos, acos, Float, Fp32, Methods)                  \
  X(Atan, atan, Float, None, Methods)                  \
  X(Sinh, sinh, Float, Fp32, Methods)                  \
  X(Cosh, cosh, Float, Fp32, Methods)                  \
  X(Asinh, asinh, Float, None, Methods)                \
  X(Acosh, acosh, Float, None, Methods)                \
  X(Atanh, atanh, Float, None, Methods)                \
  X(Erf, erf, Float, None, Methods)                    \
  X(Erfinv, erfinv, Float, Fp32, Methods)              \
  X(Tanh, tanh, Float, None, Methods)                  \
  X(Sigmoid, sigmoid, Float, None, Methods)            \
  X(Relu, relu, Numeric, None, Methods)                \
  X(Sign, sign, Numeric, None, Methods)                \
  X(Floor, floor, Numeric, None, Methods)              \
  X(Ceil, ceil, Numeric, None, Methods)                \
  X(Round, round, Numeric, None, Methods) /* to even */ \
  X(Trunc, trunc, Numeric, None, Methods)              \
  X(Frac, frac, FloatOnly, None, Methods) /* x - trunc */ \
  X(Log2, log2, Float, Fp32, Methods)                  \
  X(Log10, log10, Float, Fp32, Methods)                \
  X(Log1P, log1p, Float, Fp32, Methods) /* Log1PBackward0 */ \
  X(Reciprocal, reciprocal, Float, Fp32, Methods)      \
  X(Lgamma, lgamma, Float, None, Methods) /* log|gamma| */ \
  X(Digamma, digamma, Float, None, Methods)            \
  X(Gelu, gelu, FloatOnly, None, Manual)               \
  X(GeluTanh, gelu, FloatOnly, None, Manual)           \
  X(Silu, silu, FloatOnly, None, Function)             \
  X(Pow, pow, Numeric, Fp32, Manual)                   \
  X(RPow, pow, Numeric, Fp32, Manual)                  \
  X(Remainder, remainder, Numeric, None, Manual)       \
  X(Fmod, fmod, Numeric, None, Manual)                 \
  X(DivTrunc, div, Numeric, None, Manual)              \
  X(DivFloor, div, Numeric, None, Manual)              \
  X(FloorDivide, floor_divide, Numeric, None, Manual)  \
  X(Polygamma, polygamma, Float, None, Manual)         \
  X(Clamp, clamp, Numeric, None, Manual)

// ---- two operands, + - * /: X(Name, name, operator, alpha)
//   alpha  Alpha: the op takes alpha (b scaled by it, default 1); NoAlpha
// Each line declares name(a, b) for a tensor or scalar b, the operators a op b (either side
// a scalar), t.name(other), t.name_(other) for a tensor or scalar, and t op= other. div is
// true division: integer inputs give the default float dtype.
#define WICK_BINARY_OPS(X) \
  X(Add, add, +, Alpha)    \
  X(Sub, sub, -, Alpha)    \
  X(Mul, mul, *, NoAlpha)  \
  X(Div, div, /, NoAlpha)

// ---- comparisons, to bool: X(Name, name, operator, Mirror)
//   Mirror  the op with its operands swapped (2 < t is t > 2)
// Each line declares name(a, b) and t.name(b) for a tensor or scalar b, and the operators.
#define WICK_COMPARE_OPS(X) \
  X(Eq, eq, ==, Eq)         \
  X(Ne, ne, !=, Ne)         \
  X(Lt, lt, <, Gt)          \
  X(Le, le, <=, Ge)         \
  X(Gt, gt, >, Lt)          \
  X(Ge, ge, >=, Le)

// ---- logical ops, to bool: X(Name, name). Operands of any dtypes are promoted together and
// each element is true where it is not 0 (NaN is true). Each line declares name(a, b),
// t.name(b) and t.name_(b) (in place: 0 or 1 in t's dtype). logical_not is written by hand.
#define WICK_LOGICAL_OPS(X)  \
  X(LogicalAnd, logical_and) \
  X(LogicalOr, logical_or)   \
  X(LogicalXor, logical_xor)

// ---- bitwise ops of bool and integer tensors: X(Name, name). Operands are promoted as for +;
// a floating result raises TypeError, as does a bool one for the shifts. Each line declares
// name(a, b) for a tensor or scalar a or b, t.name(b) and t.name_(b); & | ^ &= |= ^= and ~
// (bitwise_not) are written by hand. Shifts are PyTorch's: a count below 0 or at least the
// width gives 0 (left) or the sign's fill (right).
#define WICK_BITWISE_OPS(X)               \
  X(And, bitwise_and)                     \
  X(Or, bitwise_or)                       \
  X(Xor, bitwise_xor)                     \
  X(LeftShift, bitwise_left_shift)        \
  X(RightShift, bitwise_right_shift)

// ---- elementwise ops of two or three tensors beyond + - * /: X(Name, "name"). The first are
// the tensor forms of pow, remainder, fmod, div with a rounding mode (DivTrunc, DivFloor),
// floor_divide and clamp, and atan2 (floating: integer inputs give the default float); the
// others are the pieces of the fused losses
// and of ReLU's backward (floating dtypes only), operands in this order:
//   ThresholdBackward (g, y):    y <= 0 ? 0 : g         (PyTorch's threshold_backward at 0)
//   MseLoss (x, t):              (x - t)^2
//   MseBackward (x, t, g):       2 (x - t) g
//   BceLogits (x, t):            (1 - t) x - log(sigmoid(x))             computed stably
//   BceLogitsPosWeight (x, t, p): (1 - t) x - (1 + (p - 1) t) log(sigmoid(x))
//   BceLogitsBackward (x, t, g): (sigmoid(x) - t) g
//   GeluBackward (g, x):         g (Phi(x) + x phi(x))                   (GELU's backward)
//   GeluTanhBackward (g, x):     g ((1 + th) / 2 + x (1 - th^2) u' / 2), th = tanh(u),
//                                u = sqrt(2 / pi) (x + 0.044715 x^3)     (approximate="tanh")
#define WICK_POINTWISE_OPS(X)                                         \
  X(Pow, "pow")                                                       \
  X(Remainder, "remainder")                                           \
  X(Atan2, "atan2")                                                   \
  X(Fmod, "fmod")                                                     \
  X(DivTrunc, "div")                                                  \
  X(DivFloor, "div")                                                  \
  X(FloorDivide, "floor_divide")                                      \
  X(ClampMin, "clamp_min")                                            \
  X(ClampMax, "clamp_max")                                            \
  X(Clamp, "clamp")                                                   \
  X(ThresholdBackward, "threshold_backward")                          \
  X(MseLoss, "mse_loss")                                              \
  X(MseBackward, "mse_loss_backward")                                 \
  X(BceLogits, "binary_cross_entropy_with_logits")                    \
  X(BceLogitsPosWeight, "binary_cross_entropy_with_logits")           \
  X(BceLogitsBackward, "binary_cross_entropy_with_logits_backward") \
  X(GeluBackward, "gelu_backward")                                    \
  X(GeluTanhBackward, "gelu_backward")

// ---- helpers the readers paste a column onto
#define WICK_OP_UNARY_FUNCTION_Methods(name) Tensor name(const Tensor& t);
#define WICK_OP_UNARY_FUNCTION_Function(name) Tensor name(const Tensor& t);
#define WICK_OP_UNARY_FUNCTION_Manual(name)
#define WICK_OP_UNARY_METHODS_Methods(name) \
  Tensor name() const;                      \
  Tensor& name##_();                        \
  const Tensor& name##_() const { return const_cast<Tensor&>(*this).name##_(); }
#define WICK_OP_UNARY_METHODS_Function(name)
#define WICK_OP_UNARY_METHODS_Manual(name)
// A parameter list's alpha: the declaration's (with its default) and the definition's.
#define WICK_OP_ALPHA_DECL_Alpha , const Scalar& alpha = 1
#define WICK_OP_ALPHA_DECL_NoAlpha
#define WICK_OP_ALPHA_PARAM_Alpha , const Scalar& alpha
#define WICK_OP_ALPHA_PARAM_NoAlpha
// The alpha argument of a forwarding call, with its comma (nothing without alpha).
#define WICK_OP_ALPHA_ARG_COMMA_Alpha , alpha
#define WICK_OP_ALPHA_ARG_COMMA_NoAlpha
#define WICK_OP_ALPHA_ARG_Alpha alpha
#define WICK_OP_ALPHA_ARG_NoAlpha 1
#define WICK_OP_ALPHA_PASS_Alpha , alpha
#define WICK_OP_ALPHA_PASS_NoAlpha
