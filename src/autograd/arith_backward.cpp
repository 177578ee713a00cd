// Backward formulas of + - * / (new and in-place forms). The engine sums broadcast dims away
// and casts to each input's dtype, so formulas work in the output's shape and dtype.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

bool is_one(const Scalar& s) { return s.to<double>() == 1.0; }
Tensor scaled(const Tensor& g, const Scalar& s) { return is_one(s) ? g : g * s; }
Tensor if_needed(bool r, const Tensor& t) { return r ? t : Tensor(); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out = forward([&] { return wick::add(a, b, alpha); });
  return record("AddBackward0", {a, b}, out, {}, [alpha](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs(1) ? scaled(c.grad(), alpha) : Tensor()};
  });
}

Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  Tensor out = forward([&] { return wick::add(a, b, alpha); });
  return record("AddBackward1", {a}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out = forward([&] { return wick::sub(a, b, alpha); });
  return record("SubBackward0", {a, b}, out, {}, [alpha](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs(1) ? c.grad() * (-alpha.to<double>()) : Tensor()};
  });
}

Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  Tensor out = forward([&] { return wick::sub(a, b, alpha); });
  return record("SubBackward1", {a}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = forward([&] { return wick::mul(a, b); });
  return record(
      "MulBackward0", {a, b}, out, {if_needed(b.requires_grad(), a), if_needed(a.requires_grad(), b)},
      [](BackwardContext& c) -> variable_list {
        return {c.needs(0) ? c.grad() * c.saved(1) : Tensor(), c.needs(1) ? c.grad() * c.saved(0) : Tensor()};
      });
}

Tensor mul(const Tensor& a, const Scalar& b) {
  Tensor out = forward([&] { return wick::mul(a, b); });
  return record("MulBackward1", {a}, out, {},
                [b](BackwardContext& c) -> variable_list { return {c.grad() * b}; });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = forward([&] { return wick::div(a, b); });
  return record("DivBackward0", {a, b}, out, {if_needed(b.requires_grad(), a), b},
                [](BackwardContext& c) -> variable_list {
                  Tensor bb = c.saved(1);
                  return {c.needs(0) ? c.grad() / bb : Tensor(),
                          c.needs(1) ? -c.grad() * c.saved(0) / (bb * bb) : Tensor()};
                });
}

Tensor div(const Tensor& a, const Scalar& b) {
  Tensor out = forward([&] { return wick::div(a, b); });
  return record("DivBackward1", {a}, out, {},
                [b](BackwardContext& c) -> variable_list { return {c.grad() / b}; });
}

// ---- in place: the out-of-place op recorded on self, then adopted (see inplace in hooks.h)

Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  return inplace(self, "add_", [&](const Tensor& t) { return autograd::add(t, other, alpha); });
}
Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  return inplace(self, "add_", [&](const Tensor& t) { return autograd::add(t, other, alpha); });
}
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  return inplace(self, "sub_", [&](const Tensor& t) { return autograd::sub(t, other, alpha); });
}
Tensor& sub_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  return inplace(self, "sub_", [&](const Tensor& t) { return autograd::sub(t, other, alpha); });
}
Tensor& mul_(Tensor& self, const Tensor& other) {
  return inplace(self, "mul_", [&](const Tensor& t) { return autograd::mul(t, other); });
}
Tensor& mul_(Tensor& self, const Scalar& other) {
  return inplace(self, "mul_", [&](const Tensor& t) { return autograd::mul(t, other); });
}
Tensor& div_(Tensor& self, const Tensor& other) {
  return inplace(self, "div_", [&](const Tensor& t) { return autograd::div(t, other); });
}
Tensor& div_(Tensor& self, const Scalar& other) {
  return inplace(self, "div_", [&](const Tensor& t) { return autograd::div(t, other); });
}

}  // namespace wick::autograd
