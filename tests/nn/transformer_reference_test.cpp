// MultiheadAttention and the transformer layers against PyTorch's own values: the state dicts,
// inputs, outputs and input gradients that tests/gen/transformer_reference.py writes
// (tests/fixtures/transformer_reference.safetensors, float64 on the CPU). Each PyTorch state
// dict loads strictly into the wick module of the same options.
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/io/safetensors.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::expect_close;

class TransformerReference : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = std::string(WICK_TEST_FIXTURES_DIR) + "/transformer_reference.safetensors";
    // Written by tests/gen/transformer_reference.py with PyTorch 2.11 and committed: its absence
    // is a failure.
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " is absent: run tests/gen/transformer_reference.py";
    data_ = load(path);
  }
  Tensor at(const std::string& name) const {
    auto it = data_.find(name);
    if (it == data_.end()) ADD_FAILURE() << "fixture has no tensor " << name;
    return it == data_.end() ? Tensor() : it->second;
  }
  // The module's state from the fixture's "<prefix>." entries, loaded strictly.
  void load_into(nn::Module& m, const std::string& prefix) const {
    std::map<std::string, Tensor> state;
    for (const auto& [k, v] : data_)
      if (k.rfind(prefix + ".", 0) == 0 && k.find(".in.") == std::string::npos &&
          k.find(".grad.") == std::string::npos && k != prefix + ".out" && k != prefix + ".w" &&
          k != prefix + ".weights" && k != prefix + ".ww")
        state.emplace(k.substr(prefix.size() + 1), v);
    m.load_state_dict(state, /*strict=*/true);
  }
  Tensor input(const std::string& prefix, const std::string& name, bool grad = true) const {
    Tensor t = at(prefix + ".in." + name).clone();
    if (grad) t.requires_grad_();
    return t;
  }
  Tensor mask(const std::string& prefix, const std::string& name) const { return at(prefix + ".in." + name) > 0.5; }
  TensorMap data_;
};

constexpr double kTol = 1e-10;

TEST_F(TransformerReference, MultiheadAttention) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  m->to(kFloat64);
  load_into(*m, "mha");
  Tensor q = input("mha", "query"), k = input("mha", "key"), v = input("mha", "value");
  auto [out, w] = m(q, k, v, mask("mha", "key_padding_mask"), true, at("mha.in.attn_mask"));
  expect_close(out, at("mha.out"), kTol, kTol, "output");
  expect_close(w, at("mha.weights"), kTol, kTol, "weights");
  ((out * at("mha.w")).sum() + (w * at("mha.ww")).sum()).backward();
  expect_close(q.grad(), at("mha.grad.query"), kTol, kTol, "grad query");
  expect_close(k.grad(), at("mha.grad.key"), kTol, kTol, "grad key");
  expect_close(v.grad(), at("mha.grad.value"), kTol, kTol, "grad value");
}

TEST_F(TransformerReference, MultiheadAttentionKdimVdim) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(6));
  m->to(kFloat64);
  load_into(*m, "mha_kv");
  Tensor q = input("mha_kv", "query"), k = input("mha_kv", "key"), v = input("mha_kv", "value");
  Tensor out = std::get<0>(m(q, k, v, Tensor(), false, mask("mha_kv", "attn_mask")));
  expect_close(out, at("mha_kv.out"), kTol, kTol, "output");
  (out * at("mha_kv.w")).sum().backward();
  expect_close(q.grad(), at("mha_kv.grad.query"), kTol, kTol, "grad query");
  expect_close(k.grad(), at("mha_kv.grad.key"), kTol, kTol, "grad key");
  expect_close(v.grad(), at("mha_kv.grad.value"), kTol, kTol, "grad value");
}

TEST_F(TransformerReference, EncoderLayer) {
  nn::TransformerEncoderLayer m(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).activation("gelu"));
  m->to(kFloat64);
  load_into(*m, "enc");
  Tensor src = input("enc", "src");
  Tensor out = m(src, nn::generate_square_subsequent_mask(5, kFloat64), mask("enc", "src_key_padding_mask"));
  expect_close(out, at("enc.out"), kTol, kTol, "output");
  (out * at("enc.w")).sum().backward();
  expect_close(src.grad(), at("enc.grad.src"), kTol, kTol, "grad src");
}

TEST_F(TransformerReference, DecoderLayer) {
  nn::TransformerDecoderLayer m(
      nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).batch_first(true).norm_first(true));
  m->to(kFloat64);
  load_into(*m, "dec");
  Tensor tgt = input("dec", "tgt"), memory = input("dec", "memory");
  Tensor out = m(tgt, memory, nn::generate_square_subsequent_mask(3, kFloat64), Tensor(), Tensor(),
                 mask("dec", "memory_key_padding_mask"));
  expect_close(out, at("dec.out"), kTol, kTol, "output");
  (out * at("dec.w")).sum().backward();
  expect_close(tgt.grad(), at("dec.grad.tgt"), kTol, kTol, "grad tgt");
  expect_close(memory.grad(), at("dec.grad.memory"), kTol, kTol, "grad memory");
}

}  // namespace
}  // namespace wick
