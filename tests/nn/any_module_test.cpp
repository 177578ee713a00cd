// nn::AnyModule (LibTorch's): made from holders and shared_ptrs, forward with its arguments
// checked (defaults left out, numbers converted), forward<T> of other results, get<T> and ptr<T>,
// clone, type_info, emptiness, in a Sequential (also replicated) and as a TransformerEncoder's
// norm; the "[AnyModule] ..." errors.
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::names;
namespace F = wick::nn::functional;

namespace {

// A module whose forward takes a tensor, a number and an optional with defaults.
struct ScaleImpl : nn::Module {
  Tensor forward(const Tensor& x, double factor = 2.0, std::optional<Tensor> shift = std::nullopt) {
    Tensor y = x * factor;
    return shift ? y + *shift : y;
  }
};
WICK_MODULE(Scale);

// A module returning a pair, and one whose forward is overloaded.
struct SplitImpl : nn::Module {
  std::tuple<Tensor, Tensor> forward(const Tensor& x) { return {x + 1, x - 1}; }
};
struct TwoFormsImpl : nn::Module {
  Tensor forward(const Tensor& x) { return x * 3; }
  Tensor forward(const Tensor& x, const Tensor& y) { return x * y; }
};

TEST(AnyModule, ForwardOfAHolder) {
  manual_seed(0);
  nn::Linear linear(3, 4);
  nn::AnyModule any(linear);
  EXPECT_FALSE(any.is_empty());
  EXPECT_TRUE(bool(any));
  auto x = randn({2, 3});
  Tensor y = any.forward(x);
  expect_close(y, linear(x), 0, 0);
  expect_close(any.forward<Tensor>(x), linear(x), 0, 0);
  expect_close(any(x), linear(x), 0, 0);
  // the same module, not a copy
  EXPECT_EQ(any.ptr().get(), linear.ptr().get());
  EXPECT_EQ(any.type_info(), typeid(nn::LinearImpl));
  // an rvalue holder
  nn::AnyModule made(nn::Linear(3, 4));
  EXPECT_EQ(made.forward(x).sizes().vec(), (std::vector<int64_t>{2, 4}));
}

TEST(AnyModule, SharedPtrAndDefaultArguments) {
  auto impl = std::make_shared<ScaleImpl>();
  nn::AnyModule any(impl);
  auto x = arange(4.0);
  expect_close(any.forward(x), x * 2.0, 0, 0);
  expect_close(any.forward(x, 3.0), x * 3.0, 0, 0);
  expect_close(any.forward(x, 3), x * 3.0, 0, 0);  // an int where forward takes a double
  expect_close(any.forward(x, 3.0, ones({4})), x * 3.0 + 1, 0, 0);
  expect_close(any.forward(x, 1.0, std::nullopt), x, 0, 0);
  expect_close(any.forward(x, 1.0, std::optional<Tensor>(ones({4}))), x + 1, 0, 0);
  EXPECT_EQ(any.type_info(), typeid(ScaleImpl));
  EXPECT_EQ(&any.get<ScaleImpl>(), impl.get());
  EXPECT_EQ(any.ptr<ScaleImpl>(), impl);
  // a holder of the same module
  Scale holder = any.get<Scale>();
  EXPECT_EQ(holder.ptr(), impl);
}

TEST(AnyModule, GetAndPtrOfTheClass) {
  nn::AnyModule any(nn::Linear(3, 4));
  nn::LinearImpl& impl = any.get<nn::LinearImpl>();
  EXPECT_EQ(impl.weight.sizes().vec(), (std::vector<int64_t>{4, 3}));
  nn::Linear holder = any.get<nn::Linear>();
  EXPECT_EQ(holder.ptr().get(), &impl);
  std::shared_ptr<nn::LinearImpl> p = any.ptr<nn::LinearImpl>();
  EXPECT_EQ(p.get(), &impl);
  std::shared_ptr<nn::Module> base = any.ptr();
  EXPECT_EQ(base.get(), static_cast<nn::Module*>(&impl));
  // a base class is a class of the module too
  EXPECT_EQ(&any.get<nn::Module>(), static_cast<nn::Module*>(&impl));
}

TEST(AnyModule, OtherResultsAndOverloadedForward) {
  nn::AnyModule split(std::make_shared<SplitImpl>());
  auto x = arange(3.0);
  auto [a, b] = split.forward<std::tuple<Tensor, Tensor>>(x);
  expect_close(a, x + 1, 0, 0);
  expect_close(b, x - 1, 0, 0);
  EXPECT_TRUE(names([&] { split.forward(x); }, "AnyModule"));  // not a Tensor
  nn::AnyModule two(std::make_shared<TwoFormsImpl>());
  expect_close(two.forward(x), x * 3, 0, 0);
  expect_close(two.forward(x, x), x * x, 0, 0);
  // LSTM's tuple result
  nn::AnyModule lstm(nn::LSTM(nn::LSTMOptions(3, 5)));
  auto out = lstm.forward<std::tuple<Tensor, std::tuple<Tensor, Tensor>>>(randn({4, 2, 3}));
  EXPECT_EQ(std::get<0>(out).sizes().vec(), (std::vector<int64_t>{4, 2, 5}));
}

TEST(AnyModule, Errors) {
  nn::AnyModule empty;
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(bool(empty));
  auto x = randn({2, 3});
  EXPECT_THROW(empty.forward(x), ValueError);
  EXPECT_TRUE(names([&] { empty.forward(x); }, "AnyModule"));
  EXPECT_TRUE(names([&] { empty.get<nn::LinearImpl>(); }, "AnyModule"));
  EXPECT_TRUE(names([&] { empty.ptr(); }, "AnyModule"));
  EXPECT_TRUE(names([&] { empty.type_info(); }, "AnyModule"));
  EXPECT_TRUE(names([&] { empty.clone(); }, "AnyModule"));
  EXPECT_EQ(error_of([&] { empty.forward(x); }), "[AnyModule] Cannot call forward() on an empty AnyModule");

  nn::AnyModule any(nn::Linear(3, 4));
  EXPECT_THROW(any.get<nn::Conv2dImpl>(), TypeError);
  EXPECT_THROW(any.get<nn::Conv2d>(), TypeError);
  EXPECT_THROW(any.ptr<nn::Conv2dImpl>(), TypeError);
  EXPECT_EQ(error_of([&] { any.get<nn::Conv2dImpl>(); }),
            "[AnyModule] Attempted to cast module of type wick::nn::LinearImpl to type wick::nn::Conv2dImpl");
  // arguments forward does not take
  EXPECT_THROW(any.forward(x, x), TypeError);
  EXPECT_EQ(error_of([&] { any.forward(x, x); }),
            "[AnyModule] wick::nn::LinearImpl's forward() method expects 1 argument(s), but received 2.");
  EXPECT_THROW(any.forward(3.0), TypeError);
  EXPECT_TRUE(error_of([&] { any.forward(3.0); }).rfind("[AnyModule] Expected argument #0 to be of type wick::Tensor", 0) == 0);
  nn::AnyModule scale(std::make_shared<ScaleImpl>());
  EXPECT_THROW(scale.forward(x, x), TypeError);
  EXPECT_TRUE(names([&] { scale.forward(); }, "AnyModule"));
  EXPECT_NE(error_of([&] { scale.forward(); })
                .find("ScaleImpl's forward() method expects 1 or 2 or 3 argument(s), but received 0."),
            std::string::npos);
  // an empty AnyModule in a Sequential
  nn::Sequential seq;
  EXPECT_TRUE(names([&] { seq->push_back(empty); }, "AnyModule"));
  EXPECT_EQ(seq->size(), 0u);
}

TEST(AnyModule, Clone) {
  manual_seed(1);
  nn::AnyModule any(nn::Linear(3, 2));
  nn::AnyModule copy = any.clone();
  EXPECT_NE(copy.ptr().get(), any.ptr().get());
  EXPECT_EQ(copy.type_info(), typeid(nn::LinearImpl));
  auto x = randn({4, 3});
  expect_close(copy.forward(x), any.forward(x), 0, 0);
  // its parameters are its own
  {
    NoGradGuard g;
    copy.get<nn::LinearImpl>().weight.zero_();
  }
  EXPECT_GT(any.get<nn::LinearImpl>().weight.abs().sum().item<double>(), 0.0);
  nn::AnyModule on_cpu = any.clone(Device("cpu"));
  EXPECT_TRUE(on_cpu.get<nn::Linear>()->weight.is_cpu());
  // a copy of an AnyModule shares the module
  nn::AnyModule shared = any;
  EXPECT_EQ(shared.ptr().get(), any.ptr().get());
}

TEST(AnyModule, CloneOnCuda) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  nn::AnyModule any(nn::Linear(3, 2));
  nn::AnyModule on_gpu = any.clone(Device("cuda"));
  EXPECT_TRUE(on_gpu.get<nn::LinearImpl>().weight.is_cuda());
  auto x = randn({4, 3});
  expect_close(on_gpu.forward(x.cuda()), any.forward(x), 1e-5, 1e-5);
}

