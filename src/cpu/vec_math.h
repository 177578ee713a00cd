// exp for float that the compiler vectorizes: glibc's expf is a scalar call (about 4 ns), which
// made exp, sigmoid, silu and softmax compute-bound at a few hundred MB/s per core. This one
// is branch-free arithmetic, so loops over it become SIMD code.
//
// Method (Cephes' expf): exp(x) = 2^n * exp(r) with n = round(x / ln 2) and r = x - n ln 2
// (ln 2 split in two parts so r is exact), exp(r) by a degree-6 polynomial on |r| <= ln2 / 2;
// max error about 1 ulp. 2^n is applied as two factors 2^(n/2) * 2^(n - n/2), so results down
// in the subnormal range and overflow to inf come out right. Alternatives: a lookup table
// (gathers don't vectorize on SSE2/AVX2), or -ffast-math with libmvec (changes NaN and
// rounding rules for the whole file).
#pragma once

#include <cstdint>
#include <cstring>

// A hot float loop compiled three times, for AVX-512, AVX2 and the baseline, the version run
// chosen once at load time from the CPU's features (GCC's target_clones, an ifunc): the library
// itself is built for the baseline x86-64, which has only SSE2. Elsewhere (clang's sanitizer
// and fuzzing builds, other architectures) one version.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WICK_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WICK_CPU_CLONES
#endif

namespace wick::detail::cpu {

inline float pow2i(uint32_t n) {  // 2^n for n in [-126, 127] (two's complement)
  const uint32_t bits = (n + 127u) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline float exp_f32(float x) {
  // Clamps select between values only, so they compile branch-free; a NaN passes through
  // the clamps and the arithmetic and comes out NaN.
  float c = x < -104.0f ? -104.0f : x;  // below: the result rounds to 0
  c = c > 88.8f ? 88.8f : c;            // above: it overflows to inf
  // n = round(c / ln 2): adding 1.5 * 2^23 rounds to an integer kept in the low mantissa
  // bits, which also gives n as an integer without a float-to-int conversion.
  const float t = c * 1.44269504088896341f + 12582912.0f;
  const float n = t - 12582912.0f;
  uint32_t tb;
  std::memcpy(&tb, &t, 4);
  const uint32_t ni = tb - 0x4B400000u, n1 = uint32_t(int32_t(ni) >> 1);
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  return y * pow2i(n1) * pow2i(ni - n1);
}

// exp in the arithmetic type M: the vectorizable form for float, libm for double.
template <class M>
inline M vexp(M x) {
  if constexpr (sizeof(M) == 4) return exp_f32(x);
  else return __builtin_exp(x);
}

}  // namespace wick::detail::cpu
