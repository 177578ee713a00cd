// LibTorch's smaller spellings: WICK_CHECK's user form and the other TORCH_* macros renamed,
// InferenceMode, the reduction and init enums (wick::kSum, ...), Module::apply's named form and
// nn::ModuleDict.
#include <cmath>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;

namespace {

int64_t checked_half(int64_t n) {
  WICK_CHECK(n % 2 == 0, "expected an even number, got ", n, " (", n % 2, " left over)");
  return n / 2;
}

TEST(UserChecks, WickCheckStreamsItsMessage) {
  EXPECT_EQ(checked_half(6), 3);
  EXPECT_EQ(error_of([] { checked_half(7); }), "expected an even number, got 7 (1 left over)");
  const std::string what = "a string";
  EXPECT_EQ(error_of([&] { WICK_CHECK(what.empty(), what); }), "a string");
  EXPECT_EQ(error_of([] { WICK_CHECK(1 + 1 == 3); }), "Expected 1 + 1 == 3 to be true, but got false.");
  EXPECT_THROW(WICK_CHECK(false, "x"), Error);
  // wick's own form, an error type and an op, still works beside it
  EXPECT_EQ(error_of([] { WICK_CHECK(false, ValueError, "op", "value ", 3); }), "[op] value 3");
  EXPECT_THROW(WICK_CHECK(false, IndexError, "op", "i"), IndexError);
  // the typed forms
  EXPECT_THROW(WICK_CHECK_VALUE(false, "v"), ValueError);
  EXPECT_THROW(WICK_CHECK_INDEX(false, "i"), IndexError);
  EXPECT_THROW(WICK_CHECK_TYPE(false), TypeError);
  EXPECT_THROW(WICK_CHECK_NOT_IMPLEMENTED(false, "n"), NotImplementedError);
  EXPECT_EQ(error_of([] { WICK_CHECK_VALUE(2 < 1, "two is ", 2); }), "two is 2");
  EXPECT_EQ(error_of([] { WICK_CHECK_VALUE(2 < 1); }), "Expected 2 < 1 to be true, but got false.");
  int evaluated = 0;
  WICK_CHECK(++evaluated == 1, "once");
  EXPECT_EQ(evaluated, 1);
}

// TORCH_CHECK_EQ and its kin: each operand evaluated once, glog's message with both values and
// what is streamed after it, mixed-signedness integers compared by value, and a dangling else
// after one binding to the caller's if.
TEST(UserChecks, ComparisonChecks) {
  int calls = 0;
  auto next = [&] { return ++calls; };
  WICK_CHECK_EQ(next(), 1);
  EXPECT_EQ(calls, 1);
  WICK_CHECK_NE(2, 3) << "never streamed";
  WICK_CHECK_LT(2, 3);
  WICK_CHECK_LE(3, 3);
  WICK_CHECK_GT(4u, 3);
  WICK_CHECK_GE(int64_t(5), size_t(5));
  WICK_CHECK_LT(-1, size_t(1));  // by value: -1 < 1, though -1 converted to size_t would not be
  EXPECT_EQ(error_of([] { WICK_CHECK_EQ(1 + 1, 3); }), "Check failed: 1 + 1 == 3 (2 vs. 3) ");
  EXPECT_EQ(error_of([] { WICK_CHECK_GT(2, 5) << "need more, got " << 2; }),
            "Check failed: 2 > 5 (2 vs. 5) need more, got 2");
  EXPECT_THROW(WICK_CHECK_LE(2.5, 1.0), Error);
  EXPECT_THROW(WICK_CHECK_NE(std::string("a"), std::string("a")), Error);
  bool reached_else = false;
  if (calls == 0) WICK_CHECK_EQ(1, 2);
  else reached_else = true;
  EXPECT_TRUE(reached_else);
}

// x.type(): the dtype and device type, printed as LibTorch prints them.
TEST(UserChecks, DeprecatedTypeProperties) {
  const Tensor x = zeros({2}, kFloat64);
  EXPECT_EQ(x.type().scalarType(), kFloat64);
  EXPECT_FALSE(x.type().is_cuda());
  EXPECT_EQ(x.type().toString(), "CPUDoubleType");
  std::ostringstream os;
  os << x.type() << " " << ones({1}, kInt64).type();
  EXPECT_EQ(os.str(), "CPUDoubleType CPULongType");
  EXPECT_TRUE(x.type() == zeros({5}, kFloat64).type());
  EXPECT_FALSE(x.type() == zeros({5}).type());
  EXPECT_EQ(empty({1}, x.type().options()).dtype(), kFloat64);
  EXPECT_EQ(Tensor().type().toString(), "UndefinedType");
  EXPECT_THROW(Tensor().type().scalarType(), ValueError);
}

// A Sequential holder as the first of a Sequential's modules is a module, not a copy.
TEST(UserChecks, SequentialOfASequentialAndMore) {
  nn::Sequential inner(nn::Linear(4, 8), nn::ReLU());
  nn::Sequential outer(inner, nn::Linear(8, 2));
  EXPECT_EQ(outer->size(), 2u);
  EXPECT_EQ(outer->parameters().size(), 4u);
  EXPECT_EQ(outer->forward(randn({3, 4})).sizes().vec(), (std::vector<int64_t>{3, 2}));
  nn::Sequential copy(outer);  // one argument: the same module
  EXPECT_EQ(copy.ptr(), outer.ptr());
  nn::Sequential nested(nn::Sequential(nn::Linear(4, 4)), nn::Linear(4, 2), nn::Tanh());
  EXPECT_EQ(nested->size(), 3u);
  EXPECT_EQ(nested->named_parameters().keys()[0], "0.0.weight");
}

TEST(UserChecks, InternalAssertAndWarn) {
  const std::string e = error_of([] { WICK_INTERNAL_ASSERT(1 > 2, "size ", 5); });
  EXPECT_EQ(e.rfind("INTERNAL ASSERT FAILED at \"", 0), 0u) << e;
  EXPECT_NE(e.find("libtorch_surfaces_test.cpp\":"), std::string::npos) << e;
  EXPECT_NE(e.find("please report a bug. size 5"), std::string::npos) << e;
  EXPECT_NE(error_of([] { WICK_INTERNAL_ASSERT(false); }).find("Expected false to be true"), std::string::npos);
  WICK_INTERNAL_ASSERT(true, "never");
  ::testing::internal::CaptureStderr();
  WICK_WARN("loss is ", 1.5);
  for (int i = 0; i < 3; ++i) WICK_WARN_ONCE("only once ", i);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Warning: loss is 1.5 (function "), std::string::npos) << err;
  EXPECT_NE(err.find("Warning: only once 0 "), std::string::npos) << err;
  EXPECT_EQ(err.find("only once 1"), std::string::npos) << err;
}

TEST(InferenceMode, NoGradInsideAndRestoredAfter) {
  Tensor w = ones({2}).requires_grad_();
  EXPECT_FALSE(is_inference_mode_enabled());
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_TRUE(is_inference_mode_enabled());
    EXPECT_FALSE(GradMode::is_enabled());
    EXPECT_FALSE((w * 2).requires_grad());
    {
      InferenceMode off(false);
      EXPECT_FALSE(is_inference_mode_enabled());
      EXPECT_TRUE((w * 2).requires_grad());
    }
    EXPECT_TRUE(is_inference_mode_enabled());
  }
  EXPECT_FALSE(is_inference_mode_enabled());
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(Enums, AcceptedWhereTheStringIs) {
  namespace F = nn::functional;
  Tensor a = tensor({1.0, 2.0, 4.0}), b = tensor({0.0, 0.0, 1.0});
  EXPECT_DOUBLE_EQ(F::mse_loss(a, b, kSum).item<double>(), 14.0);
  EXPECT_NEAR(F::mse_loss(a, b, kMean).item<double>(), 14.0 / 3, 1e-6);
  EXPECT_EQ(F::l1_loss(a, b, kNone).sizes().vec(), (std::vector<int64_t>{3}));
  auto loss = nn::MSELoss(nn::MSELossOptions(kSum));
  EXPECT_DOUBLE_EQ(loss(a, b).item<double>(), 14.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kTanh), 5.0 / 3);
  manual_seed(1);
  Tensor w = empty({200, 50}, kFloat64);
  nn::init::kaiming_normal_(w, 0, kFanOut, kReLU);  // std sqrt(2 / fan_out) = 0.1
  EXPECT_NEAR(w.std().item<double>(), 0.1, 0.005);
  EXPECT_EQ(std::string(kMean), "mean");
}

struct TinyImpl : nn::Module {
  TinyImpl() {
    a = register_module("a", nn::Linear(2, 2));
    b = register_module("b", nn::Sequential(nn::Linear(2, 3)));
  }
  nn::Linear a{nullptr};
  nn::Sequential b{nullptr};
};
WICK_MODULE(Tiny);

TEST(ModuleApply, NamedFormVisitsEveryModuleWithItsPath) {
  Tiny net;
  std::vector<std::string> names;
  std::vector<nn::Module*> seen;
  net->apply([&](const std::string& name, nn::Module& m) {
    names.push_back(name);
    seen.push_back(&m);
  });
  EXPECT_EQ(names, (std::vector<std::string>{"", "a", "b", "b.0"}));
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], net.get());
  EXPECT_EQ(seen[1], net->a.get());
  names.clear();
  net->apply([&](const std::string& name, nn::Module&) { names.push_back(name); }, "net");
  EXPECT_EQ(names, (std::vector<std::string>{"net", "net.a", "net.b", "net.b.0"}));
  // the unnamed form: children first, as PyTorch's Module.apply; zeroing every Linear
  int linears = 0;
  net->apply([&](nn::Module& m) {
    if (auto* l = dynamic_cast<nn::LinearImpl*>(&m)) {
      ++linears;
      NoGradGuard g;
      l->weight.zero_();
    }
  });
  EXPECT_EQ(linears, 2);
  EXPECT_EQ(net->a->weight.abs().sum().item<float>(), 0.0f);
}