TEST(AnyModule, InASequential) {
  manual_seed(2);
  nn::Linear first(3, 5), last(5, 2);
  nn::Sequential seq{nn::AnyModule(first), nn::ReLU()};
  seq->push_back(nn::AnyModule(last));
  seq->push_back("scale", nn::AnyModule(std::make_shared<ScaleImpl>()));
  ASSERT_EQ(seq->size(), 4u);
  auto x = randn({6, 3});
  expect_close(seq(x), relu(x.matmul(first->weight.t()) + first->bias).matmul(last->weight.t()).add(last->bias) * 2.0,
               1e-6, 1e-6);
  // parameters under the Sequential's names
  auto names = seq->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(seq->ptr<nn::LinearImpl>(2).get(), last.ptr().get());
  // gradients reach the held modules
  seq(x).sum().backward();
  EXPECT_TRUE(first->weight.grad().defined());
  EXPECT_TRUE(last->bias.grad().defined());
  // replicas run the AnyModule's forward on their own modules (of modules made through holders)
  nn::Sequential replicable{nn::AnyModule(first), nn::ReLU(), nn::AnyModule(last)};
  auto replica = std::dynamic_pointer_cast<nn::SequentialImpl>(replicable->replicate());
  ASSERT_TRUE(replica);
  EXPECT_EQ(replica->forward(x).sizes().vec(), (std::vector<int64_t>{6, 2}));
  EXPECT_NE((*replica)[0].get(), first.ptr().get());
  EXPECT_EQ(typeid(*(*replica)[2]), typeid(nn::LinearImpl));
  std::ostringstream os;
  os << *seq;
  EXPECT_NE(os.str().find("(0): Linear(in_features=3, out_features=5, bias=True)"), std::string::npos) << os.str();
}

