// WICK_ARG(type, name) = default;  declares an option with a chaining setter and a getter,
// as LibTorch's TORCH_ARG: nn::Conv2dOptions(1, 8, 3).stride(2).padding(1).
#pragma once

#define WICK_ARG(T, name)                   \
 public:                                    \
  auto& name(const T& new_##name) {         \
    name##_ = new_##name;                   \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_
