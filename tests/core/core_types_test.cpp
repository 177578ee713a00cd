// Device, Dtype, Half/BFloat16, Scalar and the error hierarchy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>

#include <sys/sysinfo.h>

#include "../test_files.h"
#include "wick/wick.h"

using namespace wick;

using wick::test::error_of;

TEST(Device, ParsesAndPrints) {
  Device cpu("cpu"), gpu("cuda"), gpu1("cuda:1"), g2(kCUDA, 2);
  EXPECT_EQ(cpu.type(), kCPU);
  EXPECT_EQ(gpu.type(), kCUDA);
  EXPECT_EQ(gpu.index(), -1);
  EXPECT_EQ(gpu1.index(), 1);
  EXPECT_EQ(g2.index(), 2);
  std::ostringstream os;
  os << gpu1 << " " << cpu << " " << gpu << " " << g2;
  EXPECT_EQ(os.str(), "cuda:1 cpu cuda cuda:2");
  EXPECT_EQ(Device("cuda:12").index(), 12);
  EXPECT_EQ(Device("cuda:1"), gpu1);
  EXPECT_NE(Device("cuda:0"), gpu);
}

TEST(Device, RejectsBadStrings) {
  for (const char* bad : {"gpu:0", "cuda:", "cuda:-1", "cuda:x", "cuda:1:2", "CUDA", "", "cpu:1", "cuda:01"}) {
    std::string msg = error_of<ValueError>([&] { Device d(bad); });
    EXPECT_EQ(msg.rfind("[Device] invalid device string: '" + std::string(bad) + "'", 0), 0u) << msg;
  }
  // ValueError is a wick::Error.
  EXPECT_THROW(Device("gpu:0"), Error);
}

TEST(Dtype, NamesAndSizes) {
  std::ostringstream os;
  for (Dtype t : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64})
    os << t << "/" << element_size(t) << " ";
  EXPECT_EQ(os.str(), "bool/1 uint8/1 int8/1 int16/2 int32/4 int64/8 float16/2 bfloat16/2 float32/4 float64/8 ");
}

TEST(Dtype, PromotionMatchesPyTorch) {
  // Values from torch.promote_types.
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kBool, kInt32), kInt32);
  EXPECT_EQ(promote_types(kInt64, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kInt32, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kFloat32, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kUInt8, kBool), kUInt8);
  EXPECT_EQ(promote_types(kInt16, kUInt8), kInt16);
  EXPECT_EQ(promote_types(kBFloat16, kInt64), kBFloat16);
  // Symmetric for every pair.
  for (int a = 0; a < kNumDtypes; ++a)
    for (int b = 0; b < kNumDtypes; ++b) EXPECT_EQ(promote_types(Dtype(a), Dtype(b)), promote_types(Dtype(b), Dtype(a)));
}

TEST(Dtype, DefaultDtype) {
  EXPECT_EQ(get_default_dtype(), kFloat32);
  set_default_dtype(kFloat64);
  EXPECT_EQ(ones({2}).dtype(), kFloat64);
  EXPECT_EQ(tensor({1., 2.}).dtype(), kFloat64);
  set_default_dtype(kFloat32);
  EXPECT_THROW(set_default_dtype(kInt64), TypeError);
}

// Reference rounding of a double to a float format with `mant` stored bits and exponent range,
// by round-to-nearest-even on the exact value (independent of the bit tricks under test).
static double round_to_format(double x, int mant, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e;
  std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
  int exp = std::max(e - 1, emin);
  double ulp = std::ldexp(1.0, exp - mant);
  double q = std::fabs(x) / ulp;
  double r = std::nearbyint(q);  // ties to even under the default rounding mode
  double v = r * ulp;
  double maxv = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  if (v > maxv) v = INFINITY;
  return std::copysign(v, x);
}

TEST(Half, RoundsToNearestEven) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> ex(-26, 17);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(mant(rng), ex(rng)) * (i % 2 ? -1.f : 1.f);
    double want = round_to_format(double(f), 10, -14, 15);
    EXPECT_EQ(double(float(Half(f))), want) << f;
    double want_bf = round_to_format(double(f), 7, -126, 127);
    EXPECT_EQ(double(float(BFloat16(f))), want_bf) << f;
  }
  // Exact ties and edges.
  EXPECT_EQ(float(Half(1.0f + std::ldexp(1.f, -11))), 1.0f);                                // tie -> even
  EXPECT_EQ(float(Half(1.0f + 3 * std::ldexp(1.f, -11))), 1.0f + std::ldexp(1.f, -9));      // tie -> even
  EXPECT_EQ(float(Half(65504.f)), 65504.f);
  EXPECT_TRUE(std::isinf(float(Half(65520.f))));
  EXPECT_EQ(float(Half(65519.f)), 65504.f);
  EXPECT_EQ(float(Half(std::ldexp(1.f, -24))), std::ldexp(1.f, -24));  // smallest subnormal
  EXPECT_EQ(float(Half(std::ldexp(1.f, -26))), 0.f);
  EXPECT_TRUE(std::isnan(float(Half(NAN))));
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
  EXPECT_EQ(Half(-0.f).x, 0x8000);
  EXPECT_EQ(Half(1.f).x, 0x3c00);
  EXPECT_EQ(BFloat16(1.f).x, 0x3f80);
}