TEST(AnyModule, TransformerNorm) {
  manual_seed(3);
  auto layer_options = nn::TransformerEncoderLayerOptions(8, 2).dropout(0.0);
  // LibTorch's spelling
  nn::TransformerEncoder enc(
      nn::TransformerEncoderOptions(layer_options, 2).norm(nn::AnyModule(nn::LayerNorm(std::vector<int64_t>{8}))));
  EXPECT_FALSE(enc->norm.is_empty());
  EXPECT_EQ(enc->norm.type_info(), typeid(nn::LayerNormImpl));
  EXPECT_TRUE(enc->named_parameters().contains("norm.weight"));
  auto x = randn({3, 2, 8});
  Tensor y = enc(x);
  Tensor stack = x;
  for (const auto& m : *enc->layers) stack = m->as<nn::TransformerEncoderLayer>()->forward(stack);
  expect_close(y, enc->norm.forward(stack), 1e-6, 1e-6);
  expect_close(y, F::layer_norm(stack, {8}, enc->norm.get<nn::LayerNormImpl>().weight,
                                enc->norm.get<nn::LayerNorm>()->bias),
               1e-5, 1e-5);
  // the wick spelling (a LayerNorm) and another module as the norm
  nn::TransformerEncoder with_layer_norm(
      nn::TransformerEncoderOptions(layer_options, 1).norm(nn::LayerNorm(std::vector<int64_t>{8})));
  EXPECT_TRUE(bool(with_layer_norm->norm));
  nn::TransformerEncoder with_rms(nn::TransformerEncoderOptions(layer_options, 1).norm(nn::AnyModule(nn::RMSNorm(nn::RMSNormOptions({8})))));
  EXPECT_EQ(with_rms(x).sizes().vec(), x.sizes().vec());
  nn::TransformerDecoder dec(nn::TransformerDecoderOptions(nn::TransformerDecoderLayerOptions(8, 2).dropout(0.0), 1)
                                 .norm(nn::AnyModule(nn::LayerNorm(std::vector<int64_t>{8}))));
  EXPECT_EQ(dec(x, x).sizes().vec(), x.sizes().vec());
  nn::TransformerEncoder bare(nn::TransformerEncoderOptions(layer_options, 1));
  EXPECT_TRUE(bare->norm.is_empty());
}

}  // namespace
