// linear_gelu_linear(x, w1, b1, w2, b2) = linear(gelu(linear(x, w1, b1), "tanh"), w2, b2), on
// every device: values against a float64 evaluation written out here, gradients against the
// composition in float64, for 2-D and 3-D inputs, non-contiguous ones, each subset of inputs
// that requires grad; on a GPU the fused node (GELU_AUX_BIAS forward, DGELU_BGRAD backward:
// docs/design.md §8, "GEMM") in float32, float16 and bfloat16, and under autocast.
#include <cmath>
#include <cstdlib>
#include <cstring>
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

class LinearGeluLinear : public OnEachDevice<83> {};

// Whether CUDA takes the fused node (it is taken once it has passed on a GPU).
bool cuda_fuses() {
  const char* v = std::getenv("WICK_NEW_CUDA_KERNELS");
  return v && std::strcmp(v, "1") == 0;
}

// The MLP in float64 on the CPU, GELU's tanh form evaluated element by element.
Tensor reference(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  auto d = [](const Tensor& t) { return t.cpu().to(kFloat64); };
  const Tensor pre = matmul(d(x), d(w1).t()) + d(b1);
  std::vector<double> v = pre.contiguous().to_vector<double>();
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  for (double& e : v) e = 0.5 * e * (1 + std::tanh(k * (e + 0.044715 * e * e * e)));
  const Tensor h = tensor(v, TensorOptions(kFloat64)).view(pre.sizes());
  return matmul(h, d(w2).t()) + d(b2);
}

double tolerance(Dtype t) { return t == kBFloat16 ? 5e-2 : t == kFloat16 ? 1e-2 : t == kFloat32 ? 2e-4 : 1e-10; }

struct Mlp {
  Tensor x, w1, b1, w2, b2;
};

// x [.., c] (3-D when batched, a transposed view when strided), w1 [hidden, c], w2 [out, hidden];
// sizes that are not multiples of a tile. Weights scaled as a layer's initialisation.
Mlp make(Device dev, Dtype dt, bool batched, bool strided) {
  const int64_t c = 24, hidden = 40, out = 16;
  Tensor x = batched ? randn({3, 13, c}) : randn({37, c});
  if (strided) x = batched ? x.transpose(0, 1).contiguous().transpose(0, 1) : x.t().contiguous().t();
  return {x.to(dev, dt), (randn({hidden, c}) * 0.2).to(dev, dt), (randn({hidden}) * 0.5).to(dev, dt),
          (randn({out, hidden}) * 0.15).to(dev, dt), (randn({out}) * 0.5).to(dev, dt)};
}

TEST_P(LinearGeluLinear, MatchesTheFloat64Composition) {
  std::vector<Dtype> dtypes{kFloat32, kFloat64};
  if (dev().is_cuda()) dtypes.insert(dtypes.end(), {kBFloat16, kFloat16});
  for (Dtype dt : dtypes) {
    for (bool batched : {false, true}) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(std::to_string(int(dt)) + (batched ? " batched" : "") + (strided ? " strided" : ""));
        Mlp m = make(dev(), dt, batched, strided);
        Tensor y = linear_gelu_linear(m.x, m.w1, m.b1, m.w2, m.b2);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_EQ(y.device(), dev());
        std::vector<int64_t> want_sizes = m.x.sizes().vec();
        want_sizes.back() = 16;
        EXPECT_EQ(y.sizes().vec(), want_sizes);
        expect_close(y, reference(m.x, m.w1, m.b1, m.w2, m.b2), tolerance(dt), tolerance(dt));
      }
    }
  }
  // without biases: the composition, on every device
  Mlp m = make(dev(), kFloat32, false, false);
  Tensor none;
  expect_close(linear_gelu_linear(m.x, m.w1, none, m.w2, none),
               reference(m.x, m.w1, zeros({40}), m.w2, zeros({16})), 2e-4, 2e-4);
}

