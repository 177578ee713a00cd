// Scalar arithmetic of the elementwise ops, the one definition that the CPU loops
// (src/cpu/unary_kernels.cpp) and the CUDA kernels (src/cuda/kernels/unary.cu) both call, so
// the two backends cannot drift apart: integer and float pow, Python's modulo, and the
// NaN-propagating max/min of clamp. Includable from .cu files: the functions are
// WICK_HOST_DEVICE, and the few libm calls go to CUDA's float/double functions on the device
// (its accurate ones, as device_math.cuh) and to std:: on the host.
// M is the type the arithmetic runs in (opmath_t of the dtype); int_pow takes the integer
// dtype itself.
#pragma once

#include <cmath>
#include <type_traits>

#include "core/op_math.h"

namespace wick::detail {

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float scalar_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double scalar_sqrt(double x) { return ::sqrt(x); }
__device__ __forceinline__ float scalar_pow(float x, float e) { return powf(x, e); }
__device__ __forceinline__ double scalar_pow(double x, double e) { return ::pow(x, e); }
__device__ __forceinline__ float scalar_fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double scalar_fmod(double x, double y) { return ::fmod(x, y); }
#else
template <class M>
inline M scalar_sqrt(M x) {
  return std::sqrt(x);
}
template <class M>
inline M scalar_pow(M x, M e) {
  return std::pow(x, e);
}
template <class M>
inline M scalar_fmod(M x, M y) {
  return std::fmod(x, y);
}
#endif

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
  if (e == M(0.5)) return scalar_sqrt(x);
  if (e == M(-1)) return M(1) / x;
  if (e == M(-2)) return M(1) / (x * x);
  return scalar_pow(x, e);
}

// Python's modulo: the result takes the divisor's sign. Unsigned types have no sign to fix,
// and their all-ones divisor is an ordinary one (only signed MIN % -1 traps).
template <class M>
WICK_HOST_DEVICE inline M py_mod(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    M r = scalar_fmod(a, b);
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

// max/min that propagate NaN from either side, as torch.clamp does.
template <class M>
WICK_HOST_DEVICE inline M nan_max(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}
template <class M>
WICK_HOST_DEVICE inline M nan_min(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

}  // namespace wick::detail
