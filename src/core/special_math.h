// Scalar math of the rounding divisions and of the gamma family, the one definition that the
// CPU loops (src/cpu/unary.cpp) and the CUDA kernels (src/cuda/kernels/unary.cu) both call, as
// core/scalar_math.h is for pow and Python's modulo: C's fmod, division rounded toward zero or
// toward -inf (div's rounding modes, floor_divide), digamma and polygamma. lgamma is the C
// library's on each side (the CPU's lgamma_r, CUDA's lgammaf/lgamma).
//
// Includable from .cu files: every function is WICK_HOST_DEVICE, and the std:: math it calls
// (fmod, trunc, floor, copysign, log, tan, pow) of float and double is, on the device, CUDA's
// accurate libm. M is the type the arithmetic runs in (opmath_t of the dtype).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/op_math.h"

namespace wick::detail {

// -a for a signed integer, wrapping at the minimum (MIN / -1 traps on x86; in exact arithmetic
// the quotient is 2^(bits - 1), which wraps to MIN).
template <class M>
WICK_HOST_DEVICE inline M wrapping_neg(M a) {
  using U = std::make_unsigned_t<M>;
  return M(U(0) - U(a));
}

// C's fmod: a - trunc(a / b) b, the sign of the dividend (fmod(-7, 3) = -1). Integers: the
// caller has ruled out b = 0; MIN fmod -1 is 0.
template <class M>
WICK_HOST_DEVICE inline M c_fmod(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    return std::fmod(a, b);
  } else if constexpr (std::is_signed_v<M>) {
    if (b == M(-1)) return M(0);
    return M(a % b);
  } else {
    return M(a % b);
  }
}

// a / b rounded toward zero (div's "trunc"). Floats: the IEEE quotient truncated (b = 0 gives
// inf or NaN); integers: C's division, b != 0.
template <class M>
WICK_HOST_DEVICE inline M div_trunc(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    return std::trunc(a / b);
  } else if constexpr (std::is_signed_v<M>) {
    if (b == M(-1)) return wrapping_neg(a);
    return M(a / b);
  } else {
    return M(a / b);
  }
}

// a / b rounded toward -inf (div's "floor", floor_divide, Python's //). Floats follow Python's
// float floor division: the quotient of a - fmod(a, b), which is a multiple of b, so that the
// rounding of a / b cannot carry the result across an integer (1.0 // 0.1 is 9, where
// floor(1.0 / 0.1) is 10); a zero quotient keeps the sign of a / b; b = 0 gives a / b (inf or
// NaN), inf // b NaN. Integers: the truncated quotient, one less when the remainder is non-zero
// and the signs differ.
template <class M>
WICK_HOST_DEVICE inline M div_floor(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (b == M(0)) return a / b;
    const M r = std::fmod(a, b);
    M q = (a - r) / b;
    if (r != M(0) && ((b < M(0)) != (r < M(0)))) q -= M(1);
    if (q == M(0)) return std::copysign(M(0), a / b);
    const M f = std::floor(q);  // q is within rounding of an integer: take the nearest
    return q - f > M(0.5) ? f + M(1) : f;
  } else if constexpr (std::is_signed_v<M>) {
    if (b == M(-1)) return wrapping_neg(a);
    const M q = M(a / b);
    return (M(a % b) != M(0) && ((a < M(0)) != (b < M(0)))) ? M(q - M(1)) : q;
  } else {
    return M(a / b);
  }
}

