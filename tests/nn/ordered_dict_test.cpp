// What named_parameters(), named_buffers(), named_children(), named_modules() and state_dict()
// return: (name, value) items in module order that are std::pairs (first, second, structured
// bindings) and LibTorch's OrderedDict items (key(), value()), with lookup by name.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;

namespace {

struct NetImpl : nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", nn::Linear(4, 3));
    bn = register_module("bn", nn::BatchNorm1d(3));
    fc2 = register_module("fc2", nn::Linear(3, 2));
  }
  Tensor forward(const Tensor& x) { return fc2(bn(fc1(x))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::BatchNorm1d bn{nullptr};
};
WICK_MODULE(Net);

TEST(OrderedDictItems, NamedParametersAnswerKeyValueAndLookup) {
  Net net;
  auto params = net->named_parameters();
  const std::vector<std::string> names{"fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "fc2.weight", "fc2.bias"};
  EXPECT_EQ(params.keys(), names);
  ASSERT_EQ(params.size(), names.size());
  size_t i = 0;
  for (const auto& item : params) {  // LibTorch's spelling
    EXPECT_EQ(item.key(), names[i]);
    EXPECT_TRUE(item.value().is_same(item.second));
    EXPECT_EQ(item.first, item.key());
    ++i;
  }
  for (auto& [name, p] : net->named_parameters()) EXPECT_TRUE(p.requires_grad()) << name;  // Python's
  // lookup by name: the very parameter tensors
  EXPECT_TRUE(params["fc1.weight"].is_same(net->fc1->weight));
  EXPECT_TRUE(net->named_parameters()["fc2.bias"].is_same(net->fc2->bias));
  ASSERT_NE(params.find("bn.weight"), nullptr);
  EXPECT_TRUE(params.find("bn.weight")->is_same(net->bn->weight));
  EXPECT_EQ(params.find("bn.running_mean"), nullptr);
  EXPECT_TRUE(params.contains("fc2.weight"));
  EXPECT_FALSE(params.contains("fc3.weight"));
  EXPECT_EQ(params.values().size(), 6u);
  EXPECT_TRUE(params.values()[4].is_same(net->fc2->weight));
  EXPECT_EQ(params[0].key(), "fc1.weight");  // by position
  EXPECT_EQ(params.items().size(), 6u);
  EXPECT_EQ(params.pairs()[5].first, "fc2.bias");
  // a missing name: KeyError, and nothing changed
  EXPECT_EQ(error_of([&] { params["fc9.weight"]; }), "[OrderedDict] key 'fc9.weight' is not defined");
  EXPECT_THROW(params.at("x"), KeyError);
  EXPECT_EQ(params.size(), 6u);
  // writing through the item writes the parameter
  {
    NoGradGuard g;
    params["fc1.bias"].fill_(0.5);
  }
  EXPECT_EQ(net->fc1->bias.to_vector<float>(), std::vector<float>(3, 0.5f));
}

TEST(OrderedDictItems, BuffersChildrenModulesAndStateDict) {
  Net net;
  auto buffers = net->named_buffers();
  EXPECT_EQ(buffers.keys(), (std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_TRUE(buffers["bn.running_var"].is_same(net->bn->running_var));
  auto children = net->named_children();
  EXPECT_EQ(children.keys(), (std::vector<std::string>{"fc1", "bn", "fc2"}));
  EXPECT_EQ(children["bn"].get(), net->bn.ptr().get());
  auto modules = net->named_modules();
  EXPECT_EQ(modules.keys(), (std::vector<std::string>{"", "fc1", "bn", "fc2"}));
  auto sd = net->state_dict();
  EXPECT_EQ(sd.size(), 9u);
  EXPECT_TRUE(sd.contains("bn.num_batches_tracked"));
  // A state dict built by hand, as a list of pairs, loads.
  Net other;
  nn::StateDict by_hand;
  for (const auto& item : sd) by_hand.push_back({item.key(), item.value().clone()});
  other->load_state_dict(by_hand);
  EXPECT_EQ(other->fc2->weight.to_vector<float>(), net->fc2->weight.to_vector<float>());
}

TEST(OrderedDictItems, InsertRefusesARepeatedKey) {
  OrderedDict<std::string, int> d;
  d.insert("a", 1);
  d.insert("b", 2);
  EXPECT_EQ(error_of([&] { d.insert("a", 3); }), "[OrderedDict] key 'a' already defined");
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d["a"], 1);
  d["b"] = 5;
  EXPECT_EQ(d.values(), (std::vector<int>{1, 5}));
  OrderedDict<std::string, int> e{{"x", 1}, {"y", 2}};
  EXPECT_EQ(e.keys(), (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(e.is_empty());
  e.clear();
  EXPECT_TRUE(e.is_empty());
}

}  // namespace
