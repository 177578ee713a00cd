// The CUDA kernels of the runtime issue (fill, copy with casts, add/sub/mul/div) against the
// CPU: random inputs, every dtype, contiguous, transposed, sliced, broadcast and misaligned
// operands (which take the strided path), and a launch over 2^31 elements.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "wick/wick.h"

using namespace wick;

namespace {

const Dtype kAll[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

// Random values every dtype holds exactly or rounds the same way on both devices.
Tensor random_tensor(IntArrayRef sizes, Dtype t, std::mt19937& rng, bool nonzero = false, bool nonnegative = false) {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    // Integers small enough that a + 2 * b and a * b stay in range (int8 included).
    if (t == kBool) x = double(rng() % 2);
    else if (t == kUInt8) x = double(rng() % 12);
    else if (is_integral(t)) x = double(int(rng() % 21) - 10);
    else x = std::uniform_real_distribution<double>(nonnegative ? 0 : -50, 50)(rng);
    if (nonzero && x == 0) x = 3;
  }
  return from_blob(v.data(), sizes, kFloat64).clone().to(t);
}

// Layouts of the same logical tensor (2-D): contiguous, transposed, every other row, and
// shifted by one element (so its address is not 16-byte aligned).
Tensor layout(const Tensor& c, int kind) {
  switch (kind) {
    case 1:
      return c.t().contiguous().t();
    case 2: {
      std::vector<int64_t> big = c.sizes().vec();
      big[0] *= 2;
      auto b = zeros(big, c.options());
      auto s = b.slice(0, 0, std::nullopt, 2);
      s.copy_(c);
      return s;
    }
    case 3: {
      auto flat = zeros({c.numel() + 1}, c.options());
      auto s = flat.narrow(0, 1, c.numel()).view(c.sizes());
      s.copy_(c);
      return s;
    }
    default: return c;
  }
}

void expect_same(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.is_cuda()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.sizes(), cpu.sizes()) << what;
  auto g = gpu.cpu().to(kFloat64).contiguous().to_vector<double>();
  auto c = cpu.to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(c[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
      continue;
    }
    ASSERT_LE(std::abs(g[i] - c[i]), tol * std::max(1.0, std::abs(c[i]))) << what << " at " << i << ": " << g[i]
                                                                            << " vs " << c[i];
  }
}

double tol(Dtype t) {
  switch (t) {
    case kFloat16: return 1e-3;
    case kBFloat16: return 8e-3;
    case kFloat32: return 1e-6;
    case kFloat64: return 1e-14;
    default: return 0;
  }
}

}  // namespace

TEST(CudaKernels, FillEveryDtypeAndLayout) {
  WICK_REQUIRE_CUDA();
  for (Dtype t : kAll) {
    for (int kind = 0; kind < 4; ++kind) {
      for (double value : {0.0, 1.0, -3.25, 7.5}) {
        if (t == kUInt8 && value < 0) continue;
        auto cpu = layout(zeros({33, 17}, t), kind);
        auto gpu = layout(zeros({33, 17}, TensorOptions(t).device("cuda")), kind);
        cpu.fill_(value);
        gpu.fill_(value);
        expect_same(gpu, cpu, 0, std::string("fill ") + std::string(name(t)) + " layout " + std::to_string(kind));
      }
    }
  }
}

TEST(CudaKernels, CastEveryPair) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(5);
  for (Dtype from : kAll) {
    // A negative float converted to uint8 is undefined in C++ (the GPU saturates, x86 wraps):
    // uint8 gets nonnegative sources.
    auto signed_src = random_tensor({37, 29}, from, rng);
    auto unsigned_src = random_tensor({37, 29}, from, rng, false, /*nonnegative=*/true);
    for (int kind : {0, 1, 3}) {
      for (Dtype to : kAll) {
        const Tensor& cpu = to == kUInt8 && is_floating_point(from) ? unsigned_src : signed_src;
        auto gpu = layout(cpu.to("cuda"), kind);
        auto got = gpu.to(to);
        // The CPU's cast of the same values is the reference (both are static_cast, and
        // 16-bit floats round to nearest even on both).
        expect_same(got, cpu.to(to), 0,
                    std::string("cast ") + std::string(name(from)) + "->" + std::string(name(to)) + " layout " +
                        std::to_string(kind));
      }
    }
  }
}

