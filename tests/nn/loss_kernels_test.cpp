// The fused losses (nll_loss and cross_entropy's kernels, mse_loss, binary cross entropy with
// logits, relu's threshold backward): values against float64 references written out per
// element, gradients against finite differences, node names as PyTorch's, and errors.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "core/kernel_table.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::rnd;
using TL = std::vector<Tensor>;

namespace {

class LossKernels : public wick::testing::OnEachDevice<7> {};

// nll_loss of x [N, C, S] (contiguous values; logits: log_softmax over C first), in float64.
std::vector<double> nll_ref(const std::vector<double>& x, int64_t N, int64_t C, int64_t S,
                            const std::vector<int64_t>& t, const std::vector<double>& w, int64_t ignore,
                            const std::string& red, bool logits) {
  std::vector<double> per;
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s) {
      auto at = [&](int64_t c) { return x[size_t((n * C + c) * S + s)]; };
      const int64_t v = t[size_t(n * S + s)];
      if (v == ignore) {
        per.push_back(0);
        continue;
      }
      double lp = at(v);
      if (logits) {
        double mx = -INFINITY, se = 0;
        for (int64_t c = 0; c < C; ++c) mx = std::max(mx, at(c));
        for (int64_t c = 0; c < C; ++c) se += std::exp(at(c) - mx);
        lp = at(v) - mx - std::log(se);
      }
      const double wt = w.empty() ? 1 : w[size_t(v)];
      per.push_back(-wt * lp);
      sum += -wt * lp;
      wsum += wt;
    }
  }
  if (red == "none") return per;
  if (red == "sum") return {sum};
  return {sum / wsum};
}

std::vector<int64_t> ints(const Tensor& t) { return t.cpu().to(kInt64).to_vector<int64_t>(); }

TEST_P(LossKernels, NllLossEveryReductionWeightAndIgnoreIndex) {
  const int64_t N = 7, C = 5;
  // Non-contiguous input: the transpose of a [C, N] tensor.
  Tensor x = log_softmax(randn({C, N}, kFloat64), 0).t();
  ASSERT_FALSE(x.is_contiguous());
  Tensor target = tensor({0, 4, 2, 2, 1, 3, 4});
  Tensor weight = tensor({1.0, 0.5, 2.0, 3.0, 0.25}, kFloat64);
  const auto xv = x.contiguous().to_vector<double>();
  for (Dtype dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    for (std::string red : {"none", "mean", "sum"}) {
      for (bool use_w : {false, true}) {
        for (int64_t ignore : {int64_t(-100), int64_t(2)}) {
          auto want = nll_ref(xv, N, C, 1, ints(target),
                              use_w ? weight.to_vector<double>() : std::vector<double>{}, ignore, red, false);
          Tensor got = F::nll_loss(x.to(dev(), dt), target.to(dev()), use_w ? weight.to(dev(), dt) : Tensor(),
                                   ignore, red);
          EXPECT_EQ(got.dtype(), dt);
          EXPECT_EQ(got.dim(), red == "none" ? 1 : 0);
          expect_close(got, want, tol,
                       red + (use_w ? " weighted" : "") + " ignore=" + std::to_string(ignore));
        }
      }
    }
  }
  // uint8 targets are taken as int64 ones; int32 targets raise, as PyTorch's nll_loss.
  expect_close(F::nll_loss(x.to(dev()), target.to(kUInt8).to(dev())),
               nll_ref(xv, N, C, 1, ints(target), {}, -100, "mean", false), 1e-12);
  EXPECT_THROW(F::nll_loss(x.to(dev()), target.to(kInt32).to(dev())), TypeError);
  // Every target ignored: mean is 0 / 0, as PyTorch.
  EXPECT_TRUE(std::isnan(F::nll_loss(x.to(dev()), full({N}, 3, kInt64).to(dev()), {}, 3).item<double>()));
}

