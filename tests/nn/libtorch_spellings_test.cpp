// LibTorch spellings a renamed program uses: ParameterList and ParameterDict, Conv2d's and
// Conv1d's padding_mode, the ExpandingArray reads of options (kernel_size()->at(0)),
// at::nll_loss2d and at::_unsafe_view, Tensor::set_requires_grad and toString, getNumGPUs and
// cuda::cudnn_is_available. Values against loops written here or what PyTorch prints, errors
// (their type and the name of the function or module called).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::expect_close;
using wick::testing::names;
using wick::testing::repr;
namespace F = wick::nn::functional;

namespace {

const TensorOptions kF64 = TensorOptions(kFloat64);

TEST(ParameterList, RegistersByIndexKeepingRequiresGrad) {
  nn::ParameterList list(ones({2}, requires_grad()), zeros({3}));
  list->append(full({2, 2}, 2.0, requires_grad()));
  ASSERT_EQ(list->size(), 3u);
  std::vector<std::string> keys;
  for (const auto& [name, p] : list->named_parameters()) keys.push_back(name);
  EXPECT_EQ(keys, (std::vector<std::string>{"0", "1", "2"}));
  // LibTorch's rule: each keeps its requires_grad (the second does not require grad)
  EXPECT_TRUE(list[0].requires_grad());
  EXPECT_FALSE(list[1].requires_grad());
  EXPECT_EQ(list->parameters().size(), 3u);
  std::vector<std::string> seen;
  for (auto& item : *list) seen.push_back(item.key() + ":" + std::to_string(item.value().numel()));
  EXPECT_EQ(seen, (std::vector<std::string>{"0:2", "1:3", "2:4"}));
  // at() and operator[] are the registered tensors: an in-place change shows in parameters()
  list->at(2).detach().fill_(5.0);
  EXPECT_EQ(list->parameters()[2].sum().item<double>(), 20.0);
  EXPECT_TRUE(names([&] { list->at(3); }, "ParameterList"));
  EXPECT_THROW(list->at(3), IndexError);
}

TEST(ParameterList, ExtendTrainsAndPrintsAsPyTorch) {
  nn::ParameterList a;
  a->append(tensor(std::vector<double>{1.0, -2.0}, kF64).requires_grad_());
  nn::ParameterList b;
  b->extend(*a);  // LibTorch's extend over another list's items
  b->extend(std::vector<Tensor>{ones({2, 3}, requires_grad())});
  EXPECT_EQ(b->size(), 2u);
  EXPECT_TRUE(b[0].is_same(a[0]));
  // a step of SGD on sum(p^2) through the list's parameters
  optim::SGD opt(a->parameters(), optim::SGDOptions(0.25));
  (a[0] * a[0]).sum().backward();
  opt.step();
  expect_close(a[0], tensor(std::vector<double>{0.5, -1.0}, kF64));
  EXPECT_EQ(repr(*b),
            "ParameterList(\n    (0): Parameter containing: [torch.float64 of size 2]\n"
            "    (1): Parameter containing: [torch.float32 of size 2x3]\n)");
  nn::ParameterList one(ones({4}));
  EXPECT_EQ(repr(*one), "ParameterList(  (0): Parameter containing: [torch.float32 of size 4])");
  // a non-leaf is refused, named by the container
  auto x = ones({2}, requires_grad());
  EXPECT_TRUE(names([&] { a->append(x * 2); }, "ParameterList"));
}

struct HeadsImpl : nn::Module {
  HeadsImpl() {
    scales = register_module("scales", nn::ParameterDict());
    scales->insert("a", full({2}, 3.0, requires_grad()));
    scales->insert("b", zeros({1}));
  }
  nn::ParameterDict scales{nullptr};
};
WICK_MODULE(Heads);

TEST(ParameterDict, KeysValuesReplaceAndStateDict) {
  Heads h;
  EXPECT_EQ(h->scales->keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(h->scales->contains("a"));
  EXPECT_FALSE(h->scales->contains("c"));
  EXPECT_EQ(h->scales["a"].sum().item<double>(), 6.0);
  EXPECT_TRUE(h->scales["a"].requires_grad());
  EXPECT_FALSE(h->scales->get("b").requires_grad());
  std::vector<std::string> keys;
  for (const auto& [name, t] : h->state_dict()) keys.push_back(name);
  EXPECT_EQ(keys, (std::vector<std::string>{"scales.a", "scales.b"}));
  // inserting under a key that is there replaces that parameter (Python's d[key] = p)
  h->scales->insert("b", full({1}, 7.0, requires_grad()));
  EXPECT_EQ(h->scales->size(), 2u);
  EXPECT_EQ(h->state_dict()["scales.b"].item<double>(), 7.0);
  EXPECT_EQ(h->parameters().size(), 2u);
  EXPECT_TRUE(names([&] { h->scales->get("c"); }, "ParameterDict"));
  EXPECT_THROW(h->scales["c"], KeyError);
  EXPECT_TRUE(names([&] { h->scales->insert("x.y", ones({1})); }, "ParameterDict"));
  EXPECT_EQ(repr(*h->scales),
            "ParameterDict(\n    (a): Parameter containing: [torch.float32 of size 2]\n"
            "    (b): Parameter containing: [torch.float32 of size 1]\n)");
  nn::ParameterDict copy(h->scales->items());
  EXPECT_EQ(copy->values().size(), 2u);
  EXPECT_TRUE(copy["a"].is_same(h->scales["a"]));
}

// A block of two inputs, held in a Sequential and called through ->as<>().
struct JoinImpl : nn::Module {
  Tensor forward(const Tensor& x, const Tensor& skip) { return x + 2 * skip; }
};
WICK_MODULE(Join);

TEST(SequentialOfTwoInputBlocks, HeldAndCalledThroughAs) {
  nn::Sequential blocks;
  blocks->push_back(Join());
  blocks->push_back(nn::Linear(2, 2));
  EXPECT_EQ(blocks->size(), 2u);
  auto y = blocks[0]->as<Join>()->forward(ones({2}), full({2}, 3.0));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{7, 7}));
  // forward reaches the block and raises, naming it
  EXPECT_TRUE(names([&] { blocks->forward(ones({1, 2})); }, "Sequential"));
  EXPECT_THROW(blocks->forward(ones({1, 2})), TypeError);
  EXPECT_NE(wick::testing::error_of([&] { blocks->forward(ones({1, 2})); }).find("'0' (Join)"), std::string::npos);
}

