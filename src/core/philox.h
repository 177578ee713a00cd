// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC11) and the mapping of its output to uniform, normal and integer values. Everything here
// is WICK_HOST_DEVICE so that the CPU kernel and the CUDA kernel run the same code.
//
// A draw of n elements at (seed, offset) is cut into blocks of `per_block` elements; block b
// is philox(counter = offset + b, key = seed) and feeds elements [b * per_block, ...). So
// element i depends only on (seed, offset, i), and the generator's offset advances by the
// number of blocks a draw used (blocks_for), so that draws never share a counter.
//
//   Block r = draw_block(seed, offset, b);
//   uniform_block<float>(r, out + b * 4, count, 0.0, 1.0);
//
// Same numbers on every device: integer work is exact everywhere, and all floating point is
// IEEE double with each multiply and add rounded on its own (device code uses __dmul_rn /
// __dadd_rn, which nvcc never fuses into an FMA; the host build is ISO C++, where GCC does
// not contract either). log, sin and cos are our own polynomials built from those operations,
// not libm's or CUDA's, whose last bits differ. Alternatives that lost: libm/CUDA log and
// sincos (fast, but results differ in the last ulp, so float64 normals would not match, and
// float32 ones would, rarely, when the double lands next to a rounding boundary); the
// Marsaglia polar method (rejection makes the number of counters per element variable).
// Residual risk: a host build with FMA contraction forced on (-ffp-contract=fast plus an
// FMA-capable -march) would change the last bits of normals and of uniform_(from, to).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "wick/half.h"

namespace wick::detail::philox {

struct Block {
  uint32_t v[4];
};

// ---- the generator

inline constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
inline constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments

// Philox4x32 with R rounds (10 is the standard; the template serves the known-answer tests).
template <int R = 10>
WICK_HOST_DEVICE inline Block philox4x32(Block c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < R; ++r) {
    if (r > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = uint64_t(kM0) * c.v[0];
    const uint64_t p1 = uint64_t(kM1) * c.v[2];
    c = Block{
        {uint32_t(p1 >> 32) ^ c.v[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c.v[3] ^ k1, uint32_t(p0)}};
  }
  return c;
}

// The block b of a draw: counter = offset + b (64 bits, high words zero), key = seed.
WICK_HOST_DEVICE inline Block draw_block(uint64_t seed, uint64_t offset, uint64_t b) {
  const uint64_t c = offset + b;
  return philox4x32<10>(Block{{uint32_t(c), uint32_t(c >> 32), 0u, 0u}}, uint32_t(seed),
                        uint32_t(seed >> 32));
}

// Elements each block feeds: uniform 32-bit draws for float/half/bfloat16, 64-bit ones for
// double and for integers, and a Box-Muller pair of 53-bit uniforms gives two normals.
template <class T>
inline constexpr int kUniformPerBlock = std::is_same_v<T, double> ? 2 : 4;
inline constexpr int kNormalPerBlock = 2;
inline constexpr int kRandIntPerBlock = 2;

// Counters a draw of n elements uses.
WICK_HOST_DEVICE inline uint64_t blocks_for(int64_t n, int per_block) {
  return uint64_t((n + per_block - 1) / per_block);
}

// ---- exactly rounded arithmetic and bit casts

WICK_HOST_DEVICE inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
WICK_HOST_DEVICE inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
WICK_HOST_DEVICE inline double sqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);  // IEEE correctly rounded, as on the device
#endif
}
WICK_HOST_DEVICE inline double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
WICK_HOST_DEVICE inline uint64_t f64_bits(double d) {
#if defined(__CUDA_ARCH__)
  return uint64_t(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
#endif
}
WICK_HOST_DEVICE inline double bits_f64(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double((long long)u);
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}
// The high 64 bits of a * b.
WICK_HOST_DEVICE inline uint64_t mul_hi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  __extension__ using U128 = unsigned __int128;
  return uint64_t((U128(a) * b) >> 64);
#endif
}

// ---- uniform bits to [0, 1)

// k-bit uniforms, exact in double: (bits >> (w - k)) * 2^-k.
WICK_HOST_DEVICE inline double unit_from_u32(uint32_t x, int k) {
  return double(x >> (32 - k)) * bits_f64(uint64_t(1023 - k) << 52);
}
WICK_HOST_DEVICE inline uint64_t join64(uint32_t lo, uint32_t hi) { return uint64_t(hi) << 32 | lo; }
WICK_HOST_DEVICE inline double unit_from_u64(uint64_t x) { return double(x >> 11) * 0x1p-53; }

