// A LibTorch program as its users write them: a small encoder-decoder that labels each pixel
// (squares and discs on a noisy background), kept in LibTorch's spelling. It builds its stages
// with Sequential::push_back of modules of its own, an empty Sequential as "no shortcut",
// channel attention from AdaptiveAvgPool2d and Sigmoid, Upsample by a scale factor, blocks
// called through ->as<Holder>(), a pass over modules() that dilates the last stage's
// convolutions through their options (kernel_size()->at(0)), reflect padding, parameters
// frozen by name with set_requires_grad, weights copied by name through named_parameters()'s
// find(), and nll_loss2d. The build renames it as docs/porting.md says and runs it; it exits 0
// when its loss fell and its pixel accuracy rose.
#include <torch/torch.h>
#include <cstring>
#include <iostream>

// Images [1, 16, 16] of one shape each, the mask of its pixels: 0 background, 1 square, 2 disc.
class Shapes : public torch::data::datasets::Dataset<Shapes> {
 public:
  explicit Shapes(int64_t n) : images_(torch::zeros({n, 1, 16, 16})), masks_(torch::zeros({n, 16, 16}, torch::kLong)) {
    auto centres = torch::randint(4, 12, {n, 2});
    auto kinds = torch::randint(1, 3, {n});
    auto ys = torch::arange(16).view({16, 1}).expand({16, 16});
    auto xs = torch::arange(16).view({1, 16}).expand({16, 16});
    for (int64_t i = 0; i < n; ++i) {
      const int64_t cy = centres[i][0].item<int64_t>(), cx = centres[i][1].item<int64_t>();
      const int64_t kind = kinds[i].item().toLong();
      auto inside = kind == 1 ? torch::max((ys - cy).abs(), (xs - cx).abs()) <= 2
                              : ((ys - cy).pow(2) + (xs - cx).pow(2)) <= 9;
      masks_[i].masked_fill_(inside, kind);
      images_[i][0] = inside.to(torch::kFloat) * (kind == 1 ? 1.0 : -1.0);
    }
    images_ += 0.3 * torch::randn_like(images_);
  }
  torch::data::Example<> get(size_t index) override { return {images_[index], masks_[index]}; }
  torch::optional<size_t> size() const override { return images_.size(0); }

 private:
  torch::Tensor images_, masks_;
};

torch::nn::Conv2dOptions conv_options(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t padding = 0) {
  return torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(padding).bias(false);
}

// Channel attention: the input scaled by a gate of its pooled channels.
struct GateImpl : torch::nn::Module {
  GateImpl(int64_t channels, int64_t reduction) {
    fc = torch::nn::Sequential(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(1)),
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels / reduction, 1)),
                               torch::nn::ReLU(torch::nn::ReLUOptions(true)),
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(channels / reduction, channels, 1)),
                               torch::nn::Sigmoid());
    register_module("fc", fc);
  }
  torch::Tensor forward(torch::Tensor x) { return x * fc->forward(x); }
  torch::nn::Sequential fc{nullptr};
};
TORCH_MODULE(Gate);

// Two 3x3 convolutions with batch norm, and a shortcut that is empty when the shapes agree.
struct StageImpl : torch::nn::Module {
  StageImpl(int64_t in, int64_t out, int64_t stride, torch::nn::Sequential shortcut_) : shortcut(shortcut_) {
    conv1 = register_module("conv1", torch::nn::Conv2d(conv_options(in, out, 3, stride, 1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(out)));
    conv2 = register_module("conv2", torch::nn::Conv2d(conv_options(out, out, 3, 1, 1).padding_mode(torch::kReflect)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(out));
    if (!shortcut->is_empty()) register_module("shortcut", shortcut);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto residual = shortcut->is_empty() ? x : shortcut->forward(x);
    x = torch::relu(bn1->forward(conv1->forward(x)));
    x = bn2->forward(conv2->forward(x));
    return torch::relu(x + residual);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential shortcut;
};
TORCH_MODULE(Stage);

// Upsamples, joins the skip features, and convolves.
struct UpImpl : torch::nn::Module {
  UpImpl(int64_t in, int64_t skip, int64_t out) {
    up = torch::nn::Upsample(torch::nn::UpsampleOptions().scale_factor(std::vector<double>({2, 2})).mode(torch::kNearest));
    gate = register_module("gate", Gate(in + skip, 2));
    conv = register_module("conv", torch::nn::Conv2d(conv_options(in + skip, out, 3, 1, 1)));
    bn = register_module("bn", torch::nn::BatchNorm2d(out));
  }
  torch::Tensor forward(torch::Tensor x, torch::Tensor skip) {
    x = torch::cat({up->forward(x), skip}, 1);
    return torch::relu(bn->forward(conv->forward(gate->forward(x))));
  }
  torch::nn::Upsample up{nullptr};
  Gate gate{nullptr};
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
};
TORCH_MODULE(Up);

torch::nn::Sequential make_stage(int64_t in, int64_t out, int64_t stride) {
  torch::nn::Sequential shortcut;
  if (stride != 1 || in != out)
    shortcut = torch::nn::Sequential(torch::nn::Conv2d(conv_options(in, out, 1, stride)), torch::nn::BatchNorm2d(out));
  torch::nn::Sequential layers;
  layers->push_back(Stage(in, out, stride, shortcut));
  layers->push_back(Stage(out, out, 1, torch::nn::Sequential()));
  return layers;
}

struct SegNetImpl : torch::nn::Module {
  explicit SegNetImpl(int64_t classes) {
    stem = register_module("stem", torch::nn::Conv2d(conv_options(1, 8, 3, 1, 1)));
    encoder = register_module("encoder", torch::nn::Sequential(make_stage(8, 16, 2)));
    deep = register_module("deep", make_stage(16, 16, 1));
    decoder->push_back(Up(16, 8, 8));
    register_module("decoder", decoder);
    center = register_module("center", torch::nn::Sequential(torch::nn::Identity()));
    head = register_module("head", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, classes, 1)));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto skip = torch::relu(stem->forward(x));
    auto y = center->forward(deep->forward(encoder->forward(skip)));
    for (size_t i = 0; i < decoder->size(); ++i) y = decoder[i]->as<Up>()->forward(y, skip);
    return torch::log_softmax(head->forward(y), 1);
  }
  // Dilates the 3x3 convolutions of the deep stage, padding them to keep their size.
  void make_dilated(int64_t rate) {
    for (auto m : deep->modules()) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        const int64_t k = conv->options.kernel_size()->at(0);
        if (k != 3) continue;
        conv->options.dilation(rate);
        conv->options.padding((k / 2) * rate);
      }
    }
  }
  torch::nn::Conv2d stem{nullptr}, head{nullptr};
  torch::nn::Sequential encoder{nullptr}, deep{nullptr}, center{nullptr}, decoder;
};
TORCH_MODULE(SegNet);

