// wick::save / wick::load of a tensor, a list of tensors, a module and an optimizer, as
// LibTorch's torch::save / torch::load (files of any name; safetensors underneath), and their
// errors: a missing file, a file of another kind, a module of other shapes.
#include "wick/serialize.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

namespace fs = std::filesystem;
using namespace wick;
using wick::testing::error_of;

namespace {

std::string temp_file(const std::string& name) {
  auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (fs::temp_directory_path() / ("wick_ser_" + std::to_string(getpid()) + "_" + info->name() + "_" + name))
      .string();
}

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).to_vector<double>(); }

struct NetImpl : nn::Module {
  NetImpl(int64_t hidden = 4) {
    fc1 = register_module("fc1", nn::Linear(3, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, 2));
    register_buffer("steps", tensor({7}));
  }
  Tensor forward(const Tensor& x) { return fc2(nn::functional::relu(fc1(x))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
WICK_MODULE(Net);

TEST(Serialize, TensorsRoundTripUnderAnyFileName) {
  const std::string path = temp_file("x.pt");
  Tensor x = randn({2, 3}).t();  // non-contiguous
  save(x, path);
  Tensor y;
  load(y, path);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(y), values(x));
  EXPECT_EQ(y.device(), Device(kCPU));

  const std::string list = temp_file("list.pt");
  std::vector<Tensor> xs{tensor({1, 2, 3}), ones({2, 2}, kFloat64), tensor({true, false})};
  save(xs, list);
  std::vector<Tensor> back;
  load(back, list);
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].dtype(), xs[i].dtype());
    EXPECT_EQ(values(back[i]), values(xs[i]));
  }
  fs::remove(path);
  fs::remove(list);
}

TEST(Serialize, ModuleAndOptimizerRoundTrip) {
  manual_seed(5);
  const std::string mpath = temp_file("model.pt"), opath = temp_file("opt.pt");
  Net net;
  optim::Adam opt(net->parameters(), optim::AdamOptions(0.01));
  Tensor x = randn({5, 3});
  net(x).sum().backward();
  opt.step();
  save(net, mpath);
  save(opt, opath);

  manual_seed(99);
  Net other;
  optim::Adam other_opt(other->parameters(), optim::AdamOptions(0.5));
  load(other, mpath);
  load(other_opt, opath);
  auto a = net->state_dict(), b = other->state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(values(a[i].second), values(b[i].second)) << a[i].first;
  }
  // the optimizer's state came back: one more identical step keeps the two nets equal
  for (auto* o : {&opt, &other_opt}) o->zero_grad();
  net(x).sum().backward();
  other(x).sum().backward();
  opt.step();
  other_opt.step();
  EXPECT_EQ(values(net->fc1->weight), values(other->fc1->weight));
  fs::remove(mpath);
  fs::remove(opath);
}

TEST(Serialize, Errors) {
  const std::string missing = temp_file("none.pt");
  Tensor t;
  const std::string e = error_of([&] { load(t, missing); });
  EXPECT_EQ(e.rfind("[load] cannot open '" + missing + "'", 0), 0u) << e;
  // a module loaded as a tensor, a tensor as a module, an optimizer from a module's file
  const std::string mpath = temp_file("m.pt"), tpath = temp_file("t.pt");
  Net net;
  save(net, mpath);
  save(ones({2}), tpath);
  EXPECT_EQ(error_of([&] { load(t, mpath); }), "[load] '" + mpath + "' holds a module, not a tensor");
  EXPECT_EQ(error_of([&] { load(net, tpath); }), "[load] '" + tpath + "' holds a tensor, not a module");
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.1));
  EXPECT_EQ(error_of([&] { load(sgd, mpath); }), "[load] '" + mpath + "' holds a module, not an optimizer");
  // a file that is not safetensors at all
  const std::string junk = temp_file("junk.pt");
  std::ofstream(junk) << "not a checkpoint";
  EXPECT_NE(error_of([&] { load(t, junk); }).find("is not a safetensors file"), std::string::npos);
  // shapes that differ: the tensor and both shapes named, nothing loaded
  Net wide(8);
  const auto before = values(wide->fc1->weight);
  const std::string err = error_of([&] { load(wide, mpath); });
  EXPECT_NE(err.find("size mismatch for fc1.weight: copying a param with shape [4, 3] from checkpoint, the shape in "
                     "current model is [8, 3]."),
            std::string::npos)
      << err;
  EXPECT_EQ(values(wide->fc1->weight), before);
  for (const auto& p : {mpath, tpath, junk}) fs::remove(p);
}

}  // namespace
