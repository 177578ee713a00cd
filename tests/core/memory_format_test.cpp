// Memory formats as PyTorch keeps them (torch.preserve_format): clone, to, the *_like factories
// and elementwise results keep a dense input's strides (transposed, permuted, channels-last),
// pack an input with gaps or repeats densely in its stride order, and take an explicit format
// (contiguous, channels_last) where one is asked for. Strides expected are PyTorch's; values
// are checked against the same op on a row-major copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/tensor_ops.h"
#include "wick/io/safetensors.h"
#include "wick/wick.h"

namespace wick {
namespace {

using Strides = std::vector<int64_t>;

class MemoryFormatTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda" && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device device() const { return Device(GetParam()); }
  // 0, 1, 2, ... in row-major order: every element distinct.
  Tensor iota(IntArrayRef sizes, Dtype dtype = kFloat32) const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return arange(n, TensorOptions(dtype).device(device())).view(sizes);
  }
};

Strides strides(const Tensor& t) { return t.strides().vec(); }
std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

// got holds want's values (in row-major order, whatever the layouts).
void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.sizes().equals(want.sizes())) << what;
  EXPECT_EQ(values(got), values(want)) << what;
}

// The layouts every op below is tried on, with the strides PyTorch gives their clone.
struct Layout {
  std::string name;
  Tensor t;
  Strides preserved;
};

std::vector<Layout> layouts(Device d) {
  auto iota = [&](IntArrayRef sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return arange(n, TensorOptions(kFloat32).device(d)).view(sizes);
  };
  std::vector<Layout> v;
  v.push_back({"contiguous", iota({3, 4}), {4, 1}});
  v.push_back({"transposed", iota({3, 4}).t(), {1, 4}});
  v.push_back({"permuted 3-D", iota({2, 3, 4}).permute({2, 0, 1}), {1, 12, 4}});
  // NCHW sizes, NHWC memory.
  v.push_back({"channels last", iota({2, 4, 5, 3}).permute({0, 3, 1, 2}), {60, 1, 15, 3}});
  v.push_back({"permuted 4-D", iota({2, 3, 4, 5}).permute({3, 1, 0, 2}), {1, 20, 60, 5}});
  // Gaps: packed densely, in the same order.
  v.push_back({"sliced with a step", iota({3, 4}).slice(1, 0, 4, 2), {2, 1}});
  v.push_back({"transposed with gaps", iota({4, 6}).slice(1, 0, 6, 2).t(), {1, 3}});
  v.push_back({"3-D gaps", iota({2, 3, 8}).slice(2, 0, 8, 2).permute({1, 2, 0}), {4, 1, 12}});
  // Repeats: an expanded dim stays where it is.
  v.push_back({"expanded column", iota({3, 1}).expand({3, 4}), {4, 1}});
  v.push_back({"expanded row", iota({4}).expand({3, 4}), {4, 1}});
  v.push_back({"expanded transposed", iota({4, 3}).t().unsqueeze(0).expand({2, 3, 4}), {12, 1, 3}});
  // Size-1 dims keep whatever stride a dense tensor has on them.
  v.push_back({"size-1 dims", iota({3, 4}).t().unsqueeze(1), {1, 12, 4}});
  v.push_back({"one element", iota({1, 1}).t(), {1, 1}});
  v.push_back({"0-d", iota({1}).view({}), {}});
  v.push_back({"empty transposed", iota({0, 3}).t(), {1, 3}});
  return v;
}

