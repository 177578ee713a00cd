// A tour of autograd (LibTorch's autograd example, in wick): gradients of a scalar, turning
// requires_grad on, the gradient of a non-scalar output given a gradient argument, no_grad and
// detach, custom autograd Functions (one saving tensors, one saving a number), and double
// backward with create_graph (a second derivative, and a gradient penalty). Every value is exact
// in binary, and the program checks each one as it prints it: it exits 1 on the first mismatch.
// It prints
//   out = z.mean(): tensor(27., grad_fn=<MeanBackward0>)
//   x.grad: tensor([[4.5000, 4.5000],
//           [4.5000, 4.5000]])
//   before requires_grad_: false; after: true, grad_fn SumBackward0
//   y.backward(v): tensor([2., 8., 3.])
//   x * x: requires_grad = true; under NoGradGuard: false
//   x.detach(): requires_grad = false, same values: true
//   LinearFunction: tensor([[ 2.5000, -2.0000],
//           [ 5.5000, -4.0000]], grad_fn=<LinearFunctionBackward>)
//   its gradients equal F::linear's: true true true
//   MulConstant: x.grad tensor([5.5000, 5.5000])
//   d(x^3)/dx at 3: tensor([27.], grad_fn=<AddBackward0>); d2(x^3)/dx2: tensor([18.])
//   gradient penalty's gradient: tensor([ 1., -4.,  6.])
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <wick/wick.h>

namespace F = wick::nn::functional;
using wick::Tensor;
using wick::autograd::AutogradContext;
using wick::autograd::variable_list;

// Exits 1 when a printed value is not the one this file says it is.
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::cout << "unexpected value: " << what << "\n";
    std::exit(1);
  }
}
bool same(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && a.eq(b).all().item<bool>(); }

// y = x weight^T + bias, with its gradients written by hand; it saves its tensors with
// save_for_backward and skips the gradients nobody asked for.
struct LinearFunction : wick::autograd::Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& input, const Tensor& weight, const Tensor& bias) {
    ctx->save_for_backward({input, weight});
    return input.mm(weight.t()) + bias;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list saved = ctx->get_saved_variables();
    const Tensor& input = saved[0];
    const Tensor& weight = saved[1];
    const Tensor& grad = grad_outputs[0];
    Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(0)) grad_input = grad.mm(weight);
    if (ctx->needs_input_grad(1)) grad_weight = grad.t().mm(input);
    if (ctx->needs_input_grad(2)) grad_bias = grad.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

// y = x * constant: a number kept in saved_data rather than a tensor.
struct MulConstant : wick::autograd::Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double constant) {
    ctx->saved_data["constant"] = constant;
    return x * constant;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // one gradient per forward argument: none for the constant
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), Tensor()};
  }
};