// digamma(x) = d/dx log(gamma(x)), with PyTorch's values at the poles: digamma(+0) = -inf,
// digamma(-0) = +inf, NaN at the negative integers (and at -inf). Negative x by the reflection
// psi(x) = psi(1 - x) - pi / tan(pi x), with tan taken of x's distance r to the nearest integer
// (the same value; r is exact, and pi r is small near the poles, where pi x would have lost the
// digits that tell the pole apart); then the recurrence psi(x) = psi(x + 1) - 1 / x
// up to x >= 10, where the asymptotic series
//   psi(x) = log x - 1 / (2x) - sum_k B_2k / (2k x^2k)
// is summed to its x^-14 term (below 1e-17 relative there).
template <class M>
WICK_HOST_DEVICE inline M scalar_digamma(M x) {
  const M pi = M(3.14159265358979323846);
  if (x == M(0)) return std::copysign(M(INFINITY), -x);
  M acc = M(0);
  if (x < M(0)) {
    if (x == std::trunc(x)) return M(NAN);
    M r = x - std::trunc(x);  // in (-1, 0)
    if (r < M(-0.5)) r += M(1);
    acc = -pi / std::tan(pi * r);
    x = M(1) - x;
  }
  while (x < M(10)) {
    acc -= M(1) / x;
    x += M(1);
  }
  const M z = M(1) / (x * x);
  // B_2k / 2k for k = 1..7: 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12.
  const M series =
      z * (M(1.0 / 12) -
           z * (M(1.0 / 120) -
                z * (M(1.0 / 252) -
                     z * (M(1.0 / 240) - z * (M(1.0 / 132) - z * (M(691.0 / 32760) - z * M(1.0 / 12)))))));
  return acc + std::log(x) - M(0.5) / x - series;
}

// polygamma(n, x), the n-th derivative of digamma: n = 0 is scalar_digamma; n >= 1 is
//   (-1)^(n+1) n! zeta(n + 1, x),  zeta(s, x) = sum_k>=0 (x + k)^-s  (Hurwitz's zeta),
// computed in double whatever M (n! of float32 would overflow at n = 35 where the product
// does not). The sum is taken term by term until x + k reaches 16 + n (negative non-integer x
// included), and its tail by Euler-Maclaurin:
//   sum_k>=0 (w + k)^-s = w^(1-s) / (s - 1) + w^-s / 2 + sum_j B_2j / (2j)! (s)_(2j-1) w^(-s-2j+1)
// with (s)_m the rising factorial, to j = 8. At x = 0 and the negative integers (and -inf) the
// result is +inf for odd n and -inf for even n, the limits PyTorch's zeta gives for n >= 2 (its
// trigamma, a reflection through sin(pi x), gives +inf at 0 and large finite values at the
// negative integers, where wick gives +inf too).
template <class M>
WICK_HOST_DEVICE inline M scalar_polygamma(int64_t n, M xm) {
  if (n == 0) return scalar_digamma(xm);
  const double x = double(xm);
  if (x != x) return xm;
  if (x <= 0 && x == std::trunc(x)) return M((n % 2) ? INFINITY : -INFINITY);
  if (x == INFINITY) return M((n % 2) ? 0.0 : -0.0);  // the limit, with the sign of the terms
  const double s = double(n) + 1;
  const double threshold = 16.0 + double(n < 64 ? n : 64);
  double w = x, zeta = 0;
  while (w < threshold) {
    zeta += std::pow(w, -s);
    w += 1;
  }
  const double ws = std::pow(w, -s);  // w^-s
  zeta += w * ws / (s - 1) + ws / 2;
  // B_2j / (2j)! for j = 1..8.
  const double c[8] = {1.0 / 12,           -1.0 / 720,         1.0 / 30240,          -1.0 / 1209600,
                       1.0 / 47900160,     -691.0 / 1307674368000.0, 1.0 / 74724249600.0,
                       -3617.0 / 10670622842880000.0};
  double term = s * ws / w;  // (s)_1 w^(-s-1)
  const double inv_w2 = 1 / (w * w);
  for (int j = 0; j < 8; ++j) {
    zeta += c[j] * term;
    term *= (s + 2 * j + 1) * (s + 2 * j + 2) * inv_w2;  // (s)_(2j+3) w^(-s-2j-3)
  }
  double fact = 1;
  for (int64_t k = 2; k <= n && fact < INFINITY; ++k) fact *= double(k);
  return M(((n % 2) ? fact : -fact) * zeta);
}

}  // namespace wick::detail
