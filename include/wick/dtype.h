// Element types and PyTorch's type promotion.
//
//   wick::promote_types(wick::kInt64, wick::kFloat16) == wick::kFloat16
//   std::cout << wick::kBFloat16;   // bfloat16
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "wick/error.h"
#include "wick/half.h"

namespace wick {

enum class Dtype : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64,
  // c10's names of the same values (ScalarType::Long ...).
  Byte = UInt8, Char = Int8, Short = Int16, Int = Int32, Long = Int64, Half = Float16, Float = Float32,
  Double = Float64,
};
inline constexpr int kNumDtypes = 10;
inline constexpr Dtype kBool = Dtype::Bool, kUInt8 = Dtype::UInt8, kInt8 = Dtype::Int8,
                       kInt16 = Dtype::Int16, kInt32 = Dtype::Int32, kInt64 = Dtype::Int64,
                       kFloat16 = Dtype::Float16, kBFloat16 = Dtype::BFloat16,
                       kFloat32 = Dtype::Float32, kFloat64 = Dtype::Float64;
// PyTorch's aliases.
inline constexpr Dtype kByte = kUInt8, kChar = kInt8, kShort = kInt16, kInt = kInt32,
                       kLong = kInt64, kHalf = kFloat16, kFloat = kFloat32, kDouble = kFloat64;
// LibTorch's short aliases (docs/porting.md).
inline constexpr Dtype kF16 = kFloat16, kBF16 = kBFloat16, kF32 = kFloat32, kF64 = kFloat64;
inline constexpr Dtype kU8 = kUInt8, kI8 = kInt8, kI16 = kInt16, kI32 = kInt32, kI64 = kInt64;
// LibTorch's name of the type (c10::ScalarType).
using ScalarType = Dtype;

constexpr int element_size(Dtype t) {
  constexpr int sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[int(t)];
}
constexpr bool is_floating_point(Dtype t) { return t >= kFloat16; }
constexpr bool is_integral(Dtype t, bool include_bool = false) {
  return t == kBool ? include_bool : t < kFloat16;
}
// Name as PyTorch prints it without "torch.": "float32", "int64", ...
std::string_view name(Dtype t);
std::ostream& operator<<(std::ostream& os, Dtype t);

// PyTorch's promote_types: the smallest type that holds both (bool < ints < floats).
Dtype promote_types(Dtype a, Dtype b);

// The default floating dtype of factories (float32 unless set).
void set_default_dtype(Dtype t);
Dtype get_default_dtype();

// The C++ type of each dtype: CppType<kFloat32> is float.
template <Dtype T> struct CppTypeOf;
template <> struct CppTypeOf<kBool> { using type = bool; };
template <> struct CppTypeOf<kUInt8> { using type = uint8_t; };
template <> struct CppTypeOf<kInt8> { using type = int8_t; };
template <> struct CppTypeOf<kInt16> { using type = int16_t; };
template <> struct CppTypeOf<kInt32> { using type = int32_t; };
template <> struct CppTypeOf<kInt64> { using type = int64_t; };
template <> struct CppTypeOf<kFloat16> { using type = Half; };
template <> struct CppTypeOf<kBFloat16> { using type = BFloat16; };
template <> struct CppTypeOf<kFloat32> { using type = float; };
template <> struct CppTypeOf<kFloat64> { using type = double; };
template <Dtype T> using CppType = typename CppTypeOf<T>::type;

template <class T> constexpr Dtype dtype_of();
template <> constexpr Dtype dtype_of<bool>() { return kBool; }
template <> constexpr Dtype dtype_of<uint8_t>() { return kUInt8; }
template <> constexpr Dtype dtype_of<int8_t>() { return kInt8; }
template <> constexpr Dtype dtype_of<int16_t>() { return kInt16; }
template <> constexpr Dtype dtype_of<int32_t>() { return kInt32; }
template <> constexpr Dtype dtype_of<int64_t>() { return kInt64; }
template <> constexpr Dtype dtype_of<Half>() { return kFloat16; }
template <> constexpr Dtype dtype_of<BFloat16>() { return kBFloat16; }
template <> constexpr Dtype dtype_of<float>() { return kFloat32; }
template <> constexpr Dtype dtype_of<double>() { return kFloat64; }

}  // namespace wick

