// Memory overlap between the written-to tensor and the inputs of an in-place op, as PyTorch
// checks it: a partial overlap raises "unsupported operation: some elements of the input tensor
// and the written-to tensor refer to a single memory location", a full one (same memory, same
// strides) is fine, and a written-to tensor that repeats an element (stride 0) raises "more than
// one element of the written-to tensor refers to a single memory location" (fill_ excepted).
// Layouts with holes are not analysed (as PyTorch); their copies keep the source's values.
// The same on CUDA when a GPU is present.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

const char* kPartial =
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
    "memory location. Please clone() the tensor before performing the operation.";
const char* kInternal =
    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
    "location. Please clone() the tensor before performing the operation.";

// f must raise ValueError "[op] <text>".
void expect_overlap_error(const std::function<void()>& f, const std::string& op, const char* text) {
  try {
    f();
    ADD_FAILURE() << "[" << op << "] did not throw";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "[" + op + "] " + text);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "[" << op << "] threw another exception: " << e.what();
  }
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

class MemoryOverlap : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda" && !cuda::is_available()) GTEST_SKIP() << "no GPU";
  }
  Device dev() const { return Device(GetParam()); }
  // 0, 1, ..., n - 1 as float32 on the device.
  Tensor iota(int64_t n) const { return arange(n, TensorOptions(kFloat32).device(dev())); }
};

TEST_P(MemoryOverlap, PartialOverlapRaisesAndWritesNothing) {
  Tensor a = iota(5);
  const std::vector<double> a0 = values(a.cpu());
  // a[1:] += a[:4] would read elements already written.
  expect_overlap_error([&] { a.slice(0, 1).add_(a.slice(0, 0, 4)); }, "add_", kPartial);
  expect_overlap_error([&] { a.slice(0, 0, 4).sub_(a.slice(0, 1)); }, "sub_", kPartial);
  expect_overlap_error([&] { a.slice(0, 1).mul_(a.slice(0, 0, 4)); }, "mul_", kPartial);
  expect_overlap_error([&] { a.slice(0, 1).div_(a.slice(0, 0, 4)); }, "div_", kPartial);
  expect_overlap_error([&] { a.slice(0, 1).pow_(a.slice(0, 0, 4)); }, "pow_", kPartial);
  expect_overlap_error([&] { a.slice(0, 1).clamp_(a.slice(0, 0, 4)); }, "clamp_", kPartial);
  expect_overlap_error([&] { a.slice(0, 1).copy_(a.slice(0, 0, 4)); }, "copy_", kPartial);
  EXPECT_EQ(values(a.cpu()), a0);

  // The same memory in another order: a square matrix and its transpose.
  Tensor m = iota(9).view({3, 3});
  const std::vector<double> m0 = values(m.cpu());
  expect_overlap_error([&] { m.add_(m.t()); }, "add_", kPartial);
  expect_overlap_error([&] { m.copy_(m.t()); }, "copy_", kPartial);
  // A row broadcast over its own matrix.
  expect_overlap_error([&] { m.add_(m[0]); }, "add_", kPartial);
  expect_overlap_error([&] { m.mul_(m.slice(0, 2)); }, "mul_", kPartial);
  EXPECT_EQ(values(m.cpu()), m0);
}

TEST_P(MemoryOverlap, FullOverlapIsFine) {
  Tensor a = iota(4);
  a.add_(a);
  EXPECT_EQ(values(a.cpu()), std::vector<double>({0, 2, 4, 6}));
  // Another tensor over the same elements with the same strides.
  a.mul_(a.view({2, 2}).view({4}));
  EXPECT_EQ(values(a.cpu()), std::vector<double>({0, 4, 16, 36}));
  a.copy_(a.view({4}));
  EXPECT_EQ(values(a.cpu()), std::vector<double>({0, 4, 16, 36}));
  Tensor m = iota(4).view({2, 2});
  m.sub_(m.t().t());
  EXPECT_EQ(values(m.cpu()), std::vector<double>({0, 0, 0, 0}));
  // Disjoint parts of one storage.
  Tensor b = iota(6);
  b.slice(0, 3).add_(b.slice(0, 0, 3));
  EXPECT_EQ(values(b.cpu()), std::vector<double>({0, 1, 2, 3, 5, 7}));
  // Inputs may overlap each other when the output is new.
  Tensor c = iota(5);
  EXPECT_EQ(values((c.slice(0, 1) + c.slice(0, 0, 4)).cpu()), std::vector<double>({1, 3, 5, 7}));
}

