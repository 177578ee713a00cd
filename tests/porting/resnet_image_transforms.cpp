// A LibTorch program as its users write them: a small residual network (a block of its own
// behind TORCH_MODULE, a ResNet class template over the block with a ModuleHolder subclass of its
// own, Sequential{nullptr} as "no downsampling", blocks pushed into Sequentials) trained on an
// image dataset of its own read from raw bytes (torch::empty(n, torch::kByte), element
// assignment, data_ptr copies) through TensorTransform augmentations (constant_pad_nd with a
// Scalar, a random crop by slice on negative dims, a random flip), with the learning rate
// lowered through the param group's AdamOptions. Kept in LibTorch's spelling: the build renames
// it as docs/porting.md says and runs it; it exits 0 when its loss fell.
#include <torch/torch.h>
#include <array>
#include <iostream>
#include <vector>

namespace resnet {
torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int64_t in, int64_t out, int64_t stride = 1, torch::nn::Sequential downsample = nullptr)
      : conv1(conv3x3(in, out, stride)), bn1(out), conv2(conv3x3(out, out)), bn2(out), downsampler(downsample) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("relu", relu);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    if (downsampler) register_module("downsampler", downsampler);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = relu->forward(bn1->forward(conv1->forward(x)));
    out = bn2->forward(conv2->forward(out));
    out += downsampler ? downsampler->forward(x) : x;
    return relu->forward(out);
  }

 private:
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::ReLU relu;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Sequential downsampler;
};
TORCH_MODULE(ResidualBlock);

template <typename Block>
class ResNetImpl : public torch::nn::Module {
 public:
  ResNetImpl(const std::array<int64_t, 2>& layers, int64_t classes)
      : layer1(make_layer(8, layers[0])), layer2(make_layer(16, layers[1], 2)), fc(16, classes) {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("layer1", layer1);
    register_module("layer2", layer2);
    register_module("avg_pool", avg_pool);
    register_module("fc", fc);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = torch::relu(bn->forward(conv->forward(x)));
    out = layer2->forward(layer1->forward(out));
    out = avg_pool->forward(out);
    return fc->forward(out.view({out.size(0), -1}));
  }

 private:
  int64_t in_channels = 8;
  torch::nn::Conv2d conv{conv3x3(3, 8)};
  torch::nn::BatchNorm2d bn{8};
  torch::nn::Sequential layer1, layer2;
  torch::nn::AvgPool2d avg_pool{8};
  torch::nn::Linear fc;

  torch::nn::Sequential make_layer(int64_t out, int64_t blocks, int64_t stride = 1) {
    torch::nn::Sequential layers;
    torch::nn::Sequential downsample{nullptr};
    if (stride != 1 || in_channels != out) {
      downsample = torch::nn::Sequential{conv3x3(in_channels, out, stride), torch::nn::BatchNorm2d(out)};
    }
    layers->push_back(Block(in_channels, out, stride, downsample));
    in_channels = out;
    for (int64_t i = 1; i < blocks; ++i) layers->push_back(Block(out, out));
    return layers;
  }
};

template <typename Block = ResidualBlock>
class ResNet : public torch::nn::ModuleHolder<ResNetImpl<Block>> {
 public:
  using torch::nn::ModuleHolder<ResNetImpl<Block>>::ModuleHolder;
};
}  // namespace resnet

// Images stored as raw bytes, one label byte then 3 * 16 * 16 pixel bytes per record, as binary
// image datasets ship: the class is the color channel that is brightest.
class ColorImages : public torch::data::datasets::Dataset<ColorImages> {
 public:
  explicit ColorImages(int64_t n) {
    const int64_t bytes = 1 + 3 * 16 * 16;
    std::vector<char> buffer(n * bytes);
    auto noise = torch::randint(0, 120, {n, 3 * 16 * 16}, torch::kInt64);
    auto pixels = noise.accessor<int64_t, 2>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t label = i % 3;
      buffer[i * bytes] = static_cast<char>(label);
      for (int64_t j = 0; j < 3 * 16 * 16; ++j) {
        int64_t v = pixels[i][j] + ((j / 256) == label ? 120 : 0);
        buffer[i * bytes + 1 + j] = static_cast<char>(static_cast<uint8_t>(v));
      }
    }
    auto targets = torch::empty(n, torch::kByte);
    auto images = torch::empty({n, 3, 16, 16}, torch::kByte);
    for (int64_t i = 0; i < n; ++i) {
      targets[i] = buffer[i * bytes];
      std::copy(&buffer[i * bytes + 1], &buffer[i * bytes + bytes], reinterpret_cast<char*>(images[i].data_ptr()));
    }
    images_ = images.to(torch::kFloat32).div_(255);
    targets_ = targets.to(torch::kInt64);
  }
  torch::data::Example<> get(size_t index) override { return {images_[index], targets_[index]}; }
  torch::optional<size_t> size() const override { return images_.size(0); }

 private:
  torch::Tensor images_, targets_;
};

