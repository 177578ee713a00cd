// A LibTorch program as its users write them: a policy-gradient learner (PPO's clipped
// objective) with a Gaussian policy and a critic, on a task whose best action and return are
// known, plus the tensor idioms of value-based agents (gather, max, argmax, huber loss, masked
// ops, index_add_/index_put_, an accessor loop for discounted returns), kept in LibTorch's
// spelling: the build renames it as docs/porting.md says and runs it; it exits 0 when the
// critic's loss fell, the policy moved toward the best action and the checks hold.
#include <torch/torch.h>
#include <cmath>
#include <iostream>

struct ActorCriticImpl : torch::nn::Module {
  torch::nn::Linear a1{nullptr}, a2{nullptr}, c1{nullptr}, c2{nullptr};
  torch::Tensor log_std;
  ActorCriticImpl(int64_t obs, int64_t act) {
    a1 = register_module("a1", torch::nn::Linear(obs, 32));
    a2 = register_module("a2", torch::nn::Linear(32, act));
    c1 = register_module("c1", torch::nn::Linear(obs, 32));
    c2 = register_module("c2", torch::nn::Linear(32, 1));
    log_std = register_parameter("log_std", torch::full({act}, -0.5));
    for (auto& p : named_parameters()) {
      if (p.key().find("weight") != std::string::npos) torch::nn::init::orthogonal_(p.value(), std::sqrt(2.0));
      else if (p.key().find("bias") != std::string::npos) torch::nn::init::constant_(p.value(), 0.0);
    }
  }
  std::pair<torch::Tensor, torch::Tensor> forward(torch::Tensor x) {
    return {a2(torch::tanh(a1(x))), c2(torch::tanh(c1(x)))};
  }
  torch::Tensor log_prob(const torch::Tensor& mu, const torch::Tensor& a) {
    auto var = log_std.exp().expand_as(mu).pow(2);
    return (-(a - mu).pow(2) / (2 * var) - log_std - 0.5 * std::log(2 * M_PI)).sum(-1, true);
  }
};
TORCH_MODULE(ActorCritic);