TEST_P(MemoryOverlap, WrittenToTensorRepeatingAnElement) {
  Tensor one = iota(1) + 5;
  expect_overlap_error([&] { one.expand({3}).add_(1); }, "add_", kInternal);
  expect_overlap_error([&] { one.expand({3}).exp_(); }, "exp_", kInternal);
  expect_overlap_error([&] { one.expand({3}).copy_(iota(3)); }, "copy_", kInternal);
  expect_overlap_error([&] { one.expand({3}).uniform_(); }, "uniform_", kInternal);
  Tensor col = iota(3).view({3, 1});
  expect_overlap_error([&] { col.expand({3, 4}).mul_(iota(4)); }, "mul_", kInternal);
  EXPECT_EQ(values(one.cpu()), std::vector<double>({5}));
  EXPECT_EQ(values(col.cpu()), std::vector<double>({0, 1, 2}));
  // fill_ and zero_ write one value everywhere: allowed, as in PyTorch.
  one.expand({4}).fill_(7);
  EXPECT_EQ(values(one.cpu()), std::vector<double>({7}));
  col.expand({3, 2}).zero_();
  EXPECT_EQ(values(col.cpu()), std::vector<double>({0, 0, 0}));
}

TEST_P(MemoryOverlap, LayoutsWithHolesCopyTheSourceValues) {
  // Rows of 4 with 3 columns copied one column left and one right: each layout has holes, so
  // it is not analysed; the copy must still see the source as it was (never an overlapping
  // memcpy).
  Tensor t = iota(12).view({3, 4});
  t.slice(1, 0, 3).copy_(t.slice(1, 1, 4));
  EXPECT_EQ(values(t.cpu()), std::vector<double>({1, 2, 3, 3, 5, 6, 7, 7, 9, 10, 11, 11}));
  Tensor u = iota(12).view({3, 4});
  u.slice(1, 1, 4).copy_(u.slice(1, 0, 3));
  EXPECT_EQ(values(u.cpu()), std::vector<double>({0, 0, 1, 2, 4, 4, 5, 6, 8, 8, 9, 10}));
}

INSTANTIATE_TEST_SUITE_P(Devices, MemoryOverlap, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return std::string(info.param); });

TEST(MemoryOverlapCpu, AliasingBlobsAreCompared) {
  // Two tensors over one buffer, made apart: compared by address, not by storage.
  float buf[6] = {0, 1, 2, 3, 4, 5};
  Tensor a = from_blob(buf + 1, {4});
  Tensor b = from_blob(buf, {4});
  expect_overlap_error([&] { a.add_(b); }, "add_", kPartial);
  expect_overlap_error([&] { a.copy_(b); }, "copy_", kPartial);
  EXPECT_EQ(std::vector<float>(buf, buf + 6), std::vector<float>({0, 1, 2, 3, 4, 5}));
  Tensor c = from_blob(buf + 4, {2});
  c.add_(from_blob(buf, {2}));
  EXPECT_EQ(std::vector<float>(buf, buf + 6), std::vector<float>({0, 1, 2, 3, 4, 6}));
}

TEST(MemoryOverlapCpu, DtypesAndScalars) {
  // An integer op with a scalar has one input: its own self, full overlap.
  Tensor i = arange(4, kInt64);
  i.add_(3).mul_(2);
  EXPECT_EQ(i.to_vector<int64_t>(), std::vector<int64_t>({6, 8, 10, 12}));
  Tensor k = arange(5, kInt32);
  expect_overlap_error([&] { k.slice(0, 1).add_(k.slice(0, 0, 4)); }, "add_", kPartial);
  EXPECT_EQ(k.to_vector<int>(), std::vector<int>({0, 1, 2, 3, 4}));
}

}  // namespace
