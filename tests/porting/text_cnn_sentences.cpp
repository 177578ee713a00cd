// A LibTorch program as its users write them: sentence classification with a convolutional
// network over word embeddings, spelled as such programs spell it (#include<torch/torch.h>
// without the space, using namespace torch and at, ATen's at::transpose, at::cat, at::size and
// at::_unsafe_view, a vocabulary of its own whose indices are written element by element into a
// tensor, labels taken from an int32 vector through from_blob, a dataset of its own over the two
// tensors, the batches cast to kLong, CrossEntropyFuncOptions, gradient clipping, and training
// and evaluation functions with auto& parameters). Kept in LibTorch's spelling: the build renames
// it as docs/porting.md says and runs it; it exits 0 when its loss fell and it classifies the
// test sentences better than chance.
#include<torch/torch.h>
#include<iomanip>
#include<iostream>
#include<map>
#include<sstream>
#include<string>
#include<vector>

using namespace torch;
using namespace at;
namespace F = torch::nn::functional;

struct SentenceCNN : nn::Module {
  SentenceCNN(int32_t vocab, int32_t embed_dim, int32_t maxlen, int32_t classes, int32_t filters, const int32_t sizes[3])
      : embed(nn::Embedding(nn::EmbeddingOptions(vocab, embed_dim))),
        conv1(nn::Conv1d(nn::Conv1dOptions(embed_dim, filters, sizes[0]).stride(1).bias(false))),
        conv2(nn::Conv1d(nn::Conv1dOptions(embed_dim, filters, sizes[1]).stride(1).bias(false))),
        pool1(nn::MaxPool1d(nn::MaxPool1dOptions(maxlen - sizes[0] + 1).stride(1))),
        pool2(nn::MaxPool1d(nn::MaxPool1dOptions(maxlen - sizes[1] + 1).stride(1))),
        fc(nn::Linear(nn::LinearOptions(filters * 2, classes))),
        drop(nn::Dropout(nn::DropoutOptions().p(0.3))) {
    register_module("embed", embed);
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("pool1", pool1);
    register_module("pool2", pool2);
    register_module("fc", fc);
    register_module("drop", drop);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = at::transpose(embed(x), 1, 2);  // [N, embed, len]
    auto out1 = pool1(torch::relu(conv1(x)));
    auto out2 = pool2(torch::relu(conv2(x)));
    auto out = at::cat({out1, out2}, 1);
    out = at::_unsafe_view(out, {at::size(out, 0), at::size(out, 1)});
    return fc(drop(out));
  }
  nn::Embedding embed;
  nn::Conv1d conv1, conv2;
  nn::MaxPool1d pool1, pool2;
  nn::Linear fc;
  nn::Dropout drop;
};

class SentenceDataset : public torch::data::datasets::Dataset<SentenceDataset> {
 public:
  SentenceDataset(torch::Tensor indices, torch::Tensor labels) : inputs_(indices), targets_(labels) {}
  torch::data::Example<> get(size_t index) override { return {inputs_[index].clone(), targets_[index].clone()}; }
  torch::optional<size_t> size() const override { return at::size(inputs_, 0); }

 private:
  torch::Tensor inputs_, targets_;
};

// Sentences whose class shows in some of their words, among words every class uses.
std::pair<std::vector<std::string>, std::vector<int32_t>> make_sentences(int n, int seed) {
  const std::vector<std::string> common = {"the", "a", "of", "what", "which", "how", "is", "in"};
  std::vector<std::string> sentences;
  std::vector<int32_t> labels;
  auto pick = torch::randint(0, 1000, {n, 8}, torch::kLong);
  for (int i = 0; i < n; ++i) {
    const int32_t label = (i + seed) % 3;
    std::string s;
    for (int w = 0; w < 8; ++w) {
      auto r = pick[i][w].item<int64_t>();
      s += (w % 3 == 1) ? "c" + std::to_string(label) + "w" + std::to_string(r % 4) : common[r % common.size()];
      s += " ";
    }
    sentences.push_back(s);
    labels.push_back(label);
  }
  return {sentences, labels};
}

