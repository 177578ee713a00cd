// ELU, SELU, CELU, Softplus, Hardtanh, ReLU6, PReLU, Mish, Hardswish, Hardsigmoid, LogSigmoid,
// Softsign, Tanhshrink and Threshold: values against float64 formulas evaluated here per
// element, gradients (and gradients of gradients) against central differences, node names
// and printing as PyTorch's, and the options structs of LibTorch (ReLUOptions, SoftmaxOptions ...).
#include <cmath>
#include <functional>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
namespace F = wick::nn::functional;

namespace {

struct Case {
  const char* name;
  const char* node;
  std::function<Tensor(const Tensor&)> f;
  std::function<double(double)> ref;
};

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double softplus_ref(double v, double beta, double threshold) {
  return v * beta > threshold ? v : std::log1p(std::exp(beta * v)) / beta;
}
constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;

std::vector<Case> cases() {
  return {
      {"elu", "EluBackward0", [](const Tensor& x) { return F::elu(x, 0.7); },
       [](double v) { return v > 0 ? v : 0.7 * std::expm1(v); }},
      {"selu", "EluBackward0", [](const Tensor& x) { return F::selu(x); },
       [](double v) { return kScale * (v > 0 ? v : kAlpha * std::expm1(v)); }},
      {"celu", "CeluBackward0", [](const Tensor& x) { return F::celu(x, 2.0); },
       [](double v) { return v > 0 ? v : 2.0 * std::expm1(v / 2.0); }},
      {"softplus", "SoftplusBackward0", [](const Tensor& x) { return F::softplus(x, 2.0, 3.0); },
       [](double v) { return softplus_ref(v, 2.0, 3.0); }},
      {"hardtanh", "HardtanhBackward0", [](const Tensor& x) { return F::hardtanh(x, -0.5, 1.5); },
       [](double v) { return std::min(1.5, std::max(-0.5, v)); }},
      {"relu6", "HardtanhBackward0", [](const Tensor& x) { return F::relu6(x * 4); },
       [](double v) { return std::min(6.0, std::max(0.0, 4 * v)); }},
      {"mish", "MishBackward0", [](const Tensor& x) { return F::mish(x); },
       [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }},
      {"hardswish", "HardswishBackward0", [](const Tensor& x) { return F::hardswish(x * 3); },
       [](double v) { return 3 * v * std::min(6.0, std::max(0.0, 3 * v + 3)) / 6; }},
      {"hardsigmoid", "HardsigmoidBackward0", [](const Tensor& x) { return F::hardsigmoid(x * 3); },
       [](double v) { return std::min(6.0, std::max(0.0, 3 * v + 3)) / 6; }},
      {"logsigmoid", "LogSigmoidBackward0", [](const Tensor& x) { return F::logsigmoid(x); },
       [](double v) { return std::log(sigmoid(v)); }},
      {"softsign", "DivBackward0", [](const Tensor& x) { return F::softsign(x); },
       [](double v) { return v / (1 + std::abs(v)); }},
      {"tanhshrink", "SubBackward0", [](const Tensor& x) { return F::tanhshrink(x); },
       [](double v) { return v - std::tanh(v); }},
      {"threshold", "ThresholdBackward0", [](const Tensor& x) { return F::threshold(x, 0.1, -2.0); },
       [](double v) { return v > 0.1 ? v : -2.0; }},
  };
}

class MoreActivations : public wick::testing::OnEachDevice<74> {};

TEST_P(MoreActivations, ValuesMatchTheFloat64Formulas) {
  // Values around every kink and in both tails, in a non-contiguous view.
  Tensor x = (randn({7, 9}, TensorOptions(kFloat64)) * 3).t();
  ASSERT_FALSE(x.is_contiguous());
  const auto xv = x.contiguous().to_vector<double>();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::vector<double> want;
    for (double v : xv) want.push_back(c.ref(v));
    for (Dtype dt : {kFloat64, kFloat32}) {
      Tensor y = c.f(x.to(dev(), dt));
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(y.device(), dev());
      ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{9, 7}));
      const auto got = y.cpu().contiguous().to_vector<double>();
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], (dt == kFloat64 ? 1e-12 : 2e-6) * (1 + std::abs(want[i]))) << "x = " << xv[i];
    }
  }
}

