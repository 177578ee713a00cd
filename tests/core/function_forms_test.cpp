// The function forms LibTorch programs call as torch::squeeze(t), torch::hstack, torch::cross,
// torch::linalg_norm / torch::linalg::norm, and ATen's nn functions in namespace wick
// (torch::kl_div, torch::embedding(weight, indices), torch::batch_norm ...): values against
// float64 loops written here or against the methods and nn::functional ops they spell in
// another argument order, gradients by central differences, the errors, on every device.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::expect_close;
using testing::names;
using testing::OnEachDevice;

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).contiguous().to_vector<double>(); }

class FunctionForms : public OnEachDevice<29> {};

TEST_P(FunctionForms, ViewsSplitsAndReductionsEqualTheirMethods) {
  const Tensor x = randn({3, 1, 4}).to(dev());
  EXPECT_TRUE(wick::squeeze(x).equal(x.squeeze()));
  EXPECT_EQ(wick::squeeze(x, 1).sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(wick::unsqueeze(x, 0).sizes().vec(), (std::vector<int64_t>{1, 3, 1, 4}));
  EXPECT_TRUE(wick::narrow(x, 2, 1, 2).equal(x.narrow(2, 1, 2)));
  EXPECT_TRUE(wick::select(x, 0, 2).equal(x[2]));
  const Tensor m = randn({3, 5}).to(dev());
  EXPECT_TRUE(wick::t(m).equal(m.t()));
  const auto c = wick::chunk(m, 2, 1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].size(1), 3);
  EXPECT_EQ(c[1].size(1), 2);
  const auto s = wick::split(m, 2, 0);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[1].equal(m.narrow(0, 2, 1)));
  const auto s2 = wick::split(m, IntArrayRef{1, 4}, 1);
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_TRUE(s2[1].equal(m.narrow(1, 1, 4)));
  EXPECT_TRUE(names([] { wick::squeeze(Tensor()); }, "squeeze"));
}

