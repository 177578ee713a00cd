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

// ---- in place: self's old history becomes input 0 of the new node

Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_inplace(self, "add_");
  forward([&] { self.add_(other, alpha); });
  return record_inplace("AddBackward0", self, {other}, {}, [alpha](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs(1) ? scaled(c.grad(), alpha) : Tensor()};
  });
}

Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  check_inplace(self, "add_");
  forward([&] { self.add_(other, alpha); });
  return record_inplace("AddBackward1", self, {}, {},
                        [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_inplace(self, "sub_");
  forward([&] { self.sub_(other, alpha); });
  return record_inplace("SubBackward0", self, {other}, {}, [alpha](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs(1) ? c.grad() * (-alpha.to<double>()) : Tensor()};
  });
}

Tensor& sub_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  check_inplace(self, "sub_");
  forward([&] { self.sub_(other, alpha); });
  return record_inplace("SubBackward1", self, {}, {},
                        [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  check_inplace(self, "mul_");
  Tensor old = other.requires_grad() ? forward([&] { return self.clone(); }) : Tensor();
  forward([&] { self.mul_(other); });
  return record_inplace("MulBackward0", self, {other}, {old, other}, [](BackwardContext& c) -> variable_list {
    return {c.needs(0) ? c.grad() * c.saved(1) : Tensor(), c.needs(1) ? c.grad() * c.saved(0) : Tensor()};
  });
}

Tensor& mul_(Tensor& self, const Scalar& other) {
  check_inplace(self, "mul_");
  forward([&] { self.mul_(other); });
  return record_inplace("MulBackward1", self, {}, {},
                        [other](BackwardContext& c) -> variable_list { return {c.grad() * other}; });
}

Tensor& div_(Tensor& self, const Tensor& other) {
  check_inplace(self, "div_");
  Tensor old = other.requires_grad() ? forward([&] { return self.clone(); }) : Tensor();
  forward([&] { self.div_(other); });
  return record_inplace("DivBackward0", self, {other}, {old, other}, [](BackwardContext& c) -> variable_list {
    Tensor b = c.saved(1);
    return {c.needs(0) ? c.grad() / b : Tensor(), c.needs(1) ? -c.grad() * c.saved(0) / (b * b) : Tensor()};
  });
}

Tensor& div_(Tensor& self, const Scalar& other) {
  check_inplace(self, "div_");
  forward([&] { self.div_(other); });
  return record_inplace("DivBackward1", self, {}, {},
                        [other](BackwardContext& c) -> variable_list { return {c.grad() / other}; });
}

}  // namespace wick::autograd
