// A non-owning view of int64 sizes: takes {2, 3}, std::vector, or a tensor's sizes().
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <vector>

#include "wick/detail/small_vector.h"

namespace wick {

using DimVector = detail::SmallVector<int64_t, 6>;

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t* p, size_t n) : p_(p), n_(n) {}
  // The initializer list must outlive the call it is passed to (it does, as an argument).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  constexpr IntArrayRef(std::initializer_list<int64_t> il) : p_(il.begin()), n_(il.size()) {}
#pragma GCC diagnostic pop
  IntArrayRef(const std::vector<int64_t>& v) : p_(v.data()), n_(v.size()) {}
  template <size_t N>
  IntArrayRef(const detail::SmallVector<int64_t, N>& v) : p_(v.data()), n_(v.size()) {}
  constexpr IntArrayRef(const int64_t& single) : p_(&single), n_(1) {}

  constexpr const int64_t* data() const { return p_; }
  constexpr size_t size() const { return n_; }
  constexpr bool empty() const { return n_ == 0; }
  constexpr const int64_t* begin() const { return p_; }
  constexpr const int64_t* end() const { return p_ + n_; }
  constexpr int64_t operator[](size_t i) const { return p_[i]; }
  constexpr int64_t back() const { return p_[n_ - 1]; }
  constexpr int64_t front() const { return p_[0]; }
  // LibTorch's ArrayRef::slice: the elements from n on, or the m elements from n on (clamped to
  // the end where n + m runs past it: a view never reads outside the array).
  constexpr IntArrayRef slice(size_t n) const { return n >= n_ ? IntArrayRef(p_ + n_, 0) : IntArrayRef(p_ + n, n_ - n); }
  constexpr IntArrayRef slice(size_t n, size_t m) const {
    const IntArrayRef rest = slice(n);
    return IntArrayRef(rest.p_, m < rest.n_ ? m : rest.n_);
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool equals(IntArrayRef o) const {
    if (n_ != o.n_) return false;
    for (size_t i = 0; i < n_; ++i)
      if (p_[i] != o.p_[i]) return false;
    return true;
  }
  friend bool operator==(IntArrayRef a, IntArrayRef b) { return a.equals(b); }

 private:
  const int64_t* p_ = nullptr;
  size_t n_ = 0;
};

// Prints as PyTorch prints sizes in C++: [2, 3]
std::ostream& operator<<(std::ostream& os, IntArrayRef a);

// LibTorch's other spellings: IntList (older) and ArrayRef<int64_t>, the one element type wick's
// sizes take.
using IntList = IntArrayRef;
namespace detail {
template <class T>
struct ArrayRefOf;
template <>
struct ArrayRefOf<int64_t> {
  using type = IntArrayRef;
};
}  // namespace detail
template <class T>
using ArrayRef = typename detail::ArrayRefOf<T>::type;

}  // namespace wick
