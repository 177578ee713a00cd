// A LibTorch program as its users write them: autograd in C++ (using namespace
// torch::autograd, the nodes' names through grad_fn()->name(), backward with a vector,
// NoGradGuard and detach), a gradient penalty through torch::autograd::grad with
// create_graph, and custom functions derived from Function<T> (save_for_backward with an
// optional bias, saved_data holding a double) trained as a layer. Kept in LibTorch's spelling:
// the build renames it as docs/porting.md says and runs it; it exits 0 when the gradients match
// the ones written out by hand in double precision and its loss fell.
#include <torch/torch.h>
#include <cmath>
#include <iostream>

using namespace torch::autograd;

class LinearFn : public Function<LinearFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0], weight = saved[1], bias = saved[2];
    auto g = grad_outputs[0];
    return {g.mm(weight), g.t().mm(input), bias.defined() ? g.sum(0) : torch::Tensor()};
  }
};

class Scale : public Function<Scale> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, double factor) {
    ctx->saved_data["factor"] = factor;
    return x * factor;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["factor"].toDouble(), torch::Tensor()};
  }
};

bool close(const torch::Tensor& a, const torch::Tensor& b, double tol = 1e-4) {
  return torch::allclose(a.to(torch::kDouble), b.to(torch::kDouble), tol, tol);
}

int main() {
  torch::manual_seed(0);
  bool ok = true;

  // Nodes as LibTorch names them (a Scalar operand: the ...Backward1 overloads).
  auto x = torch::ones({2, 2}, torch::requires_grad());
  auto y = x + 2;
  auto z = y * y * 3;
  auto out = z.mean();
  ok &= y.grad_fn()->name() == "AddBackward1" && out.grad_fn()->name() == "MeanBackward0";
  ok &= (y * y).grad_fn()->name() == "MulBackward0" && z.grad_fn()->name() == "MulBackward1";
  out.backward();
  ok &= close(x.grad(), torch::full({2, 2}, 4.5));  // d/dx mean(3 (x + 2)^2) = 6 (x + 2) / 4
  auto v = torch::tensor({0.1, 1.0, 0.0001}, torch::kFloat);
  auto w = torch::randn(3, torch::requires_grad());
  (w * 2).backward(v);
  ok &= close(w.grad(), 2 * v);
  {
    torch::NoGradGuard no_grad;
    ok &= !w.pow(2).requires_grad();
  }
  ok &= !w.detach().requires_grad() && w.eq(w.detach()).all().item<bool>();
  std::cout << "nodes and gradients " << (ok ? "match" : "differ") << "\n";

  // A gradient penalty: the gradient of the outputs with respect to the input, kept in the graph.
  auto model = torch::nn::Linear(4, 3);
  auto input = torch::randn({3, 4}).requires_grad_(true);
  auto target = torch::randn({3, 3});
  auto output = model(input);
  auto loss = torch::nn::MSELoss()(output, target);
  auto gradient = torch::autograd::grad({output}, {input}, {torch::ones_like(output)}, /*retain_graph=*/c10::nullopt,
                                        /*create_graph=*/true)[0];
  auto penalty = torch::pow(gradient.norm(2, /*dim=*/1) - 1, 2).mean();
  (loss + penalty).backward();
  // By hand, in double: the gradient is ones @ W for every row, so the penalty does not depend on
  // the input; its weight gradient is 2 (|s| - 1) s / |s| in every row, s the column sums of W.
  auto W = model->weight.detach().to(torch::kDouble), X = input.detach().to(torch::kDouble);
  auto diff = X.mm(W.t()) + model->bias.detach().to(torch::kDouble) - target.to(torch::kDouble);
  auto s = W.sum(0);
  auto norm = s.norm().item<double>();
  auto expected_w = 2.0 / 9 * diff.t().mm(X) + (2 * (norm - 1) / norm * s).expand({3, 4});
  ok &= close(input.grad(), 2.0 / 9 * diff.mm(W));
  ok &= close(model->weight.grad(), expected_w);
  std::cout << "gradient penalty " << (ok ? "matches" : "differs") << " the hand-written gradients\n";

  // The custom functions: gradients against the built-in ops, then trained as a layer.
  auto a = torch::randn({5, 3}, torch::requires_grad());
  auto weight = torch::randn({2, 3}, torch::requires_grad());
  auto bias = torch::randn({2}, torch::requires_grad());
  Scale::apply(LinearFn::apply(a, weight, bias), 0.5).pow(2).sum().backward();
  auto a2 = a.detach().requires_grad_(), w2 = weight.detach().requires_grad_(), b2 = bias.detach().requires_grad_();
  (0.5 * (a2.mm(w2.t()) + b2)).pow(2).sum().backward();
  ok &= close(a.grad(), a2.grad()) && close(weight.grad(), w2.grad()) && close(bias.grad(), b2.grad());
  auto no_bias = LinearFn::apply(a.detach(), weight);
  ok &= no_bias.grad_fn()->name() == "LinearFnBackward";

  auto true_w = torch::tensor({{1.0, -2.0, 0.5}});
  auto inputs = torch::randn({64, 3});
  auto targets = inputs.mm(true_w.t()) + 0.3;
  auto p_w = torch::zeros({1, 3}, torch::requires_grad()), p_b = torch::zeros({1}, torch::requires_grad());
  torch::optim::SGD optimizer({p_w, p_b}, torch::optim::SGDOptions(0.1));
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    optimizer.zero_grad();
    auto l = torch::mse_loss(LinearFn::apply(inputs, p_w, p_b), targets);
    l.backward();
    optimizer.step();
    if (step == 0) first = l.item<double>();
    last = l.item<double>();
  }
  std::cout << "custom layer: loss " << first << " -> " << last << "\n";
  return (ok && last < first) ? 0 : 1;
}
