// The same seed gives the same numbers on the CPU and on CUDA, element for element and bit for
// bit: rand, randn, randint in every dtype they take, sizes that do not fill the last Philox
// block, consecutive draws (the offset advances alike), and the in-place forms on views.
#include "ops_test_util.h"

using namespace wick;
using namespace wick::test;

namespace {

// Draws f(device) after manual_seed(seed) on the CPU and on cuda; both as float64 values.
template <class F>
void expect_same_draw(uint64_t seed, const F& f, const std::string& what) {
  manual_seed(seed);
  Tensor cpu = f(Device("cpu"));
  Tensor cpu2 = f(Device("cpu"));  // the next draw of the stream
  manual_seed(seed);
  Tensor gpu = f(Device("cuda"));
  Tensor gpu2 = f(Device("cuda"));
  ASSERT_TRUE(gpu.is_cuda()) << what;
  expect_equal(gpu, cpu, what);
  expect_equal(gpu2, cpu2, what + " (second draw)");
  // Not the degenerate case: the draws vary.
  const auto v = values(cpu);
  if (v.size() > 8) {
    EXPECT_NE(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())) << what;
  }
}

}  // namespace

TEST(CudaOpsRandom, RandOfSeven) {
  WICK_REQUIRE_CUDA();
  manual_seed(7);
  auto cpu = rand({1000}).to_vector<float>();
  manual_seed(7);
  auto gpu = rand({1000}, Device("cuda")).cpu().to_vector<float>();
  ASSERT_EQ(cpu.size(), 1000u);
  for (size_t i = 0; i < cpu.size(); ++i) ASSERT_EQ(gpu[i], cpu[i]) << "element " << i;
}

TEST(CudaOpsRandom, EveryDistributionAndDtype) {
  WICK_REQUIRE_CUDA();
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(1001), (int64_t(1) << 20) + 1}) {
    const std::string size = " n " + std::to_string(n);
    for (Dtype t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      expect_same_draw(123, [&](Device d) { return rand({n}, TensorOptions(t).device(d)); }, "rand " + dt(t) + size);
      expect_same_draw(9, [&](Device d) { return randn({n}, TensorOptions(t).device(d)); }, "randn " + dt(t) + size);
    }
    for (Dtype t : {kInt64, kInt32, kInt16, kUInt8, kFloat32}) {
      const int64_t low = t == kUInt8 ? 2 : -3;  // uint8 takes no negative bound
      expect_same_draw(5, [&](Device d) { return randint(low, 90, {n}, TensorOptions(t).device(d)); },
                       "randint " + dt(t) + size);
    }
    expect_same_draw(5, [&](Device d) { return randint(int64_t(1) << 40, {n}, TensorOptions(kInt64).device(d)); },
                     "randint wide range" + size);
  }
}

TEST(CudaOpsRandom, InPlaceOnViews) {
  WICK_REQUIRE_CUDA();
  for (Dtype t : {kFloat32, kFloat64, kFloat16}) {
    // A transposed view draws in its own row-major order, through a contiguous temporary.
    expect_same_draw(
        77, [&](Device d) { return empty({40, 30}, TensorOptions(t).device(d)).t().uniform_(-2.0, 5.0); },
        "uniform_ transposed " + dt(t));
    expect_same_draw(
        78, [&](Device d) { return empty({4097}, TensorOptions(t).device(d)).normal_(3.0, 0.5); },
        "normal_ " + dt(t));
    expect_same_draw(
        79, [&](Device d) { return empty({9, 20}, TensorOptions(t).device(d)).narrow(1, 3, 11).uniform_(0.0, 1.0); },
        "uniform_ narrow " + dt(t));
  }
}

// The generator of each device is its own: a CUDA draw does not move the CPU's offset.
TEST(CudaOpsRandom, DevicesKeepTheirOwnOffsets) {
  WICK_REQUIRE_CUDA();
  manual_seed(3);
  auto first = rand({100});
  manual_seed(3);
  auto g = rand({100}, Device("cuda"));
  auto after_gpu = rand({100});
  expect_equal(after_gpu, first, "the CPU stream after a CUDA draw");
  expect_equal(g.cpu(), first, "the CUDA draw");
}