TEST_P(LossKernels, NllLossUnbatchedAndSpatial) {
  // [C] input with a 0-d target.
  Tensor x1 = log_softmax(randn({6}, kFloat64), 0);
  Tensor t0 = full({}, 4, kInt64);
  ASSERT_EQ(t0.dim(), 0);
  for (std::string red : {"none", "mean", "sum"}) {
    Tensor got = F::nll_loss(x1.to(dev()), t0.to(dev()), {}, -100, red);
    EXPECT_EQ(got.dim(), 0);
    expect_close(got, {-x1.to_vector<double>()[4]}, 1e-12);
  }
  // [N, C, d1, d2], non-contiguous (channels last), targets [N, d1, d2].
  const int64_t N = 2, C = 3, D1 = 2, D2 = 3;
  Tensor x = log_softmax(randn({N, D1, D2, C}, kFloat64), 3).permute({0, 3, 1, 2});
  Tensor t = randint(C, {N, D1, D2});
  t.view({-1}).select(0, 4).fill_(-1);  // one ignored element
  Tensor w = tensor({0.5, 2.0, 1.5}, kFloat64);
  const auto xv = x.contiguous().to_vector<double>();
  for (std::string red : {"none", "mean", "sum"}) {
    auto want = nll_ref(xv, N, C, D1 * D2, ints(t), w.to_vector<double>(), -1, red, false);
    Tensor got = F::nll_loss(x.to(dev()), t.to(dev()), w.to(dev()), -1, red);
    if (red == "none") {
      EXPECT_EQ(got.sizes().vec(), (std::vector<int64_t>{N, D1, D2}));
    }
    expect_close(got, want, 1e-12, red);
  }
}

TEST_P(LossKernels, CrossEntropyFromLogitsWithAndWithoutGrad) {
  const int64_t N = 9, C = 12;
  Tensor x = (randn({C, N}, kFloat64) * 3).t();  // non-contiguous logits
  Tensor t = randint(C, {N});
  t.select(0, 3).fill_(-100);
  Tensor w = rand({C}, kFloat64) + 0.5;
  const auto xv = x.contiguous().to_vector<double>();
  for (Dtype dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 2e-5;
    for (std::string red : {"none", "mean", "sum"}) {
      for (bool use_w : {false, true}) {
        auto want = nll_ref(xv, N, C, 1, ints(t), use_w ? w.to_vector<double>() : std::vector<double>{}, -100,
                            red, true);
        Tensor xd = x.to(dev(), dt), wd = use_w ? w.to(dev(), dt) : Tensor();
        // No grad: one kernel from the logits.
        expect_close(F::cross_entropy(xd, t.to(dev()), wd, -100, red), want, tol, red + " no grad");
        // With grad: log_softmax, then nll_loss.
        Tensor leaf = xd.detach().requires_grad_();
        Tensor y = F::cross_entropy(leaf, t.to(dev()), wd, -100, red);
        expect_close(y, want, tol, red + " grad");
        EXPECT_EQ(y.grad_fn()->name(), "NllLossBackward0");
      }
    }
  }
  // Logits of a width the 16-byte loads don't divide, and a spatial input, both without grad.
  Tensor x3 = randn({3, 5, 4}, kFloat64);
  Tensor t3 = randint(5, {3, 4});
  expect_close(F::cross_entropy(x3.to(dev()), t3.to(dev()), {}, -100, "none"),
               nll_ref(x3.to_vector<double>(), 3, 5, 4, ints(t3), {}, -100, "none", true), 1e-12);
  Tensor x1 = randn({5}, kFloat64);
  expect_close(F::cross_entropy(x1.to(dev()), full({}, 2, kInt64).to(dev())),
               nll_ref(x1.to_vector<double>(), 1, 5, 1, {2}, {}, -100, "mean", true), 1e-12);
  // Large logits stay finite; -inf logits (masked classes) are allowed.
  Tensor big = tensor({{1000.0, -1000.0, 0.0}, {-double(INFINITY), 2.0, 1.0}}, kFloat64);
  expect_close(F::cross_entropy(big.to(dev()), tensor({0, 2}).to(dev()), {}, -100, "none"),
               nll_ref(big.to_vector<double>(), 2, 3, 1, {0, 2}, {}, -100, "none", true), 1e-12);
}