int main() {
  torch::manual_seed(0);
  torch::Device device(torch::getNumGPUs() > 0 && torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  std::cout << "GPUs: " << torch::getNumGPUs() << ", cuDNN: " << torch::cuda::cudnn_is_available() << "\n";
  const int64_t batch_size = 16;
  auto train = Shapes(256).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(std::move(train), batch_size);

  SegNet model(3);
  model->make_dilated(2);
  model->to(device);

  // A second network trained a little first; its encoder weights are copied in by name.
  SegNet warm(3);
  {
    torch::optim::Adam opt(warm->parameters(), 1e-2);
    auto warm_loader = torch::data::make_data_loader(Shapes(32).map(torch::data::transforms::Stack<>()), 8);
    auto example = *warm_loader->begin();
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      auto loss = torch::nll_loss2d(warm->forward(example.data), example.target);
      loss.backward();
      opt.step();
    }
  }
  torch::OrderedDict<std::string, torch::Tensor> source = warm->named_parameters();
  auto params = model->named_parameters(true);
  torch::autograd::GradMode::set_enabled(false);
  int64_t copied = 0;
  for (auto n = source.begin(); n != source.end(); n++) {
    if (!strstr((*n).key().data(), "encoder")) continue;
    auto* t = params.find((*n).key());
    if (t != nullptr) {
      t->copy_((*n).value());
      ++copied;
    }
  }
  torch::autograd::GradMode::set_enabled(true);
  TORCH_CHECK(copied > 0, "no encoder parameter copied");
  TORCH_CHECK(torch::equal(model->named_parameters()["encoder.0.conv1.weight"].cpu(),
                           warm->named_parameters()["encoder.0.conv1.weight"]),
              "copied weights differ");

  double first = 0, last = 0, first_acc = 0, last_acc = 0;
  const int epochs = 6;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    // The copied encoder stays frozen for the first half.
    for (auto mm : model->named_parameters())
      mm.value().set_requires_grad(epoch >= epochs / 2 || !strstr(mm.key().data(), "encoder"));
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(epoch < epochs / 2 ? 1e-2 : 3e-3));
    model->train();
    float loss_sum = 0;
    double correct = 0, total = 0;
    int batches = 0;
    for (auto& batch : *loader) {
      auto data = batch.data.to(device);
      auto target = batch.target.to(device);
      optimizer.zero_grad();
      auto prediction = model->forward(data);
      auto loss = torch::nll_loss2d(prediction, target);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item().toFloat();
      correct += prediction.argmax(1).eq(target).sum().item<double>();
      total += target.numel();
      ++batches;
    }
    const double mean = loss_sum / batches, acc = correct / total;
    if (epoch == 0) first = mean, first_acc = acc;
    last = mean, last_acc = acc;
    std::cout << "epoch " << epoch << " loss " << mean << " pixel accuracy " << acc << "\n";
  }
  for (const auto& p : model->parameters()) TORCH_CHECK(p.requires_grad(), "a parameter stayed frozen");
  std::cout << "first " << first << " last " << last << "\n";
  return last < 0.6 * first && last_acc > first_acc && last_acc > 0.9 ? 0 : 1;
}