TEST(CudaKernels, ArithmeticAgainstFloat64) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(9);
  for (Dtype t : kAll) {
    for (int op = 0; op < 4; ++op) {
      if (t == kBool && op == 1) continue;  // PyTorch has no bool subtraction
      for (int ka = 0; ka < 4; ++ka) {
        const int kb = (ka + 1) % 4;
        auto a = random_tensor({45, 31}, t, rng);
        auto b = random_tensor({45, 31}, t, rng, /*nonzero=*/op == 3);
        auto ga = layout(a.to("cuda"), ka), gb = layout(b.to("cuda"), kb);
        auto row = random_tensor({31}, t, rng, op == 3);  // broadcast along the rows
        auto apply = [&](const Tensor& x, const Tensor& y) {
          switch (op) {
            case 0: return add(x, y, x.dtype() == kBool ? Scalar(true) : Scalar(2));
            case 1: return sub(x, y);
            case 2: return x * y;
            default: return x / y;
          }
        };
        const std::string what = std::string(name(t)) + " op " + std::to_string(op) + " layouts " +
                                 std::to_string(ka) + "," + std::to_string(kb);
        // The CPU computes the same op on wide copies (int64 for integers, whose conversion back
        // wraps as the GPU's does; float64 otherwise), then rounds to the result dtype.
        const Dtype wide = is_integral(t, true) && op != 3 ? kInt64 : kFloat64;
        auto ref = [&](const Tensor& x, const Tensor& y, Dtype out) {
          return apply(x.to(wide), y.to(wide)).to(out);
        };
        auto got = apply(ga, gb);
        expect_same(got, ref(a, b, got.dtype()), tol(got.dtype()), what);
        got = apply(ga, row.to("cuda"));
        expect_same(got, ref(a, row, got.dtype()), tol(got.dtype()), what + " broadcast");
        const Scalar s = is_floating_point(t) ? Scalar(1.75) : Scalar(3);
        if (t != kBool) {
          auto gs = op == 0 ? ga + s : op == 1 ? ga - s : op == 2 ? ga * s : ga / s;
          auto w = a.to(wide);
          auto cs = op == 0 ? w + s : op == 1 ? w - s : op == 2 ? w * s : w / s;
          expect_same(gs, cs.to(gs.dtype()), tol(gs.dtype()), what + " scalar");
        }
      }
    }
  }
}

TEST(CudaKernels, InPlaceOnAView) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(2);
  auto a = random_tensor({64, 48}, kFloat32, rng);
  auto b = random_tensor({48}, kFloat32, rng);
  auto ga = a.to("cuda");
  auto gv = ga.t();  // writes through a transposed view
  gv.add_(b.to("cuda").unsqueeze(1), 0.5);
  auto ref = a.t().to(kFloat64) + b.to(kFloat64).unsqueeze(1) * 0.5;
  expect_same(ga.t(), ref.to(kFloat32), 1e-6, "add_ on a transposed view");
}

// More than 2^31 elements: the contiguous path (64-bit indices) and the strided path (split
// into 32-bit pieces on the host).
TEST(CudaKernels, OverTwoBillionElements) {
  WICK_REQUIRE_CUDA();
  const int64_t n = (int64_t(1) << 31) + 1000;
  if (cuda::mem_get_info().first < 3 * n) GTEST_SKIP() << "not enough GPU memory";
  auto base = zeros({2 * n}, TensorOptions(kUInt8).device("cuda"));
  auto every_other = base.slice(0, 1, std::nullopt, 2);  // n elements, stride 2
  ASSERT_EQ(every_other.numel(), n);
  every_other.fill_(7);
  auto tail = base.narrow(0, 2 * n - 8, 8).cpu().to_vector<uint8_t>();
  EXPECT_EQ(tail, (std::vector<uint8_t>{0, 7, 0, 7, 0, 7, 0, 7}));
  auto head = base.narrow(0, 0, 4).cpu().to_vector<uint8_t>();
  EXPECT_EQ(head, (std::vector<uint8_t>{0, 7, 0, 7}));
  auto mid = base.narrow(0, int64_t(1) << 31, 4).cpu().to_vector<uint8_t>();
  EXPECT_EQ(mid, (std::vector<uint8_t>{0, 7, 0, 7}));
  base.fill_(3);  // contiguous, 2n elements
  auto end = base.narrow(0, 2 * n - 2, 2).cpu().to_vector<uint8_t>();
  EXPECT_EQ(end, (std::vector<uint8_t>{3, 3}));
}