TEST_P(MoreActivations, ExtremeInputsStayFinite) {
  Tensor x = tensor({-800.0, -40.0, 0.0, 40.0, 800.0}, TensorOptions(kFloat64)).to(dev());
  expect_close(F::softplus(x), {0.0, std::exp(-40.0), std::log(2.0), 40.0, 800.0}, 1e-15);
  expect_close(F::logsigmoid(x), {-800.0, -40.0, std::log(0.5), -std::exp(-40.0), 0.0}, 1e-15);
  expect_close(F::mish(x), {0.0, -40.0 * std::tanh(std::exp(-40.0)), 0.0, 40.0, 800.0}, 1e-12);
  expect_close(F::elu(x), {-1.0, std::expm1(-40.0), 0.0, 40.0, 800.0}, 1e-15);
}

TEST_P(MoreActivations, GradientsMatchCentralDifferences) {
  // Inputs away from the kinks, where the derivative is defined.
  Tensor x = randn({3, 4}, TensorOptions(kFloat64)) * 2;
  x = where(x.abs() < 0.05, x + 0.2, x);
  for (double kink : {-3.0, -0.5, 0.1, 1.5, 3.0, 6.0 / 4, 1.0, -1.0})
    x = where((x - kink).abs() < 0.02, x + 0.05, x);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto f = [&](const std::vector<Tensor>& in) { return c.f(in[0]); };
    wick::testing::gradcheck(f, {x.clone().requires_grad_()}, dev());
    wick::testing::gradgradcheck(f, {x.clone().requires_grad_()}, dev());
    Tensor leaf = x.to(dev()).requires_grad_();
    Tensor y = c.f(leaf);
    ASSERT_TRUE(y.grad_fn());
    EXPECT_EQ(y.grad_fn()->name(), c.node);
  }
}

TEST_P(MoreActivations, GeluBackwardMatchesTheFloat64Derivative) {
  // GELU's backward (one kernel outside double backward) against its derivative evaluated here,
  // both forms, every floating dtype, on a non-contiguous input and a broadcast gradient.
  Tensor x = (randn({6, 11}, TensorOptions(kFloat64)) * 3).t();
  Tensor g = randn({1, 6}, TensorOptions(kFloat64));
  const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
  const std::vector<Dtype> dtypes{kFloat64, kFloat32, kBFloat16, kFloat16};
  for (bool tanh_form : {false, true}) {
    for (Dtype dt : dtypes) {
      std::ostringstream what;
      what << (tanh_form ? "tanh " : "none ") << dt;
      SCOPED_TRACE(what.str());
      // the reference from the values as rounded to dt
      const Tensor xr = x.to(dt).to(kFloat64), gr = g.to(dt).to(kFloat64).expand({11, 6}).contiguous();
      const auto xv = xr.contiguous().to_vector<double>(), gv = gr.to_vector<double>();
      Tensor leaf = x.to(dev(), dt).detach().requires_grad_();
      ASSERT_FALSE(leaf.is_contiguous());
      F::gelu(leaf, tanh_form ? "tanh" : "none").backward(g.to(dev(), dt).expand({11, 6}));
      ASSERT_EQ(leaf.grad().dtype(), dt);
      const auto got = leaf.grad().cpu().to(kFloat64).contiguous().to_vector<double>();
      const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : dt == kBFloat16 ? 2e-2 : 3e-3;
      for (size_t i = 0; i < xv.size(); ++i) {
        const double v = xv[i];
        double d;
        if (tanh_form) {
          const double th = std::tanh(k * (v + a * v * v * v));
          d = 0.5 * (1 + th) + 0.5 * v * (1 - th * th) * k * (1 + 3 * a * v * v);
        } else {
          d = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi);
        }
        const double want = gv[i] * d;
        EXPECT_NEAR(got[i], want, tol * (1 + std::abs(want))) << "x = " << v;
      }
    }
  }
}