TEST(ConvPaddingMode, ReflectMatchesPadThenConv) {
  manual_seed(0);
  for (const std::string mode : {"reflect", "replicate", "circular"}) {
    nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding({1, 2}).padding_mode(mode));
    auto x = randn({1, 2, 5, 6});
    auto want = F::conv2d(F::pad(x, {2, 2, 1, 1}, mode), conv->weight, conv->bias);
    expect_close(conv(x), want, 1e-5, 1e-5, mode);
    EXPECT_EQ(conv(x).sizes().vec(), (std::vector<int64_t>{1, 3, 5, 8}));
  }
  nn::Conv2d enum_mode(nn::Conv2dOptions(1, 1, 3).padding(1).padding_mode(kReplicate).bias(false));
  {
    NoGradGuard g;
    enum_mode->weight.fill_(1.0);
  }
  // [[1, 2, 3]] replicated by one on each side: three rows [1, 1, 2, 3, 3]; a 3x3 kernel of
  // ones sums three rows of three columns
  auto y = enum_mode(tensor(std::vector<float>{1, 2, 3}).view({1, 1, 1, 3}));
  EXPECT_EQ(y.flatten().to_vector<float>(), (std::vector<float>{12, 18, 24}));
  EXPECT_EQ(repr(*enum_mode),
            "Conv2d(1, 1, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False, padding_mode=replicate)");
  nn::Conv1d c1(nn::Conv1dOptions(1, 1, 3).padding(1).padding_mode(kCircular).bias(false));
  {
    NoGradGuard g;
    c1->weight.copy_(tensor(std::vector<float>{1, 0, 0}).view({1, 1, 3}));
  }
  // circular: each output is the input one step to the left, wrapping around
  EXPECT_EQ(c1(tensor(std::vector<float>{1, 2, 3, 4}).view({1, 1, 4})).flatten().to_vector<float>(),
            (std::vector<float>{4, 1, 2, 3}));
  EXPECT_TRUE(names([] { nn::Conv2d(nn::Conv2dOptions(1, 1, 3).padding_mode("mirror")); }, "Conv2d"));
  EXPECT_THROW(nn::Conv1d(nn::Conv1dOptions(1, 1, 3).padding_mode("mirror")), ValueError);
  // reflect padding larger than the input is refused, named by the module
  nn::Conv2d big(nn::Conv2dOptions(1, 1, 1).padding(3).padding_mode("reflect"));
  EXPECT_TRUE(names([&] { big(ones({1, 1, 2, 2})); }, "Conv2d"));
}

