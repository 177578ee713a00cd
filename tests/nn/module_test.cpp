// nn::Module: registration order and names, holders, in-place moves, modes, zero_grad,
// state dicts and printing.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;

namespace {

std::vector<std::string> names(const nn::NamedList<Tensor>& l) {
  std::vector<std::string> out;
  for (const auto& [n, t] : l) out.push_back(n);
  return out;
}

struct BlockImpl : nn::Module {
  BlockImpl() {
    fc = register_module("fc", nn::Linear(3, 4));
    scale = register_parameter("scale", ones({4}));
    count = register_buffer("count", zeros({}, kInt64));
  }
  Tensor forward(const Tensor& x) { return fc(x) * scale; }
  nn::Linear fc{nullptr};
  Tensor scale, count;
};
WICK_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() {
    body = register_module("body", Block());
    head = register_module("head", nn::Sequential(nn::ReLU(), nn::Linear(4, 2)));
  }
  Tensor forward(const Tensor& x) { return head(body(x)); }
  Block body;
  nn::Sequential head;
};
WICK_MODULE(Net);

// PyTorch's order: a module's own parameters, then its children's, depth first.
TEST(Module, NamesInRegistrationOrder) {
  Net net;
  EXPECT_EQ(names(net->named_parameters()),
            (std::vector<std::string>{"body.scale", "body.fc.weight", "body.fc.bias", "head.1.weight",
                                      "head.1.bias"}));
  EXPECT_EQ(names(net->named_buffers()), (std::vector<std::string>{"body.count"}));
  EXPECT_TRUE(net->named_parameters(false).empty());
  EXPECT_EQ(net->children().size(), 2u);
  std::vector<std::string> mnames;
  for (auto& [n, m] : net->named_modules()) mnames.push_back(n);
  EXPECT_EQ(mnames, (std::vector<std::string>{"", "body", "body.fc", "head", "head.0", "head.1"}));
  for (auto& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
  nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  EXPECT_EQ(names(seq->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_NE(error_of([&] { net->register_buffer("body", zeros({1})); }).find("already exists"),
            std::string::npos);
}

TEST(Module, HoldersShareTheModuleAndCallForward) {
  nn::Linear a(2, 3);
  nn::Linear b = a;
  EXPECT_EQ(a.get(), b.get());
  EXPECT_TRUE(a->weight.is_same(b->weight));
  nn::Linear empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_NE(error_of([&] { (void)empty->weight; }).find("empty ModuleHolder"), std::string::npos);
  auto x = randn({5, 2});
  Net net;
  auto y = net(randn({5, 3}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{5, 2}));
  EXPECT_TRUE(y.requires_grad());
}

TEST(Module, InPlaceMovesKeepHandles) {
  Net net;
  Tensor w = net->body->fc->weight;  // a handle held outside the module
  const auto before = w.to_vector<double>();
  (net->body(randn({2, 3})).sum()).backward();
  ASSERT_TRUE(w.grad().defined());
  net->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_EQ(net->body->count.dtype(), kInt64);  // integer buffers keep their dtype
  EXPECT_TRUE(w.is_same(net->named_parameters()[1].second));
  EXPECT_TRUE(w.requires_grad());
  expect_close(w, from_blob(const_cast<double*>(before.data()), {4, 3}, kFloat64), 1e-7);
  // The module still trains in its new dtype.
  auto y = net(randn({2, 3}, kFloat64));
  EXPECT_EQ(y.dtype(), kFloat64);
  net->half();
  EXPECT_EQ(w.dtype(), kFloat16);
  net->to(Device("cpu"), kFloat32);
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_NE(error_of([&] { net->to(kInt32); }).find("floating point"), std::string::npos);
}

TEST(Module, CudaMovesInPlace) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  nn::Linear net(3, 1);
  Tensor w = net->weight;
  net->cuda(0);
  EXPECT_EQ(w.device(), Device("cuda:0"));
  EXPECT_EQ(net->parameters()[0].device(), Device("cuda:0"));
  auto y = net(rand({2, 3}).cuda(0));
  EXPECT_EQ(y.device(), Device("cuda:0"));
  EXPECT_EQ(y.grad_fn()->name(), "AddmmBackward0");
  nn::CrossEntropyLoss criterion(nn::CrossEntropyLossOptions().weight(tensor({1., 3.})));
  criterion->cuda();
  EXPECT_EQ(criterion->named_buffers()[0].second.device(), Device("cuda:0"));
  net->cpu();
  EXPECT_TRUE(w.is_cpu());
}

TEST(Module, TrainEvalAndZeroGrad) {
  Net net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->train();
  for (auto& m : net->modules()) EXPECT_TRUE(m->is_training());
  net(randn({2, 3})).sum().backward();
  for (auto& p : net->parameters()) EXPECT_TRUE(p.grad().defined());
  net->zero_grad(/*set_to_none=*/false);
  for (auto& p : net->parameters()) expect_close(p.grad(), zeros_like(p), 0);
  net->zero_grad();
  for (auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, StateDictRoundTrip) {
  manual_seed(1);
  Net a, b;
  auto sd = a->state_dict();
  EXPECT_EQ(names(sd), (std::vector<std::string>{"body.scale", "body.count", "body.fc.weight", "body.fc.bias",
                                                 "head.1.weight", "head.1.bias"}));
  EXPECT_FALSE(sd[0].second.requires_grad());
  b->load_state_dict(sd);
  auto x = randn({4, 3});
  expect_close(b(x), a(x), 0, 0);
  // A map (as wick::load returns) works too, and values are copied, not shared.
  std::map<std::string, Tensor> m(sd.begin(), sd.end());
  b->load_state_dict(m);
  EXPECT_NE(b->body->fc->weight.data_ptr(), a->body->fc->weight.data_ptr());
}

TEST(Module, StateDictErrorsNameTheKeys) {
  nn::Linear a(3, 2);
  auto sd = a->state_dict();
  auto missing = nn::StateDict{sd[0]};
  std::string e = error_of([&] { a->load_state_dict(missing); });
  EXPECT_NE(e.find("Error(s) in loading state_dict for Linear"), std::string::npos) << e;
  EXPECT_NE(e.find("Missing key(s) in state_dict: \"bias\""), std::string::npos) << e;
  auto extra = sd;
  extra.emplace_back("foo", zeros({1}));
  e = error_of([&] { a->load_state_dict(extra); });
  EXPECT_NE(e.find("Unexpected key(s) in state_dict: \"foo\""), std::string::npos) << e;
  a->load_state_dict(extra, /*strict=*/false);
  auto bad = sd;
  bad[0].second = zeros({2, 4});
  e = error_of([&] { a->load_state_dict(bad, false); });
  EXPECT_NE(
      e.find("size mismatch for weight: copying a param with shape [2, 4] from checkpoint, the shape in "
             "current model is [2, 3]."),
      std::string::npos)
      << e;
}

std::string repr(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

TEST(Module, PrintsLikePyTorch) {
  EXPECT_EQ(repr(*nn::Linear(3, 1)), "Linear(in_features=3, out_features=1, bias=True)");
  EXPECT_EQ(repr(*nn::Linear(nn::LinearOptions(3, 1).bias(false))),
            "Linear(in_features=3, out_features=1, bias=False)");
  nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  EXPECT_EQ(repr(*seq),
            "Sequential(\n"
            "  (0): Linear(in_features=4, out_features=8, bias=True)\n"
            "  (1): ReLU()\n"
            "  (2): Linear(in_features=8, out_features=2, bias=True)\n"
            ")");
  Net net;
  EXPECT_EQ(repr(*net),
            "Net(\n"
            "  (body): Block(\n"
            "    (fc): Linear(in_features=3, out_features=4, bias=True)\n"
            "  )\n"
            "  (head): Sequential(\n"
            "    (0): ReLU()\n"
            "    (1): Linear(in_features=4, out_features=2, bias=True)\n"
            "  )\n"
            ")");
  nn::ModuleList list(nn::Linear(2, 2), nn::Linear(2, 2), nn::ReLU());
  EXPECT_EQ(repr(*list),
            "ModuleList(\n"
            "  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
            "  (2): ReLU()\n"
            ")");
  EXPECT_EQ(repr(*nn::Conv2d(nn::Conv2dOptions(1, 8, 3).stride(1).padding(1).bias(false))),
            "Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)");
  EXPECT_EQ(repr(*nn::Conv2d(nn::Conv2dOptions(3, 4, {2, 3}))),
            "Conv2d(3, 4, kernel_size=(2, 3), stride=(1, 1))");
  EXPECT_EQ(repr(*nn::MaxPool2d(2)),
            "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(repr(*nn::AvgPool2d(2)), "AvgPool2d(kernel_size=2, stride=2, padding=0)");
  EXPECT_EQ(repr(*nn::AdaptiveAvgPool2d(1)), "AdaptiveAvgPool2d(output_size=1)");
  EXPECT_EQ(repr(*nn::BatchNorm2d(8)),
            "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(repr(*nn::BatchNorm1d(nn::BatchNormOptions(4).momentum(std::nullopt))),
            "BatchNorm1d(4, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  EXPECT_EQ(repr(*nn::LayerNorm(std::vector<int64_t>{16})),
            "LayerNorm((16,), eps=1e-05, elementwise_affine=True)");
  EXPECT_EQ(repr(*nn::Dropout(0.2)), "Dropout(p=0.2, inplace=False)");
  EXPECT_EQ(repr(*nn::Embedding(10, 3)), "Embedding(10, 3)");
  EXPECT_EQ(repr(*nn::GELU()), "GELU(approximate='none')");
  EXPECT_EQ(repr(*nn::Softmax(1)), "Softmax(dim=1)");
  EXPECT_EQ(repr(*nn::Flatten()), "Flatten(start_dim=1, end_dim=-1)");
  EXPECT_EQ(repr(*nn::CrossEntropyLoss()), "CrossEntropyLoss()");
  EXPECT_EQ(repr(*nn::SiLU()), "SiLU()");
}

}  // namespace

// replace_module on a container keeps the container's own list of steps in step: the next
// forward runs the replacement, and one of another class is refused before anything changes.
TEST(Module, ReplaceModuleInSequentialAndModuleList) {
  manual_seed(0);
  nn::Sequential seq(nn::Linear(3, 2), nn::ReLU());
  auto x = randn({4, 3});
  nn::Linear other(3, 2);
  seq->replace_module("0", other.ptr());
  auto expected = relu(matmul(x, other->weight.t()) + other->bias);
  expect_close(seq->forward(x), expected, 0, 0);
  EXPECT_EQ(seq->ptr<nn::LinearImpl>(0), other.ptr());

  std::string msg = error_of([&] { seq->replace_module("1", nn::Linear(2, 2).ptr()); });
  EXPECT_EQ(msg.rfind("[replace_module]", 0), 0u) << msg;
  EXPECT_NE(seq->ptr<nn::ReLUImpl>(1), nullptr);  // unchanged
  expect_close(seq->forward(x), expected, 0, 0);

  seq->replace_module("1", nullptr);
  EXPECT_EQ(seq->ptr<nn::Module>(1), nullptr);
  EXPECT_NE(error_of([&] { seq->forward(x); }).find("is None"), std::string::npos);

  nn::ModuleList list(nn::Linear(3, 2), nn::ReLU());
  list->replace_module("1", other.ptr());
  EXPECT_EQ(list->ptr<nn::Module>(1), other.ptr());
  EXPECT_EQ(list->ptr<nn::LinearImpl>(1), other.ptr());
}