TEST(ModuleDict, InsertLookupAndRegistration) {
  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(4, 3));
  dict->insert("head", std::make_shared<nn::LinearImpl>(3, 2));
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_TRUE(dict->contains("enc"));
  EXPECT_FALSE(dict->contains("dec"));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"enc", "head"}));
  EXPECT_EQ(dict->at<nn::LinearImpl>("head").weight.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(dict["enc"].get(), dict->values()[0].get());
  std::vector<std::string> names;
  for (const auto& [key, m] : *dict) names.push_back(key);
  EXPECT_EQ(names, dict->keys());
  // registered: parameters and state_dict see the modules under their keys
  EXPECT_EQ(dict->parameters().size(), 4u);
  std::vector<std::string> state;
  for (const auto& [n, t] : dict->state_dict()) state.push_back(n);
  EXPECT_EQ(state, (std::vector<std::string>{"enc.weight", "enc.bias", "head.weight", "head.bias"}));
  // inserting under a key present replaces the module there
  dict->insert("head", nn::Linear(3, 5));
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_EQ(dict->at<nn::LinearImpl>("head").weight.size(0), 5);
  EXPECT_EQ(dict->parameters().size(), 4u);
  EXPECT_EQ(dict->named_parameters()[2].second.size(0), 5);
  // to() reaches them
  dict->to(kFloat64);
  EXPECT_EQ(dict->at<nn::LinearImpl>("enc").weight.dtype(), kFloat64);
  // errors
  EXPECT_EQ(error_of([&] { dict["dec"]; }), "[ModuleDict] no module under key \"dec\"");
  EXPECT_THROW(dict->at<nn::SequentialImpl>("enc"), TypeError);
  nn::ModuleDict from_list(std::vector<nn::ModuleDictImpl::Item>{{"x", nn::Linear(1, 1).ptr()}});
  EXPECT_EQ(from_list->keys(), (std::vector<std::string>{"x"}));
}

}  // namespace