TEST_P(MemoryFormatTest, CloneKeepsDenseLayoutsAndPacksOthersInStrideOrder) {
  for (const Layout& l : layouts(device())) {
    Tensor c = l.t.clone();
    EXPECT_EQ(strides(c), l.preserved) << l.name;
    EXPECT_EQ(c.storage_offset(), 0) << l.name;
    expect_same_values(c, l.t, l.name);
    EXPECT_EQ(c.device(), l.t.device()) << l.name;
    // The free function and an explicit Preserve agree.
    EXPECT_EQ(strides(wick::clone(l.t)), l.preserved) << l.name;
    EXPECT_EQ(strides(l.t.clone(MemoryFormat::Preserve)), l.preserved) << l.name;
    // Contiguous asked for: row-major.
    Tensor r = l.t.clone(MemoryFormat::Contiguous);
    EXPECT_TRUE(r.is_contiguous()) << l.name;
    expect_same_values(r, l.t, l.name);
  }
  // The copy owns its memory: writing it leaves the source as it was.
  Tensor x = iota({3, 4});
  Tensor c = x.t().clone();
  c.fill_(-1);
  EXPECT_EQ(values(x), values(iota({3, 4})));
}

TEST_P(MemoryFormatTest, PyTorchExamples) {
  Tensor x = randn({3, 4}, device());
  EXPECT_EQ(strides(x.t().clone()), (Strides{1, 4}));
  EXPECT_FALSE(x.t().clone().is_contiguous());
  EXPECT_EQ(strides(x.t().to(kFloat64)), (Strides{1, 4}));
  EXPECT_EQ(strides(empty_like(x.t())), (Strides{1, 4}));
  EXPECT_EQ(strides(x.t().contiguous()), (Strides{3, 1}));
  EXPECT_EQ(strides(x.slice(1, 0, 4, 2).clone()), (Strides{2, 1}));
  EXPECT_EQ(strides(randn({3, 1}, device()).expand({3, 4}).clone()), (Strides{4, 1}));
  // The documented infer_dense_strides case: sizes (6, 5, 4, 3, 2), strides (6, 0, 120, 0, 1).
  Tensor base = zeros({4 * 120}, device());
  Tensor odd = detail::make_view(base, {6, 5, 4, 3, 2}, {6, 0, 120, 0, 1}, 0);
  EXPECT_EQ(strides(odd.clone()), (Strides{6, 36, 180, 2, 1}));
}

TEST_P(MemoryFormatTest, ToKeepsLayout) {
  for (const Layout& l : layouts(device())) {
    Tensor d = l.t.to(kFloat64);
    EXPECT_EQ(d.dtype(), kFloat64) << l.name;
    EXPECT_EQ(strides(d), l.preserved) << l.name;
    expect_same_values(d, l.t, l.name);
    Tensor h = l.t.to(kFloat16);
    EXPECT_EQ(strides(h), l.preserved) << l.name;
    Tensor i = l.t.to(kInt64);
    EXPECT_EQ(strides(i), l.preserved) << l.name;
    expect_same_values(i, l.t, l.name);
    // copy=true on the same device and dtype copies, keeping the layout.
    Tensor same = l.t.to(l.t.device(), l.t.dtype(), false, true);
    if (l.t.numel() > 0) {
      EXPECT_NE(same.data_ptr(), l.t.data_ptr()) << l.name;
    }
    EXPECT_EQ(strides(same), l.preserved) << l.name;
    // Across devices.
    Tensor c = l.t.to(Device(kCPU), false, true);
    EXPECT_EQ(strides(c), l.preserved) << l.name;
    expect_same_values(c, l.t, l.name);
    if (device().is_cuda()) {
      Tensor back = c.to(device());
      EXPECT_EQ(strides(back), l.preserved) << l.name;
      expect_same_values(back, l.t, l.name);
      // Pinned copies keep a dense tensor's strides (c is dense), and move as they are.
      Tensor pinned = c.pin_memory();
      EXPECT_TRUE(pinned.is_pinned() || c.numel() == 0) << l.name;
      EXPECT_EQ(strides(pinned), strides(c)) << l.name;
      expect_same_values(pinned, l.t, l.name);
      Tensor up = pinned.to(device(), /*non_blocking=*/true);
      cuda::synchronize();
      EXPECT_EQ(strides(up), strides(c)) << l.name;
      expect_same_values(up, l.t, l.name);
    }
    Tensor r = l.t.to(kFloat64, false, false, MemoryFormat::Contiguous);
    EXPECT_TRUE(r.is_contiguous()) << l.name;
    expect_same_values(r, l.t, l.name);
  }
}

