// Scalar arithmetic of the elementwise ops, the one definition that the CPU loops
// (src/cpu/unary.cpp) and the CUDA kernels (src/cuda/kernels/unary.cu) both call, so
// the two backends cannot drift apart: integer and float pow, Python's modulo, and the
// NaN-propagating max/min of clamp. Includable from .cu files: the functions are
// WICK_HOST_DEVICE, and their std::sqrt, std::pow and std::fmod of float and double are, on
// the device, CUDA's accurate sqrtf/powf/fmodf and double forms (as device_math.cuh's).
// M is the type the arithmetic runs in (opmath_t of the dtype); int_pow takes the integer
// dtype itself.
#pragma once

#include <cmath>
#include <type_traits>

#include "core/op_math.h"

namespace wick::detail {

// Integer power by squaring in unsigned arithmetic (wraps like PyTorch, without signed
// overflow). A negative exponent gives 1/base rounded toward zero: 0 unless base is 1 or -1.
template <class T>
WICK_HOST_DEVICE inline T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;
  U r = 1, b = U(base);
  for (auto e = U(exp); e; e >>= 1) {
    if (e & 1) r *= b;
    b *= b;
  }
  return T(r);
}

// pow of floats, with the common small exponents as products (exact where pow may not be).
template <class M>
WICK_HOST_DEVICE inline M float_pow(M x, M e) {
  if (e == M(2)) return x * x;
  if (e == M(3)) return x * x * x;
  if (e == M(0.5)) return std::sqrt(x);
  if (e == M(-1)) return M(1) / x;
  if (e == M(-2)) return M(1) / (x * x);
  return std::pow(x, e);
}

// Python's modulo: the result takes the divisor's sign. Unsigned types have no sign to fix,
// and their all-ones divisor is an ordinary one (only signed MIN % -1 traps).
template <class M>
WICK_HOST_DEVICE inline M py_mod(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    M r = std::fmod(a, b);
    if (r != M(0) && ((b < M(0)) != (r < M(0)))) r += b;
    return r;
  } else if constexpr (std::is_signed_v<M>) {
    if (b == M(-1)) return M(0);  // MIN % -1 traps on x86 and is 0 in exact arithmetic
    M r = M(a % b);
    if (r != 0 && ((b < 0) != (r < 0))) r = M(r + b);
    return r;
  } else {
    return M(a % b);
  }
}

// pick, unless a or b is NaN: then that NaN (a's first).
template <class M>
WICK_HOST_DEVICE inline M nan_or(M a, M b, M pick) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return pick;
}

// max/min that propagate NaN from either side, as torch.clamp does.
template <class M>
WICK_HOST_DEVICE inline M nan_max(M a, M b) {
  return nan_or(a, b, a < b ? b : a);
}
template <class M>
WICK_HOST_DEVICE inline M nan_min(M a, M b) {
  return nan_or(a, b, b < a ? b : a);
}

}  // namespace wick::detail
