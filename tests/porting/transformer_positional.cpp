// A LibTorch program as its users write them: a Transformer encoder over token embeddings with a
// sinusoidal positional encoding of its own (a buffer filled through index({Slice(), Slice(0,
// None, 2)}) = ..., unsqueeze_ and transpose_ on it, registered with register_buffer and sliced
// in forward), TransformerEncoderLayerOptions and TransformerEncoder, a causal mask from triu,
// and a model whose embedding is scaled by sqrt(d_model); an nn::Transformer from
// TransformerOptions(d_model, nhead, encoders, decoders) given TransformerImpl's static mask.
// Kept in LibTorch's spelling: the build renames it as docs/porting.md says and runs it; it exits
// 0 when its loss fell.
#include <torch/torch.h>
#include <cmath>
#include <iostream>
#include <limits>

using torch::indexing::None;
using torch::indexing::Slice;

class PositionalEncodingImpl : public torch::nn::Module {
 public:
  PositionalEncodingImpl(int64_t d_model, double dropout = 0.1, int64_t max_len = 64) : drop(dropout) {
    pe = torch::zeros({max_len, d_model});
    auto position = torch::arange(0, max_len, torch::TensorOptions(torch::kFloat32)).unsqueeze_(1);
    auto div_term = torch::exp(torch::arange(0, d_model, 2, torch::TensorOptions(torch::kFloat32)) *
                               (-std::log(10000.0) / d_model));
    pe.index({Slice(), Slice(0, None, 2)}) = torch::sin(position * div_term);
    pe.index({Slice(), Slice(1, None, 2)}) = torch::cos(position * div_term);
    pe = pe.unsqueeze_(0).transpose_(0, 1);  // [max_len, 1, d_model]
    register_buffer("pe", pe);
    register_module("drop", drop);
  }
  torch::Tensor forward(torch::Tensor x) {
    return drop->forward(x + pe.index({Slice(None, x.size(0)), Slice()}));
  }

  torch::nn::Dropout drop;
  torch::Tensor pe;
};
TORCH_MODULE(PositionalEncoding);

class TokenTransformerImpl : public torch::nn::Module {
 public:
  TokenTransformerImpl(int64_t ntoken, int64_t ninp, int64_t nhead, int64_t nhid, int64_t nlayers, double dropout)
      : pos_encoder(ninp, dropout),
        encoder_layer(torch::nn::TransformerEncoderLayerOptions(ninp, nhead).dim_feedforward(nhid).dropout(dropout)),
        transformer_encoder(encoder_layer, nlayers),
        encoder(ntoken, ninp),
        decoder(ninp, ntoken),
        ninp_(ninp) {
    register_module("pos_encoder", pos_encoder);
    register_module("transformer_encoder", transformer_encoder);
    register_module("encoder", encoder);
    register_module("decoder", decoder);
    encoder->weight.data().uniform_(-0.1, 0.1);
    decoder->bias.data().zero_();
    decoder->weight.data().uniform_(-0.1, 0.1);
  }
  static torch::Tensor square_subsequent_mask(int64_t sz) {
    auto mask = (torch::triu(torch::ones({sz, sz})) == 1).transpose_(0, 1);
    return mask.to(torch::kFloat).masked_fill(mask == 0, -std::numeric_limits<float>::infinity()).masked_fill(mask == 1, 0.0);
  }
  torch::Tensor forward(torch::Tensor src) {
    if (!src_mask.defined() || src_mask.size(0) != src.size(0)) src_mask = square_subsequent_mask(src.size(0));
    auto out = encoder->forward(src) * std::sqrt(static_cast<double>(ninp_));
    out = pos_encoder->forward(out);
    out = transformer_encoder->forward(out, src_mask);
    return decoder->forward(out);
  }

  PositionalEncoding pos_encoder;
  torch::nn::TransformerEncoderLayer encoder_layer;
  torch::nn::TransformerEncoder transformer_encoder;
  torch::nn::Embedding encoder;
  torch::nn::Linear decoder;
  torch::Tensor src_mask;
  int64_t ninp_;
};
TORCH_MODULE(TokenTransformer);

int main() {
  torch::manual_seed(0);
  PositionalEncoding pe(8, 0.0, 16);
  auto buffer = pe->named_buffers()["pe"];
  TORCH_CHECK(buffer.sizes() == torch::IntArrayRef({16, 1, 8}), "pe buffer shape");
  // pe[p, 0, 2i] = sin(p / 10000^(2i/d)), pe[p, 0, 2i+1] = cos(...), computed in double.
  const double angle = 3.0 / std::pow(10000.0, 2.0 / 8);
  TORCH_CHECK(std::abs(buffer[3][0][2].item<double>() - std::sin(angle)) < 1e-5, "pe sin");
  TORCH_CHECK(std::abs(buffer[3][0][3].item<double>() - std::cos(angle)) < 1e-5, "pe cos");
  auto mask = TokenTransformerImpl::square_subsequent_mask(4);
  TORCH_CHECK(mask[0][1].item<float>() == -std::numeric_limits<float>::infinity() && mask[1][0].item<float>() == 0, "causal mask");
  TORCH_CHECK(torch::equal(mask, torch::nn::TransformerImpl::generate_square_subsequent_mask(4)), "LibTorch's mask");
  torch::nn::Transformer seq2seq(torch::nn::TransformerOptions(16, 2, 1, 1).dim_feedforward(32));
  auto translated = seq2seq->forward(torch::randn({6, 2, 16}), torch::randn({5, 2, 16}), torch::Tensor(),
                                     torch::nn::TransformerImpl::generate_square_subsequent_mask(5));
  TORCH_CHECK(translated.sizes() == torch::IntArrayRef({5, 2, 16}), "nn::Transformer's output");

  // The task: each token is the previous one plus 1 (mod ntoken), so the next token is predictable.
  const int64_t ntoken = 20, seq = 10, batch = 16;
  TokenTransformer model(ntoken, 32, 2, 64, 2, 0.1);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(3e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto start = torch::randint(0, ntoken, {1, batch}, torch::kLong);
    auto tokens = (start + torch::arange(0, seq + 1, torch::kLong).unsqueeze(1)) % ntoken;  // [seq + 1, batch]
    auto input = tokens.slice(0, 0, seq), target = tokens.slice(0, 1, seq + 1);
    auto output = model->forward(input);  // [seq, batch, ntoken]
    auto loss = torch::nn::functional::cross_entropy(output.view({-1, ntoken}), target.reshape(-1));
    optimizer.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    optimizer.step();
    if (step < 5) first += loss.item<double>() / 5;
    if (step >= 55) last += loss.item<double>() / 5;
    if (step % 20 == 0) std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
  }
  std::cout << "first " << first << " last " << last << "\n";
  return last < first ? 0 : 1;
}