TEST_P(FunctionForms, StacksJoinAsAtLeastNdShapesThem) {
  const Tensor a = arange(3, TensorOptions(kFloat32).device(dev()));
  const Tensor b = arange(3, 6, 1, TensorOptions(kFloat32).device(dev()));
  // 1-D: hstack joins along dim 0, vstack makes rows, dstack [1, 3, 2]
  EXPECT_EQ(values(hstack({a, b})), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  const Tensor v = vstack({a, b});
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(v), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(row_stack({a, b}).equal(v));
  const Tensor d = dstack({a, b});
  EXPECT_EQ(d.sizes().vec(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(values(d), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // 2-D: hstack along columns, dstack [2, 3, 2]; a 0-d tensor joins as one element
  const Tensor m = v, n = v + 10;
  const Tensor h = hstack({m, n});
  EXPECT_EQ(h.sizes().vec(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(values(h), (std::vector<double>{0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15}));
  EXPECT_EQ(dstack({m, n}).sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(values(hstack({a, full({}, 7.0, TensorOptions(kFloat32).device(dev()))})),
            (std::vector<double>{0, 1, 2, 7}));
  EXPECT_TRUE(names([] { hstack({}); }, "hstack"));
  EXPECT_TRUE(names([&] { vstack({m, a.narrow(0, 0, 2)}); }, "vstack"));
}

// a x b in float64 loops over rows of 3 along the last dim.
std::vector<double> cross_reference(const Tensor& a, const Tensor& b) {
  const auto av = values(a), bv = values(b);
  std::vector<double> out(av.size());
  for (size_t r = 0; r < av.size(); r += 3) {
    const double* x = &av[r];
    const double* y = &bv[r];
    out[r] = x[1] * y[2] - x[2] * y[1];
    out[r + 1] = x[2] * y[0] - x[0] * y[2];
    out[r + 2] = x[0] * y[1] - x[1] * y[0];
  }
  return out;
}

TEST_P(FunctionForms, CrossAgainstTheFormula) {
  for (Dtype dt : {kFloat32, kFloat64}) {
    const Tensor a = randn({4, 3}).to(dev(), dt), b = randn({4, 3}).to(dev(), dt);
    expect_close(linalg_cross(a, b), cross_reference(a, b), 1e-5, "last dim");
    expect_close(linalg::cross(a, b, 1), cross_reference(a, b), 1e-5, "linalg::cross");
    expect_close(wick::cross(a, b), cross_reference(a, b), 1e-5, "first dim of size 3");
    // along dim 0 of the transposes (non-contiguous), and broadcast against one row
    expect_close(wick::cross(a.t(), b.t(), 0).t(), cross_reference(a, b), 1e-5, "dim 0");
    const Tensor row = b.narrow(0, 1, 1);
    expect_close(linalg_cross(a, row), cross_reference(a, row.expand({4, 3}).contiguous()), 1e-5, "broadcast");
  }
  // gradcheck takes its inputs on the CPU and moves them to the device
  const Tensor a = randn({2, 3}, TensorOptions(kFloat64)), b = randn({2, 3}, TensorOptions(kFloat64));
  testing::gradcheck([](const std::vector<Tensor>& t) { return linalg_cross(t[0], t[1]); },
                     {a.requires_grad_(), b.requires_grad_()}, dev());
  const Tensor f = randn({2, 4}).to(dev());
  EXPECT_TRUE(names([&] { linalg_cross(f, f); }, "linalg_cross"));
  EXPECT_TRUE(names([&] { wick::cross(f, f); }, "cross"));
  EXPECT_TRUE(names([&] { linalg_cross(f, f.to(kFloat64)); }, "linalg_cross"));
}

// diagonal as a view (offsets past either edge, chosen and negative dims, a non-contiguous base,
// writes reaching the base) and trace, against loops over the elements; their gradients.
TEST_P(FunctionForms, DiagonalAndTraceAgainstLoops) {
  const Tensor base = randn({4, 3, 5}, TensorOptions(kFloat64)).to(dev());
  const std::vector<double> b = values(base);
  auto at = [&](int64_t i, int64_t j, int64_t k) { return b[size_t((i * 3 + j) * 5 + k)]; };
  for (int64_t offset : {-5, -2, -1, 0, 1, 3, 4, 7}) {
    // dims 0 and 2 of [4, 3, 5]: the result [3, len], element (j, l) = base[l + r0, j, l + c0]
    const Tensor d = base.diagonal(offset, 0, -1);
    const int64_t r0 = std::max<int64_t>(-offset, 0), c0 = std::max<int64_t>(offset, 0);
    const int64_t len = std::max<int64_t>(0, std::min<int64_t>(4 - r0, 5 - c0));
    ASSERT_EQ(d.sizes().vec(), (std::vector<int64_t>{3, len})) << offset;
    std::vector<double> want;
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t l = 0; l < len; ++l) want.push_back(at(l + r0, j, l + c0));
    EXPECT_EQ(values(d), want) << offset;
    EXPECT_TRUE(wick::diagonal(base, offset, 0, 2).equal(d)) << offset;
  }
  // dims given in either order; the transpose of a matrix (non-contiguous)
  EXPECT_TRUE(base.diagonal(1, 2, 0).equal(base.diagonal(-1, 0, 2)));
  const Tensor m = randn({5, 4}).to(dev());
  EXPECT_TRUE(m.t().diagonal(1).equal(m.diagonal(-1)));
  // a view: a write through it reaches the base
  Tensor w = zeros({3, 3}).to(dev());
  w.diagonal().fill_(2.0);
  EXPECT_EQ(w.sum().item<double>(), 6.0);
  EXPECT_EQ(w[1][1].item<double>(), 2.0);
  // trace: the main diagonal's sum, int64 for integers
  const Tensor sq = randn({4, 6}).to(dev());
  double tr = 0;
  const std::vector<double> sv = values(sq);
  for (int64_t i = 0; i < 4; ++i) tr += sv[size_t(i * 6 + i)];
  EXPECT_NEAR(wick::trace(sq).item<double>(), tr, 1e-5);
  EXPECT_NEAR(sq.trace().item<double>(), tr, 1e-5);
  const Tensor ints = arange(9, TensorOptions(kInt32).device(dev())).view({3, 3});
  EXPECT_EQ(ints.trace().dtype(), kInt64);
  EXPECT_EQ(ints.trace().item<int64_t>(), 0 + 4 + 8);
  // gradients: central differences, and the nodes' names
  const Tensor g = randn({3, 4}, TensorOptions(kFloat64));
  testing::gradcheck([](const std::vector<Tensor>& t) { return t[0].diagonal(1); }, {g.clone().requires_grad_()}, dev());
  testing::gradcheck([](const std::vector<Tensor>& t) { return wick::trace(t[0]); }, {g.clone().requires_grad_()},
                     dev());
  const Tensor leaf = randn({3, 4}).to(dev()).requires_grad_();
  EXPECT_EQ(leaf.diagonal().grad_fn()->name(), "DiagonalBackward0");
  EXPECT_EQ(leaf.trace().grad_fn()->name(), "TraceBackward0");
  EXPECT_FALSE(sq.trace().requires_grad());
  EXPECT_FALSE(sq.diagonal().requires_grad());
  EXPECT_TRUE(names([&] { sq.diagonal(0, 1, 1); }, "diagonal"));
  EXPECT_TRUE(names([&] { sq.diagonal(0, 0, 2); }, "diagonal"));
  EXPECT_TRUE(names([&] { base.trace(); }, "trace"));
}

TEST_P(FunctionForms, NormsAgainstLoops) {
  const Tensor x = randn({3, 4}, TensorOptions(kFloat64)).to(dev());
  const auto v = values(x);
  auto rows = [&](auto f) {  // f over each row's |x| values
    std::vector<double> out;
    for (int r = 0; r < 3; ++r) out.push_back(f(std::vector<double>(v.begin() + 4 * r, v.begin() + 4 * r + 4)));
    return out;
  };
  auto cols = [&](auto f) {
    std::vector<double> out;
    for (int c = 0; c < 4; ++c) out.push_back(f(std::vector<double>{v[c], v[4 + c], v[8 + c]}));
    return out;
  };
  auto pnorm = [](double p) {
    return [p](const std::vector<double>& e) {
      double s = 0;
      for (double a : e) s += std::pow(std::abs(a), p);
      return std::pow(s, 1 / p);
    };
  };
  auto abs_sum = [](const std::vector<double>& e) {
    double s = 0;
    for (double a : e) s += std::abs(a);
    return s;
  };
  auto max_of = [](const std::vector<double>& e) { return *std::max_element(e.begin(), e.end()); };
  auto min_of = [](const std::vector<double>& e) { return *std::min_element(e.begin(), e.end()); };
  // vector norms over dim 1, over everything, with keepdim
  expect_close(linalg_vector_norm(x, 2, {1}), rows(pnorm(2)), 1e-12, "2 over dim 1");
  expect_close(linalg_vector_norm(x, 3, {-1}), rows(pnorm(3)), 1e-12, "3 over dim -1");
  expect_close(linalg::vector_norm(x, 1, {0}), cols(pnorm(1)), 1e-12, "1 over dim 0");
  expect_close(linalg_vector_norm(x), std::vector<double>{pnorm(2)(v)}, 1e-12, "2 of all");
  EXPECT_EQ(linalg_vector_norm(x, 2, {}, true).sizes().vec(), (std::vector<int64_t>{1, 1}));
  expect_close(linalg_vector_norm(x, INFINITY, {1}),
               rows([](const std::vector<double>& e) {
                 double m = 0;
                 for (double a : e) m = std::max(m, std::abs(a));
                 return m;
               }),
               1e-12, "inf over dim 1");
  // matrix norms: 1 (column sums), inf (row sums), their negatives, Frobenius
  const double col_max = max_of(cols(abs_sum)), col_min = min_of(cols(abs_sum));
  const double row_max = max_of(rows(abs_sum)), row_min = min_of(rows(abs_sum));
  expect_close(linalg_matrix_norm(x, 1), std::vector<double>{col_max}, 1e-12, "ord 1");
  expect_close(linalg_matrix_norm(x, -1), std::vector<double>{col_min}, 1e-12, "ord -1");
  expect_close(linalg_matrix_norm(x, INFINITY), std::vector<double>{row_max}, 1e-12, "ord inf");
  expect_close(linalg::matrix_norm(x, -INFINITY), std::vector<double>{row_min}, 1e-12, "ord -inf");
  expect_close(linalg_matrix_norm(x), std::vector<double>{pnorm(2)(v)}, 1e-12, "fro");
  EXPECT_EQ(linalg_matrix_norm(x, 1, {0, 1}, true).sizes().vec(), (std::vector<int64_t>{1, 1}));
  // a batch of matrices: one norm each
  const Tensor batch = stack({x, x * 2});
  expect_close(linalg_matrix_norm(batch, 1), std::vector<double>{col_max, 2 * col_max}, 1e-12, "batched");
  // linalg_norm: without ord the elements' 2-norm; with ord the vector or matrix norm
  expect_close(linalg_norm(batch), std::vector<double>{pnorm(2)(v) * std::sqrt(5.0)}, 1e-12, "norm of all");
  expect_close(linalg_norm(x, 1), std::vector<double>{col_max}, 1e-12, "norm ord 1 of a matrix");
  expect_close(linalg::norm(x, 1, {1}), rows(pnorm(1)), 1e-12, "norm ord 1 over a dim");
  expect_close(linalg_norm(x, "fro"), std::vector<double>{pnorm(2)(v)}, 1e-12, "norm fro");
  // ord 0 (a literal 0 too): the count of non-zero elements
  const Tensor z = tensor(std::vector<double>{0, 1.5, 0, -2}).to(dev());
  expect_close(linalg_norm(z, 0), std::vector<double>{2}, 0, "ord 0");
  expect_close(linalg_vector_norm(z, 0), std::vector<double>{2}, 0, "vector ord 0");
  // gradient of the vector norm
  testing::gradcheck([](const std::vector<Tensor>& t) { return linalg_vector_norm(t[0], 3, {1}); },
                     {randn({2, 3}, TensorOptions(kFloat64)).requires_grad_()}, dev());
  // errors
  EXPECT_TRUE(names([&] { linalg_matrix_norm(x, 2); }, "linalg_matrix_norm"));
  EXPECT_THROW(linalg_matrix_norm(x, 2), NotImplementedError);
  EXPECT_THROW(linalg_matrix_norm(x, "nuc"), NotImplementedError);
  EXPECT_THROW(linalg_matrix_norm(x, 3), ValueError);
  EXPECT_THROW(linalg_norm(batch, 1), ValueError);
  EXPECT_THROW(linalg_matrix_norm(z, 1), ValueError);
  EXPECT_THROW(linalg_vector_norm(x.to(kInt64)), TypeError);
  EXPECT_THROW(linalg_vector_norm(x, 2, {2}), IndexError);
}

TEST_P(FunctionForms, AtenNnFormsTakeAtensArgumentOrder) {
  namespace F = nn::functional;
  const Tensor logp = log_softmax(randn({4, 5}).to(dev()), 1), p = softmax(randn({4, 5}).to(dev()), 1);
  EXPECT_TRUE(kl_div(logp, p).equal(F::kl_div(logp, p, "mean")));
  EXPECT_TRUE(kl_div(logp, p, Reduction::Sum).equal(F::kl_div(logp, p, "sum")));
  const Tensor a = randn({4, 5}).to(dev()), b = randn({4, 5}).to(dev());
  EXPECT_TRUE(huber_loss(a, b, Reduction::Sum, 0.5).equal(F::huber_loss(a, b, "sum", 0.5)));
  const Tensor t01 = (randn({4, 5}) > 0).to(kFloat32).to(dev()), pw = rand({5}).to(dev());
  EXPECT_TRUE(binary_cross_entropy_with_logits(a, t01, {}, pw, Reduction::Sum)
                  .equal(F::binary_cross_entropy_with_logits(a, t01, {}, "sum", pw)));
  // against the formula, in float64: mean of pw t log s(a) + (1 - t) log(1 - s(a)), negated
  {
    const auto av = values(a), tv = values(t01), pv = values(pw);
    double s = 0;
    for (size_t i = 0; i < av.size(); ++i) {
      const double sig = 1 / (1 + std::exp(-av[i]));
      s -= pv[i % 5] * tv[i] * std::log(sig) + (1 - tv[i]) * std::log(1 - sig);
    }
    expect_close(binary_cross_entropy_with_logits(a, t01, {}, pw), std::vector<double>{s / av.size()}, 1e-5);
  }
  const Tensor target = tensor(std::vector<int64_t>{0, 4, 2, 1}).to(dev());
  EXPECT_TRUE(cross_entropy_loss(a, target, {}, Reduction::Mean, -100, 0.1).equal(
      F::cross_entropy(a, target, {}, -100, "mean", 0.1)));
  EXPECT_TRUE(log_sigmoid(a).equal(F::logsigmoid(a)));
  const Tensor w = randn({6, 3}).to(dev());
  const Tensor idx = tensor(std::vector<int64_t>{5, 0, 5}).to(dev());
  EXPECT_TRUE(embedding(w, idx).equal(w.index_select(0, idx)));
  const Tensor x = randn({8, 3}).to(dev()), rm = zeros({3}).to(dev()), rv = ones({3}).to(dev());
  const Tensor g = rand({3}).to(dev()), beta = randn({3}).to(dev());
  EXPECT_TRUE(batch_norm(x, g, beta, rm, rv, false, 0.1, 1e-5, true)
                  .equal(F::batch_norm(x, rm, rv, g, beta, false, 0.1, 1e-5)));
  expect_close(frobenius_norm(a), std::vector<double>{std::sqrt((a.to(kFloat64) * a.to(kFloat64)).sum().item<double>())},
               1e-4);
  EXPECT_EQ(frobenius_norm(a, {1}, true).sizes().vec(), (std::vector<int64_t>{4, 1}));
  EXPECT_TRUE(cosine_similarity(a, b, 1, 1e-8).equal(F::cosine_similarity(a, b, 1, 1e-8)));
  EXPECT_TRUE(pairwise_distance(a, b).equal(F::pairwise_distance(a, b)));
  const Tensor img = randn({1, 4, 2, 3}).to(dev());
  EXPECT_TRUE(pixel_shuffle(img, 2).equal(F::pixel_shuffle(img, 2)));
  const Tensor up = upsample_nearest2d(img, {4, 6});
  EXPECT_TRUE(up.equal(F::interpolate(img, {4, 6}, {}, "nearest")));
  EXPECT_TRUE(up.narrow(2, 0, 1).narrow(3, 0, 1).equal(img.narrow(2, 0, 1).narrow(3, 0, 1)));
  EXPECT_TRUE(upsample_bilinear2d(img, {4, 6}, true).equal(F::interpolate(img, {4, 6}, {}, "bilinear", true)));
  EXPECT_TRUE(names([&] { upsample_nearest2d(a, {4, 6}); }, "upsample_nearest2d"));
  const Tensor q = randn({2, 3, 5, 4}).to(dev()), k = randn({2, 3, 5, 4}).to(dev());
  EXPECT_TRUE(scaled_dot_product_attention(q, k, k, {}, 0.0, true)
                  .equal(F::scaled_dot_product_attention(q, k, k, {}, 0.0, true)));
  EXPECT_TRUE(names([&] { kl_div(logp, p.narrow(1, 0, 3)); }, "kl_div"));
  EXPECT_TRUE(names([&] { huber_loss(a, b.narrow(1, 0, 3), Reduction::Sum); }, "huber_loss"));
}

TEST_P(FunctionForms, ToOptionsKeepsWhatTheyLeaveUnset) {
  const Tensor x = randn({2, 3});
  const Tensor other = zeros({1}, TensorOptions(kFloat64).device(dev()));
  const Tensor y = x.to(other.options());
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_EQ(y.device(), dev());
  expect_close(y, x.to(kFloat64), 0, 0);
  // only a dtype: the device stays; only a device: the dtype stays
  EXPECT_EQ(x.to(TensorOptions().dtype(kFloat16)).device(), x.device());
  const Tensor z = x.to(TensorOptions().device(dev()));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.device(), dev());
  // copy = true always copies
  const Tensor c = x.to(x.options(), false, true);
  EXPECT_NE(c.data_ptr(), x.data_ptr());
  EXPECT_EQ(x.to(x.options()).data_ptr(), x.data_ptr());
}

WICK_INSTANTIATE_ON_DEVICES(FunctionForms);

// LibTorch's Optimizer::step(closure): the closure's loss, computed with grad mode on, then
// the update; the same parameters as zero_grad, backward and step() by hand.
TEST(FunctionFormsOptim, StepWithAClosureReturnsItsLoss) {
  const Tensor w0 = randn({3});
  const Tensor target = randn({3});
  auto run = [&](bool closure, auto make) {
    Tensor w = w0.clone().requires_grad_();
    auto opt = make(std::vector<Tensor>{w});
    Tensor first;
    for (int i = 0; i < 3; ++i) {
      auto f = [&] {
        opt.zero_grad();
        Tensor l = ((w - target) * (w - target)).sum();
        l.backward();
        return l;
      };
      if (closure) {
        NoGradGuard off;  // step(closure) turns grad mode on for the closure
        Tensor l = opt.step(f);
        if (i == 0) first = l;
      } else {
        Tensor l = f();
        opt.step();
        if (i == 0) first = l;
      }
    }
    return std::make_pair(w.detach(), first);
  };
  auto sgd = [](std::vector<Tensor> p) { return optim::SGD(p, optim::SGDOptions(0.1).momentum(0.9)); };
  auto adam = [](std::vector<Tensor> p) { return optim::Adam(p, optim::AdamOptions(0.05)); };
  auto [a1, l1] = run(true, sgd);
  auto [a2, l2] = run(false, sgd);
  EXPECT_TRUE(a1.equal(a2));
  EXPECT_DOUBLE_EQ(l1.item<double>(), l2.item<double>());
  auto [b1, m1] = run(true, adam);
  auto [b2, m2] = run(false, adam);
  EXPECT_TRUE(b1.equal(b2));
  // an empty closure: step() alone, no loss
  Tensor w = w0.clone().requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  ((w * w).sum()).backward();
  EXPECT_FALSE(opt.step(std::function<Tensor()>()).defined());
  expect_close(w, w0 - 0.2 * w0, 1e-6, 1e-6);
}

TEST(FunctionFormsTensorList, IsTheListTheFunctionsTake) {
  const Tensor a = ones({2}), b = zeros({2});
  const TensorList l{a, b};
  EXPECT_EQ(values(cat(l)), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(stack(TensorList({a, b})).sizes().vec(), (std::vector<int64_t>{2, 2}));
}

}  // namespace
}  // namespace wick