// Significand bits of T: a uniform gets as many random bits as T can hold, so that
// rand() never rounds up to 1 (PyTorch does the same).
template <class T>
inline constexpr int kDigits = 24;
template <>
inline constexpr int kDigits<double> = 53;
template <>
inline constexpr int kDigits<Half> = 11;
template <>
inline constexpr int kDigits<BFloat16> = 8;

// ---- log, cos, sin from rounded + - * / only

// ln(x) for x in [2^-1022, 1]: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), and
// ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, summed to s^23 (error < 1e-18).
WICK_HOST_DEVICE inline double log_unit(double x) {
  const uint64_t bits = f64_bits(x);
  int e = int((bits >> 52) & 0x7ff) - 1023;
  double m = bits_f64((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m = mul_rn(m, 0.5);
    ++e;
  }
  const double s = div_rn(add_rn(m, -1.0), add_rn(m, 1.0));
  const double s2 = mul_rn(s, s);
  double p = 1.0 / 23;
  p = add_rn(1.0 / 21, mul_rn(s2, p));
  p = add_rn(1.0 / 19, mul_rn(s2, p));
  p = add_rn(1.0 / 17, mul_rn(s2, p));
  p = add_rn(1.0 / 15, mul_rn(s2, p));
  p = add_rn(1.0 / 13, mul_rn(s2, p));
  p = add_rn(1.0 / 11, mul_rn(s2, p));
  p = add_rn(1.0 / 9, mul_rn(s2, p));
  p = add_rn(1.0 / 7, mul_rn(s2, p));
  p = add_rn(1.0 / 5, mul_rn(s2, p));
  p = add_rn(1.0 / 3, mul_rn(s2, p));
  // ln(m) = 2s + 2s * s2 * p: the leading term is added last, for accuracy.
  const double two_s = mul_rn(2.0, s);
  const double tail = mul_rn(two_s, mul_rn(s2, p));
  // ln 2 split so that e * kLn2Hi is exact (fdlibm's constants).
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  const double de = double(e);
  return add_rn(mul_rn(de, kLn2Hi), add_rn(add_rn(mul_rn(de, kLn2Lo), tail), two_s));
}

// cos(2 pi t) and sin(2 pi t) for t in [0, 1): 4t = k + r exactly (k integer, |r| <= 1/2),
// x = r pi / 2 in [-pi/4, pi/4], Taylor series to x^17 / x^18 (error < 1e-19), then the
// quadrant k rotates (cos x, sin x).
WICK_HOST_DEVICE inline void cos_sin_2pi(double t, double& c, double& s) {
  const double q = mul_rn(t, 4.0);
  const int k = int(add_rn(q, 0.5));
  const double x = mul_rn(add_rn(q, -double(k)), 1.5707963267948966);
  const double x2 = mul_rn(x, x);
  // sin x = x (1 - x2/3! + x2^2/5! - ...), cos x = 1 - x2/2! + x2^2/4! - ...
  double ps = -1.0 / 355687428096000.0;  // -1/17!
  ps = add_rn(1.0 / 1307674368000.0, mul_rn(x2, ps));
  ps = add_rn(-1.0 / 6227020800.0, mul_rn(x2, ps));
  ps = add_rn(1.0 / 39916800.0, mul_rn(x2, ps));
  ps = add_rn(-1.0 / 362880.0, mul_rn(x2, ps));
  ps = add_rn(1.0 / 5040.0, mul_rn(x2, ps));
  ps = add_rn(-1.0 / 120.0, mul_rn(x2, ps));
  ps = add_rn(1.0 / 6.0, mul_rn(x2, ps));
  const double sn = add_rn(x, -mul_rn(x, mul_rn(x2, ps)));
  double pc = 1.0 / 6402373705728000.0;  // 1/18!
  pc = add_rn(-1.0 / 20922789888000.0, mul_rn(x2, pc));
  pc = add_rn(1.0 / 87178291200.0, mul_rn(x2, pc));
  pc = add_rn(-1.0 / 479001600.0, mul_rn(x2, pc));
  pc = add_rn(1.0 / 3628800.0, mul_rn(x2, pc));
  pc = add_rn(-1.0 / 40320.0, mul_rn(x2, pc));
  pc = add_rn(1.0 / 720.0, mul_rn(x2, pc));
  pc = add_rn(-1.0 / 24.0, mul_rn(x2, pc));
  pc = add_rn(0.5, mul_rn(x2, pc));
  const double cs = add_rn(1.0, -mul_rn(x2, pc));
  switch (k & 3) {
    case 0:
      c = cs;
      s = sn;
      break;
    case 1:
      c = -sn;
      s = cs;
      break;
    case 2:
      c = -cs;
      s = -sn;
      break;
    default:
      c = sn;
      s = -cs;
      break;
  }
}

// Two standard normals from one block by Box-Muller: u1 in (0, 1] and u2 in [0, 1), each
// with 53 random bits, so |z| reaches sqrt(2 * 53 ln 2) = 8.57.
WICK_HOST_DEVICE inline void normal_pair(const Block& r, double& z0, double& z1) {
  const double u1 = add_rn(unit_from_u64(join64(r.v[0], r.v[1])), 0x1p-53);
  const double u2 = unit_from_u64(join64(r.v[2], r.v[3]));
  const double radius = sqrt_rn(mul_rn(-2.0, log_unit(u1)));
  double c, s;
  cos_sin_2pi(u2, c, s);
  z0 = mul_rn(radius, c);
  z1 = mul_rn(radius, s);
}

// ---- values of T

// double -> T, rounding to nearest even (16-bit types through float, as everywhere in wick).
template <class T>
WICK_HOST_DEVICE inline T from_double(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (std::is_same_v<T, float>) return float(v);
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return T(int64_t(v));
}

// The largest T below v (v finite, not the lowest T); only called on a rare path.
template <class T>
WICK_HOST_DEVICE inline T step_down(T v) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t b = f64_bits(v);
    b = (b & 0x7fffffffffffffffull) == 0 ? 0x8000000000000001ull : (b >> 63 ? b + 1 : b - 1);
    return bits_f64(b);
  } else if constexpr (std::is_same_v<T, float>) {
    uint32_t b = f32_bits(v);
    b = (b & 0x7fffffffu) == 0 ? 0x80000001u : (b >> 31 ? b + 1 : b - 1);
    return bits_f32(b);
  } else {
    uint16_t b = v.x;
    b = uint16_t((b & 0x7fffu) == 0 ? 0x8001u : (b >> 15 ? b + 1 : b - 1));
    return T(b, typename T::from_bits_t{});
  }
}

