// Bad inputs across the API: undefined tensors, unvalidated raw layouts, device indices,
// data-loader edge cases and half-done autograd/optimizer calls. Each must raise the right
// wick::Error subclass with the "[op] " prefix of the op called, and leave its inputs as they were.
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

// Runs f, expects an E whose message starts with "[op] "; returns the message.
template <class E>
std::string expect_error(const std::function<void()>& f, const std::string& op) {
  try {
    f();
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[" + op + "] ", 0), 0u) << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "[" << op << "] threw another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "[" << op << "] did not throw";
  return {};
}

std::vector<float> values(const Tensor& t) { return t.contiguous().to_vector<float>(); }

}  // namespace

// ---- undefined tensors

TEST(BadInput, UndefinedTensorEntryPoints) {
  const Tensor u;
  const Tensor a = arange(6, kFloat).reshape({2, 3});
  const std::vector<float> a0 = values(a);
  struct Case {
    std::string op;
    std::function<void()> f;
  };
  const std::vector<Case> cases = {
      {"item", [&] { (void)u.item(); }},
      {"zeros_like", [&] { (void)zeros_like(u); }},
      {"ones_like", [&] { (void)ones_like(u); }},
      {"empty_like", [&] { (void)empty_like(u); }},
      {"full_like", [&] { (void)full_like(u, 1.0); }},
      {"rand_like", [&] { (void)rand_like(u); }},
      {"randn_like", [&] { (void)randn_like(u); }},
      {"randint_like", [&] { (void)randint_like(u, 3); }},
      {"view", [&] { (void)u.view({-1}); }},
      {"reshape", [&] { (void)u.reshape({-1}); }},
      {"fill_", [&] { Tensor(u).fill_(1.0); }},
      {"zero_", [&] { Tensor(u).zero_(); }},
      {"size", [&] { (void)u.size(0); }},
      {"stride", [&] { (void)u.stride(0); }},
      {"add", [&] { (void)(a + u); }},
      {"add", [&] { (void)(u + a); }},
      {"sub", [&] { (void)(a - u); }},
      {"mul", [&] { (void)(a * u); }},
      {"div", [&] { (void)(a / u); }},
      {"add", [&] { (void)(u + 1.0); }},
      {"eq", [&] { (void)(a == u); }},
      {"lt", [&] { (void)(a < u); }},
      {"exp", [&] { (void)exp(u); }},
      {"linear",
       [&] {
         (void)linear(u, ones({4, 3}));
       }},
      {"linear", [&] { (void)linear(a, u); }},
      {"where", [&] { (void)where(u, a, a); }},
      {"where", [&] { (void)where(a > 1, u, a); }},
      {"where", [&] { (void)where(a > 1, a, u); }},
      {"copy_", [&] { Tensor(a).copy_(u); }},
      {"add_", [&] { Tensor(a).add_(u); }},
  };
  for (const auto& c : cases) {
    std::string msg = expect_error<ValueError>(c.f, c.op);
    EXPECT_NE(msg.find("defined"), std::string::npos) << msg;
  }
  EXPECT_EQ(values(a), a0);
  EXPECT_FALSE(u.defined());
}

TEST(BadInput, UndefinedTensorWithAutograd) {
  const Tensor u;
  Tensor w = ones({3}).requires_grad_();
  expect_error<ValueError>([&] { (void)(w + u); }, "add");
  expect_error<ValueError>([&] { (void)(u * w); }, "mul");
  expect_error<ValueError>([&] { (void)where(u, w, w); }, "where");
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(values(w.detach()), std::vector<float>({1, 1, 1}));
}

TEST(BadInput, LoadStateDictUndefined) {
  nn::Linear lin(2, 3);
  const std::vector<float> w0 = values(lin->weight.detach());
  std::map<std::string, Tensor> sd = {{"weight", Tensor()}, {"bias", zeros({3})}};
  expect_error<ValueError>([&] { lin->load_state_dict(sd); }, "load_state_dict");
  EXPECT_EQ(values(lin->weight.detach()), w0);
  EXPECT_NE(values(lin->bias.detach()), std::vector<float>({0, 0, 0}));
}

