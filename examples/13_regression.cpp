// Polynomial regression (PyTorch's examples/regression): a Linear layer on the features x, x^2,
// x^3, x^4 learns a random degree-4 polynomial from generated batches, with smooth_l1_loss and
// plain gradient descent written out by hand. It prints the loss it started from, the loss it
// stopped at and after how many batches, and the learned and the actual polynomial; it exits 1
// unless the loss fell below 1e-3 (a hundredth of a percent of where it started, or less).
#include <cstdio>
#include <iostream>
#include <string>
#include <tuple>

#include <wick/wick.h>

namespace F = wick::nn::functional;

constexpr int64_t kDegree = 4;

// [x, x^2, x^3, x^4] for a column x [n, 1].
wick::Tensor make_features(const wick::Tensor& x) {
  std::vector<wick::Tensor> powers;
  for (int64_t i = 1; i <= kDegree; ++i) powers.push_back(x.pow(i));
  return wick::cat(powers, 1);
}

// "y = +1.23 x^1 -0.45 x^2 ... +0.67"
std::string describe(const wick::Tensor& w, const wick::Tensor& b) {
  std::string s = "y =";
  char term[64];
  for (int64_t i = 0; i < kDegree; ++i) {
    std::snprintf(term, sizeof term, " %+.2f x^%lld", w[i].item<double>(), static_cast<long long>(i + 1));
    s += term;
  }
  std::snprintf(term, sizeof term, " %+.2f", b[0].item<double>());
  return s + term;
}

int main() {
  wick::manual_seed(13);
  // The polynomial to find: weights and bias drawn once.
  const wick::Tensor w_target = wick::randn({kDegree, 1}) * 5;
  const wick::Tensor b_target = wick::randn({1}) * 5;
  auto f = [&](const wick::Tensor& x) { return x.mm(w_target) + b_target; };

  // A batch of 32 points x ~ N(0, 1): features [32, 4] and values [32, 1].
  auto get_batch = [&](int64_t batch_size = 32) {
    wick::Tensor x = make_features(wick::randn({batch_size, 1}));
    return std::make_tuple(x, f(x));
  };

  wick::nn::Linear fc(kDegree, 1);
  double first = 0, loss_value = 0;
  int batches = 0;
  while (batches < 5000) {
    auto [x, y] = get_batch();
    ++batches;
    fc->zero_grad();
    wick::Tensor loss = F::smooth_l1_loss(fc(x), y);
    loss_value = loss.item<double>();
    if (batches == 1) first = loss_value;
    loss.backward();
    {
      wick::NoGradGuard no_grad;
      for (auto& p : fc->parameters()) p.sub_(p.grad() * 0.1);
    }
    if (loss_value < 1e-3) break;
  }

  std::printf("loss %.4g at the first batch, %.4g after %d batches\n", first, loss_value, batches);
  std::cout << "learned: " << describe(fc->weight.view({-1}), fc->bias) << "\n";
  std::cout << "actual:  " << describe(w_target.view({-1}), b_target) << "\n";
  if (!(loss_value < 1e-3 && loss_value < first * 1e-4)) {
    std::cout << "the loss did not fall\n";
    return 1;
  }
  return 0;
}