TEST(ExpandingArray, OptionsReadAsLibTorch) {
  nn::Conv2d conv(nn::Conv2dOptions(1, 2, {3, 5}).padding(1));
  EXPECT_EQ(conv->options.kernel_size()->at(0), 3);
  EXPECT_EQ(conv->options.kernel_size()->at(1), 5);
  EXPECT_EQ((*conv->options.kernel_size())[1], 5);
  EXPECT_EQ(conv->options.kernel_size()->size(), 2u);
  EXPECT_THROW(conv->options.kernel_size()->at(2), IndexError);
  // options changed after construction take effect at the next forward, as LibTorch's
  conv->options.dilation(2).padding(conv->options.kernel_size()->at(0) / 2 * 2);
  EXPECT_EQ(conv(ones({1, 1, 8, 8})).sizes().vec(), (std::vector<int64_t>{1, 2, 8, 4}));
  nn::Conv3dOptions o(1, 1, {1, 2, 3});
  EXPECT_EQ(o.kernel_size()->at(2), 3);
  EXPECT_EQ((*o.kernel_size())[1], 2);
  EXPECT_EQ(o.kernel_size()->size(), 3u);
  EXPECT_TRUE(names([&] { o.kernel_size()->at(3); }, "ExpandingArray"));
}

TEST(AtenSpellings, NllLoss2dIsSpatialNllLoss) {
  manual_seed(1);
  auto x = log_softmax(randn({2, 3, 2, 2}, kF64), 1);
  auto t = tensor(std::vector<int64_t>{0, 1, 2, 1, 2, 2, 0, 1}).view({2, 2, 2});
  // the mean of -x[n, t, h, w] over the 8 positions
  double want = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 2; ++w) want -= x[n][t[n][h][w].item<int64_t>()][h][w].item<double>();
  EXPECT_NEAR(nll_loss2d(x, t).item<double>(), want / 8, 1e-12);
  EXPECT_NEAR(nll_loss2d(x, t, {}, Reduction::Sum).item<double>(), want, 1e-12);
  // ignore_index leaves out the positions of class 2 (three of them)
  double kept = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 2; ++w)
        if (t[n][h][w].item<int64_t>() != 2) {
          kept -= x[n][t[n][h][w].item<int64_t>()][h][w].item<double>();
        }
  EXPECT_NEAR(nll_loss2d(x, t, {}, Reduction::Mean, 2).item<double>(), kept / 5, 1e-12);
  EXPECT_TRUE(names([&] { nll_loss2d(x.flatten(2), t.flatten(1)); }, "nll_loss2d"));
  EXPECT_THROW(nll_loss2d(x, t.flatten(1)), ValueError);
  EXPECT_TRUE(names([&] { nll_loss2d(x, t.select(0, 0).expand({2, 2, 2}).add(5)); }, "nll_loss2d"));
}

TEST(AtenSpellings, UnsafeViewIsView) {
  auto x = arange(6, kF64).requires_grad_();
  auto y = _unsafe_view(x, {2, 3});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y[1][2].item<double>(), 5.0);
  (y * y).sum().backward();
  expect_close(x.grad(), 2 * arange(6, kF64));
  EXPECT_TRUE(names([&] { _unsafe_view(x, {4, 2}); }, "_unsafe_view"));
  EXPECT_TRUE(names([&] { _unsafe_view(ones({2, 3}).t(), {6}); }, "_unsafe_view"));
}

TEST(TensorSpellings, SetRequiresGradAndToString) {
  auto w = ones({2});
  EXPECT_TRUE(w.set_requires_grad(true).requires_grad());
  const Tensor c = w;
  EXPECT_FALSE(c.set_requires_grad(false).requires_grad());
  EXPECT_FALSE(w.requires_grad());
  EXPECT_TRUE(names([] { ones({2}, TensorOptions(kInt64)).set_requires_grad(true); }, "requires_grad_"));
  EXPECT_TRUE(names([] { (ones({2}, requires_grad()) * 2).set_requires_grad(false); }, "requires_grad_"));
  EXPECT_EQ(ones({2}).toString(), "CPUFloatType");
  EXPECT_EQ(ones({2}, TensorOptions(kInt64)).toString(), "CPULongType");
  EXPECT_EQ(ones({2}, TensorOptions(kUInt8)).toString(), "CPUByteType");
  EXPECT_EQ(Tensor().toString(), "UndefinedType");
}

TEST(CudaSpellings, GetNumGpusAndCudnn) {
  EXPECT_EQ(getNumGPUs(), size_t(cuda::device_count()));
  EXPECT_EQ(cuda::cudnn_is_available(), cuda::is_available() && backends::cudnn::is_available());
  if (!cuda::is_available()) {
    EXPECT_FALSE(cuda::cudnn_is_available());
  }
}

}  // namespace