// Rows wide enough for the CUDA kernel's chunked loads (several 16-byte vectors per thread
// before any arithmetic), then a remainder: random rows, a row whose first half is -inf, and
// rows with a NaN first in a chunk, late in a row, or in the remainder.
TEST_P(LossKernels, CrossEntropyWideRows) {
  const int64_t N = 6, C = 8200;  // 8192 = 2 chunks of 4 x 256 float4 vectors, then 8 more
  Tensor x = randn({N, C}, kFloat64) * 4;
  x.select(0, 1).narrow(0, 0, C / 2).fill_(-INFINITY);
  Tensor t = tensor({3, 5000, 8199, 0, 17, 8195});
  for (Dtype dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-11 : 1e-4;
    Tensor xd = x.to(dev(), dt);
    const auto xv = xd.cpu().to(kFloat64).to_vector<double>();  // the values as dt holds them
    for (std::string red : {"none", "mean", "sum"}) {
      const double scale = red == "sum" ? double(N) : 1.0;
      expect_close(F::cross_entropy(xd, t.to(dev()), {}, -100, red),
                   nll_ref(xv, N, C, 1, ints(t), {}, -100, red, true), tol * scale,
                   red + " " + std::string(name(dt)));
    }
  }
  Tensor xn = x.clone();
  xn.select(0, 2).select(0, 0).fill_(NAN);     // first element of the first chunk
  xn.select(0, 3).select(0, 6001).fill_(NAN);  // inside the second chunk
  xn.select(0, 5).select(0, 8197).fill_(NAN);  // in the remainder
  for (Dtype dt : {kFloat64, kFloat32}) {
    const auto l = F::cross_entropy(xn.to(dev(), dt), t.to(dev()), {}, -100, "none").cpu().to_vector<double>();
    ASSERT_EQ(l.size(), size_t(N));
    for (int64_t i = 0; i < N; ++i)
      EXPECT_EQ(std::isnan(l[size_t(i)]), i == 2 || i == 3 || i == 5) << "row " << i << " " << dt;
  }
}

TEST_P(LossKernels, CrossEntropyLabelSmoothingMatchesComposite) {
  // The composite formulas written out: (1 - ls) nll + ls / C * smooth, smooth normalized by the
  // weights of the targets kept ("mean").
  const int64_t N = 6, C = 4;
  Tensor x = randn({N, C}, kFloat64);
  Tensor t = tensor({0, 3, 1, 3, 2, 1});
  Tensor w = tensor({1.0, 3.0, 0.5, 2.0}, kFloat64);
  Tensor logp = log_softmax(x, 1);
  for (std::string red : {"none", "mean", "sum"}) {
    for (bool use_w : {false, true}) {
      const double ls = 0.25;
      const int64_t ignore = 3;
      Tensor valid = (t != ignore).to(kFloat64);
      Tensor safe = where(t != ignore, t, zeros_like(t));
      Tensor wt = use_w ? index_select(w, 0, safe) * valid : valid;
      Tensor nll = -gather(logp, 1, safe.unsqueeze(1)).squeeze(1) * wt;
      Tensor smooth = -(use_w ? logp * w : logp).sum({1}) * valid;
      Tensor want = red == "none"  ? nll * (1 - ls) + smooth * (ls / C)
                    : red == "sum" ? nll.sum() * (1 - ls) + smooth.sum() * (ls / C)
                                   : (nll.sum() * (1 - ls) + smooth.sum() * (ls / C)) / wt.sum();
      for (bool grad : {false, true}) {
        Tensor xd = x.to(dev());
        if (grad) xd.requires_grad_();
        Tensor got = F::cross_entropy(xd, t.to(dev()), use_w ? w.to(dev()) : Tensor(), ignore, red, ls);
        expect_close(got, want, 1e-12, 1e-12, red);
        if (grad) {
          EXPECT_EQ(got.grad_fn()->name(), "AddBackward0");  // as PyTorch's composition
        }
      }
    }
  }
}

