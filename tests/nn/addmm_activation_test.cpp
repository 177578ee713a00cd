// _addmm_activation (torch._addmm_activation): GELU (tanh form) or ReLU of addmm, on every device,
// against float64 on the CPU; its gradients against those of addmm and the activation composed;
// on a GPU linear's case takes the GEMM's GELU epilogue (docs/design.md §8, "GEMM"),
// including 16-bit dtypes and transposed operands.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::expect_close;
using testing::OnEachDevice;

class AddmmActivation : public OnEachDevice<71> {};

// The activation evaluated here, element by element, in float64.
Tensor reference(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha, bool gelu) {
  const Tensor pre = addmm(input.cpu().to(kFloat64), a.cpu().to(kFloat64), b.cpu().to(kFloat64), beta, alpha);
  std::vector<double> v = pre.contiguous().to_vector<double>();
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  for (double& x : v) x = gelu ? 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x))) : std::max(x, 0.0);
  return tensor(v, TensorOptions(kFloat64)).view(pre.sizes());
}

double tolerance(Dtype t) { return t == kBFloat16 ? 3e-2 : t == kFloat16 ? 5e-3 : t == kFloat32 ? 1e-4 : 1e-10; }

TEST_P(AddmmActivation, MatchesTheFloat64Activation) {
  std::vector<Dtype> dtypes{kFloat32, kFloat64};
  if (dev().is_cuda()) dtypes.insert(dtypes.end(), {kBFloat16, kFloat16});
  for (Dtype dt : dtypes) {
    for (bool gelu : {true, false}) {
      for (bool transposed : {false, true}) {
        SCOPED_TRACE(std::string(gelu ? "gelu " : "relu ") + (transposed ? "transposed " : "") +
                     std::to_string(int(dt)));
        // linear's shapes: x [n, k] @ w.T with w [m, k], a bias row of m (the epilogue's case),
        // and sizes that are not multiples of a tile
        const int64_t n = 37, k = 24, m = 40;
        Tensor x = randn({n, k}).to(dev(), dt);
        Tensor w = randn({m, k}).to(dev(), dt);
        Tensor bias = randn({m}).to(dev(), dt);
        Tensor a = transposed ? x.t().contiguous().t() : x;  // column-major a
        Tensor out = _addmm_activation(bias, a, w.t(), 1, 1, gelu);
        EXPECT_EQ(out.dtype(), dt);
        EXPECT_EQ(out.device(), dev());
        expect_close(out, reference(bias, a, w.t(), 1, 1, gelu), tolerance(dt), tolerance(dt));
        // beta and alpha, and a full matrix as input: the composed path
        Tensor input = randn({n, m}).to(dev(), dt);
        expect_close(_addmm_activation(input, a, w.t(), 0.5, -2, gelu), reference(input, a, w.t(), 0.5, -2, gelu),
                     2 * tolerance(dt), 2 * tolerance(dt));
      }
    }
  }
}

TEST_P(AddmmActivation, GradientsMatchAddmmThenTheActivation) {
  for (Dtype dt : {kFloat32, kBFloat16}) {
    if (dt == kBFloat16 && !dev().is_cuda()) continue;
    for (bool gelu : {true, false}) {
      SCOPED_TRACE(std::string(gelu ? "gelu " : "relu ") + std::to_string(int(dt)));
      Tensor x0 = randn({19, 16}), w0 = randn({24, 16}), b0 = randn({24}), g0 = randn({19, 24});
      auto leaf = [&](const Tensor& t, Dtype d, Device where) { return t.to(where, d).detach().requires_grad_(); };
      Tensor x = leaf(x0, dt, dev()), w = leaf(w0, dt, dev()), b = leaf(b0, dt, dev());
      Tensor out = _addmm_activation(b, x, w.t(), 1, 1, gelu);
      ASSERT_TRUE(out.grad_fn());
      EXPECT_EQ(out.grad_fn()->name(), "AddmmActivationBackward0");
      out.backward(g0.to(dev(), dt));
      // the reference: addmm then the activation, in float64 on the CPU
      Tensor xr = leaf(x0.to(dt), kFloat64, Device(kCPU)), wr = leaf(w0.to(dt), kFloat64, Device(kCPU)),
             br = leaf(b0.to(dt), kFloat64, Device(kCPU));
      Tensor pre = addmm(br, xr, wr.t());
      (gelu ? nn::functional::gelu(pre, "tanh") : relu(pre)).backward(g0.to(dt).to(kFloat64));
      const double tol = dt == kBFloat16 ? 8e-2 : 1e-4;
      expect_close(x.grad(), xr.grad(), tol, tol, "x");
      expect_close(w.grad(), wr.grad(), tol, tol, "w");
      expect_close(b.grad(), br.grad(), tol * 4, tol, "bias");
    }
  }
}