std::map<std::string, int32_t> create_vocab(const std::vector<std::string>& corpus) {
  std::map<std::string, int32_t> dictionary{{"<PAD>", 0}};
  for (const auto& sentence : corpus) {
    std::stringstream words(sentence);
    for (std::string w; words >> w;) dictionary.insert({w, static_cast<int32_t>(dictionary.size())});
  }
  return dictionary;
}

std::pair<torch::Tensor, torch::Tensor> to_tensors(const std::map<std::string, int32_t>& dictionary,
                                                   const std::vector<std::string>& sentences,
                                                   std::vector<int32_t>& labels, int32_t maxlen) {
  const int32_t n = sentences.size();
  torch::Tensor indices = torch::zeros({n, maxlen});
  for (int32_t i = 0; i < n; ++i) {
    std::stringstream words(sentences[i]);
    int32_t position = 0;
    for (std::string w; words >> w && position < maxlen; ++position) {
      auto it = dictionary.find(w);
      if (it != dictionary.end()) indices[i][position] = it->second;
    }
  }
  auto options = torch::TensorOptions().dtype(torch::kInt32);
  return {indices, torch::from_blob(labels.data(), {n}, options).clone()};
}

template <typename DataLoader>
double evaluate(auto& net, DataLoader& loader, torch::Device device) {
  torch::NoGradGuard no_grad;
  net.eval();
  double correct = 0, total = 0;
  for (auto& batch : loader) {
    auto inputs = batch.data.to(torch::kLong).to(device);
    auto targets = batch.target.to(torch::kLong).to(device);
    correct += net.forward(inputs).argmax(1).eq(targets).sum().template item<double>();
    total += inputs.size(0);
  }
  return correct / total;
}

template <typename DataLoader>
std::pair<double, double> train_model(size_t epochs, auto& net, DataLoader& loader, torch::Device device) {
  torch::optim::Adam optimizer(net.parameters(), torch::optim::AdamOptions(0.01));
  auto options = F::CrossEntropyFuncOptions().reduction(torch::kMean);
  double first = 0, last = 0;
  for (size_t epoch = 1; epoch <= epochs; ++epoch) {
    net.train();
    double train_loss = 0;
    int batches = 0;
    for (auto& batch : loader) {
      auto inputs = batch.data.to(torch::kLong).to(device);
      auto targets = batch.target.to(torch::kLong).to(device);
      optimizer.zero_grad();
      auto loss = F::cross_entropy(net.forward(inputs), targets, options);
      loss.backward();
      torch::nn::utils::clip_grad_norm_(net.parameters(), 3.0);
      optimizer.step();
      train_loss += loss.template item<double>();
      ++batches;
    }
    if (epoch == 1) first = train_loss / batches;
    last = train_loss / batches;
    std::cout << "Epoch: " << epoch << " Training Loss: " << std::fixed << std::setprecision(3) << last << std::endl;
  }
  return {first, last};
}

int main() {
  torch::manual_seed(1);
  const int32_t maxlen = 10, sizes[3] = {2, 3, 4};
  auto [train_text, train_labels] = make_sentences(240, 0);
  auto [test_text, test_labels] = make_sentences(60, 1);
  auto vocab = create_vocab(train_text);
  auto train_tensors = to_tensors(vocab, train_text, train_labels, maxlen);
  auto test_tensors = to_tensors(vocab, test_text, test_labels, maxlen);
  TORCH_CHECK(train_tensors.first.scalar_type() == torch::kFloat && train_tensors.second.scalar_type() == torch::kInt,
              "indices are float, labels int32");
  TORCH_CHECK(train_tensors.second[1].item<int32_t>() == train_labels[1], "labels through from_blob");

  auto train_set = SentenceDataset(train_tensors.first, train_tensors.second).map(torch::data::transforms::Stack<>());
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(train_set), 16);
  auto test_set = SentenceDataset(test_tensors.first, test_tensors.second).map(torch::data::transforms::Stack<>());
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(test_set), 16);

  torch::Device device(torch::kCPU);
  SentenceCNN net(vocab.size(), 16, maxlen, 3, 8, sizes);
  net.to(device);
  auto [first, last] = train_model(6, net, *train_loader, device);
  const double accuracy = evaluate(net, *test_loader, device);
  std::cout << "Test Accuracy: " << accuracy << std::endl;
  return (last < first && accuracy > 0.5) ? 0 : 1;
}