TEST_P(MoreActivations, PReLUPerChannelAndShared) {
  Tensor x = randn({2, 3, 4}, TensorOptions(kFloat64));
  Tensor w = tensor({0.25, -0.5, 2.0}, TensorOptions(kFloat64));
  const auto xv = x.to_vector<double>();
  std::vector<double> want;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double slope = w[int64_t((i / 4) % 3)].item<double>();
    want.push_back(xv[i] > 0 ? xv[i] : slope * xv[i]);
  }
  expect_close(F::prelu(x.to(dev()), w.to(dev())), want, 1e-15);
  auto f = [](const std::vector<Tensor>& in) { return F::prelu(in[0], in[1]); };
  wick::testing::gradcheck(f, {x.clone().requires_grad_(), w.clone().requires_grad_()}, dev());
  wick::testing::gradcheck(f, {x.clone().requires_grad_(), tensor({0.3}, TensorOptions(kFloat64)).requires_grad_()},
                           dev());
  Tensor leaf = x.to(dev()).requires_grad_();
  EXPECT_EQ(F::prelu(leaf, w.to(dev())).grad_fn()->name(), "PreluKernelBackward0");
  // the module: one slope of 0.25 by default, learned
  nn::PReLU m;
  m->to(dev());
  EXPECT_EQ(m->weight.sizes().vec(), (std::vector<int64_t>{1}));
  EXPECT_EQ(m->weight.cpu().item<float>(), 0.25f);
  nn::PReLU per(nn::PReLUOptions().num_parameters(3).init(0.1));
  per->to(dev());
  Tensor y = per(x.to(dev(), kFloat32));
  y.sum().backward();
  ASSERT_TRUE(per->weight.grad().defined());
  // d sum / d w_c = the sum of channel c's non-positive inputs
  Tensor neg = where(x > 0, zeros_like(x), x).sum({0, 2});
  expect_close(per->weight.grad(), neg, 1e-5);
  EXPECT_EQ(error_of([&] { F::prelu(x.to(dev()), randn({4}).to(dev(), kFloat64)); }).rfind("[prelu] ", 0), 0u);
  EXPECT_THROW(nn::PReLU(nn::PReLUOptions().num_parameters(0)), ValueError);
}