TEST_P(MemoryFormatTest, ToWithAFormatAliasesWhenTheStridesSuggestIt) {
  Tensor x = iota({3, 4});
  // Nothing changes: the same tensor, even for a transposed one asked to be Contiguous
  // (PyTorch's to() compares with the format the strides suggest, row-major for a 2-D tensor).
  EXPECT_TRUE(x.to(kFloat32).is_same(x));
  EXPECT_TRUE(x.t().to(kFloat32, false, false, MemoryFormat::Contiguous).data_ptr() == x.data_ptr());
  Tensor nchw = iota({2, 3, 4, 5});
  Tensor cl = nchw.to(kFloat32, false, false, MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides(cl), (Strides{60, 1, 15, 3}));
  expect_same_values(cl, nchw, "to channels_last");
  EXPECT_TRUE(cl.to(kFloat32, false, false, MemoryFormat::ChannelsLast).is_same(cl));
  Tensor back = cl.to(kFloat32, false, false, MemoryFormat::Contiguous);
  EXPECT_TRUE(back.is_contiguous());
  expect_same_values(back, nchw, "back to contiguous");
}

TEST_P(MemoryFormatTest, LikeFactoriesKeepLayout) {
  for (const Layout& l : layouts(device())) {
    const int64_t n = l.t.numel();
    Tensor e = empty_like(l.t);
    EXPECT_EQ(strides(e), l.preserved) << l.name;
    EXPECT_EQ(e.dtype(), l.t.dtype()) << l.name;
    EXPECT_EQ(e.device(), l.t.device()) << l.name;
    Tensor z = zeros_like(l.t);
    EXPECT_EQ(strides(z), l.preserved) << l.name;
    EXPECT_EQ(values(z), std::vector<double>(size_t(n), 0.0)) << l.name;
    Tensor o = ones_like(l.t, kFloat64);
    EXPECT_EQ(o.dtype(), kFloat64) << l.name;
    EXPECT_EQ(strides(o), l.preserved) << l.name;
    EXPECT_EQ(values(o), std::vector<double>(size_t(n), 1.0)) << l.name;
    Tensor f = full_like(l.t, 2.5);
    EXPECT_EQ(strides(f), l.preserved) << l.name;
    EXPECT_EQ(values(f), std::vector<double>(size_t(n), 2.5)) << l.name;
    EXPECT_EQ(strides(rand_like(l.t)), l.preserved) << l.name;
    EXPECT_EQ(strides(randn_like(l.t)), l.preserved) << l.name;
    Tensor k = randint_like(l.t, 3, 7);
    EXPECT_EQ(strides(k), l.preserved) << l.name;
    for (double v : values(k)) EXPECT_TRUE(v >= 3 && v < 7) << l.name;
    // Explicit formats.
    EXPECT_TRUE(empty_like(l.t, {}, MemoryFormat::Contiguous).is_contiguous()) << l.name;
    EXPECT_TRUE(zeros_like(l.t, {}, MemoryFormat::Contiguous).is_contiguous()) << l.name;
    EXPECT_TRUE(rand_like(l.t, {}, MemoryFormat::Contiguous).is_contiguous()) << l.name;
  }
  Tensor x = iota({2, 3, 4, 5});
  EXPECT_EQ(strides(empty_like(x, {}, MemoryFormat::ChannelsLast)), (Strides{60, 1, 15, 3}));
  EXPECT_EQ(strides(ones_like(x, {}, MemoryFormat::ChannelsLast)), (Strides{60, 1, 15, 3}));
  EXPECT_EQ(strides(empty_like(iota({2, 3, 4, 5, 6}), {}, MemoryFormat::ChannelsLast3d)),
            (Strides{360, 1, 90, 18, 3}));
  EXPECT_THROW(empty_like(iota({3, 4}), {}, MemoryFormat::ChannelsLast), ValueError);
  EXPECT_THROW(iota({3, 4}).clone(MemoryFormat::ChannelsLast3d), ValueError);
  // requires_grad through the options, and its dtype check, name the op.
  EXPECT_TRUE(zeros_like(iota({3, 4}).t(), TensorOptions().requires_grad(true)).requires_grad());
  try {
    (void)zeros_like(x, TensorOptions(kInt64).requires_grad(true));
    ADD_FAILURE() << "no error";
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[zeros_like] ", 0), 0u) << e.what();
  }
}