// linear's GELU backward with its bias gradient: on a GPU one kernel writes GELU's gradient and
// the column sums of it (shapes of several row bands and column strips, and widths that are
// not a multiple of a 16-byte vector, which take the separate kernels), against float64; the
// bias gradient is the same on a second run, bit for bit.
TEST_P(AddmmActivation, GeluBackwardWithTheBiasGradient) {
  std::vector<Dtype> dtypes{kFloat32};
  if (dev().is_cuda()) dtypes.insert(dtypes.end(), {kBFloat16, kFloat16});
  struct Shape {
    int64_t n, k, m;
  };
  for (Dtype dt : dtypes)
    for (Shape sh : {Shape{1000, 40, 776}, Shape{33, 8, 20}, Shape{5, 16, 264}, Shape{300, 12, 2056}}) {
      SCOPED_TRACE(std::string(name(dt)) + " n=" + std::to_string(sh.n) + " m=" + std::to_string(sh.m));
      Tensor x0 = randn({sh.n, sh.k}), w0 = randn({sh.m, sh.k}) * 0.3, b0 = randn({sh.m}), g0 = randn({sh.n, sh.m});
      auto leaf = [&](const Tensor& t, Dtype d, Device where) { return t.to(where, d).detach().requires_grad_(); };
      auto run = [&] {
        Tensor x = leaf(x0, dt, dev()), w = leaf(w0, dt, dev()), b = leaf(b0, dt, dev());
        _addmm_activation(b, x, w.t(), 1, 1, /*use_gelu=*/true).backward(g0.to(dev(), dt));
        return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
      };
      std::vector<Tensor> got = run();
      Tensor xr = leaf(x0.to(dt), kFloat64, Device(kCPU)), wr = leaf(w0.to(dt), kFloat64, Device(kCPU)),
             br = leaf(b0.to(dt), kFloat64, Device(kCPU));
      nn::functional::gelu(addmm(br, xr, wr.t()), "tanh").backward(g0.to(dt).to(kFloat64));
      const double tol = dt == kFloat32 ? 1e-4 : 8e-2;
      const double rows = std::sqrt(double(sh.n));  // the sums' rounding grows with their length
      expect_close(got[0], xr.grad(), tol * rows, tol, "x");
      expect_close(got[1], wr.grad(), tol * rows, tol, "w");
      expect_close(got[2], br.grad(), tol * rows, tol, "bias");
      EXPECT_EQ(got[2].dtype(), dt);
      Tensor again = run()[2];
      EXPECT_TRUE(again.equal(got[2])) << "the bias gradient differs between runs";
    }
}

TEST_P(AddmmActivation, Gradcheck) {
  // float64 (the composed path on every device), a bias row and a full input, beta and alpha;
  // inputs kept away from ReLU's kink
  auto away = [](IntArrayRef sizes) {
    Tensor t = randn(sizes, TensorOptions(kFloat64));
    return (t + t.sign() * 0.1).requires_grad_();
  };
  for (bool gelu : {true, false}) {
    SCOPED_TRACE(gelu ? "gelu" : "relu");
    testing::gradcheck([gelu](const std::vector<Tensor>& t) { return _addmm_activation(t[0], t[1], t[2], 1, 1, gelu); },
                       {away({5}), away({4, 3}), away({3, 5}) * 0.01}, dev());
    testing::gradcheck(
        [gelu](const std::vector<Tensor>& t) { return _addmm_activation(t[0], t[1], t[2].t(), 0.5, -2, gelu); },
        {away({4, 5}), away({4, 3}), away({5, 3}) * 0.001}, dev());
  }
}

TEST_P(AddmmActivation, BadInputRaisesAndDoubleBackwardIsRefused) {
  Tensor a = randn({3, 4}).to(dev()), b = randn({4, 5}).to(dev()), bias = randn({5}).to(dev());
  EXPECT_THROW(_addmm_activation(bias, a, randn({3, 5}).to(dev())), ValueError);
  EXPECT_THROW(_addmm_activation(randn({4}).to(dev()), a, b), ValueError);
  EXPECT_THROW(_addmm_activation(bias.to(kFloat64), a, b), TypeError);
  try {
    _addmm_activation(bias, a, randn({5, 5}).to(dev()));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[_addmm_activation] ", 0), 0u) << e.what();
  }
  EXPECT_THROW(_addmm_activation(bias.to(kInt64), a.to(kInt64), b.to(kInt64), 1, 1, /*use_gelu=*/true), TypeError);
  // the value before the activation is made outside the graph: no second derivative
  Tensor x = a.detach().requires_grad_();
  Tensor out = _addmm_activation(bias, x, b, 1, 1, true);
  EXPECT_THROW(autograd::grad({out.sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true),
               NotImplementedError);
}

WICK_INSTANTIATE_ON_DEVICES(AddmmActivation);

}  // namespace
}  // namespace wick