// WICK_DISPATCH_ALL(dtype, "op", [&]<class scalar_t>() { ... }): call the lambda with the C++
// type of dtype. Narrower forms below throw TypeError naming the op for dtypes they exclude.
// (OpenMP pragmas can't appear inside the lambda: macro arguments can't hold #pragma; call a
// template function from it instead.)
#define WICK_DISPATCH_CASE_(D) \
  case ::wick::D: return wick_dispatch_f_.template operator()<::wick::CppType<::wick::D>>();

#define WICK_DISPATCH_ALL(dtype, op, ...)                                                    \
  [&]() -> decltype(auto) {                                                                  \
    auto&& wick_dispatch_f_ = (__VA_ARGS__);                                                 \
    switch (dtype) {                                                                         \
      WICK_DISPATCH_CASE_(kBool) WICK_DISPATCH_CASE_(kUInt8) WICK_DISPATCH_CASE_(kInt8)      \
      WICK_DISPATCH_CASE_(kInt16) WICK_DISPATCH_CASE_(kInt32) WICK_DISPATCH_CASE_(kInt64)    \
      WICK_DISPATCH_CASE_(kFloat16) WICK_DISPATCH_CASE_(kBFloat16)                           \
      WICK_DISPATCH_CASE_(kFloat32) WICK_DISPATCH_CASE_(kFloat64)                            \
    }                                                                                        \
    ::wick::detail::raise<::wick::TypeError>(op, "unsupported dtype ", dtype);              \
  }()

#define WICK_DISPATCH_NUMERIC(dtype, op, ...)                                                \
  [&]() -> decltype(auto) {                                                                  \
    auto&& wick_dispatch_f_ = (__VA_ARGS__);                                                 \
    switch (dtype) {                                                                         \
      WICK_DISPATCH_CASE_(kUInt8) WICK_DISPATCH_CASE_(kInt8) WICK_DISPATCH_CASE_(kInt16)     \
      WICK_DISPATCH_CASE_(kInt32) WICK_DISPATCH_CASE_(kInt64) WICK_DISPATCH_CASE_(kFloat16)  \
      WICK_DISPATCH_CASE_(kBFloat16) WICK_DISPATCH_CASE_(kFloat32)                           \
      WICK_DISPATCH_CASE_(kFloat64)                                                          \
      default: break;                                                                        \
    }                                                                                        \
    ::wick::detail::raise<::wick::TypeError>(op, "not implemented for '", dtype, "'");      \
  }()

// bool and the integer dtypes (the bitwise ops).
#define WICK_DISPATCH_INTEGRAL(dtype, op, ...)                                               \
  [&]() -> decltype(auto) {                                                                  \
    auto&& wick_dispatch_f_ = (__VA_ARGS__);                                                 \
    switch (dtype) {                                                                         \
      WICK_DISPATCH_CASE_(kBool) WICK_DISPATCH_CASE_(kUInt8) WICK_DISPATCH_CASE_(kInt8)      \
      WICK_DISPATCH_CASE_(kInt16) WICK_DISPATCH_CASE_(kInt32) WICK_DISPATCH_CASE_(kInt64)    \
      default: break;                                                                        \
    }                                                                                        \
    ::wick::detail::raise<::wick::TypeError>(op, "not implemented for '", dtype, "'");      \
  }()

#define WICK_DISPATCH_FLOATING(dtype, op, ...)                                               \
  [&]() -> decltype(auto) {                                                                  \
    auto&& wick_dispatch_f_ = (__VA_ARGS__);                                                 \
    switch (dtype) {                                                                         \
      WICK_DISPATCH_CASE_(kFloat16) WICK_DISPATCH_CASE_(kBFloat16)                           \
      WICK_DISPATCH_CASE_(kFloat32) WICK_DISPATCH_CASE_(kFloat64)                            \
      default: break;                                                                        \
    }                                                                                        \
    ::wick::detail::raise<::wick::TypeError>(op, "not implemented for '", dtype, "'");      \
  }()