int main() {
  std::cout << std::boolalpha;

  // The gradient of a scalar: out = mean(3 (x + 2)^2), d out / dx = 1.5 (x + 2) = 4.5 at x = 1.
  Tensor x = wick::ones({2, 2}, wick::TensorOptions().requires_grad(true));
  Tensor y = x + 2;
  Tensor z = y * y * 3;
  Tensor out = z.mean();
  std::cout << "out = z.mean(): " << out << "\n";
  check(out.item<double>() == 27 && out.grad_fn()->name() == "MeanBackward0", "out");
  out.backward();
  std::cout << "x.grad: " << x.grad() << "\n";
  check(same(x.grad(), wick::full({2, 2}, 4.5)), "x.grad");

  // requires_grad_ turns recording on for a tensor made without it.
  Tensor a = wick::tensor({{1., 2.}, {3., 4.}});
  const bool before = (a * a).sum().requires_grad();
  a.requires_grad_(true);
  Tensor b = (a * a).sum();
  std::cout << "before requires_grad_: " << before << "; after: " << b.requires_grad() << ", grad_fn "
            << b.grad_fn()->name() << "\n";
  check(!before && b.requires_grad() && b.grad_fn()->name() == "SumBackward0", "requires_grad_");

  // A non-scalar output needs the gradient of what it feeds: y.backward(v) gives v * dy/dx.
  Tensor x3 = wick::tensor({1., 2., 3.}).requires_grad_();
  Tensor y3 = x3 * x3 * 2;  // dy/dx = 4x
  Tensor v = wick::tensor({0.5, 1., 0.25});
  y3.backward(v);
  std::cout << "y.backward(v): " << x3.grad() << "\n";
  check(same(x3.grad(), wick::tensor({2., 8., 3.})), "y.backward(v)");

  // no_grad and detach: results that record nothing.
  const bool recorded = (x3 * x3).requires_grad();
  bool under_no_grad;
  {
    wick::NoGradGuard no_grad;
    under_no_grad = (x3 * x3).requires_grad();
  }
  std::cout << "x * x: requires_grad = " << recorded << "; under NoGradGuard: " << under_no_grad << "\n";
  check(recorded && !under_no_grad, "no_grad");
  Tensor detached = x3.detach();
  std::cout << "x.detach(): requires_grad = " << detached.requires_grad()
            << ", same values: " << same(detached, x3) << "\n";
  check(!detached.requires_grad() && same(detached, x3), "detach");

  // A custom Function against the built-in linear: the same values and gradients.
  Tensor input = wick::tensor({{1., 2.}, {3., 4.}}).requires_grad_();
  Tensor weight = wick::tensor({{0.5, 1.}, {-1., 0.}}).requires_grad_();
  Tensor bias = wick::tensor({0., -1.}).requires_grad_();
  Tensor custom = LinearFunction::apply(input, weight, bias);
  std::cout << "LinearFunction: " << custom << "\n";
  check(same(custom, wick::tensor({{2.5, -2.}, {5.5, -4.}})) &&
            custom.grad_fn()->name() == "LinearFunctionBackward",
        "LinearFunction");
  Tensor grad_out = wick::tensor({{1., 0.5}, {-2., 0.25}});
  variable_list by_hand = wick::autograd::grad({custom}, {input, weight, bias}, {grad_out});
  Tensor builtin = F::linear(input, weight, bias);
  variable_list by_wick = wick::autograd::grad({builtin}, {input, weight, bias}, {grad_out});
  const bool g0 = same(by_hand[0], by_wick[0]), g1 = same(by_hand[1], by_wick[1]),
             g2 = same(by_hand[2], by_wick[2]);
  std::cout << "its gradients equal F::linear's: " << g0 << " " << g1 << " " << g2 << "\n";
  check(g0 && g1 && g2, "LinearFunction's gradients");

  Tensor xm = wick::tensor({1., 2.}).requires_grad_();
  MulConstant::apply(xm, 5.5).sum().backward();
  std::cout << "MulConstant: x.grad " << xm.grad() << "\n";
  check(same(xm.grad(), wick::tensor({5.5, 5.5})), "MulConstant");

  // Double backward: the gradient, made with create_graph, is differentiable in its turn.
  Tensor t = wick::tensor({3.}).requires_grad_();
  Tensor cube = t * t * t;
  Tensor dt = wick::autograd::grad({cube}, {t}, {}, std::nullopt, /*create_graph=*/true)[0];  // 3 t^2
  Tensor d2t = wick::autograd::grad({dt}, {t})[0];                                            // 6 t
  std::cout << "d(x^3)/dx at 3: " << dt << "; d2(x^3)/dx2: " << d2t << "\n";
  check(dt.item<double>() == 27 && d2t.item<double>() == 18, "double backward");

  // A gradient penalty (WGAN-GP's recipe): the squared norm of d out / d input, minimised over
  // w. out = sum(input * w) has d out / d input = w (per row), so penalty = rows * |w|^2 and
  // d penalty / d w = 2 rows w = 2 w for one row.
  Tensor w = wick::tensor({0.5, -2., 3.}).requires_grad_();
  Tensor point = wick::tensor({{1., 1., 1.}}).requires_grad_();
  Tensor score = (point * w).sum();
  Tensor grad_point = wick::autograd::grad({score}, {point}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor penalty = grad_point.pow(2).sum();
  penalty.backward();
  std::cout << "gradient penalty's gradient: " << w.grad() << "\n";
  check(same(w.grad(), wick::tensor({1., -4., 6.})), "gradient penalty");
  return 0;
}