TEST_P(LossKernels, NodeNamesAsPyTorch) {
  Tensor x = randn({4, 3}, TensorOptions(kFloat32).device(dev())).requires_grad_();
  Tensor t = tensor({0, 2, 1, 2}).to(dev());
  Tensor ce = F::cross_entropy(x, t);
  ASSERT_TRUE(ce.grad_fn());
  EXPECT_EQ(ce.grad_fn()->name(), "NllLossBackward0");
  ASSERT_EQ(ce.grad_fn()->next_edges().size(), 1u);
  EXPECT_EQ(ce.grad_fn()->next_edges()[0].function->name(), "LogSoftmaxBackward0");
  EXPECT_EQ(F::nll_loss(log_softmax(x, 1), t).grad_fn()->name(), "NllLossBackward0");
  EXPECT_EQ(F::nll_loss(log_softmax(x, 1), t, {}, -100, "none").grad_fn()->name(), "NllLossBackward0");
  nn::CrossEntropyLoss crit;
  crit->to(dev());
  EXPECT_EQ(crit(x, t).grad_fn()->name(), "NllLossBackward0");
  EXPECT_EQ(nn::NLLLoss()(log_softmax(x, 1), t).grad_fn()->name(), "NllLossBackward0");
  Tensor y = randn({4, 3}, TensorOptions(kFloat32).device(dev()));
  EXPECT_EQ(F::mse_loss(x, y).grad_fn()->name(), "MseLossBackward0");
  EXPECT_EQ(F::mse_loss(x, y, "none").grad_fn()->name(), "MseLossBackward0");
  EXPECT_EQ(nn::MSELoss()(x, y).grad_fn()->name(), "MseLossBackward0");
  Tensor p = rand({4, 3}, TensorOptions(kFloat32).device(dev()));
  EXPECT_EQ(F::binary_cross_entropy_with_logits(x, p).grad_fn()->name(),
            "BinaryCrossEntropyWithLogitsBackward0");
  EXPECT_EQ(nn::BCEWithLogitsLoss()(x, p).grad_fn()->name(), "BinaryCrossEntropyWithLogitsBackward0");
  EXPECT_EQ(relu(x).grad_fn()->name(), "ReluBackward0");
  // Class probabilities: PyTorch's composition ends in a division by the sample count (mean) or
  // a negation.
  Tensor q = softmax(y, 1);
  EXPECT_EQ(F::cross_entropy(x, q).grad_fn()->name(), "DivBackward1");  // a tensor over a number
  EXPECT_EQ(F::cross_entropy(x, q, {}, -100, "sum").grad_fn()->name(), "NegBackward0");
  EXPECT_EQ(F::cross_entropy(x, q, {}, -100, "none").grad_fn()->name(), "NegBackward0");
  // Spatial inputs take nll_loss2d's node; its per-element result is viewed back unless 4-D.
  Tensor x3 = randn({2, 3, 4}, TensorOptions(kFloat32).device(dev())).requires_grad_();
  Tensor t3 = randint(3, {2, 4}, TensorOptions(kInt64).device(dev()));
  EXPECT_EQ(F::cross_entropy(x3, t3).grad_fn()->name(), "NllLoss2DBackward0");
  Tensor none3 = F::cross_entropy(x3, t3, {}, -100, "none");
  EXPECT_EQ(none3.sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(none3.grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(none3.grad_fn()->next_edges()[0].function->name(), "NllLoss2DBackward0");
  Tensor x4 = randn({2, 3, 2, 2}, TensorOptions(kFloat32).device(dev())).requires_grad_();
  Tensor t4 = randint(3, {2, 2, 2}, TensorOptions(kInt64).device(dev()));
  EXPECT_EQ(F::cross_entropy(x4, t4, {}, -100, "none").grad_fn()->name(), "NllLoss2DBackward0");
  // The repr of a loss prints its node as PyTorch does.
  std::ostringstream os;
  os << ce;
  EXPECT_NE(os.str().find("grad_fn=<NllLossBackward0>"), std::string::npos) << os.str();
}

TEST_P(LossKernels, Gradchecks) {
  auto t = tensor({0, 3, 1, 3, 2});
  auto w = tensor({1.0, 3.0, 0.5, 2.0}, kFloat64);
  for (std::string red : {"none", "mean", "sum"}) {
    SCOPED_TRACE(red);
    gradcheck(
        [=](const TL& x) {
          auto d = x[0].device();
          return F::nll_loss(x[0], t.to(d), w.to(d), 3, red);
        },
        {rnd({5, 4})}, dev());
    gradcheck([=](const TL& x) { return F::cross_entropy(x[0], t.to(x[0].device()), {}, -100, red); },
              {rnd({5, 4})}, dev());
    gradcheck(
        [=](const TL& x) {
          auto d = x[0].device();
          return F::cross_entropy(x[0], t.to(d), w.to(d), 1, red, 0.2);
        },
        {rnd({5, 4})}, dev());
    // Spatial, weighted, one target ignored.
    gradcheck(
        [=](const TL& x) {
          auto d = x[0].device();
          return F::cross_entropy(x[0], tensor({{0, 2, 1}, {3, -1, 0}}).to(d), w.to(d), -1, red);
        },
        {rnd({2, 4, 3})}, dev());
    gradcheck([=](const TL& x) { return F::mse_loss(x[0], x[1], red); }, {rnd({3, 4}), rnd({3, 4})}, dev());
    gradcheck([=](const TL& x) { return F::mse_loss(x[0].t(), x[1], red); }, {rnd({4, 3}), rnd({3, 4})},
              dev());
    gradcheck([=](const TL& x) { return F::binary_cross_entropy_with_logits(x[0], x[1], {}, red); },
              {rnd({3, 4}), rnd({3, 4})}, dev());
    gradcheck([=](const TL& x) { return F::binary_cross_entropy_with_logits(x[0], x[1], x[2], red, x[3]); },
              {rnd({3, 4}), rnd({3, 4}).sigmoid().detach().requires_grad_(), rnd({4}, false).abs(),
               rnd({4}, false).abs() + 0.5},
              dev());
  }
  gradcheck(
      [](const TL& x) { return F::nll_loss(log_softmax(x[0], 0), full({}, 2, kInt64).to(x[0].device())); },
      {rnd({5})}, dev());
  gradcheck([](const TL& x) { return relu(x[0]) * 3.0; }, {rnd({4, 5})}, dev());
}

TEST_P(LossKernels, RegressionAndBinaryValues) {
  Tensor a = randn({5, 3}, kFloat64).t(), b = randn({3, 5}, kFloat64);  // a non-contiguous
  Tensor y = rand({3, 5}, kFloat64), wt = rand({5}, kFloat64), pw = rand({5}, kFloat64) * 3;
  auto av = a.contiguous().to_vector<double>(), bv = b.to_vector<double>(), yv = y.to_vector<double>();
  auto wv = wt.to_vector<double>(), pv = pw.to_vector<double>();
  std::vector<double> mse, bce;
  for (size_t i = 0; i < av.size(); ++i) {
    mse.push_back((av[i] - bv[i]) * (av[i] - bv[i]));
    const double s = 1 / (1 + std::exp(-av[i])), p = pv[i % 5];
    bce.push_back(-wv[i % 5] * (p * yv[i] * std::log(s) + (1 - yv[i]) * std::log(1 - s)));
  }
  auto total = [](const std::vector<double>& v) {
    double s = 0;
    for (double e : v) s += e;
    return s;
  };
  for (Dtype dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    Tensor ad = a.to(dev(), dt), bd = b.to(dev(), dt), yd = y.to(dev(), dt);
    expect_close(F::mse_loss(ad, bd, "none"), mse, tol);
    expect_close(F::mse_loss(ad, bd, "sum"), {total(mse)}, tol * 10);
    expect_close(F::mse_loss(ad, bd), {total(mse) / 15}, tol);
    Tensor wd = wt.to(dev(), dt), pd = pw.to(dev(), dt);
    expect_close(F::binary_cross_entropy_with_logits(ad, yd, wd, "none", pd), bce, tol);
    expect_close(F::binary_cross_entropy_with_logits(ad, yd, wd, "sum", pd), {total(bce)}, tol * 10);
    expect_close(F::binary_cross_entropy_with_logits(ad, yd, wd, "mean", pd), {total(bce) / 15}, tol);
  }
  // Stable at large logits, with and without pos_weight.
  Tensor big = tensor({200.0, -200.0}, kFloat64).to(dev());
  Tensor tt = tensor({0.0, 1.0}, kFloat64).to(dev());
  expect_close(F::binary_cross_entropy_with_logits(big, tt, {}, "none"), std::vector<double>{200, 200}, 1e-9);
  expect_close(F::binary_cross_entropy_with_logits(big, tt, {}, "none", full({2}, 2.0, kFloat64).to(dev())),
               std::vector<double>{200, 400}, 1e-9);
}

TEST_P(LossKernels, ReluBackwardIsThreshold) {
  Tensor x = tensor({-1.0, 0.0, 2.0, double(NAN), -0.0, 3.0}, kFloat64).to(dev()).requires_grad_();
  Tensor g = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64).to(dev());
  relu(x).backward(g);
  // grad where the result is > 0 (a NaN result passes the gradient, as PyTorch's threshold_backward).
  expect_close(x.grad(), std::vector<double>{0, 0, 3, 4, 0, 6}, 0);
  for (Dtype dt : {kFloat32, kFloat16, kBFloat16}) {
    Tensor xl = randn({33, 17}, TensorOptions(dt).device(dev())).requires_grad_();
    relu(xl).sum().backward();
    expect_close(xl.grad(), (xl.detach() > 0).to(kFloat64), 0, 0);
  }
}

TEST_P(LossKernels, SoftmaxBackwardMatchesComposite) {
  // One kernel against the composite formulas, on every dim (rows and columns), and the gradient
  // of a cross_entropy chain (a one-hot incoming gradient).
  Tensor x = randn({3, 4, 5}, kFloat64);
  Tensor g = randn({3, 4, 5}, kFloat64);
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool log : {false, true}) {
      for (Dtype dt : {kFloat64, kFloat32}) {
        const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
        Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
        Tensor want = log ? g - exp(y) * g.sum({dim}, true) : y * (g - (g * y).sum({dim}, true));
        Tensor leaf = x.to(dev(), dt, false, true).requires_grad_();
        Tensor out = log ? log_softmax(leaf, dim) : softmax(leaf, dim);
        out.backward(g.to(dev(), dt));
        expect_close(leaf.grad(), want, tol, tol,
                     std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim));
      }
    }
  }
  // Non-contiguous input and a broadcast incoming gradient (from a sum).
  Tensor xt = randn({6, 7}, kFloat64).t().to(dev()).requires_grad_();
  log_softmax(xt, 1).sum().backward();
  Tensor yt = log_softmax(xt.detach().cpu(), 1);
  expect_close(xt.grad(), 1.0 - exp(yt) * 6.0, 1e-12, 1e-12);
}