TEST_P(MoreActivations, IntegerInputsAreRefused) {
  Tensor i = arange(5).to(dev());
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_THROW(c.f(i), TypeError);
  }
  EXPECT_EQ(error_of([&] { F::elu(i); }).rfind("[elu] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::hardtanh(randn({2}).to(dev()), 1.0, -1.0); }).rfind("[hardtanh] ", 0), 0u);
}

WICK_INSTANTIATE_ON_DEVICES(MoreActivations);

std::string repr(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

TEST(MoreActivationModules, PrintAsPyTorch) {
  EXPECT_EQ(repr(*nn::ReLU()), "ReLU()");
  EXPECT_EQ(repr(*nn::ReLU(true)), "ReLU(inplace=True)");
  EXPECT_EQ(repr(*nn::ReLU(nn::ReLUOptions().inplace(true))), "ReLU(inplace=True)");
  EXPECT_EQ(repr(*nn::ELU()), "ELU(alpha=1.0)");
  EXPECT_EQ(repr(*nn::ELU(nn::ELUOptions().alpha(0.5).inplace(true))), "ELU(alpha=0.5, inplace=True)");
  EXPECT_EQ(repr(*nn::SELU()), "SELU()");
  EXPECT_EQ(repr(*nn::SELU(true)), "SELU(inplace=True)");
  EXPECT_EQ(repr(*nn::CELU(nn::CELUOptions().alpha(2.0))), "CELU(alpha=2.0)");
  EXPECT_EQ(repr(*nn::Softplus()), "Softplus(beta=1.0, threshold=20.0)");
  EXPECT_EQ(repr(*nn::Hardtanh()), "Hardtanh(min_val=-1.0, max_val=1.0)");
  EXPECT_EQ(repr(*nn::ReLU6()), "ReLU6()");
  EXPECT_EQ(repr(*nn::PReLU(nn::PReLUOptions().num_parameters(3))), "PReLU(num_parameters=3)");
  EXPECT_EQ(repr(*nn::Threshold(0.1, 20.0)), "Threshold(threshold=0.1, value=20.0)");
  EXPECT_EQ(repr(*nn::Mish()), "Mish()");
  EXPECT_EQ(repr(*nn::Hardswish()), "Hardswish()");
  EXPECT_EQ(repr(*nn::Hardsigmoid()), "Hardsigmoid()");
  EXPECT_EQ(repr(*nn::LogSigmoid()), "LogSigmoid()");
  EXPECT_EQ(repr(*nn::Softsign()), "Softsign()");
  EXPECT_EQ(repr(*nn::Tanhshrink()), "Tanhshrink()");
  EXPECT_EQ(repr(*nn::Softmax(nn::SoftmaxOptions(1))), "Softmax(dim=1)");
  EXPECT_EQ(repr(*nn::LogSoftmax(nn::LogSoftmaxOptions(0))), "LogSoftmax(dim=0)");
  EXPECT_EQ(repr(*nn::Flatten(nn::FlattenOptions().start_dim(2))), "Flatten(start_dim=2, end_dim=-1)");
  EXPECT_EQ(repr(*nn::GELU(nn::GELUOptions().approximate("tanh"))), "GELU(approximate='tanh')");
  EXPECT_THROW(nn::Hardtanh(nn::HardtanhOptions().min_val(1).max_val(1)), ValueError);
}

TEST(MoreActivationModules, ModulesComputeTheirFunctions) {
  Tensor x = randn({4, 5}) * 4;
  expect_close(nn::ELU(nn::ELUOptions().alpha(0.3))(x), F::elu(x, 0.3), 0);
  expect_close(nn::Softplus(nn::SoftplusOptions().beta(2).threshold(5))(x), F::softplus(x, 2, 5), 0);
  expect_close(nn::Hardtanh(nn::HardtanhOptions().min_val(-2).max_val(2))(x), F::hardtanh(x, -2, 2), 0);
  expect_close(nn::ReLU6()(x), F::relu6(x), 0);
  expect_close(nn::Threshold(0.5, 7)(x), F::threshold(x, 0.5, 7), 0);
  expect_close(nn::Softmax(nn::SoftmaxOptions(0))(x), F::softmax(x, 0), 0);
  expect_close(nn::ReLU(true)(x), F::relu(x), 0);
  // in a Sequential, as LibTorch programs build them
  nn::Sequential seq(nn::Linear(5, 3), nn::ReLU(nn::ReLUOptions(true)), nn::Linear(3, 2), nn::SELU(), nn::Mish());
  EXPECT_EQ(seq(x).sizes().vec(), (std::vector<int64_t>{4, 2}));
}

}  // namespace

namespace {

// LibTorch's F:: keyword forms give what the positional calls give, and their errors name the
// function called.
TEST(FuncOptionsForms, EqualThePositionalCallsAndNameTheFunction) {
  manual_seed(75);
  Tensor x = randn({2, 3, 8, 8}, TensorOptions(kFloat64));
  Tensor w = randn({4, 3, 3, 3}, TensorOptions(kFloat64));
  Tensor b = randn({4}, TensorOptions(kFloat64));
  Tensor t = randn({2, 3, 8, 8}, TensorOptions(kFloat64));
  expect_close(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1)), F::conv2d(x, w, b, 2, 1), 0);
  Tensor x1 = x.flatten(2);  // [2, 3, 64]
  Tensor w1 = randn({4, 3, 5}, TensorOptions(kFloat64));
  expect_close(F::conv1d(x1, w1, F::Conv1dFuncOptions().stride(3).dilation(2)), F::conv1d(x1, w1, {}, 3, 0, 2), 0);
  expect_close(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1)), F::max_pool2d(x, 3, 2, 1), 0);
  expect_close(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).count_include_pad(false)), F::avg_pool2d(x, 2), 0);
  expect_close(F::max_pool1d(x1, F::MaxPool1dFuncOptions(4)), F::max_pool1d(x1, 4), 0);
  expect_close(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({2, 1})), F::adaptive_avg_pool2d(x, {2, 1}), 0);
  expect_close(F::softmax(x, F::SoftmaxFuncOptions(1)), F::softmax(x, 1), 0);
  expect_close(F::log_softmax(x, F::LogSoftmaxFuncOptions(-1)), F::log_softmax(x, -1), 0);
  expect_close(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)), F::leaky_relu(x, 0.2), 0);
  expect_close(F::elu(x, F::ELUFuncOptions().alpha(0.5)), F::elu(x, 0.5), 0);
  expect_close(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(4)), F::softplus(x, 2, 4), 0);
  expect_close(F::hardtanh(x, F::HardtanhFuncOptions().min_val(-0.5).max_val(0.5)), F::hardtanh(x, -0.5, 0.5), 0);
  expect_close(F::dropout(x, F::DropoutFuncOptions().p(0.3).training(false)), x, 0);
  expect_close(F::layer_norm(x, F::LayerNormFuncOptions({8}).eps(1e-3)), F::layer_norm(x, {8}, {}, {}, 1e-3), 0);
  expect_close(F::group_norm(x, F::GroupNormFuncOptions(3)), F::group_norm(x, 3), 0);
  expect_close(F::pad(x, F::PadFuncOptions({1, 2, 2, 1}).mode(kReflect)), F::pad(x, {1, 2, 2, 1}, "reflect"), 0);
  expect_close(F::mse_loss(x, t, F::MSELossFuncOptions(kSum)), F::mse_loss(x, t, "sum"), 1e-12);
  expect_close(F::l1_loss(x, t, F::L1LossFuncOptions().reduction(kNone)), F::l1_loss(x, t, "none"), 0);
  expect_close(F::smooth_l1_loss(x, t, F::SmoothL1LossFuncOptions().beta(0.5)), F::smooth_l1_loss(x, t, "mean", 0.5),
               1e-12);
  Tensor logp = F::log_softmax(randn({5, 4}, TensorOptions(kFloat64)), 1);
  Tensor target = tensor({0, 3, 1, 1, 2});
  expect_close(F::nll_loss(logp, target, F::NLLLossFuncOptions().ignore_index(1).reduction(kSum)),
               F::nll_loss(logp, target, {}, 1, "sum"), 1e-12);
  Tensor p = F::sigmoid(x);
  Tensor y = (t > 0).to(kFloat64);
  expect_close(F::binary_cross_entropy(p, y, F::BinaryCrossEntropyFuncOptions()), F::binary_cross_entropy(p, y), 1e-12);
  expect_close(F::binary_cross_entropy_with_logits(x, y, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(kSum)),
               F::binary_cross_entropy_with_logits(x, y, {}, "sum"), 1e-10);
  // bad input: the function called is named, and nothing changed
  const std::vector<double> before = x.to_vector<double>();
  EXPECT_EQ(error_of([&] { F::dropout(x, F::DropoutFuncOptions().p(1.5)); }).rfind("[dropout] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::conv2d(x, w1, F::Conv2dFuncOptions()); }).rfind("[conv2d] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::max_pool2d(x, F::MaxPool2dFuncOptions(0)); }).rfind("[max_pool2d] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::mse_loss(x, t, F::MSELossFuncOptions("average")); }).rfind("[mse_loss] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::softmax(x, F::SoftmaxFuncOptions(4)); }).rfind("[softmax] ", 0), 0u);
  EXPECT_EQ(x.to_vector<double>(), before);
}

}  // namespace
