// split's backward joins its pieces' gradients as a view when they already lie side by side
// in one buffer (as cuDNN attention writes a fused qkv projection's dq, dk, dv), and copies
// them together otherwise: the values are the same either way. The gradients here come from a
// custom function whose backward returns views of one buffer, laid out in several ways.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "wick/autograd_function.h"
#include "wick/wick.h"

using namespace wick;
using wick::autograd::AutogradContext;
using wick::autograd::variable_list;

namespace {

// Returns a + 2b + 3c; its backward writes g, 2g, 3g into one buffer in the order and with the
// gap ctx->saved_data["layout"] names, and returns views of it:
//   "adjacent": [g | 2g | 3g] along the last dim, as split cut the input;
//   "reversed": [3g | 2g | g];   "gap": [g | 2g | 3g | unused].
struct Weighted : wick::autograd::Function<Weighted> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, const Tensor& c, std::string layout) {
    ctx->saved_data["layout"] = layout;
    return a + b * 2 + c * 3;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const std::string layout = ctx->saved_data["layout"].toStringRef();
    const Tensor& go = g[0];
    const int64_t w = go.size(-1);
    std::vector<int64_t> sizes = go.sizes().vec();
    sizes.back() = layout == "gap" ? 4 * w : 3 * w;
    Tensor buf = empty(sizes, go.options());
    int64_t at[3] = {0, w, 2 * w};
    if (layout == "reversed") std::swap(at[0], at[2]);
    variable_list out;
    for (int i = 0; i < 3; ++i) {
      Tensor piece = buf.narrow(-1, at[i], w);
      piece.copy_(go * double(i + 1));
      out.push_back(piece);
    }
    if (layout == "gap") buf.narrow(-1, 3 * w, w).fill_(std::nan(""));
    out.push_back(Tensor());
    return out;
  }
};

class SplitSideBySide : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(SplitSideBySide, GradientsOfEveryLayoutAreTheSame) {
  for (const char* layout : {"adjacent", "reversed", "gap"}) {
    SCOPED_TRACE(layout);
    manual_seed(3);
    Tensor x = randn({2, 3, 12}, TensorOptions(kFloat32).device(GetParam())).requires_grad_();
    auto parts = x.split(4, 2);
    Tensor y = Weighted::apply(parts[0], parts[1], parts[2], std::string(layout));
    Tensor g = randn({2, 3, 4}, TensorOptions(kFloat32).device(GetParam()));
    y.backward(g);
    Tensor want = cat({g, g * 2, g * 3}, 2);
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().sizes().vec(), (std::vector<int64_t>{2, 3, 12}));
    EXPECT_TRUE(x.grad().cpu().equal(want.cpu()));
  }
}

TEST_P(SplitSideBySide, UnevenPiecesAndAnotherDim) {
  manual_seed(4);
  Tensor x = randn({6, 5}, TensorOptions(kFloat64).device(GetParam())).requires_grad_();
  auto parts = x.split(std::vector<int64_t>{2, 2, 2}, 0);
  Tensor y = Weighted::apply(parts[0].t(), parts[1].t(), parts[2].t(), std::string("adjacent"));
  Tensor g = randn({5, 2}, TensorOptions(kFloat64).device(GetParam()));
  y.backward(g);
  // The pieces' gradients come back as transposed views of one [5, 6] buffer: side by side
  // along x's dim 0 with column-major strides, joined as one transposed view of the buffer.
  Tensor gt = g.t();
  EXPECT_TRUE(x.grad().cpu().equal(cat({gt, gt * 2, gt * 3}, 0).cpu()));
}

TEST_P(SplitSideBySide, DoubleBackwardStillRecords) {
  // Under create_graph the pieces' gradients carry a history: the join must record it.
  Tensor x = randn({4, 6}, TensorOptions(kFloat64).device(GetParam())).requires_grad_();
  auto parts = x.split(2, 1);
  Tensor y = (parts[0] * parts[0] + parts[1] * parts[1] * 2 + parts[2] * parts[2] * 3).sum();
  auto gx = autograd::grad({y}, {x}, {}, true, true)[0];
  Tensor z = (gx * gx).sum();
  z.backward();
  // gx = 2 w x per column block (w = 1, 2, 3); d(sum gx^2)/dx = 8 w^2 x.
  Tensor w = cat({full({4, 2}, 1.0, TensorOptions(kFloat64).device(GetParam())),
                  full({4, 2}, 2.0, TensorOptions(kFloat64).device(GetParam())),
                  full({4, 2}, 3.0, TensorOptions(kFloat64).device(GetParam()))},
                 1);
  EXPECT_TRUE(x.grad().allclose(x.detach() * w * w * 8, 1e-12, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(Devices, SplitSideBySide, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const ::testing::TestParamInfo<Device>& i) { return i.param.is_cpu() ? "cpu" : "cuda"; });

}  // namespace
