// L-BFGS against PyTorch's torch.optim.LBFGS: the losses, parameters and evaluation counts that
// tests/gen/lbfgs_reference.py printed (float64, CPU, PyTorch 1.13) for three problems, with and
// without the strong-Wolfe search, on every device present; a state_dict round trip mid-training
// giving the same next steps; and the errors PyTorch raises.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "wick/wick.h"

using namespace wick;

namespace {

struct Step {
  double loss;
  int64_t func_evals, n_iter;
  std::vector<double> params;
};

// What tests/gen/lbfgs_reference.py printed.
const std::vector<Step> kRosenbrock = {
    {12.5, 20, 20, {-0.781122729831648, 0.6131352916809746}},
    {3.173287752667091, 40, 40, {0.08303252319322772, 0.005052944696990406}},
    {0.8411684492507328, 60, 60, {1.054969018030194, 0.8137053551938505}},
};
const std::vector<Step> kRosenbrockWolfe = {
    {12.5, 26, 20, {0.004223861178827853, -0.035072097956142016}},
    {1.1147005002630441, 51, 38, {0.9990142872062082, 0.997625664434381}},
    {1.7283665019489557e-05, 54, 41, {0.9999848335215568, 0.9999695408626902}},
};
const std::vector<Step> kLeastSquares = {
    {0.12788792449408473, 8, 7,
     {-0.886316513378377, -0.6722586623741208, 0.19091736324262026, 0.21559283779101504, 1.2778952669296597,
      1.119916880545425, 0.13693003090416522, 0.21588945191533643}},
    {0.00499181799983981, 16, 14,
     {-0.912804603386772, -0.6994733817024638, 0.18471532037890157, 0.20389505593340895, 1.2925332812283923,
      1.1247809641729627, 0.13424885053689078, 0.21134537679986934}},
    {0.004561846833928253, 21, 18,
     {-0.9133573029487208, -0.7000415560981714, 0.18474761340815693, 0.20369523061455747, 1.2931476822087251,
      1.1249673377315705, 0.13416792510735503, 0.2117173334706709}},
};

class Lbfgs : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam(); }
  TensorOptions f64() const { return TensorOptions(kFloat64).device(dev()); }
};

nlohmann::json state_of(const optim::LBFGS& opt) {
  return nlohmann::json::parse(opt.state_dict().metadata.at("state")).at("0");
}

std::vector<double> flat(const std::vector<Tensor>& ps) {
  std::vector<double> v;
  for (const Tensor& p : ps)
    for (double x : p.detach().cpu().reshape({-1}).to_vector<double>()) v.push_back(x);
  return v;
}

// Steps opt three times with closure and compares each step with want.
void expect_steps(optim::LBFGS& opt, const std::vector<Tensor>& params, const std::function<Tensor()>& loss_fn,
                  const std::vector<Step>& want, size_t from = 0) {
  for (size_t s = from; s < want.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    Tensor loss = opt.step([&] {
      opt.zero_grad();
      Tensor l = loss_fn();
      l.backward();
      return l;
    });
    EXPECT_NEAR(loss.item<double>(), want[s].loss, 1e-9 * std::max(1.0, std::abs(want[s].loss)));
    const auto st = state_of(opt);
    EXPECT_EQ(st.at("func_evals").get<int64_t>(), want[s].func_evals);
    EXPECT_EQ(st.at("n_iter").get<int64_t>(), want[s].n_iter);
    const auto got = flat(params);
    ASSERT_EQ(got.size(), want[s].params.size());
    // Dozens of iterations later rounding differences show (Rosenbrock without a search: 7e-7 after 60).
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[s].params[i], 1e-5) << i;
  }
}

Tensor rosenbrock(const Tensor& p) {
  Tensor x = p[0], y = p[1];
  return (1 - x).pow(2) + 100 * (y - x * x).pow(2);
}

TEST_P(Lbfgs, RosenbrockAsPyTorch) {
  Tensor p = tensor({-1.5, 2.0}, f64()).requires_grad_();
  optim::LBFGS opt({p}, optim::LBFGSOptions(1));
  expect_steps(opt, {p}, [&] { return rosenbrock(p); }, kRosenbrock);
}

TEST_P(Lbfgs, RosenbrockStrongWolfeAsPyTorch) {
  Tensor p = tensor({-1.5, 2.0}, f64()).requires_grad_();
  optim::LBFGS opt({p}, optim::LBFGSOptions(1).history_size(5).line_search_fn("strong_wolfe"));
  expect_steps(opt, {p}, [&] { return rosenbrock(p); }, kRosenbrockWolfe);
}