int main() {
  torch::manual_seed(0);
  const int64_t n = 256, obs_dim = 4, act_dim = 2;
  ActorCritic ac(obs_dim, act_dim);
  torch::optim::Adam opt(ac->parameters(), torch::optim::AdamOptions(3e-3).eps(1e-5));
  // The reward is highest at the action -obs[:, :2]; the return is the reward.
  auto best = [](const torch::Tensor& obs) { return -obs.slice(1, 0, 2); };
  double first_critic = 0, last_critic = 0, first_gap = 0, last_gap = 0;
  for (int it = 0; it < 60; ++it) {
    auto obs = torch::randn({n, obs_dim});
    torch::Tensor mu, v;
    {
      torch::NoGradGuard no_grad;
      std::tie(mu, v) = ac->forward(obs);
    }
    auto act = at::normal(mu, ac->log_std.exp().detach().expand_as(mu));
    auto old_lp = ac->log_prob(mu, act).detach();
    auto ret = -(act - best(obs)).pow(2).sum(1, true);
    auto adv = ret - v;
    adv = (adv - adv.mean()) / (adv.std() + 1e-8);
    double critic_sum = 0;
    for (int e = 0; e < 4; ++e) {
      auto idx = torch::randperm(n, torch::TensorOptions().dtype(torch::kLong)).slice(0, 0, n / 2);
      auto [m2, v2] = ac->forward(obs.index_select(0, idx));
      auto ratio = torch::exp(ac->log_prob(m2, act.index_select(0, idx)) - old_lp.index({idx}));
      auto s1 = ratio * adv.index({idx});
      auto s2 = torch::clamp(ratio, 1.0 - 0.2, 1.0 + 0.2) * adv.index({idx});
      auto actor_loss = -torch::min(s1, s2).mean();
      auto critic_loss = torch::nn::functional::mse_loss(v2, ret.index({idx}));
      auto entropy = (0.5 + 0.5 * std::log(2 * M_PI) + ac->log_std).sum();
      auto loss = actor_loss + 0.5 * critic_loss - 0.001 * entropy;
      opt.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(ac->parameters(), 0.5);
      opt.step();
      critic_sum += critic_loss.item<double>();
    }
    const double gap = (mu - best(obs)).pow(2).sum(1).mean().item<double>();
    if (it < 5) first_critic += critic_sum, first_gap += gap;
    if (it >= 55) last_critic += critic_sum, last_gap += gap;
    if (it % 20 == 0) std::cout << "iter " << it << " critic " << critic_sum / 4 << " gap " << gap << "\n";
  }
  std::cout << "critic " << first_critic << " -> " << last_critic << ", gap " << first_gap << " -> " << last_gap
            << "\n";

  // normal with tensor arguments: each element's own mean and spread
  auto means = torch::tensor({-3.0, 5.0}).unsqueeze(1).expand({2, 20000});
  auto draws = torch::normal(means, torch::tensor({0.5, 2.0}).unsqueeze(1));
  auto stats_mean = draws.mean(1), stats_std = draws.std(1);
  TORCH_CHECK(std::abs(stats_mean[0].item<double>() + 3.0) < 0.05 && std::abs(stats_mean[1].item<double>() - 5.0) < 0.1,
              "normal's means");
  TORCH_CHECK(std::abs(stats_std[0].item<double>() - 0.5) < 0.03 && std::abs(stats_std[1].item<double>() - 2.0) < 0.1,
              "normal's spreads");

  // value-based idioms, each checked against the same value computed another way
  auto q = torch::tensor({{1.0f, 3.0f, 2.0f}, {-1.0f, -2.0f, 0.5f}});
  auto actions = torch::tensor({{2}, {0}}, torch::kLong);
  auto qa = q.gather(1, actions).squeeze(1);
  TORCH_CHECK(qa[0].item<float>() == 2.0f && qa[1].item<float>() == -1.0f, "gather");
  auto next_max = std::get<0>(q.max(1));
  TORCH_CHECK(torch::equal(next_max, torch::tensor({3.0f, 0.5f})), "max over dim 1");
  TORCH_CHECK(torch::equal(q.argmax(1, true), torch::tensor({{1}, {2}}, torch::kLong)), "argmax keepdim");
  auto target = torch::tensor({2.5f, 1.5f});
  auto huber = torch::nn::functional::huber_loss(qa, target, torch::nn::functional::HuberLossFuncOptions().delta(1.0));
  // |2 - 2.5| = 0.5 -> 0.125; |-1 - 1.5| = 2.5 -> 2.0; mean 1.0625
  TORCH_CHECK(std::abs(huber.item<float>() - 1.0625f) < 1e-6, "huber loss");
  TORCH_CHECK(std::abs(torch::smooth_l1_loss(qa, target).item<float>() - 1.0625f) < 1e-6, "smooth l1 loss");
  auto mask = q > 0;
  TORCH_CHECK(q.masked_select(mask).numel() == mask.nonzero().size(0), "masked_select against nonzero");
  TORCH_CHECK(q.masked_fill(~mask, -1e9).min().item<float>() == -1e9f, "masked_fill");
  auto probs = torch::softmax(q, -1);
  auto samples = probs.multinomial(1000, true);
  TORCH_CHECK(samples.min().item<int64_t>() >= 0 && samples.max().item<int64_t>() <= 2, "multinomial's range");
  auto acc = torch::zeros({3});
  acc.index_add_(0, torch::tensor({0, 2, 2}, torch::kLong), torch::ones({3}));
  acc.index_put_({torch::tensor({1}, torch::kLong)}, 5.0);
  TORCH_CHECK(torch::equal(acc, torch::tensor({1.0f, 5.0f, 2.0f})), "index_add_ and index_put_");
  auto rew = torch::rand({6});
  auto r = rew.accessor<float, 1>();
  auto disc = torch::zeros({6});
  float running = 0;
  for (int i = 5; i >= 0; --i) {
    running = r[i] + 0.5f * running;
    disc[i] = running;
  }
  // the same returns as a weighted reverse sum
  auto powers = torch::pow(torch::full({6}, 0.5), torch::arange(6));
  for (int i = 0; i < 6; ++i) {
    auto want = (rew.slice(0, i) * powers.slice(0, 0, 6 - i)).sum().item<float>();
    TORCH_CHECK(std::abs(disc[i].item<float>() - want) < 1e-5, "discounted return ", i);
  }
  TORCH_CHECK(torch::allclose(rew.flip({0}).cumsum(0).flip({0})[0], rew.sum()), "reverse cumsum");

  torch::save(ac, "ppo_actor_critic.pt");
  ActorCritic restored(obs_dim, act_dim);
  torch::load(restored, "ppo_actor_critic.pt");
  TORCH_CHECK(torch::allclose(ac->log_std, restored->log_std), "saved and loaded");
  return last_critic < 0.5 * first_critic && last_gap < 0.5 * first_gap ? 0 : 1;
}
