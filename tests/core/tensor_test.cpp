// Tensor basics: factories, views, host access, moves and casts.
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>

#include "wick/wick.h"

using namespace wick;

static std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
static std::string str(IntArrayRef a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

TEST(Factories, ShapesDtypesValues) {
  auto a = ones({2, 3});
  EXPECT_EQ(str(a.sizes()), "[2, 3]");
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.device(), Device("cpu"));
  EXPECT_EQ(values(a), std::vector<double>(6, 1.0));
  EXPECT_EQ(values(zeros({4}, kInt32)), std::vector<double>(4, 0.0));
  EXPECT_EQ(zeros({4}, kInt32).dtype(), kInt32);
  EXPECT_EQ(full({2}, 3).dtype(), kInt64);  // the fill value decides, as torch.full
  EXPECT_EQ(full({2}, 3.5).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(values(full({2}, 3.5)), (std::vector<double>{3.5, 3.5}));
  EXPECT_EQ(values(arange(5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(values(arange(1, 2, 0.25)), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(1, 2, 0.25).dtype(), kFloat32);
  EXPECT_EQ(values(linspace(0, 1, 5)), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(values(eye(2, 3)), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(empty({0, 3}).numel(), 0);
  EXPECT_EQ(empty({}).dim(), 0);
  EXPECT_EQ(empty({}).numel(), 1);
}

TEST(Factories, TensorFromLists) {
  auto i = tensor({1, 2, 3});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(values(i), (std::vector<double>{1, 2, 3}));
  auto f = tensor({1., 2.});
  EXPECT_EQ(f.dtype(), kFloat32);
  auto b = tensor({true, false});
  EXPECT_EQ(b.dtype(), kBool);
  auto m = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(str(m.sizes()), "[2, 3]");
  EXPECT_EQ(values(m[1]), (std::vector<double>{4, 5, 6}));
  EXPECT_THROW(tensor({{1, 2}, {3}}), ValueError);
  // Large int64 values survive exactly.
  auto big = tensor({int64_t(9007199254740993)});
  EXPECT_EQ(big.item<int64_t>(), int64_t(9007199254740993));
}

TEST(Factories, LikeAndNewKeepDtypeAndDevice) {
  auto x_long = empty({2}, kInt64);
  EXPECT_EQ(zeros_like(x_long).dtype(), kInt64);
  EXPECT_EQ(ones_like(x_long, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(values(full_like(x_long, 7)), (std::vector<double>{7, 7}));
  auto x = empty({2});
  auto nf = x.new_full({3, 2}, 0.3);
  EXPECT_EQ(nf.dtype(), kFloat32);
  EXPECT_EQ(str(nf.sizes()), "[3, 2]");
  EXPECT_FLOAT_EQ(float(nf.to_vector<float>()[5]), 0.3f);
  auto nt = x_long.new_tensor({{1, 2, 3}});
  EXPECT_EQ(nt.dtype(), kInt64);
  EXPECT_EQ(str(nt.sizes()), "[1, 3]");
  EXPECT_EQ(x.new_tensor({1, 2}).dtype(), kFloat32);  // new_tensor keeps the source's dtype
  EXPECT_EQ(x.new_zeros({2, 2}).numel(), 4);
  EXPECT_EQ(values(x.new_ones({2})), (std::vector<double>{1, 1}));
}

TEST(Factories, DefaultDevice) {
  EXPECT_EQ(get_default_device(), Device("cpu"));
  set_default_device(Device("cpu"));
  EXPECT_TRUE(ones({1}).is_cpu());
}

TEST(HostAccess, FromBlobAliasesAndDataPtr) {
  float buf[6] = {0, 1, 2, 3, 4, 5};
  auto t = from_blob(buf, {2, 3}, kFloat32);
  EXPECT_EQ(t.data_ptr<float>(), buf);
  t.mul_(2);
  EXPECT_EQ(buf[5], 10.f);  // writes through
  buf[0] = 42;
  EXPECT_EQ(t[0][0].item<float>(), 42.f);
  float* p = t.data_ptr<float>();
  p[1] = -1;
  EXPECT_EQ(t.to_vector<float>()[1], -1.f);
}

TEST(HostAccess, AccessorAndItem) {
  auto t = arange(12).view({3, 4}).to(kFloat64);
  auto acc = t.accessor<double, 2>();
  EXPECT_EQ(acc[2][1], 9.0);
  acc[2][1] = -9;
  EXPECT_EQ(t[2][1].item<double>(), -9.0);
  auto tt = t.t();
  auto acct = tt.accessor<double, 2>();
  EXPECT_EQ(acct[1][2], -9.0);
  EXPECT_THROW((t.accessor<float, 2>()), TypeError);
  EXPECT_THROW((t.accessor<double, 1>()), ValueError);
  EXPECT_EQ(tensor({5}).item<int>(), 5);
  EXPECT_EQ(tensor({2.5}).sum().item<double>(), 2.5);
  EXPECT_TRUE(tensor({2.5}).item().is_floating_point());
}

TEST(Views, ShareStorageAndStrides) {
  auto a = arange(24).view({2, 3, 4});
  EXPECT_EQ(str(a.strides()), "[12, 4, 1]");
  auto p = a.permute({2, 0, 1});
  EXPECT_EQ(str(p.sizes()), "[4, 2, 3]");
  EXPECT_EQ(str(p.strides()), "[1, 12, 4]");
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_EQ(p[3][1][2].item<int64_t>(), 12 + 8 + 3);
  auto tr = a.transpose(0, 2);
  EXPECT_EQ(tr[1][2][0].item<int64_t>(), 9);
  auto u = a.unsqueeze(1);
  EXPECT_EQ(str(u.sizes()), "[2, 1, 3, 4]");
  EXPECT_EQ(str(u.squeeze().sizes()), "[2, 3, 4]");
  EXPECT_EQ(str(u.squeeze(1).sizes()), "[2, 3, 4]");
  EXPECT_EQ(str(u.squeeze(0).sizes()), "[2, 1, 3, 4]");
  EXPECT_EQ(str(a.flatten().sizes()), "[24]");
  EXPECT_EQ(str(a.flatten(1).sizes()), "[2, 12]");
  EXPECT_EQ(str(a.view({-1, 6}).sizes()), "[4, 6]");
  auto n = a.narrow(2, 1, 2);
  EXPECT_EQ(str(n.sizes()), "[2, 3, 2]");
  EXPECT_EQ(values(n[1][2]), (std::vector<double>{21, 22}));
  auto s = a.select(1, 2);
  EXPECT_EQ(values(s[0]), (std::vector<double>{8, 9, 10, 11}));
  auto sl = arange(10).slice(0, 1, 9, 3);
  EXPECT_EQ(values(sl), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(arange(10).slice(0, -3)), (std::vector<double>{7, 8, 9}));
  auto e = tensor({1, 2, 3}).expand({2, 3});
  EXPECT_EQ(str(e.strides()), "[0, 1]");
  EXPECT_EQ(values(e), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  // Views alias: a write through a view shows in the base.
  n.fill_(-1);
  EXPECT_EQ(a[0][0][1].item<int64_t>(), -1);
  EXPECT_EQ(a[0][0][3].item<int64_t>(), 3);
}

TEST(Views, ChunkSplitUnbind) {
  auto a = arange(10);
  auto c = a.chunk(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(values(c[2]), (std::vector<double>{8, 9}));
  auto s = a.split(4);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(values(s[1]), (std::vector<double>{4, 5, 6, 7}));
  auto sw = a.split(IntArrayRef{3, 7});
  EXPECT_EQ(sw[1].numel(), 7);
  EXPECT_THROW(a.split(IntArrayRef{3, 3}), ValueError);
  auto ub = arange(6).view({2, 3}).unbind(1);
  ASSERT_EQ(ub.size(), 3u);
  EXPECT_EQ(values(ub[2]), (std::vector<double>{2, 5}));
}

TEST(Views, ReshapeCopiesOnlyWhenNeeded) {
  auto a = arange(6).view({2, 3});
  auto r = a.reshape({3, 2});
  EXPECT_EQ(r.data_ptr(), a.data_ptr());
  auto t = a.t();
  EXPECT_THROW(t.view({6}), ValueError);
  auto rt = t.reshape({6});
  EXPECT_NE(rt.data_ptr(), a.data_ptr());
  EXPECT_EQ(values(rt), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // A view across size-1 dims and a sliced tensor that stays viewable.
  auto s = arange(24).view({2, 3, 4}).slice(2, 0, 4, 2);  // strides [12, 4, 2]
  EXPECT_EQ(values(s.reshape({6, 2})), values(s.contiguous().view({6, 2})));
}

TEST(MovesAndCasts, ToReturnsSelfWhenNothingChanges) {
  auto a = ones({2, 3});
  EXPECT_TRUE(a.to(kFloat32).is_same(a));
  EXPECT_TRUE(a.to("cpu").is_same(a));
  auto h = a.to(kFloat16);
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(a.dtype(), kFloat32);  // the original is unchanged
  EXPECT_EQ(values(tensor({1.7, 2.2, 255.9}).to(kUInt8).to(kInt64)), (std::vector<double>{1, 2, 255}));
  EXPECT_EQ(values(tensor({-1.7, 2.9}).to(kInt32)), (std::vector<double>{-1, 2}));  // toward zero
  EXPECT_EQ(values(tensor({0.0, 0.5, -2.0}).to(kBool)), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(tensor({1.0}).half().to_double()), (std::vector<double>{1.0}));
  auto c = a.clone();
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_FALSE(a.to(kFloat32, false, /*copy=*/true).is_same(a));
}

TEST(MovesAndCasts, CudaWithoutCudaIsADeviceError) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  auto a = ones({2, 3});
  try {
    a.to("cuda");
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    std::string m = e.what();
    EXPECT_EQ(m[0], '[');
    EXPECT_NE(m.find("CUDA"), std::string::npos) << m;
  }
  EXPECT_TRUE(a.is_cpu());  // the original stays where it was
}

TEST(InPlace, VersionCounterCountsWrites) {
  auto a = zeros({3});
  auto v = a.view({3});
  uint32_t v0 = a._version();
  a.add_(1);
  v.mul_(2);
  a.fill_(3);
  a.copy_(ones({3}));
  EXPECT_EQ(a._version(), v0 + 4);
  EXPECT_EQ(v._version(), a._version());  // views share the counter
  auto b = a + 1;                          // out-of-place ops don't bump it
  EXPECT_EQ(a._version(), v0 + 4);
  EXPECT_EQ(b._version(), 0u);
}

TEST(InPlace, CopyBroadcastsAndCasts) {
  auto a = zeros({2, 3}, kFloat64);
  a.copy_(tensor({1, 2, 3}));
  EXPECT_EQ(values(a), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  auto t = zeros({3, 2}, kInt32).t();
  t.copy_(arange(6).view({2, 3}));
  EXPECT_EQ(values(t), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(a.copy_(ones({4})), ValueError);
}

// Copies past the size where the CPU copy streams its stores around the caches: every byte
// lands, whatever the alignment of either end and whatever the byte count's remainder.
template <class T>
void check_large_copy(int64_t n, Dtype dtype) {
  std::vector<T> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[size_t(i)] = T(uint32_t(i) * 2654435761u % 251u + 1);
  const Tensor src = from_blob(host.data(), {n}, dtype);
  auto first_mismatch = [&](const std::vector<T>& got, int64_t at, int64_t from, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      if (got[size_t(at + i)] != host[size_t(from + i)]) return i;
    return int64_t(-1);
  };
  {
    const auto a = src.clone().template to_vector<T>();  // a new destination
    EXPECT_EQ(first_mismatch(a, 0, 0, n), -1);
  }
  // Destination 1 element and source 3 elements past an aligned start; 8 untouched elements
  // around the written range stay zero.
  auto big = zeros({n + 8}, dtype);
  big.narrow(0, 1, n - 3).copy_(src.narrow(0, 3, n - 3));
  const auto v = big.template to_vector<T>();
  EXPECT_EQ(v[0], T(0));
  EXPECT_EQ(first_mismatch(v, 1, 3, n - 3), -1);
  for (int64_t i = n - 2; i < n + 8; ++i) EXPECT_EQ(v[size_t(i)], T(0)) << i;
}

TEST(InPlace, LargeCopiesKeepEveryByte) {
  check_large_copy<int32_t>((int64_t(17) << 20) + 3, kInt32);  // 68 MB
  check_large_copy<uint8_t>((int64_t(64) << 20) + 37, kUInt8);  // a byte count that is no multiple of 16
}
