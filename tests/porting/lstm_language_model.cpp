// A LibTorch program as its users write them: a word-level LSTM language model (a dictionary of
// its own, the corpus read into ids through from_blob(...).clone(), batches cut with Slice, the
// hidden and cell states carried across batches through std::forward_as_tuple(output,
// std::tie(h, c)) = model->forward(...) and detach_(), perplexity from exp(loss), gradient
// clipping), then words sampled from it (multinomial, item() as a Scalar, fill_ with it,
// toLong()). Kept in LibTorch's spelling: the build renames it as docs/porting.md says and runs
// it; it exits 0 when its loss fell and the samples are words of the corpus.
#include <torch/torch.h>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

using torch::indexing::Slice;

class Vocabulary {
 public:
  int64_t add(const std::string& w) {
    auto it = index_.find(w);
    if (it != index_.end()) return it->second;
    words_.push_back(w);
    return index_[w] = static_cast<int64_t>(words_.size()) - 1;
  }
  const std::string& word(int64_t i) const { return words_.at(i); }
  size_t size() const { return words_.size(); }

 private:
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> words_;
};

class WordLMImpl : public torch::nn::Module {
 public:
  WordLMImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers)
      : embed_(vocab, embed),
        lstm_(torch::nn::LSTMOptions(embed, hidden).num_layers(layers).batch_first(true)),
        out_(hidden, vocab) {
    register_module("embed", embed_);
    register_module("lstm", lstm_);
    register_module("out", out_);
  }

  std::tuple<torch::Tensor, std::tuple<torch::Tensor, torch::Tensor>> forward(
      torch::Tensor x, std::tuple<torch::Tensor, torch::Tensor> state) {
    torch::Tensor y;
    std::tuple<torch::Tensor, torch::Tensor> next;
    std::tie(y, next) = lstm_->forward(embed_->forward(x), state);
    y = out_->forward(y.reshape({-1, y.size(2)}));
    return std::make_tuple(torch::nn::functional::log_softmax(y, 1), next);
  }

 private:
  torch::nn::Embedding embed_;
  torch::nn::LSTM lstm_;
  torch::nn::Linear out_;
};
TORCH_MODULE(WordLM);

int main() {
  torch::manual_seed(0);
  // A corpus with structure to learn: a few sentences in a repeating order.
  const std::vector<std::string> lines = {"the cat sat on the mat", "a dog ran in the park",
                                          "the bird sang on a branch", "my cat ate the fish"};
  std::stringstream text;
  for (int r = 0; r < 60; ++r) text << lines[r % lines.size()] << "\n";
  Vocabulary vocab;
  std::vector<int64_t> ids;
  for (std::string line; std::getline(text, line);) {
    std::istringstream ws(line);
    for (std::string w; ws >> w;) ids.push_back(vocab.add(w));
    ids.push_back(vocab.add("<eos>"));
  }
  const int64_t batch = 4, seq = 12, hidden = 64, layers = 1;
  const int64_t columns = static_cast<int64_t>(ids.size()) / batch;
  auto corpus = torch::from_blob(ids.data(), {batch, columns}, torch::TensorOptions().dtype(torch::kInt64)).clone();
  ids.clear();  // the clone owns its memory
  TORCH_CHECK(corpus.max().item<int64_t>() == static_cast<int64_t>(vocab.size()) - 1, "ids out of range");

  WordLM model(vocab.size(), 16, hidden, layers);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 12; ++epoch) {
    double total = 0, perplexity = 0;
    int steps = 0;
    auto h = torch::zeros({layers, batch, hidden}).detach();
    auto c = torch::zeros({layers, batch, hidden}).detach();
    for (int64_t i = 0; i + seq + 1 <= corpus.size(1); i += seq) {
      auto data = corpus.index({Slice(), Slice(i, i + seq)});
      auto target = corpus.index({Slice(), Slice(i + 1, i + 1 + seq)}).reshape(-1);
      torch::Tensor output;
      std::forward_as_tuple(output, std::tie(h, c)) = model->forward(data, std::make_tuple(h, c));
      h.detach_();
      c.detach_();
      auto loss = torch::nn::functional::nll_loss(output, target);
      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
      optimizer.step();
      total += loss.item<double>();
      perplexity += torch::exp(loss).item<double>();
      ++steps;
    }
    TORCH_CHECK(!h.requires_grad() && h.grad_fn() == nullptr, "detach_ left the state in the graph");
    if (epoch == 0) first = total / steps;
    last = total / steps;
    if (epoch % 4 == 0) std::cout << "epoch " << epoch << " loss " << total / steps << " perplexity " << perplexity / steps << "\n";
  }
  std::cout << "first " << first << " last " << last << "\n";

  // Sampling, one word at a time.
  model->eval();
  torch::NoGradGuard no_grad;
  auto h = torch::zeros({layers, 1, hidden});
  auto c = torch::zeros({layers, 1, hidden});
  auto prob = torch::ones(static_cast<int64_t>(vocab.size()));
  auto data = prob.multinomial(1).unsqueeze(1);
  TORCH_CHECK(data.sizes() == torch::IntArrayRef({1, 1}) && data.scalar_type() == torch::kLong, "multinomial's ids");
  std::string sample;
  for (int i = 0; i < 20; ++i) {
    torch::Tensor output;
    std::forward_as_tuple(output, std::tie(h, c)) = model->forward(data, std::make_tuple(h, c));
    prob = output.exp();
    auto word_id = prob.multinomial(1).item();
    data.fill_(word_id);
    TORCH_CHECK(data.item<int64_t>() == word_id.toLong(), "fill_ with a Scalar");
    auto word = vocab.word(word_id.toLong());
    sample += (word == "<eos>") ? std::string("\n") : word + " ";
  }
  std::cout << sample << "\n";
  return last < first ? 0 : 1;
}