TEST_P(MemoryFormatTest, RandLikeDrawsInAddressOrder) {
  // A transposed tensor's memory is a row-major [3, 4]: rand_like fills it as rand fills that.
  Tensor x = iota({3, 4}).t();
  manual_seed(11);
  Tensor a = rand_like(x);
  manual_seed(11);
  Tensor b = rand({3, 4}, device());
  expect_same_values(a, b.t(), "rand_like");
  manual_seed(12);
  Tensor n = randn_like(x, kFloat64);
  manual_seed(12);
  Tensor m = randn({3, 4}, TensorOptions(kFloat64).device(device()));
  expect_same_values(n, m.t(), "randn_like");
  manual_seed(13);
  Tensor k = randint_like(x, 100);
  manual_seed(13);
  Tensor j = randint(100, {3, 4}, TensorOptions(kFloat32).device(device()));
  expect_same_values(k, j.t(), "randint_like");
}

TEST_P(MemoryFormatTest, ContiguousAndIsContiguousWithFormats) {
  Tensor x = iota({2, 3, 4, 5});
  Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides(cl), (Strides{60, 1, 15, 3}));
  expect_same_values(cl, x, "contiguous(channels_last)");
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_FALSE(cl.is_contiguous());
  EXPECT_FALSE(x.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(cl.contiguous(MemoryFormat::ChannelsLast).is_same(cl));
  Tensor back = cl.contiguous();
  EXPECT_TRUE(back.is_contiguous());
  expect_same_values(back, x, "contiguous()");
  EXPECT_TRUE(x.contiguous().is_same(x));
  // Sizes of 1 don't count: [2, 1, 4, 5] row-major is channels-last too.
  EXPECT_TRUE(iota({2, 1, 4, 5}).is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_FALSE(iota({3, 4}).is_contiguous(MemoryFormat::ChannelsLast));
  Tensor v = iota({2, 3, 4, 5, 6}).contiguous(MemoryFormat::ChannelsLast3d);
  EXPECT_EQ(strides(v), (Strides{360, 1, 90, 18, 3}));
  EXPECT_TRUE(v.is_contiguous(MemoryFormat::ChannelsLast3d));
  // Preserve: as PyTorch, the row-major answer, and contiguous() refuses it unless already so.
  EXPECT_TRUE(x.is_contiguous(MemoryFormat::Preserve));
  EXPECT_TRUE(x.contiguous(MemoryFormat::Preserve).is_same(x));
  EXPECT_THROW(iota({3, 4}).t().contiguous(MemoryFormat::Preserve), ValueError);
  // reshape copies row-major when no view fits.
  Tensor r = iota({3, 4}).t().reshape({12});
  EXPECT_EQ(strides(r), (Strides{1}));
  EXPECT_EQ(values(r), values(iota({3, 4}).t().contiguous().view({12})));
  Tensor r2 = iota({2, 3, 4}).permute({2, 0, 1}).reshape({8, 3});
  EXPECT_EQ(strides(r2), (Strides{3, 1}));
  EXPECT_EQ(values(r2), values(iota({2, 3, 4}).permute({2, 0, 1}).contiguous().view({8, 3})));
}

TEST_P(MemoryFormatTest, UnaryResultsFollowTheInputLayout) {
  for (const Layout& l : layouts(device())) {
    // A dense input's strides; anything else row-major unless its strides order the dims
    // (gaps keep the order, as TensorIterator's output does).
    Tensor y = wick::neg(l.t);
    expect_same_values(y, wick::neg(l.t.contiguous()), l.name);
    Tensor e = wick::exp(l.t / 100);
    expect_same_values(e, wick::exp(l.t.contiguous() / 100), l.name);
    Tensor r = wick::relu(l.t - 3);
    expect_same_values(r, wick::relu(l.t.contiguous() - 3), l.name);
    Tensor g = l.t > 2;
    expect_same_values(g, l.t.contiguous() > 2, l.name);
    if (l.t.numel() > 0) {
      EXPECT_EQ(strides(y), strides(l.t.clone())) << l.name;
      EXPECT_EQ(strides(e), strides(l.t.clone())) << l.name;
      EXPECT_EQ(strides(r), strides(l.t.clone())) << l.name;
      EXPECT_EQ(strides(g), strides(l.t.clone())) << l.name;
    }
  }
  Tensor x = randn({3, 4}, device());
  EXPECT_EQ(strides(wick::relu(x.t())), (Strides{1, 4}));
  EXPECT_FALSE(wick::relu(x.t()).is_contiguous());
  EXPECT_EQ(strides(wick::sigmoid(x.t().to(kFloat64))), (Strides{1, 4}));
  // An integer input made float keeps the layout too.
  EXPECT_EQ(strides(wick::sqrt(iota({3, 4}, kInt64).t())), (Strides{1, 4}));
  // An empty tensor's result is row-major (every empty tensor counts as contiguous).
  EXPECT_TRUE(wick::neg(iota({0, 3}).t()).is_contiguous());
}

TEST_P(MemoryFormatTest, BinaryResultsFollowTheFirstOrderingInput) {
  Tensor a = iota({3, 4}), b = iota({3, 4}) * 10;
  Tensor at = iota({4, 3}).t(), bt = (iota({4, 3}) * 10).t();  // [3, 4] in column-major memory
  auto check = [&](const Tensor& got, const Tensor& want, Strides st, const char* what) {
    EXPECT_EQ(strides(got), st) << what;
    expect_same_values(got, want, what);
  };
  check(at + bt, at.contiguous() + bt.contiguous(), {1, 3}, "both transposed");
  check(at * bt, at.contiguous() * bt.contiguous(), {1, 3}, "both transposed, mul");
  // Mixed: the first input decides.
  check(a + bt, a + bt.contiguous(), {4, 1}, "row-major first");
  check(at + b, at.contiguous() + b, {1, 3}, "transposed first");
  check(at - b, at.contiguous() - b, {1, 3}, "transposed first, sub");
  // A broadcast operand can't order the dims: the other one does.
  Tensor row = iota({4}) + 100;
  check(row + at, row + at.contiguous(), {1, 3}, "broadcast row first");
  check(at + row, at.contiguous() + row, {1, 3}, "broadcast row second");
  Tensor col = iota({3, 1}) + 100;
  check(at / (col + 1), at.contiguous() / (col + 1), {1, 3}, "broadcast column");
  // Both broadcast: row-major.
  check(row + col, row.contiguous() + col, {4, 1}, "outer sum");
  // Promotion: float32 and float64, the layout of the first.
  Tensor bt64 = bt.to(kFloat64);
  Tensor mixed = at + bt64;
  EXPECT_EQ(mixed.dtype(), kFloat64);
  check(mixed, at.contiguous().to(kFloat64) + bt64.contiguous(), {1, 3}, "promoted");
  // With a scalar.
  check(at * 2, at.contiguous() * 2, {1, 3}, "scalar");
  check(2 - at, 2 - at.contiguous(), {1, 3}, "scalar first");
  // Comparisons and where.
  check(at < bt, at.contiguous() < bt.contiguous(), {1, 3}, "lt");
  Tensor cond = at > 5;
  check(wick::where(cond, at, bt), wick::where(cond.contiguous(), at.contiguous(), bt.contiguous()), {1, 3},
        "where");
  // masked_fill fills a row-major copy, as PyTorch's.
  Tensor filled = wick::masked_fill(at, cond, -1.0);
  EXPECT_TRUE(filled.is_contiguous());
  expect_same_values(filled, wick::masked_fill(at.contiguous(), cond.contiguous(), -1.0), "masked_fill");
  // Channels-last operands give a channels-last result.
  Tensor x = iota({2, 3, 4, 5}), y = iota({2, 3, 4, 5}) + 1;
  Tensor xc = x.contiguous(MemoryFormat::ChannelsLast), yc = y.contiguous(MemoryFormat::ChannelsLast);
  check(xc + yc, x + y, {60, 1, 15, 3}, "channels last");
  check(xc * 3, x * 3, {60, 1, 15, 3}, "channels last with a scalar");
  Tensor bias = iota({3, 1, 1});
  check(xc + bias, x + bias, {60, 1, 15, 3}, "channels last with a broadcast bias");
  // Permuted 3-D, both alike.
  Tensor p = iota({2, 3, 4}).permute({2, 0, 1}), q = (iota({2, 3, 4}) + 7).permute({2, 0, 1});
  check(p * q, p.contiguous() * q.contiguous(), {1, 12, 4}, "permuted 3-D");
  // Gaps in both: dense in their order.
  Tensor g1 = iota({4, 6}).slice(1, 0, 6, 2).t(), g2 = iota({4, 6}).slice(1, 1, 6, 2).t();
  check(g1 + g2, g1.contiguous() + g2.contiguous(), {1, 3}, "gaps");
  // In place and out= keep the given tensor.
  Tensor dst = bt.clone();
  dst.add_(a);
  EXPECT_EQ(strides(dst), (Strides{1, 3}));
  expect_same_values(dst, bt + a, "add_");
}

TEST_P(MemoryFormatTest, IndexingResultsStayRowMajor) {
  // gather and index_select make row-major results, as PyTorch's.
  Tensor x = iota({4, 3}).t();
  Tensor idx = tensor({0, 2}, TensorOptions(kInt64).device(device()));
  Tensor s = index_select(x, 1, idx);
  EXPECT_TRUE(s.is_contiguous());
  expect_same_values(s, index_select(x.contiguous(), 1, idx), "index_select");
  Tensor gi = zeros({3, 4}, TensorOptions(kInt64).device(device())).t();
  Tensor g = gather(x.t(), 0, gi);
  EXPECT_TRUE(g.is_contiguous());
  expect_same_values(g, gather(x.t().contiguous(), 0, gi.contiguous()), "gather");
  Tensor classes = wick::remainder(iota({4, 3}, kInt64), 5).t();
  Tensor oh = one_hot(classes, 5);
  EXPECT_TRUE(oh.is_contiguous());
  expect_same_values(oh, one_hot(classes.contiguous(), 5), "one_hot");
}

TEST_P(MemoryFormatTest, GradientsFollowTheLeafLayout) {
  // A dense leaf's gradient has its strides (PyTorch's AccumulateGrad layout contract).
  Tensor leaf = iota({4, 3}).t().detach().requires_grad_();  // strides (1, 3)
  (leaf * leaf).sum().backward();
  ASSERT_TRUE(leaf.grad().defined());
  EXPECT_EQ(strides(leaf.grad()), (Strides{1, 3}));
  expect_same_values(leaf.grad(), iota({4, 3}).t() * 2, "transposed leaf");
  // A gradient made in another layout is copied into the leaf's.
  Tensor leaf2 = iota({4, 3}).t().detach().requires_grad_();
  (leaf2.contiguous() * 3).sum().backward();
  EXPECT_EQ(strides(leaf2.grad()), (Strides{1, 3}));
  EXPECT_EQ(values(leaf2.grad()), std::vector<double>(12, 3.0));
  // A row-major leaf keeps a row-major gradient whatever the backward made.
  Tensor w = iota({3, 4}).detach().requires_grad_();
  (w.t() * 2).sum().backward();
  EXPECT_TRUE(w.grad().is_contiguous());
  EXPECT_EQ(values(w.grad()), std::vector<double>(12, 2.0));
  // A leaf with gaps: row-major.
  Tensor gappy = iota({3, 8}).slice(1, 0, 8, 2).detach().requires_grad_();
  (gappy * 2).sum().backward();
  EXPECT_TRUE(gappy.grad().is_contiguous());
  EXPECT_EQ(values(gappy.grad()), std::vector<double>(12, 2.0));
  // clone and to of a tensor that needs grad keep the layout, and pass the gradient back.
  Tensor x = iota({4, 3}).t().detach().requires_grad_();
  Tensor c = x.clone();
  EXPECT_EQ(strides(c), (Strides{1, 3}));
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(strides(d), (Strides{1, 3}));
  (c.sum() + d.sum() * 2).backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>(12, 3.0));
  EXPECT_EQ(strides(x.grad()), (Strides{1, 3}));
  // retain_grad keeps a row-major copy, as PyTorch's.
  Tensor z = iota({4, 3}).detach().requires_grad_();
  Tensor mid = z.t() * 1;
  mid.retain_grad();
  (mid * 5).sum().backward();
  EXPECT_TRUE(mid.grad().is_contiguous());
  EXPECT_EQ(values(mid.grad()), std::vector<double>(12, 5.0));
}

