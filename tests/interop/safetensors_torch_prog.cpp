// The wick side of the safetensors exchange with PyTorch (safetensors_torch.py): the Fashion-MNIST
// CNN of wick-train, its weights and outputs passed through .safetensors files.
//   safetensors_torch_prog forward WEIGHTS INPUTS OUTPUTS DEVICE   the CNN with WEIGHTS (strict) on
//                                                                 INPUTS["x"], logits to OUTPUTS["y"]
//   safetensors_torch_prog train TRAIN INPUTS WEIGHTS OUTPUTS DEVICE   200 SGD steps on TRAIN["x"]
//                                                                 and ["labels"], the weights saved
//                                                                 by wick::save, then as forward
//   safetensors_torch_prog roundtrip IN OUT                        load IN, save what it holds to OUT
#include <iostream>
#include <string>

#include "wick/wick.h"

using namespace wick;

namespace {

nn::Sequential make_cnn() {
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
}

// The model's logits for every row of x, 1000 rows at a time, on the CPU.
Tensor logits(nn::Sequential& model, const Tensor& x, Device device) {
  NoGradGuard no_grad;
  model->eval();
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < x.size(0); i += 1000)
    parts.push_back(model->forward(x.narrow(0, i, std::min<int64_t>(1000, x.size(0) - i)).to(device)).cpu());
  return cat(parts, 0);
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "roundtrip" && argc == 4) {
    TensorMap m = load(argv[2]);
    save(m, argv[3], load_metadata(argv[2]));
    return 0;
  }
  const bool train = cmd == "train";
  if ((cmd == "forward" && argc == 6) || (train && argc == 7)) {
    const Device device(argv[argc - 1]);
    manual_seed(0);
    nn::Sequential model = make_cnn();
    TensorMap inputs = load(argv[3]);
    const std::string weights = argv[train ? 4 : 2], outputs = argv[train ? 5 : 4];
    if (!train) {
      model->load_state_dict(load(weights));
      model->to(device);
    } else {
      model->to(device);
      optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
      TensorMap data = load(argv[2]);
      const Tensor& x = data.at("x");
      const Tensor& labels = data.at("labels");
      for (int64_t i = 0; i + 64 <= x.size(0) && i < 64 * 200; i += 64) {
        opt.zero_grad();
        Tensor loss = nn::functional::cross_entropy(model->forward(x.narrow(0, i, 64).to(device)),
                                                    labels.narrow(0, i, 64).to(device));
        loss.backward();
        opt.step();
      }
      save(model->state_dict(), weights);
    }
    save(TensorMap{{"y", logits(model, inputs.at("x"), device)}}, outputs);
    return 0;
  }
  std::cerr
      << "usage: safetensors_torch_prog forward WEIGHTS INPUTS OUTPUTS DEVICE | train TRAIN INPUTS WEIGHTS "
         "OUTPUTS DEVICE | roundtrip IN OUT\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "safetensors_torch_prog: " << e.what() << "\n";
  return 1;
}