namespace {
struct UndefinedDataset : data::Dataset {
  int64_t size() const override { return 4; }
  data::Example<> get(int64_t i) const override { return {i == 0 ? Tensor() : ones({2}), ones({1})}; }
};
}  // namespace

TEST(BadInput, DatasetReturningUndefined) {
  for (int workers : {0, 2}) {
    data::DataLoader loader(UndefinedDataset{}, {.batch_size = 2, .num_workers = workers});
    expect_error<ValueError>(
        [&] {
          for (auto& b : loader) (void)b;
        },
        "collate");
  }
}

// ---- raw layouts

TEST(BadInput, RawLayouts) {
  float buf[6] = {0, 1, 2, 3, 4, 5};
  expect_error<ValueError>([&] { (void)from_blob(nullptr, {2, 3}); }, "from_blob");
  EXPECT_EQ(from_blob(nullptr, {0, 3}).numel(), 0);
  std::string m = expect_error<ValueError>([&] { (void)from_blob(buf, {2, 3}, {-3, 1}); }, "from_blob");
  EXPECT_NE(m.find("negative strides are not supported"), std::string::npos);
  m = expect_error<ValueError>([&] { (void)empty_strided({2, 3}, {-1, 1}); }, "empty_strided");
  EXPECT_NE(m.find("negative strides are not supported"), std::string::npos);
  // (2 - 1) * 2^63-1 + (4 - 1) * 2 + 1 wraps around to a small extent: the storage would be
  // 6 elements while the tensor reaches 2^63 elements further.
  m = expect_error<ValueError>(
      [&] {
        (void)empty_strided({1, 4, 2, 4}, {1, 2, INT64_MAX, 0}, kInt64);
      },
      "empty_strided");
  EXPECT_NE(m.find("Storage size calculation overflowed"), std::string::npos) << m;
  expect_error<ValueError>([&] { (void)empty_strided({3}, {INT64_MAX / 2 + 1}); }, "empty_strided");
  expect_error<ValueError>([&] { (void)empty_strided({2}, {INT64_MAX / 4}, kFloat64); }, "empty_strided");
  expect_error<ValueError>([&] { (void)from_blob(buf, {2, 2}, {INT64_MAX, 1}); }, "from_blob");
  expect_error<ValueError>([&] { (void)from_blob(buf, {INT64_MAX, 4}, {0, 0}); }, "from_blob");
  EXPECT_EQ(empty_strided({2, 0}, {INT64_MAX, INT64_MAX}).numel(), 0);
  EXPECT_EQ(empty_strided({2, 3}, {1, 2}).impl()->storage()->nbytes(), 6 * sizeof(float));
  m = expect_error<ValueError>([&] { (void)empty_strided({2, 3}, {1}); }, "empty_strided");
  EXPECT_NE(m.find("mismatch in length of strides and shape"), std::string::npos);
  // 9 * 6148914691236517206 = 3 * 2^64 + 6: the product wraps around to the 6 elements.
  const Tensor six = arange(6, kFloat32);
  m = expect_error<ValueError>([&] { (void)six.view({9, 6148914691236517206}); }, "view");
  EXPECT_NE(m.find("is invalid for input of size 6"), std::string::npos) << m;
  expect_error<ValueError>([&] { (void)six.reshape({6148914691236517206, 9}); }, "reshape");
  expect_error<ValueError>([&] { (void)six.view({9, 6148914691236517206, -1}); }, "view");
  EXPECT_EQ(arange(0, kFloat32).view({0, 5, 7}).dim(), 3);
  // expand: a negative size in place of a singleton, and sizes whose product overflows.
  m = expect_error<ValueError>([&] { (void)ones({1}).expand({-2}); }, "expand");
  EXPECT_NE(m.find("negative dimension -2"), std::string::npos) << m;
  m = expect_error<ValueError>([&] { (void)ones({1, 1}).expand({INT64_MAX, 4}); }, "expand");
  EXPECT_NE(m.find("overflow"), std::string::npos) << m;
  EXPECT_EQ(ones({1, 1}).expand({INT64_MAX, 0}).numel(), 0);
  // An empty tensor may have any strides; unsqueeze in front of a huge one must not overflow.
  EXPECT_EQ(empty_strided({0, 2}, {3, INT64_MAX - 1}).unsqueeze(1).sizes().vec(),
            (std::vector<int64_t>{0, 1, 2}));
  // Empty tensors with huge strides or sizes: copies, broadcasting, select and narrow must not
  // overflow computing strides or offsets.
  EXPECT_EQ(empty_strided({0, 2, 3}, {3, INT64_MAX - 1, 1}, kInt8).to(kFloat32).sum(1).sizes().vec(),
            (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(empty({0, INT64_MAX, INT64_MAX}).contiguous().numel(), 0);
  EXPECT_EQ((ones({1, 1, 1}, kInt8).expand({0, INT64_MAX, INT64_MAX}) + 1).numel(), 0);
  const Tensor huge_strides = empty_strided({0, 3}, {2, INT64_MAX}, kInt32);
  EXPECT_EQ(huge_strides.select(1, 2).sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(huge_strides.narrow(1, 2, 1).sizes().vec(), (std::vector<int64_t>{0, 1}));
  // slice: the same offsets, and a step as large as int64 allows (one element, its value).
  EXPECT_EQ(huge_strides.slice(1, 1, 3, 2).sizes().vec(), (std::vector<int64_t>{0, 1}));
  const Tensor ten = arange(10, kInt64);
  const Tensor one = ten.slice(0, 3, std::nullopt, INT64_MAX);
  EXPECT_EQ(one.sizes().vec(), (std::vector<int64_t>{1}));
  EXPECT_EQ(one.item<int64_t>(), 3);
  EXPECT_EQ(ten.slice(0, 1, 8, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(ten.slice(0, 9, 2, 3).numel(), 0);
  expect_error<ValueError>([&] { (void)ones({1, 1, 1}).expand({INT64_MAX, 2, 0}); }, "expand");
  expect_error<ValueError>([&] { (void)arange(0, kFloat32).view({INT64_MAX, 2, 0}); }, "view");
  m = expect_error<ValueError>([&] { (void)from_blob(buf, {2, 3}, {3, 1, 1}); }, "from_blob");
  EXPECT_NE(m.find("mismatch in length of strides and shape"), std::string::npos);
  for (float i = 0; i < 6; ++i) EXPECT_EQ(buf[int(i)], i);

  Tensor s = full({}, 1.0);
  m = expect_error<IndexError>([&] { (void)s.size(0); }, "size");
  EXPECT_NE(m.find("Dimension specified as 0 but tensor has no dimensions"), std::string::npos);
  expect_error<IndexError>([&] { (void)s.stride(0); }, "stride");
  expect_error<IndexError>([&] { (void)s.size(-1); }, "size");
  Tensor t = zeros({2, 3});
  expect_error<IndexError>([&] { (void)t.size(2); }, "size");
  expect_error<IndexError>([&] { (void)t.stride(-3); }, "stride");
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_EQ(t.stride(0), 3);
  EXPECT_EQ(s.item<float>(), 1.0f);
}

// ---- devices

TEST(BadInput, DeviceIndices) {
  std::string m = expect_error<ValueError>([] { (void)Device(kCUDA, -7); }, "Device");
  EXPECT_NE(m.find("Device index must be -1 or non-negative, got -7"), std::string::npos);
  expect_error<ValueError>([] { (void)Device(kCUDA, 300); }, "Device");
  expect_error<ValueError>([] { (void)Device(kCUDA, 128); }, "Device");
  expect_error<ValueError>([] { (void)Device(kCPU, 1); }, "Device");
  expect_error<ValueError>([] { (void)Device("cuda:300"); }, "Device");
  EXPECT_EQ(Device(kCUDA, 127).index(), 127);
  EXPECT_EQ(Device(kCUDA, -1).index(), -1);
  EXPECT_EQ(Device(kCPU, 0).index(), 0);
  m = expect_error<ValueError>([] { cuda::set_device(-7); }, "set_device");
  EXPECT_NE(m.find("got -7"), std::string::npos);
}

// ---- data loading

TEST(BadInput, DataLoaderEdges) {
  data::TensorDataset ds(arange(10, kFloat).reshape({5, 2}), arange(5, kLong));
  data::DataLoader loader(ds, {.batch_size = 2});
  expect_error<IndexError>([&] { (void)*loader.end(); }, "DataLoader");
  expect_error<IndexError>([&] { (void)loader.end()->data; }, "DataLoader");
  expect_error<IndexError>([&] { (void)++loader.end(); }, "DataLoader");

  expect_error<ValueError>([&] { data::DataLoader l(ds, {.batch_size = 2, .num_workers = 100000}); },
                           "DataLoader");

  data::DataLoader big(ds, {.batch_size = INT64_MAX});
  EXPECT_EQ(big.size(), 1);
  int n = 0;
  for (auto& b : big) {
    ++n;
    EXPECT_EQ(b.data.size(0), 5);
    EXPECT_EQ(values(b.data), values(arange(10, kFloat)));
  }
  EXPECT_EQ(n, 1);
  data::DataLoader big_drop(ds, {.batch_size = INT64_MAX, .drop_last = true});
  EXPECT_EQ(big_drop.size(), 0);
}

// ---- autograd and optimizers

TEST(BadInput, BackwardGradientCount) {
  Tensor w = ones({2}).requires_grad_();
  Tensor y = w * 2;
  Tensor z = w * 3;
  std::string m = expect_error<ValueError>([&] { autograd::backward({y, z}, {ones({2})}); }, "backward");
  EXPECT_NE(m.find("got 2 tensors and 1 gradients"), std::string::npos);
  expect_error<ValueError>([&] { autograd::backward({y}, {ones({2}), ones({2})}); }, "backward");
  expect_error<ValueError>([&] { (void)autograd::grad({y}, {w}, {ones({2}), ones({2})}); }, "grad");
  m = expect_error<ValueError>([&] { y.backward(); }, "backward");
  EXPECT_NE(m.find("grad can be implicitly created only for scalar outputs"), std::string::npos);
  EXPECT_FALSE(w.grad().defined());
  autograd::backward({y, z}, {ones({2}), ones({2})});
  EXPECT_EQ(values(w.grad()), std::vector<float>({5, 5}));
}

TEST(BadInput, OptimizerStepValidatesAllFirst) {
  for (int kind = 0; kind < 3; ++kind) {
    Tensor p1 = ones({2}).requires_grad_();
    Tensor p2 = ones({3}).requires_grad_();
    p1.set_grad(ones({2}));
    p2.mutable_grad() = ones({2});  // wrong shape (set_grad would refuse it)
    std::unique_ptr<optim::Optimizer> opt;
    std::string op;
    if (kind == 0) {
      opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p1, p2}, optim::SGDOptions(0.1).momentum(0.9));
      op = "SGD.step";
    } else if (kind == 1) {
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p1, p2}, optim::AdamOptions(0.1));
      op = "Adam.step";
    } else {
      opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p1, p2}, optim::AdamWOptions(0.1));
      op = "AdamW.step";
    }
    expect_error<ValueError>([&] { opt->step(); }, op);
    EXPECT_EQ(values(p1.detach()), std::vector<float>({1, 1}));
    EXPECT_EQ(values(p2.detach()), std::vector<float>({1, 1, 1}));
    p2.mutable_grad() = ones({3}, kDouble);
    expect_error<TypeError>([&] { opt->step(); }, op);
    EXPECT_EQ(values(p1.detach()), std::vector<float>({1, 1}));
    p2.mutable_grad() = ones({3});
    opt->step();
    EXPECT_LT(values(p1.detach())[0], 1.0f);
  }
}
