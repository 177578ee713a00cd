// Layers, losses and optimizers: wick's functional forms and modules against LibTorch's, with
// the same parameters (copied from wick's modules), outputs and gradients compared.
#include "conformance.h"

using namespace conformance;
using WL = std::vector<wick::Tensor>;
using TL = std::vector<torch::Tensor>;
namespace F = wick::nn::functional;

namespace {

std::vector<int64_t> v2(int64_t a, int64_t b) { return {a, b}; }

TEST(Conformance, Convolution) {
  wick::manual_seed(11);
  run_all({
      {"conv2d pad",
       {rnd({2, 3, 7, 6}), rnd({4, 3, 3, 3}), rnd({4})},
       {true, true, true},
       [=](const WL& x) -> wick::Tensor { return F::conv2d(x[0], x[1], x[2], 1, 1); },
       [=](const TL& x) -> torch::Tensor { return torch::conv2d(x[0], x[1], x[2], v2(1, 1), v2(1, 1)); },
       10,
       true},
      {"conv2d stride dilation",
       {rnd({1, 2, 9, 8}), rnd({3, 2, 2, 3})},
       {true, true},
       [=](const WL& x) -> wick::Tensor {
         return F::conv2d(x[0], x[1], {}, {2, 1}, {0, 1}, {2, 1});
       },
       [=](const TL& x) -> torch::Tensor {
         return torch::conv2d(x[0], x[1], {}, v2(2, 1), v2(0, 1), v2(2, 1));
       },
       10},
      {"conv2d groups",
       {rnd({2, 4, 5, 5}), rnd({6, 2, 3, 3}), rnd({6})},
       {true, true, true},
       [=](const WL& x) -> wick::Tensor { return F::conv2d(x[0], x[1], x[2], 2, 1, 1, 2); },
       [=](const TL& x) -> torch::Tensor {
         return torch::conv2d(x[0], x[1], x[2], v2(2, 2), v2(1, 1), v2(1, 1), 2);
       },
       10},
  });
}

TEST(Conformance, Pooling) {
  wick::manual_seed(12);
  run_all({
      {"max_pool2d",
       {rnd({2, 3, 6, 7})},
       {true},
       [=](const WL& x) -> wick::Tensor { return F::max_pool2d(x[0], 2); },
       [=](const TL& x) -> torch::Tensor { return torch::max_pool2d(x[0], v2(2, 2)); },
       1,
       true},
      {"max_pool2d pad ceil",
       {rnd({1, 2, 7, 6})},
       {true},
       [=](const WL& x) -> wick::Tensor { return F::max_pool2d(x[0], 3, 2, 1, 1, true); },
       [=](const TL& x) -> torch::Tensor {
         return torch::max_pool2d(x[0], v2(3, 3), v2(2, 2), v2(1, 1), v2(1, 1), true);
       }},
      {"avg_pool2d",
       {rnd({2, 3, 6, 6})},
       {true},
       [=](const WL& x) -> wick::Tensor { return F::avg_pool2d(x[0], 2); },
       [=](const TL& x) -> torch::Tensor { return torch::avg_pool2d(x[0], v2(2, 2)); },
       1,
       true},
      {"avg_pool2d pad ceil exclude",
       {rnd({1, 2, 7, 6})},
       {true},
       [=](const WL& x) -> wick::Tensor { return F::avg_pool2d(x[0], 3, 2, 1, true, false); },
       [=](const TL& x) -> torch::Tensor {
         return torch::avg_pool2d(x[0], v2(3, 3), v2(2, 2), v2(1, 1), true, false);
       }},
      {"adaptive_avg_pool2d",
       {rnd({2, 3, 7, 5})},
       {true},
       [=](const WL& x) -> wick::Tensor {
         return F::adaptive_avg_pool2d(x[0], {3, 2});
       },
       [=](const TL& x) -> torch::Tensor { return torch::adaptive_avg_pool2d(x[0], v2(3, 2)); }},
      {"adaptive_avg_pool2d global",
       {rnd({2, 3, 4, 4})},
       {true},
       [=](const WL& x) -> wick::Tensor { return F::adaptive_avg_pool2d(x[0], 1); },
       [=](const TL& x) -> torch::Tensor { return torch::adaptive_avg_pool2d(x[0], v2(1, 1)); }},
  });
}

TEST(Conformance, Normalization) {
  wick::manual_seed(13);
  run_all({
      {"batch_norm train 2d",
       {rnd({4, 3, 2, 2}), rnd({3}), rnd({3})},
       {true, true, true},
       [=](const WL& x) -> wick::Tensor { return F::batch_norm(x[0], {}, {}, x[1], x[2], true, 0.1, 1e-5); },
       [=](const TL& x) -> torch::Tensor {
         return torch::batch_norm(x[0], x[1], x[2], {}, {}, true, 0.1, 1e-5, false);
       },
       10},
      {"batch_norm eval",
       {rnd({5, 3}), rnd({3}), rnd({3}), rnd({3}), pos({3})},
       {true, true, true, false, false},
       [=](const WL& x) -> wick::Tensor {
         return F::batch_norm(x[0], x[3], x[4], x[1], x[2], false, 0.1, 1e-5);
       },
       [=](const TL& x) -> torch::Tensor {
         return torch::batch_norm(x[0], x[1], x[2], x[3], x[4], false, 0.1, 1e-5, false);
       },
       10},
      {"layer_norm",
       {rnd({2, 3, 4}), rnd({3, 4}), rnd({3, 4})},
       {true, true, true},
       [=](const WL& x) -> wick::Tensor {
         return F::layer_norm(x[0], {3, 4}, x[1], x[2], 1e-5);
       },
       [=](const TL& x) -> torch::Tensor {
         return torch::layer_norm(x[0], {3, 4}, x[1], x[2], 1e-5, false);
       },
       10},
      {"embedding",
       {rnd({6, 3}), wick::tensor({{1, 2}, {5, 1}})},
       {true, false},
       [=](const WL& x) -> wick::Tensor { return F::embedding(x[1], x[0]); },
       [=](const TL& x) -> torch::Tensor { return torch::embedding(x[0], x[1]); },
       1,
       true},
      {"embedding padding",
       {rnd({6, 3}), wick::tensor({1, 2, 2, 5})},
       {true, false},
       [=](const WL& x) -> wick::Tensor { return F::embedding(x[1], x[0], 2); },
       [=](const TL& x) -> torch::Tensor { return torch::embedding(x[0], x[1], 2); }},
  });
}

TEST(Conformance, BatchNormRunningStats) {
  for (const Target& tg : targets()) {
    SCOPED_TRACE(tg.name);
    wick::manual_seed(14);
    wick::nn::BatchNorm2d bn(3);
    bn->to(tg.wick_device, tg.dtype);
    auto rm = to_torch(bn->running_mean, tg.torch_device), rv = to_torch(bn->running_var, tg.torch_device);
    for (int step = 0; step < 3; ++step) {
      wick::Tensor x = rnd({4, 3, 3, 2}).to(tg.wick_device, tg.dtype) * 2 + 1;
      auto yw = bn(x);
      auto yt = torch::batch_norm(to_torch(x, tg.torch_device), to_torch(bn->weight, tg.torch_device),
                                  to_torch(bn->bias, tg.torch_device), rm, rv, true, 0.1, 1e-5, false);
      expect_match(yw, yt, tg.tol * 10, "output");
    }
    expect_match(bn->running_mean, rm, tg.tol * 10, "running_mean");
    expect_match(bn->running_var, rv, tg.tol * 10, "running_var");
  }
}

TEST(Conformance, Losses) {
  wick::manual_seed(15);
  auto target = wick::tensor({0, 3, 1, 3, 2});
  auto w = wick::tensor({1.0, 3.0, 0.5, 2.0}, wick::kFloat64);
  std::vector<Case> cases;
  for (std::string red : {"mean", "sum", "none"}) {
    for (double ls : {0.0, 0.15}) {
      cases.push_back(
          {"cross_entropy " + red + " ls=" + std::to_string(ls),
           {rnd({5, 4}), target, w},
           {true, false, false},
           [=](const WL& x) -> wick::Tensor { return F::cross_entropy(x[0], x[1], x[2], 3, red, ls); },
           [=](const TL& x) -> torch::Tensor {
             return torch::cross_entropy_loss(x[0], x[1], x[2], reduction(red), 3, ls);
           }});
    }
    cases.push_back({"nll " + red,
                     {rnd({5, 4}), target},
                     {true, false},
                     [=](const WL& x) -> wick::Tensor {
                       return F::nll_loss(wick::log_softmax(x[0], 1), x[1], {}, -100, red);
                     },
                     [=](const TL& x) -> torch::Tensor {
                       return torch::nll_loss(torch::log_softmax(x[0], 1), x[1], {}, reduction(red), -100);
                     }});
    cases.push_back(
        {"mse " + red,
         {rnd({3, 4}), rnd({3, 4})},
         {true, true},
         [=](const WL& x) -> wick::Tensor { return F::mse_loss(x[0], x[1], red); },
         [=](const TL& x) -> torch::Tensor { return torch::mse_loss(x[0], x[1], reduction(red)); }});
    cases.push_back(
        {"l1 " + red,
         {rnd({3, 4}), rnd({3, 4})},
         {true, true},
         [=](const WL& x) -> wick::Tensor { return F::l1_loss(x[0], x[1], red); },
         [=](const TL& x) -> torch::Tensor { return torch::l1_loss(x[0], x[1], reduction(red)); }});
    cases.push_back({"bce_with_logits " + red,
                     {rnd({3, 4}), wick::rand({3, 4}, wick::kFloat64), pos({4})},
                     {true, false, false},
                     [=](const WL& x) -> wick::Tensor {
                       return F::binary_cross_entropy_with_logits(x[0], x[1], {}, red, x[2]);
                     },
                     [=](const TL& x) -> torch::Tensor {
                       return torch::binary_cross_entropy_with_logits(x[0], x[1], {}, x[2], reduction(red));
                     }});
  }
  cases.push_back({"cross_entropy 3-D",
                   {rnd({2, 4, 3}), wick::tensor({{0, 3, 1}, {2, 2, 0}})},
                   {true, false},
                   [=](const WL& x) -> wick::Tensor { return F::cross_entropy(x[0], x[1]); },
                   [=](const TL& x) -> torch::Tensor {
                     return torch::cross_entropy_loss(x[0], x[1], {}, at::Reduction::Mean, -100, 0.0);
                   }});
  for (std::string red : {"none", "sum"}) {
    cases.push_back({"cross_entropy 3-D " + red,
                     {rnd({2, 4, 3}), wick::tensor({{0, 3, 1}, {2, 2, 0}}), w},
                     {true, false, false},
                     [=](const WL& x) -> wick::Tensor { return F::cross_entropy(x[0], x[1], x[2], 2, red); },
                     [=](const TL& x) -> torch::Tensor {
                       return torch::cross_entropy_loss(x[0], x[1], x[2], reduction(red), 2, 0.0);
                     }});
    cases.push_back({"cross_entropy 4-D " + red,
                     {rnd({2, 4, 2, 2}), wick::tensor({{{0, 3}, {1, 2}}, {{2, 0}, {3, 3}}})},
                     {true, false},
                     [=](const WL& x) -> wick::Tensor { return F::cross_entropy(x[0], x[1], {}, -100, red); },
                     [=](const TL& x) -> torch::Tensor {
                       return torch::cross_entropy_loss(x[0], x[1], {}, reduction(red), -100, 0.0);
                     }});
  }
  cases.push_back({"cross_entropy probabilities",
                   {rnd({3, 4}), wick::softmax(rnd({3, 4}), 1)},
                   {true, false},
                   [=](const WL& x) -> wick::Tensor { return F::cross_entropy(x[0], x[1]); },
                   [=](const TL& x) -> torch::Tensor {
                     return torch::cross_entropy_loss(x[0], x[1], {}, at::Reduction::Mean, -100, 0.0);
                   }});
  // Every loss's node is named as PyTorch's (NllLossBackward0, NllLoss2DBackward0,
  // MseLossBackward0, BinaryCrossEntropyWithLogitsBackward0, AddBackward0 with label smoothing).
  for (Case& c : cases) c.check_name = true;
  run_all(cases);
}

TEST(Conformance, LayerModulesWithCopiedParameters) {
  for (const Target& tg : targets()) {
    SCOPED_TRACE(tg.name);
    wick::manual_seed(16);
    wick::nn::Sequential net(wick::nn::Conv2d(wick::nn::Conv2dOptions(2, 4, 3).padding(1)), wick::nn::ReLU(),
                             wick::nn::MaxPool2d(2), wick::nn::Flatten(), wick::nn::Linear(4 * 3 * 3, 5),
                             wick::nn::GELU());
    net->to(tg.wick_device, tg.dtype);
    auto params = net->parameters();
    std::vector<torch::Tensor> tp;
    for (auto& p : params) tp.push_back(to_torch(p, tg.torch_device).requires_grad_(true));
    wick::Tensor x = rnd({2, 2, 6, 6}).to(tg.wick_device, tg.dtype);
    torch::Tensor xt = to_torch(x, tg.torch_device);
    auto yw = net(x);
    auto yt = torch::gelu(torch::linear(
        torch::max_pool2d(torch::relu(torch::conv2d(xt, tp[0], tp[1], v2(1, 1), v2(1, 1))), v2(2, 2))
            .flatten(1),
        tp[2], tp[3]));
    expect_match(yw, yt, tg.tol * 20, "output");
    yw.sum().backward();
    yt.sum().backward();
    for (size_t i = 0; i < params.size(); ++i)
      expect_match(params[i].grad(), tp[i].grad(), tg.tol * 20, "grad " + std::to_string(i));
  }
}

TEST(Conformance, Optimizers) {
  for (const Target& tg : targets()) {
    SCOPED_TRACE(tg.name);
    for (int kind = 0; kind < 4; ++kind) {
      SCOPED_TRACE("optimizer " + std::to_string(kind));
      wick::manual_seed(17);
      wick::Tensor p0 = rnd({3, 4}).to(tg.wick_device, tg.dtype),
                   c = pos({3, 4}).to(tg.wick_device, tg.dtype);
      wick::Tensor pw = p0.clone().requires_grad_();
      torch::Tensor pt = to_torch(p0, tg.torch_device).requires_grad_(true),
                    ct = to_torch(c, tg.torch_device);
      std::unique_ptr<wick::optim::Optimizer> ow;
      std::unique_ptr<torch::optim::Optimizer> ot;
      if (kind == 0) {
        ow = std::make_unique<wick::optim::SGD>(
            std::vector<wick::Tensor>{pw},
            wick::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
        ot = std::make_unique<torch::optim::SGD>(
            std::vector<torch::Tensor>{pt},
            torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
      } else if (kind == 1) {
        ow = std::make_unique<wick::optim::SGD>(std::vector<wick::Tensor>{pw},
                                                wick::optim::SGDOptions(0.05).momentum(0.8).dampening(0.1));
        ot = std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{pt},
                                                 torch::optim::SGDOptions(0.05).momentum(0.8).dampening(0.1));
      } else if (kind == 2) {
        ow = std::make_unique<wick::optim::Adam>(
            std::vector<wick::Tensor>{pw}, wick::optim::AdamOptions(0.05).weight_decay(0.01).amsgrad(true));
        ot = std::make_unique<torch::optim::Adam>(
            std::vector<torch::Tensor>{pt}, torch::optim::AdamOptions(0.05).weight_decay(0.01).amsgrad(true));
      } else {
        ow = std::make_unique<wick::optim::AdamW>(std::vector<wick::Tensor>{pw},
                                                  wick::optim::AdamWOptions(0.05));
        ot = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{pt},
                                                   torch::optim::AdamWOptions(0.05));
      }
      for (int step = 0; step < 5; ++step) {
        ow->zero_grad();
        (c * pw * pw).sum().backward();
        ow->step();
        ot->zero_grad();
        (ct * pt * pt).sum().backward();
        ot->step();
      }
      expect_match(pw, pt, tg.tol * 10, "parameter after 5 steps");
    }
  }
}

}  // namespace
