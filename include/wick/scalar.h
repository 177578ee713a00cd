// A number passed to an op (`t + 2`, `fill_(0.5)`): bool, integer or floating, as in PyTorch.
//
//   wick::Scalar s = 3;  s.is_integral() == true;  s.to<double>() == 3.0
#pragma once

#include <cstdint>
#include <iosfwd>
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
  // The dtype PyTorch gives this value as a 0-d tensor: bool, int64 or the default float.
  Dtype dtype() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace wick
