// Conv2d on CUDA (cuDNN where the build has it) against the CPU's generic one in float64:
// the forward and all three gradients with groups, stride, padding and dilation, from a sliced
// and transposed input and a strided dy, in float64, float32 (without and with TF32), float16
// and bfloat16. A dtype cuDNN lacks (int64) must behave on CUDA as on the CPU. Skipped without
// a GPU.
#include <string>

#include <gtest/gtest.h>

#include "core/conv.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::error_of;
using wick::testing::expect_close;

namespace {

#define WICK_REQUIRE_CUDA() \
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device"

// Sets the float32 matmul precision for a scope.
class PrecisionScope {
 public:
  explicit PrecisionScope(const char* p) : saved_(get_float32_matmul_precision()) {
    set_float32_matmul_precision(p);
  }
  ~PrecisionScope() { set_float32_matmul_precision(saved_); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  std::string saved_;
};

struct Tol {
  double atol, rtol;
};

// The problem: groups 2, stride 2, padding 1, dilation 2, a 3x3 kernel, output 4x3.
constexpr int64_t N = 2, C = 4, H = 9, W = 8, O = 6, K = 3, G = 2, S = 2, P = 1, D = 2;
constexpr int64_t OH = (H + 2 * P - D * (K - 1) - 1) / S + 1, OW = (W + 2 * P - D * (K - 1) - 1) / S + 1;

Tensor on_gpu(const Tensor& t, Dtype dt) { return t.to(Device(kCUDA, 0), dt); }
// The same values (already rounded to the tested dtype) as a float64 CPU leaf.
Tensor cpu64(const Tensor& t) { return t.detach().cpu().to(kFloat64).requires_grad_(); }

void check_against_cpu(Dtype dt, Tol tol) {
  SCOPED_TRACE(::testing::Message() << "dtype " << dt << ", float32 precision "
                                    << get_float32_matmul_precision());
  // x: rows 1..H of the transpose of a [N, C, W, H + 2] leaf, a view with strides (.., .., 1, H + 2).
  Tensor base = on_gpu(randn({N, C, W, H + 2}), dt).requires_grad_();
  Tensor x = base.transpose(2, 3).narrow(2, 1, H);
  ASSERT_FALSE(x.is_contiguous());
  Tensor w = on_gpu(randn({O, C / G, K, K}) * 0.5, dt).requires_grad_();
  Tensor b = on_gpu(randn({O}), dt).requires_grad_();
  // The loss weighs y through a transpose, so that dy arrives as a transposed view.
  Tensor gt = on_gpu(randn({N, O, OW, OH}), dt);
  Tensor y = F::conv2d(x, w, b, S, P, D, G);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{N, O, OH, OW}));
  EXPECT_EQ(y.dtype(), dt);
  EXPECT_EQ(y.device(), Device(kCUDA, 0));
  (y.transpose(2, 3) * gt).sum().backward();

  Tensor x64 = cpu64(x), w64 = cpu64(w), b64 = cpu64(b);
  Tensor y64 = F::conv2d(x64, w64, b64, S, P, D, G);
  (y64.transpose(2, 3) * gt.cpu().to(kFloat64)).sum().backward();

  expect_close(y, y64, tol.atol, tol.rtol, "y");
  ASSERT_TRUE(w.grad().defined() && b.grad().defined() && base.grad().defined());
  EXPECT_EQ(w.grad().dtype(), dt);
  expect_close(w.grad(), w64.grad(), tol.atol, tol.rtol, "dw");
  expect_close(b.grad(), b64.grad(), tol.atol, tol.rtol, "db");
  Tensor dbase = base.grad().transpose(2, 3);  // [N, C, H + 2, W]
  expect_close(dbase.narrow(2, 1, H), x64.grad(), tol.atol, tol.rtol, "dx");
  // The rows the slice leaves out get no gradient.
  const Tensor zero_row = zeros({N, C, 1, W}, kFloat64);
  expect_close(dbase.narrow(2, 0, 1), zero_row, 0, 0, "dx above the slice");
  expect_close(dbase.narrow(2, H + 1, 1), zero_row, 0, 0, "dx below the slice");

  // The device's conv2d_backward entry called directly with a transposed dy, against the
  // generic implementation.
  const detail::Conv2dParams p{{S, S}, {P, P}, {D, D}, G};
  Tensor dy = on_gpu(randn({N, O, OW, OH}), dt).transpose(2, 3);
  ASSERT_FALSE(dy.is_contiguous());
  auto got = detail::conv2d_backward(dy, x.detach(), w.detach(), p, {true, true, true});
  auto want = detail::generic_conv2d_backward(dy.cpu().to(kFloat64), x64.detach(), w64.detach(), p,
                                              {true, true, true});
  const char* names[] = {"backend dx", "backend dw", "backend db"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(got[size_t(i)].defined()) << names[i];
    EXPECT_EQ(got[size_t(i)].dtype(), dt) << names[i];
    expect_close(got[size_t(i)], want[size_t(i)], tol.atol, tol.rtol, names[i]);
  }
}

TEST(Conv2dCuda, MatchesCpuFloat64) {
  WICK_REQUIRE_CUDA();
  manual_seed(11);
  check_against_cpu(kFloat64, {1e-10, 1e-10});
}

TEST(Conv2dCuda, MatchesCpuFloat32) {
  WICK_REQUIRE_CUDA();
  manual_seed(12);
  PrecisionScope exact("highest");  // no TF32: float32 rounding only
  check_against_cpu(kFloat32, {1e-4, 1e-4});
}

TEST(Conv2dCuda, MatchesCpuFloat32WithTF32) {
  WICK_REQUIRE_CUDA();
  manual_seed(13);
  PrecisionScope tf32("high");  // TF32 allowed: about 10 bits of mantissa per product
  check_against_cpu(kFloat32, {3e-2, 1e-2});
}

TEST(Conv2dCuda, MatchesCpuFloat16) {
  WICK_REQUIRE_CUDA();
  manual_seed(14);
  check_against_cpu(kFloat16, {2e-2, 1e-2});
}

TEST(Conv2dCuda, MatchesCpuBFloat16) {
  WICK_REQUIRE_CUDA();
  manual_seed(15);
  check_against_cpu(kBFloat16, {6e-2, 2e-2});
}

// cuDNN has no int64 convolution: CUDA answers as the CPU does (the generic result,
// or the same kind of error).
TEST(Conv2dCuda, IntegerDtypeAsOnCpu) {
  WICK_REQUIRE_CUDA();
  manual_seed(16);
  Tensor x = (randn({2, 4, 5, 5}) * 3).to(kInt64), w = (randn({4, 2, 3, 3}) * 3).to(kInt64);
  Tensor y_cpu, y_cuda;
  const std::string cpu_error = error_of([&] { y_cpu = F::conv2d(x, w, {}, 1, 1, 1, 2); });
  const std::string cuda_error =
      error_of([&] { y_cuda = F::conv2d(x.to(Device(kCUDA, 0)), w.to(Device(kCUDA, 0)), {}, 1, 1, 1, 2); });
  ASSERT_EQ(cpu_error.empty(), cuda_error.empty()) << "cpu: " << cpu_error << "\ncuda: " << cuda_error;
  if (!cpu_error.empty()) return;
  EXPECT_EQ(y_cuda.dtype(), kInt64);
  expect_close(y_cuda, y_cpu, 0, 0, "int64 y");
}

}  // namespace
