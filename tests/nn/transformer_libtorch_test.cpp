// LibTorch's spellings of nn.Transformer's pieces: TransformerOptions(d_model, nhead) and
// (d_model, nhead, num_encoder_layers, num_decoder_layers), and the static
// TransformerImpl::generate_square_subsequent_mask, checked against masks written out by hand.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::error_of;
using testing::names;

TEST(TransformerLibTorch, OptionsConstructorsSetTheirArgumentsAndKeepTheDefaults) {
  nn::TransformerOptions two(32, 4);
  EXPECT_EQ(two.d_model(), 32);
  EXPECT_EQ(two.nhead(), 4);
  EXPECT_EQ(two.num_encoder_layers(), 6);  // Python's defaults for the rest
  EXPECT_EQ(two.num_decoder_layers(), 6);
  EXPECT_EQ(two.dim_feedforward(), 2048);
  EXPECT_DOUBLE_EQ(two.dropout(), 0.1);
  nn::TransformerOptions four(16, 2, 1, 3);
  EXPECT_EQ(four.d_model(), 16);
  EXPECT_EQ(four.nhead(), 2);
  EXPECT_EQ(four.num_encoder_layers(), 1);
  EXPECT_EQ(four.num_decoder_layers(), 3);
  EXPECT_EQ(four.dim_feedforward(), 2048);
  // The setters still chain after either constructor.
  auto chained = nn::TransformerOptions(16, 2).dim_feedforward(64).dropout(0.0);
  EXPECT_EQ(chained.dim_feedforward(), 64);
  EXPECT_EQ(chained.d_model(), 16);
}

TEST(TransformerLibTorch, ModuleBuiltFromTheFourArgumentOptionsHasThoseLayers) {
  nn::Transformer t(nn::TransformerOptions(16, 2, 1, 2).dim_feedforward(32).dropout(0.0));
  EXPECT_EQ(t->encoder->layers->size(), 1u);
  EXPECT_EQ(t->decoder->layers->size(), 2u);
  auto src = randn({5, 3, 16}), tgt = randn({4, 3, 16});
  auto out = t->forward(src, tgt, Tensor(), nn::TransformerImpl::generate_square_subsequent_mask(4));
  EXPECT_EQ(out.sizes(), IntArrayRef({4, 3, 16}));
  EXPECT_TRUE(isfinite(out).all().item<bool>());
}

TEST(TransformerLibTorch, StaticMaskIsZeroOnAndBelowTheDiagonalAndMinusInfinityAbove) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t sz : {0, 1, 2, 5}) {
    auto mask = nn::TransformerImpl::generate_square_subsequent_mask(sz);
    ASSERT_EQ(mask.sizes(), IntArrayRef({sz, sz}));
    EXPECT_EQ(mask.dtype(), kFloat32);
    auto m = mask.to(kFloat64);
    for (int64_t i = 0; i < sz; ++i) {
      for (int64_t j = 0; j < sz; ++j) {
        EXPECT_EQ(m[i][j].item<double>(), j > i ? -inf : 0.0) << sz << " " << i << " " << j;
      }
    }
    // The same mask as the free function's.
    EXPECT_TRUE(equal(mask, nn::generate_square_subsequent_mask(sz)));
  }
  auto doubles = nn::TransformerImpl::generate_square_subsequent_mask(3, kFloat64);
  EXPECT_EQ(doubles.dtype(), kFloat64);
  EXPECT_EQ(doubles[0][2].item<double>(), -inf);
  EXPECT_EQ(nn::TransformerImpl::generate_square_subsequent_mask(3, Device(kCPU)).device(), Device(kCPU));
}

TEST(TransformerLibTorch, StaticMaskOfANegativeSizeIsAValueError) {
  EXPECT_TRUE(names([] { nn::TransformerImpl::generate_square_subsequent_mask(-1); }, "generate_square_subsequent_mask"));
  try {
    nn::TransformerImpl::generate_square_subsequent_mask(-2);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("got -2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wick