TEST_P(LinearGeluLinear, GradientsMatchTheComposition) {
  std::vector<Dtype> dtypes{kFloat32, kFloat64};
  if (dev().is_cuda()) dtypes.insert(dtypes.end(), {kBFloat16, kFloat16});
  for (Dtype dt : dtypes) {
    for (bool batched : {false, true}) {
      // every input requiring grad, then each alone (the node skips what is not needed)
      for (int only = -1; only < 5; ++only) {
        SCOPED_TRACE(std::to_string(int(dt)) + (batched ? " batched" : "") + " only " + std::to_string(only));
        Mlp m = make(dev(), dt, batched, /*strided=*/batched);
        std::vector<Tensor> in{m.x, m.w1, m.b1, m.w2, m.b2};
        std::vector<Tensor> ref;
        for (size_t i = 0; i < in.size(); ++i) {
          ref.push_back(in[i].cpu().to(kFloat64).detach().requires_grad_(only < 0 || int(i) == only));
          in[i] = in[i].detach().requires_grad_(only < 0 || int(i) == only);
        }
        Tensor y = linear_gelu_linear(in[0], in[1], in[2], in[3], in[4]);
        ASSERT_TRUE(y.grad_fn());
        if (dev().is_cuda() && cuda_fuses() && dt != kFloat64) {
          EXPECT_EQ(y.grad_fn()->name(), "LinearGeluLinearBackward0");
        }
        Tensor g = randn(y.sizes()).to(dev(), dt);
        y.backward(g);
        nn::functional::linear(nn::functional::gelu(nn::functional::linear(ref[0], ref[1], ref[2]), "tanh"), ref[3],
                               ref[4])
            .backward(g.cpu().to(kFloat64));
        const double tol = 2 * tolerance(dt);
        const char* names[] = {"x", "w1", "b1", "w2", "b2"};
        for (size_t i = 0; i < in.size(); ++i) {
          if (only >= 0 && int(i) != only) {
            EXPECT_FALSE(in[i].grad().defined()) << names[i];
            continue;
          }
          ASSERT_TRUE(in[i].grad().defined()) << names[i];
          EXPECT_EQ(in[i].grad().sizes().vec(), in[i].sizes().vec()) << names[i];
          // the bias gradients sum many rows: a looser bound in 16-bit
          const double t = i == 2 || i == 4 ? 4 * tol : tol;
          expect_close(in[i].grad(), ref[i].grad(), t, t, names[i]);
        }
      }
    }
  }
}

TEST_P(LinearGeluLinear, Gradcheck) {
  // float64: the composition on every device
  auto leaf = [](IntArrayRef sizes, double scale) {
    return (randn(sizes, TensorOptions(kFloat64)) * scale).requires_grad_();
  };
  testing::gradcheck(
      [](const std::vector<Tensor>& t) { return linear_gelu_linear(t[0], t[1], t[2], t[3], t[4]); },
      {leaf({2, 3, 4}, 1), leaf({6, 4}, 0.5), leaf({6}, 0.5), leaf({5, 6}, 0.5), leaf({5}, 0.5)}, dev());
}

TEST_P(LinearGeluLinear, UnderAutocastItRunsInTheAutocastDtype) {
  Mlp m = make(dev(), kFloat32, true, false);
  const Dtype ad = kBFloat16;
  Tensor y;
  {
    AutocastGuard guard(dev().type(), ad);
    y = linear_gelu_linear(m.x, m.w1, m.b1, m.w2, m.b2);
  }
  EXPECT_EQ(y.dtype(), ad);
  auto lower = [&](const Tensor& t) { return t.to(ad); };
  expect_close(y, reference(lower(m.x), lower(m.w1), lower(m.b1), lower(m.w2), lower(m.b2)), 5e-2, 5e-2);
}

TEST_P(LinearGeluLinear, BadInputRaisesNamingTheOp) {
  Mlp m = make(dev(), kFloat32, false, false);
  auto expect_error = [](auto f, const char* what) {
    try {
      f();
      ADD_FAILURE() << "no error: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[linear_gelu_linear] ", 0), 0u) << what << ": " << e.what();
    }
  };
  expect_error([&] { linear_gelu_linear(m.x, m.w1.t(), m.b1, m.w2, m.b2); }, "w1's shape");
  expect_error([&] { linear_gelu_linear(m.x, m.w1, m.b1, m.w2.t(), m.b2); }, "w2's shape");
  expect_error([&] { linear_gelu_linear(m.x, m.w1, m.b1.narrow(0, 0, 5), m.w2, m.b2); }, "b1's size");
  expect_error([&] { linear_gelu_linear(m.x, m.w1, m.b1, m.w2, m.b2.to(kFloat64)); }, "b2's dtype");
  expect_error([&] { linear_gelu_linear(m.x.to(kInt64), m.w1.to(kInt64), m.b1.to(kInt64), m.w2.to(kInt64),
                                        m.b2.to(kInt64)); },
               "integers");
  expect_error([&] { linear_gelu_linear(Tensor(), m.w1, m.b1, m.w2, m.b2); }, "no input");
  EXPECT_THROW(linear_gelu_linear(m.x, m.w1, m.b1, m.w2.t(), m.b2), ValueError);
  EXPECT_THROW(linear_gelu_linear(m.x, m.w1, m.b1, m.w2, m.b2.to(kFloat64)), TypeError);
}

TEST_P(LinearGeluLinear, DoubleBackwardOfTheFusedNodeIsRefused) {
  if (!dev().is_cuda() || !cuda_fuses()) GTEST_SKIP() << "the fused node is CUDA's";
  Mlp m = make(dev(), kFloat32, false, false);
  Tensor x = m.x.detach().requires_grad_();
  Tensor y = linear_gelu_linear(x, m.w1, m.b1, m.w2, m.b2);
  try {
    autograd::grad({y.sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true);
    ADD_FAILURE() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[linear_gelu_linear] ", 0), 0u) << e.what();
  }
  // without create_graph it differentiates
  Tensor gx = autograd::grad({y.sum()}, {x})[0];
  EXPECT_EQ(gx.sizes().vec(), x.sizes().vec());
}

WICK_INSTANTIATE_ON_DEVICES(LinearGeluLinear);

}  // namespace
}  // namespace wick