TEST_P(LossKernels, Errors) {
  Tensor x = randn({3, 5}, TensorOptions(kFloat32).device(dev()));
  Tensor t = tensor({1, 0, 4}).to(dev());
  auto message = [](auto f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THROW(F::nll_loss(x, tensor({1, 0}).to(dev())), ValueError);
  EXPECT_EQ(message([&] {
              F::nll_loss(x, tensor({1, 0}).to(dev()));
            }),
            "[nll_loss] Expected input batch_size (3) to match target batch_size (2).");
  EXPECT_EQ(message([&] {
              F::nll_loss(x, zeros({3, 2}, kInt64).to(dev()));
            }),
            "[nll_loss] 0D or 1D target tensor expected, multi-target not supported");
  EXPECT_EQ(message([&] {
              F::nll_loss(randn({2, 3, 4}).to(dev()), zeros({2, 3}, kInt64).to(dev()));
            }),
            "[nll_loss] Expected target size [2, 4], got [2, 3]");
  EXPECT_THROW(F::nll_loss(x, t, ones({4}).to(dev())), ValueError);
  EXPECT_THROW(F::nll_loss(x, t.to(kFloat32)), TypeError);
  EXPECT_THROW(F::nll_loss(x.to(kInt64), t), TypeError);
  EXPECT_THROW(F::cross_entropy(x, t, {}, -100, "average"), ValueError);
  EXPECT_THROW(F::mse_loss(x, x, "avg"), ValueError);
  EXPECT_THROW(F::mse_loss(x.to(kInt64), x.to(kInt64)), TypeError);
  EXPECT_THROW(F::binary_cross_entropy_with_logits(x, x.t().contiguous().t().view({5, 3})), ValueError);
  if (dev().is_cpu()) {
    // Out of range: PyTorch's IndexError, raised before anything is written.
    for (bool grad : {false, true}) {
      Tensor xi = x.clone();
      if (grad) xi.requires_grad_();
      EXPECT_THROW(F::cross_entropy(xi, tensor({1, 12, 0})), IndexError);
      EXPECT_EQ(message([&] {
                  F::cross_entropy(xi, tensor({1, 12, 0}));
                }),
                "[cross_entropy] Target 12 is out of bounds.");
      EXPECT_EQ(message([&] {
                  F::nll_loss(xi, tensor({-3, 1, 0}), {}, -100, "none");
                }),
                "[nll_loss] Target -3 is out of bounds.");
      EXPECT_EQ(message([&] {
                  F::cross_entropy(xi, tensor({5, 1, 0}), {}, -100, "sum", 0.1);
                }),
                "[cross_entropy] Target 5 is out of bounds.");
    }
    // The kernel itself leaves its outputs untouched.
    Tensor out = full({3}, 7.0f), total = full({}, 7.0f);
    EXPECT_THROW(
        detail::cpu_kernels().nll_loss_forward(out, total, x.view({3, 5, 1}), tensor({1, 12, 0}).view({3, 1}),
                                               Tensor(), -100, detail::LossReduction::None, false),
        IndexError);
    expect_close(out, std::vector<double>{7, 7, 7}, 0);
  }
}

// CUDA checks targets without making the host wait: the bad element's loss is NaN and the
// error surfaces at the next synchronize (or nll_loss call), once.
TEST(LossKernelsCuda, BadTargetIsReportedLater) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Tensor x = randn({3, 5}, TensorOptions(kFloat32).device(Device(kCUDA, 0)));
  Tensor t = tensor({1, 12, 0}).cuda();
  Tensor loss = F::cross_entropy(x, t);
  try {
    cuda::synchronize();
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "[nll_loss] Target 12 is out of bounds.");
  }
  EXPECT_TRUE(std::isnan(loss.item<float>()));
  cuda::synchronize();  // reported once
  // Through the grad path and nll_loss's next call.
  Tensor xg = x.detach().requires_grad_();
  Tensor l2 = F::cross_entropy(xg, tensor({-7, 1, 0}).cuda(), {}, -100, "none");
  (void)l2.cpu();
  EXPECT_THROW(F::cross_entropy(x, tensor({1, 1, 0}).cuda()), IndexError);
  EXPECT_NO_THROW(F::cross_entropy(x, tensor({1, 1, 0}).cuda()));
}

WICK_INSTANTIATE_ON_DEVICES(LossKernels);

}  // namespace