struct LeastSquares {
  Tensor X, Y, w, b;
  explicit LeastSquares(const TensorOptions& o) {
    Tensor k = arange(6, o).unsqueeze(1);
    X = (0.7 * k + 0.3 * arange(3, o)).sin();
    Y = (0.5 * k - 0.2 * arange(2, o)).cos();
    w = (0.1 * (arange(6, o) + 1)).reshape({3, 2}).requires_grad_();
    b = zeros({2}, o).requires_grad_();
  }
  Tensor loss() const { return (X.matmul(w) + b - Y).pow(2).mean(); }
};

optim::LBFGSOptions least_squares_options() {
  return optim::LBFGSOptions(0.5).max_iter(7).history_size(3).line_search_fn("strong_wolfe");
}

TEST_P(Lbfgs, TwoParametersStrongWolfeAsPyTorch) {
  LeastSquares m(f64());
  optim::LBFGS opt({m.w, m.b}, least_squares_options());
  expect_steps(opt, {m.w, m.b}, [&] { return m.loss(); }, kLeastSquares);
}

TEST_P(Lbfgs, StateDictResumesTheSameSearch) {
  LeastSquares m(f64());
  optim::LBFGS opt({m.w, m.b}, least_squares_options());
  expect_steps(opt, {m.w, m.b}, [&] { return m.loss(); }, {kLeastSquares[0]});
  Checkpoint saved = opt.state_dict();
  EXPECT_EQ(saved.metadata.at("optimizer"), "LBFGS");
  EXPECT_TRUE(saved.tensors.count("state.0.d"));
  EXPECT_TRUE(saved.tensors.count("state.0.old_dirs.0"));
  // A second model at the same point with a fresh optimizer that loads the state: the same
  // next two steps as the first run's.
  LeastSquares m2(f64());
  {
    NoGradGuard no_grad;
    m2.w.copy_(m.w);
    m2.b.copy_(m.b);
  }
  optim::LBFGS resumed({m2.w, m2.b}, optim::LBFGSOptions(1));
  resumed.load_state_dict(saved);
  expect_steps(resumed, {m2.w, m2.b}, [&] { return m2.loss(); }, kLeastSquares, 1);
}

TEST_P(Lbfgs, Errors) {
  Tensor p = tensor({1.0, 2.0}, f64()).requires_grad_();
  Tensor q = tensor({3.0}, f64()).requires_grad_();
  auto prefix = [](const std::exception& e) { return std::string(e.what()).substr(0, 7); };
  try {
    optim::LBFGS bad({p}, optim::LBFGSOptions(1).line_search_fn("backtracking"));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(prefix(e), "[LBFGS]");
  }
  EXPECT_THROW(optim::LBFGS({p}, optim::LBFGSOptions(-1)), ValueError);
  EXPECT_THROW(optim::LBFGS({p}, optim::LBFGSOptions(1).history_size(0)), ValueError);
  std::vector<optim::OptimizerParamGroup> two{optim::OptimizerParamGroup({p}), optim::OptimizerParamGroup({q})};
  EXPECT_THROW(optim::LBFGS(two, optim::LBFGSOptions(1)), ValueError);
  optim::LBFGS opt({p});
  try {
    opt.step();
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[LBFGS.step]", 0), 0u) << e.what();
  }
  EXPECT_THROW(opt.add_param_group(optim::OptimizerParamGroup({q})), ValueError);
  EXPECT_THROW(optim::LBFGS({tensor({1, 2}, TensorOptions(kInt64).device(dev()))}), Error);
  // A closure that returns no loss.
  EXPECT_THROW(opt.step([] { return Tensor(); }), ValueError);
  // A state dict of another optimizer, or of another size, changes nothing.
  optim::Adam adam({p});
  EXPECT_THROW(opt.load_state_dict(adam.state_dict()), ValueError);
  optim::LBFGS other({q});
  other.step([&] {
    other.zero_grad();
    Tensor l = (q * q).sum();
    l.backward();
    return l;
  });
  Checkpoint before = opt.state_dict();
  Checkpoint wrong = other.state_dict();
  EXPECT_THROW(opt.load_state_dict(wrong), ValueError);
  EXPECT_EQ(opt.state_dict().metadata, before.metadata);
  Checkpoint tampered = other.state_dict();
  tampered.tensors["state.0.unexpected"] = tensor({1.0});
  EXPECT_THROW(other.load_state_dict(tampered), ValueError);
}

INSTANTIATE_TEST_SUITE_P(Devices, Lbfgs, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