TEST(Scalar, KindsAndConversion) {
  Scalar i = 3, d = 2.5, b = true;
  EXPECT_TRUE(i.is_integral());
  EXPECT_TRUE(d.is_floating_point());
  EXPECT_TRUE(b.is_bool());
  EXPECT_EQ(i.to<double>(), 3.0);
  EXPECT_EQ(d.to<int64_t>(), 2);
  EXPECT_EQ(float(d.to<Half>()), 2.5f);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(d.dtype(), kFloat32);
  EXPECT_EQ(b.dtype(), kBool);
}

// A host tensor larger than the machine's memory and swap can never be backed: it raises
// OutOfMemoryError naming the op, also where the kernel would overcommit and hand out the
// address space (the process would be killed once the op touched the pages).
TEST(Errors, HostTensorLargerThanTheMachineRaises) {
  struct sysinfo si {};
  ASSERT_EQ(sysinfo(&si), 0);
  const int64_t machine = int64_t(si.totalram + si.totalswap) * int64_t(si.mem_unit);
  const int64_t n = machine / 4 + (int64_t(1) << 20);  // float32 elements: 4 MiB more than the machine
  for (auto make : {+[](int64_t k) { (void)ones({k}); }, +[](int64_t k) { (void)empty({k}); }}) {
    try {
      make(n);
      FAIL() << "no OutOfMemoryError for " << 4 * n << " bytes";
    } catch (const OutOfMemoryError& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.rfind("[ones]", 0) == 0 || m.rfind("[empty]", 0) == 0) << m;
      EXPECT_NE(m.find("bytes of memory and swap"), std::string::npos) << m;
    }
  }
  const Tensor keep = full({1}, 2.0);
  EXPECT_THROW((void)keep.expand({n}).contiguous(), OutOfMemoryError);
  EXPECT_EQ(keep.item<double>(), 2.0);
  // Host buffers sized by an argument, not by a tensor that exists: the same.
  const int64_t n8 = machine / 8 + (int64_t(1) << 20);  // 8-byte items
  EXPECT_THROW((void)arange(n8), OutOfMemoryError);
  EXPECT_THROW((void)arange(0.0, double(n8), 1.0), OutOfMemoryError);
  EXPECT_THROW((void)linspace(0, 1, n8), OutOfMemoryError);
  struct Big : data::Dataset {
    int64_t n;
    explicit Big(int64_t n) : n(n) {}
    int64_t size() const override { return n; }
    data::Example<> get(int64_t) const override { return {ones({1}), ones({})}; }
  };
  try {
    data::DataLoader loader(Big(n8), {.batch_size = 2, .shuffle = true});
    for (auto& b : loader) (void)b;
    FAIL() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[DataLoader]", 0), 0u) << e.what();
  }
  data::DistributedSampler sampler(n8, {.num_replicas = 2, .rank = 1});
  EXPECT_THROW((void)sampler.indices(), OutOfMemoryError);
}

TEST(Errors, HierarchyAndPrefix) {
  EXPECT_THROW(throw ValueError("[x] y"), Error);
  EXPECT_THROW(throw TypeError("[x] y"), Error);
  EXPECT_THROW(throw IndexError("[x] y"), Error);
  EXPECT_THROW(throw DeviceError("[x] y"), Error);
  EXPECT_THROW(throw OutOfMemoryError("[x] y"), Error);
  EXPECT_THROW(throw NotImplementedError("[x] y"), Error);
  std::string msg = error_of<IndexError>([] { ones({2, 3}).select(1, 3); });
  EXPECT_EQ(msg, "[select] index 3 is out of bounds for dimension 1 with size 3");
  msg = error_of<IndexError>([] { ones({2, 3}).transpose(0, 2); });
  EXPECT_EQ(msg, "[transpose] Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  msg = error_of<TypeError>([] { ones({2}).data_ptr<int64_t>(); });
  EXPECT_EQ(msg, "[data_ptr] expected scalar type int64 but found float32");
  msg = error_of<ValueError>([] { ones({2}).item(); });
  EXPECT_EQ(msg, "[item] a Tensor with 2 elements cannot be converted to Scalar");
  msg = error_of<ValueError>([] { ones({2, 3}).view({4}); });
  EXPECT_EQ(msg, "[view] shape '[4]' is invalid for input of size 6");
  msg = error_of<ValueError>([] { ones({2, 3}) + ones({4}); });
  EXPECT_EQ(msg, "[add] The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  msg = error_of<ValueError>([] { empty({2, -1}); });
  EXPECT_EQ(msg, "[empty] Trying to create tensor with negative dimension -1: [2, -1]");
  msg = error_of<ValueError>([] { matmul(ones({2, 3}), ones({2, 3})); });
  EXPECT_EQ(msg, "[matmul] mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  msg = error_of<TypeError>([] { mean(ones({2}, kInt64)); });
  EXPECT_EQ(msg.rfind("[mean] could not infer output dtype", 0), 0u) << msg;
  msg = error_of<TypeError>([] { tensor({true, false}) - tensor({true, true}); });
  EXPECT_EQ(msg.rfind("[sub] Subtraction, the `-` operator, with two bool tensors is not supported", 0), 0u);
  msg = error_of<TypeError>([] {
    auto t = ones({2}, kInt64);
    t.add_(ones({2}));
  });
  EXPECT_EQ(msg, "[add_] result type float32 can't be cast to the desired output type int64");
}

TEST(Errors, FailedOpLeavesInputsIntact) {
  auto a = tensor({1, 2, 3});
  auto b = tensor({1.5, 2.5});
  EXPECT_THROW(a.add_(b), Error);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(a._version(), 0u);
  auto c = tensor({1., 2., 3.});
  EXPECT_THROW(c.mul_(ones({3, 3})), ValueError);  // broadcast shape isn't c's
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}
