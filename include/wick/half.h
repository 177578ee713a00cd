// Host types for 16-bit floats: storage is the IEEE binary16 / bfloat16 bit pattern;
// conversion from float rounds to nearest even; arithmetic goes through float.
//
//   wick::Half h = 0.1f;  float f = h;   // 0.0999755859375
#pragma once

#include <cstdint>
#include <cstring>
#include <iosfwd>

#if defined(__CUDACC__)
#define WICK_HOST_DEVICE __host__ __device__
#else
#define WICK_HOST_DEVICE
#endif

namespace wick {
namespace detail {

WICK_HOST_DEVICE inline uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
WICK_HOST_DEVICE inline float bits_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

WICK_HOST_DEVICE inline uint16_t f32_to_f16_bits(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));  // inf/nan
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: overflow to inf
  if (ax < 0x38800000u) {  // result is subnormal or zero: add 0.5 to shift the mantissa, let FP round
    float r = bits_f32(ax) + 0.5f;
    return uint16_t(sign | (f32_bits(r) - 0x3f000000u));
  }
  uint32_t mant_odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (ax >> 13));
}

WICK_HOST_DEVICE inline float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    float v = float(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

WICK_HOST_DEVICE inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

WICK_HOST_DEVICE inline float bf16_bits_to_f32(uint16_t b) { return bits_f32(uint32_t(b) << 16); }

}  // namespace detail

struct alignas(2) Half {
  uint16_t x = 0;
  Half() = default;
  struct from_bits_t {};
  WICK_HOST_DEVICE constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  WICK_HOST_DEVICE Half(float f) : x(detail::f32_to_f16_bits(f)) {}
  WICK_HOST_DEVICE operator float() const { return detail::f16_bits_to_f32(x); }
};

struct alignas(2) BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  struct from_bits_t {};
  WICK_HOST_DEVICE constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  WICK_HOST_DEVICE BFloat16(float f) : x(detail::f32_to_bf16_bits(f)) {}
  WICK_HOST_DEVICE operator float() const { return detail::bf16_bits_to_f32(x); }
};

std::ostream& operator<<(std::ostream& os, Half h);
std::ostream& operator<<(std::ostream& os, BFloat16 h);

}  // namespace wick
