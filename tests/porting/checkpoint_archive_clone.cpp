// A LibTorch program as its users write them (a policy network that is Cloneable, trained with
// Adam, checkpointed through serialize::OutputArchive and resumed through InputArchive, and a
// target network cloned from it), kept in LibTorch's spelling: the build renames it as
// docs/porting.md says and runs it; it exits 0 when its loss fell, the resumed run took the
// uninterrupted run's step and the clone stayed apart from the network it was cloned from.
#include <torch/torch.h>
#include <iostream>
#include <sstream>

struct PolicyImpl : torch::nn::Cloneable<PolicyImpl> {
  PolicyImpl(int64_t in, int64_t hidden, int64_t out) : in_(in), hidden_(hidden), out_(out) { reset(); }
  void reset() override {
    fc1 = register_module("fc1", torch::nn::Linear(in_, hidden_));
    fc2 = register_module("fc2", torch::nn::Linear(hidden_, out_));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  int64_t in_, hidden_, out_;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Policy);

static void step(Policy& net, torch::optim::Adam& opt, const torch::Tensor& x, const torch::Tensor& y, float* loss_out) {
  opt.zero_grad();
  auto loss = torch::mse_loss(net->forward(x), y);
  loss.backward();
  opt.step();
  if (loss_out) *loss_out = loss.item<float>();
}

int main() {
  torch::manual_seed(0);
  auto x = torch::randn({64, 4});
  auto y = x.sum(1, true).tanh();
  Policy net(4, 16, 1);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(0.01));
  float first = 0, last = 0;
  for (int i = 0; i < 100; ++i) step(net, opt, x, y, i == 0 ? &first : &last);

  // Checkpoint the model and the optimizer, as LibTorch programs do.
  torch::serialize::OutputArchive model_archive, opt_archive;
  net->save(model_archive);
  opt.save(opt_archive);
  std::stringstream model_bytes, opt_bytes;
  model_archive.save_to(model_bytes);
  opt_archive.save_to(opt_bytes);

  // The target network: a deep copy that training the policy leaves alone.
  auto target = std::dynamic_pointer_cast<PolicyImpl>(net->clone());
  auto target_w = target->fc1->weight.clone();

  step(net, opt, x, y, nullptr);  // the uninterrupted run's next step

  Policy resumed(4, 16, 1);
  torch::optim::Adam resumed_opt(resumed->parameters(), torch::optim::AdamOptions(0.01));
  torch::serialize::InputArchive model_in, opt_in;
  model_in.load_from(model_bytes);
  opt_in.load_from(opt_bytes);
  resumed->load(model_in);
  resumed_opt.load(opt_in);
  step(resumed, resumed_opt, x, y, nullptr);

  const bool same_step = torch::equal(resumed->fc1->weight, net->fc1->weight) &&
                         torch::equal(resumed->fc2->bias, net->fc2->bias);
  const bool clone_apart = torch::equal(target->fc1->weight, target_w) &&
                           !torch::equal(target->fc1->weight, net->fc1->weight);
  std::cout << "loss " << first << " -> " << last << ", resumed step equal: " << same_step
            << ", clone apart: " << clone_apart << std::endl;
  return last < first && same_step && clone_apart ? 0 : 1;
}
