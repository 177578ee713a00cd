// End-to-end training on synthetic, learnable problems: a small MLP (points inside or outside
// a circle) and a small CNN (horizontal or vertical bars). Each must reach a fixed loss; with
// the same seed, the CPU and CUDA runs reach the same loss within 1e-3.
#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

// Points in [-2, 2]^2, class 1 inside the circle of radius 1.2.
std::pair<Tensor, Tensor> circle_data(int64_t n) {
  Tensor x = rand({n, 2}) * 4 - 2;
  Tensor y = ((x * x).sum({1}) < 1.44).to(kInt64);
  return {x, y};
}

struct MlpResult {
  double loss, accuracy;
};

MlpResult train_mlp(Device device) {
  manual_seed(2024);
  auto [x, y] = circle_data(512);
  nn::Sequential net(nn::Linear(2, 32), nn::ReLU(), nn::Linear(32, 32), nn::Tanh(), nn::Linear(32, 2));
  net->to(device);
  x = x.to(device);
  y = y.to(device);
  optim::Adam opt(net->parameters(), optim::AdamOptions(0.02));
  nn::CrossEntropyLoss criterion;
  double last = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor loss = criterion(net(x), y);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  NoGradGuard g;
  Tensor pred = net(x).argmax(1);
  return {last, (pred == y).to(kFloat64).mean().item<double>()};
}

// 8x8 images holding one horizontal (class 0) or vertical (class 1) bar, plus noise.
std::pair<Tensor, Tensor> bar_data(int64_t n) {
  Tensor labels = randint(2, {n});
  Tensor pos = randint(1, 7, {n});
  Tensor img = randn({n, 1, 8, 8}) * 0.3;
  auto lv = labels.to_vector<int64_t>();
  auto pv = pos.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    Tensor plane = img[i][0];
    Tensor bar = lv[size_t(i)] == 0 ? plane.select(0, pv[size_t(i)]) : plane.select(1, pv[size_t(i)]);
    bar.add_(1.0);
  }
  return {img, labels};
}

double train_cnn(Device device) {
  manual_seed(77);
  auto [x, y] = bar_data(128);
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::BatchNorm2d(4), nn::ReLU(),
                     nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(4, 8, 3).padding(1)), nn::ReLU(),
                     nn::AdaptiveAvgPool2d(1), nn::Flatten(), nn::Linear(8, 2));
  net->to(device);
  x = x.to(device);
  y = y.to(device);
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  double last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(net(x), y);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  return last;
}

class Training : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(Training, MlpReachesFixedLoss) {
  MlpResult r = train_mlp(GetParam());
  EXPECT_LT(r.loss, 0.05);
  EXPECT_GT(r.accuracy, 0.97);
}

TEST_P(Training, CnnReachesFixedLoss) { EXPECT_LT(train_cnn(GetParam()), 0.01); }

INSTANTIATE_TEST_SUITE_P(Devices, Training, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) {
                           return info.param.is_cpu() ? std::string("cpu") : std::string("cuda");
                         });

TEST(TrainingAcrossDevices, SameSeedSameLoss) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_NEAR(train_mlp(Device(kCPU)).loss, train_mlp(Device("cuda:0")).loss, 1e-3);
  EXPECT_NEAR(train_cnn(Device(kCPU)), train_cnn(Device("cuda:0")), 1e-3);
}

}  // namespace
