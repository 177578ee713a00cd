// Tensor indexing as LibTorch spells Python's t[...]: Tensor::index and Tensor::index_put_ take a
// list of TensorIndex, each an integer, a Slice, None, Ellipsis ("..."), a bool, or a tensor.
//
//   using namespace wick::indexing;
//   x.index({Slice(), None, Ellipsis, 1})        // x[:, None, ..., 1]: a view
//   x.index({Slice(1, None, 2), idx})            // x[1::2, idx]: idx an integer tensor (a gather)
//   x.index({mask})                              // x[mask]: mask a bool tensor
//   x.index_put_({mask}, 0);                     // x[mask] = 0
//   x.index_put_({Slice(), idx}, v, /*accumulate=*/true);
//
// PyTorch's rules: integers, slices, None, Ellipsis and bools alone give a view; integer and bool
// tensors (advanced indices) give a copy. The advanced indices broadcast together; when they are
// next to each other the result's dims they make stand in their place, else they come first. A
// bool tensor stands for its nonzero() columns (one advanced index per dim it covers).
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

#include "wick/tensor.h"

namespace wick::indexing {

// Python's None in an index: a new dim of size 1 (and Slice's missing bound).
inline constexpr std::nullopt_t None = std::nullopt;

// Python's ... in an index: as many full slices as the other indices leave dims.
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

// Python's start:stop:step; a missing bound is the dim's start or end, the step defaults to 1.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

enum class TensorIndexType : uint8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };

// One entry of an index list.
class TensorIndex {
 public:
  TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}
  TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}
  // "..." (ValueError "[TensorIndex] ..." for any other string).
  TensorIndex(const char* s);
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T integer) : type_(TensorIndexType::Integer), integer_(int64_t(integer)) {}
  template <class T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T boolean) : type_(TensorIndexType::Boolean), boolean_(boolean) {}
  TensorIndex(Slice slice) : type_(TensorIndexType::Slice), slice_(slice) {}
  TensorIndex(Tensor tensor) : type_(TensorIndexType::Tensor), tensor_(std::move(tensor)) {}

  TensorIndexType type() const { return type_; }
  bool is_none() const { return type_ == TensorIndexType::None; }
  bool is_ellipsis() const { return type_ == TensorIndexType::Ellipsis; }
  bool is_integer() const { return type_ == TensorIndexType::Integer; }
  bool is_boolean() const { return type_ == TensorIndexType::Boolean; }
  bool is_slice() const { return type_ == TensorIndexType::Slice; }
  bool is_tensor() const { return type_ == TensorIndexType::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  TensorIndexType type_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace wick::indexing
