// A number passed to an op (`t + 2`, `fill_(0.5)`): bool, integer or floating, as in PyTorch.
//
//   wick::Scalar s = 3;  s.is_integral() == true;  s.to<double>() == 3.0
#pragma once

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <type_traits>

#include "wick/dtype.h"

namespace wick {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool v) : kind_(Kind::Bool) { i_ = v; }
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) { i_ = int64_t(v); }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float) { d_ = double(v); }
  Scalar(Half v) : Scalar(double(float(v))) {}
  Scalar(BFloat16 v) : Scalar(double(float(v))) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }

  // The value converted to T (C++ conversion rules; 16-bit floats round to nearest even).
  template <class T>
  T to() const {
    if (kind_ == Kind::Float) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(d_));
      else return T(d_);
    }
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(i_));
    else return T(i_);
  }
  // Whether the value converts to T without overflow, by PyTorch's rule: a negative integer may
  // wrap into an unsigned type whose range holds its magnitude (-1 -> 255 in uint8), NaN and
  // infinities go to floating types only.
  template <class T>
  bool fits() const {
    if constexpr (std::is_same_v<T, bool>) {
      return true;
    } else if constexpr (std::is_integral_v<T>) {
      using L = std::numeric_limits<T>;
      if (kind_ == Kind::Float) {
        if (!(d_ >= double(L::lowest()))) return false;  // also NaN and -inf
        return L::digits < 53 ? d_ <= double(L::max()) : d_ < std::ldexp(1.0, L::digits);
      }
      if constexpr (!L::is_signed) {
        const uint64_t mag = i_ < 0 ? uint64_t(0) - uint64_t(i_) : uint64_t(i_);
        return mag <= uint64_t(L::max());
      } else {
        return i_ >= int64_t(L::lowest()) && i_ <= int64_t(L::max());
      }
    } else {
      double mx;
      if constexpr (std::is_same_v<T, Half>) mx = 65504.0;
      else if constexpr (std::is_same_v<T, BFloat16>) mx = 3.3895313892515355e38;
      else mx = double(std::numeric_limits<T>::max());
      const double v = kind_ == Kind::Float ? d_ : double(i_);
      if (std::isnan(v) || std::isinf(v)) return true;
      return v >= -mx && v <= mx;
    }
  }
  // to<T>() after checking fits<T>(): ValueError "[op] value cannot be converted to type T
  // without overflow" (PyTorch's wording) when it does not.
  template <class T>
  T checked_to(const char* op) const {
    if (!fits<T>()) [[unlikely]]
      detail::raise<ValueError>(op, "value cannot be converted to type ", type_name<T>(),
                                " without overflow");
    return to<T>();
  }
  // LibTorch's spellings of checked_to (c10::Scalar::toFloat, ...): t.item().toFloat().
  bool toBool() const { return checked_to<bool>("toBool"); }
  int32_t toInt() const { return checked_to<int32_t>("toInt"); }
  int64_t toLong() const { return checked_to<int64_t>("toLong"); }
  float toFloat() const { return checked_to<float>("toFloat"); }
  double toDouble() const { return checked_to<double>("toDouble"); }
  // The dtype PyTorch gives this value as a 0-d tensor: bool, int64 or the default float.
  Dtype dtype() const;

 private:
  template <class T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<T, Half>) return "c10::Half";
    else if constexpr (std::is_same_v<T, BFloat16>) return "c10::BFloat16";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, double>) return "double";
    else return "the requested type";
  }
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace wick