TEST_P(MemoryFormatTest, SaveLoadRoundTripsAPreservedCopy) {
  Tensor x = iota({3, 4}).t().clone();
  ASSERT_FALSE(x.is_contiguous());
  const std::string path = ::testing::TempDir() + "memory_format_" + GetParam() + ".safetensors";
  save(TensorMap{{"x", x}, {"cl", iota({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast)}}, path);
  TensorMap m = load(path, device());
  std::remove(path.c_str());
  expect_same_values(m.at("x"), x, "transposed copy");
  expect_same_values(m.at("cl"), iota({2, 3, 4, 5}), "channels last");
}

// A format the tensor's rank cannot take: ValueError naming the op called, and the input as
// it was (values, strides, no history).
TEST_P(MemoryFormatTest, BadFormatNamesTheOpAndChangesNothing) {
  Tensor x = iota({3, 4}).t();
  const Strides before = strides(x);
  const std::vector<double> vals = values(x);
  auto expect_error = [&](const char* op, const auto& call) {
    try {
      (void)call();
      ADD_FAILURE() << op << ": no error";
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("[") + op + "] ", 0), 0u) << e.what();
    }
    EXPECT_EQ(strides(x), before) << op;
    EXPECT_EQ(values(x), vals) << op;
  };
  expect_error("clone", [&] { return x.clone(MemoryFormat::ChannelsLast); });
  expect_error("contiguous", [&] { return x.contiguous(MemoryFormat::ChannelsLast3d); });
  expect_error("contiguous", [&] { return x.contiguous(MemoryFormat::Preserve); });
  expect_error("to", [&] { return x.to(kFloat64, false, false, MemoryFormat::ChannelsLast); });
  expect_error("empty_like", [&] { return empty_like(x, {}, MemoryFormat::ChannelsLast); });
  expect_error("zeros_like", [&] { return zeros_like(x, {}, MemoryFormat::ChannelsLast); });
  expect_error("ones_like", [&] { return ones_like(x, {}, MemoryFormat::ChannelsLast3d); });
  expect_error("full_like", [&] { return full_like(x, 2.0, {}, MemoryFormat::ChannelsLast); });
  expect_error("rand_like", [&] { return rand_like(x, {}, MemoryFormat::ChannelsLast); });
  expect_error("randn_like", [&] { return randn_like(x, {}, MemoryFormat::ChannelsLast); });
  expect_error("randint_like", [&] { return randint_like(x, 5, {}, MemoryFormat::ChannelsLast); });
  EXPECT_FALSE(x.is_contiguous(MemoryFormat::ChannelsLast));  // a question, never an error
}

INSTANTIATE_TEST_SUITE_P(Devices, MemoryFormatTest, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace wick