// ---- one block's elements of each distribution (count <= per_block; out is contiguous)

// U[from, to): from + u * (to - from) in double, rounded to T, and kept below `to` where
// that rounding reaches it. With from = 0, to = 1 the values are exactly the k-bit u.
template <class T>
WICK_HOST_DEVICE inline void uniform_block(const Block& r, T* out, int count, double from, double to) {
  const double range = add_rn(to, -from);
  for (int j = 0; j < count; ++j) {
    double u;
    if constexpr (std::is_same_v<T, double>) u = unit_from_u64(join64(r.v[2 * j], r.v[2 * j + 1]));
    else u = unit_from_u32(r.v[j], kDigits<T>);
    T t = from_double<T>(add_rn(from, mul_rn(u, range)));
    if (from < to) {
      while (!(double(t) < to)) t = step_down(t);
    }
    out[j] = t;
  }
}

// N(mean, std^2): mean + std * z in double, rounded to T.
template <class T>
WICK_HOST_DEVICE inline void normal_block(const Block& r, T* out, int count, double mean, double std) {
  double z[2];
  normal_pair(r, z[0], z[1]);
  for (int j = 0; j < count; ++j) out[j] = from_double<T>(add_rn(mean, mul_rn(std, z[j])));
}

// Integers in [low, low + range): low + floor(x * range / 2^64) for a 64-bit uniform x
// (Lemire's multiply-shift without rejection; bias at most range / 2^64). range >= 1.
template <class T>
WICK_HOST_DEVICE inline void randint_block(const Block& r, T* out, int count, int64_t low, uint64_t range) {
  for (int j = 0; j < count; ++j) {
    const uint64_t x = join64(r.v[2 * j], r.v[2 * j + 1]);
    const int64_t v = int64_t(uint64_t(low) + mul_hi64(x, range));
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) out[j] = T(float(v));
    else if constexpr (std::is_same_v<T, bool>) out[j] = v != 0;
    else out[j] = T(v);
  }
}

}  // namespace wick::detail::philox