class ConstantPad : public torch::data::transforms::TensorTransform<torch::Tensor> {
 public:
  explicit ConstantPad(int64_t padding, torch::Scalar value = 0) : padding_(4, padding), value_(value) {}
  torch::Tensor operator()(torch::Tensor input) override { return torch::constant_pad_nd(input, padding_, value_); }

 private:
  std::vector<int64_t> padding_;
  torch::Scalar value_;
};

class RandomCrop : public torch::data::transforms::TensorTransform<torch::Tensor> {
 public:
  explicit RandomCrop(const std::vector<int64_t>& size) : size_(size) {}
  torch::Tensor operator()(torch::Tensor input) override {
    auto top = torch::randint(input.size(-2) - size_[0] + 1, 1)[0].item<int64_t>();
    auto left = torch::randint(input.size(-1) - size_[1] + 1, 1)[0].item<int64_t>();
    return input.slice(-2, top, top + size_[0]).slice(-1, left, left + size_[1]);
  }

 private:
  std::vector<int64_t> size_;
};

class RandomHorizontalFlip : public torch::data::transforms::TensorTransform<torch::Tensor> {
 public:
  explicit RandomHorizontalFlip(double p = 0.5) : p_(p) {}
  torch::Tensor operator()(torch::Tensor input) override {
    return torch::rand(1)[0].item<double>() < p_ ? input.flip(-1) : input;
  }

 private:
  double p_;
};

int main() {
  torch::manual_seed(0);
  ColorImages raw(240);
  auto first = raw.get(0);
  TORCH_CHECK(first.target.item<int64_t>() == 0 && first.data.sizes() == torch::IntArrayRef({3, 16, 16}), "record 0");
  TORCH_CHECK(first.data[0].mean().item<float>() > first.data[1].mean().item<float>(), "channel 0 is the bright one");
  auto padded = ConstantPad(2)(first.data);
  TORCH_CHECK(padded.sizes() == torch::IntArrayRef({3, 20, 20}) && padded[0][0][0].item<float>() == 0, "constant pad");

  auto train = ColorImages(240)
                   .map(ConstantPad(2))
                   .map(RandomHorizontalFlip())
                   .map(RandomCrop({16, 16}))
                   .map(torch::data::transforms::Stack<>());
  const auto n = train.size().value();
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(std::move(train), 24);

  std::array<int64_t, 2> layers{1, 1};
  resnet::ResNet<resnet::ResidualBlock> model(layers, 3);
  double lr = 3e-3;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(lr));
  double first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    double total = 0;
    int64_t correct = 0;
    for (auto& batch : *loader) {
      auto output = model->forward(batch.data);
      auto loss = torch::nn::functional::cross_entropy(output, batch.target);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      total += loss.item<double>() * batch.data.size(0);
      correct += output.argmax(1).eq(batch.target).sum().item<int64_t>();
    }
    if (epoch % 2 == 1) {
      lr *= 0.5;
      static_cast<torch::optim::AdamOptions&>(optimizer.param_groups().front().options()).lr(lr);
    }
    if (epoch == 0) first_loss = total / n;
    last_loss = total / n;
    std::cout << "epoch " << epoch << " loss " << total / n << " accuracy " << static_cast<double>(correct) / n << "\n";
  }
  TORCH_CHECK(optimizer.param_groups().front().options().get_lr() == lr, "the group's learning rate");
  return last_loss < first_loss ? 0 : 1;
}
