// Tensor::index / index_put_ with wick::indexing's Slice, None, Ellipsis, integers, bools,
// integer and bool tensors (PyTorch's rules for views, advanced indices and their placement),
// masked_select and nonzero: values against loops over the host data, errors, and a CUDA case
// compared to the CPU.
#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::indexing;
using wick::testing::error_of;
using wick::testing::test_devices;

namespace {

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).to_vector<double>(); }
std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

// x[i][j][k] = 12 i + 4 j + k (float64 [2, 3, 4]): every value names its position.
Tensor positions(Device d = Device(kCPU)) { return arange(24, TensorOptions(kFloat64)).view({2, 3, 4}).to(d); }
double at(int64_t i, int64_t j, int64_t k) { return double(12 * i + 4 * j + k); }

TEST(TensorIndex, BasicIndicesGiveViews) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = positions(d);
    Tensor y = x.index({Slice(), None, Ellipsis, 1});  // x[:, None, ..., 1]
    EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 1, 3}));
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(at(i, j, 1));
    EXPECT_EQ(values(y), want);
    EXPECT_EQ(values(x.index({"...", 1})), want);  // "..." spells Ellipsis
    EXPECT_EQ(values(x.index({-1, 0})), (std::vector<double>{12, 13, 14, 15}));
    // x[1:, ::2, -3:]
    Tensor z = x.index({Slice(1, None), Slice(None, None, 2), Slice(-3, None)});
    EXPECT_EQ(shape(z), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(values(z), (std::vector<double>{at(1, 0, 1), at(1, 0, 2), at(1, 0, 3), at(1, 2, 1), at(1, 2, 2), at(1, 2, 3)}));
    // out-of-range slice bounds clamp, as Python's
    EXPECT_EQ(shape(x.index({Slice(1, 100)})), (std::vector<int64_t>{1, 3, 4}));
    EXPECT_EQ(shape(x.index({true})), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(shape(x.index({false})), (std::vector<int64_t>{0, 2, 3, 4}));
    EXPECT_EQ(shape(x.index({})), (std::vector<int64_t>{2, 3, 4}));
    // a view: writing through it writes x
    y.fill_(-1);
    EXPECT_EQ(values(x.index({0, 2, 1})), (std::vector<double>{-1}));
    EXPECT_EQ(values(x.index({0, 2, 2})), (std::vector<double>{at(0, 2, 2)}));
  }
}

TEST(TensorIndex, AdvancedIndicesGatherInPyTorchsPlaces) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = positions(d);
    Tensor idx = tensor({2, 0, -1});  // int64, a negative one counting from the end
    // adjacent (one index): its dims stand in its place, x[:, idx] -> [2, 3, 4]
    Tensor a = x.index({Slice(), idx});
    EXPECT_EQ(shape(a), (std::vector<int64_t>{2, 3, 4}));
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j : {2, 0, 2})
        for (int k = 0; k < 4; ++k) want.push_back(at(i, j, k));
    EXPECT_EQ(values(a), want);
    // two adjacent indices, broadcast together: x[:, [[1], [2]], [0, 3]] -> [2, 2, 2]
    Tensor b = x.index({Slice(), tensor({{1}, {2}}), tensor({0, 3}).to(kInt32)});
    EXPECT_EQ(shape(b), (std::vector<int64_t>{2, 2, 2}));
    want.clear();
    for (int i = 0; i < 2; ++i)
      for (int j : {1, 2})
        for (int k : {0, 3}) want.push_back(at(i, j, k));
    EXPECT_EQ(values(b), want);
    // separated indices go first: x[[1, 0], :, [3, 1]] -> [2, 3]
    Tensor c = x.index({tensor({1, 0}), Slice(), tensor({3, 1})});
    EXPECT_EQ(shape(c), (std::vector<int64_t>{2, 3}));
    want.clear();
    for (auto [i, k] : {std::pair{1, 3}, std::pair{0, 1}})
      for (int j = 0; j < 3; ++j) want.push_back(at(i, j, k));
    EXPECT_EQ(values(c), want);
    // with a slice and None before the advanced index: x[None, 1:, 1, [0, 2]] -> [1, 1, 2]
    Tensor e = x.index({None, Slice(1, None), 1, tensor({0, 2})});
    EXPECT_EQ(shape(e), (std::vector<int64_t>{1, 1, 2}));
    EXPECT_EQ(values(e), (std::vector<double>{at(1, 1, 0), at(1, 1, 2)}));
    // a 0-d integer tensor indexes like an integer (as a copy)
    EXPECT_EQ(values(x.index({full({}, 1, kInt64), 2, 3})), (std::vector<double>{at(1, 2, 3)}));
    // a copy: writing the result leaves x as it was
    a.fill_(0);
    EXPECT_EQ(values(x.index({0, 0, 0})), (std::vector<double>{0}));
    EXPECT_EQ(values(x.index({1, 2, 3})), (std::vector<double>{23}));
  }
}

TEST(TensorIndex, BoolMasks) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = positions(d);
    Tensor m = x.index({Slice(), Slice(), 0}) > 5;  // [2, 3]: true at (0, 2), (1, *)
    Tensor r = x.index({m});
    EXPECT_EQ(shape(r), (std::vector<int64_t>{4, 4}));
    std::vector<double> want;
    for (auto [i, j] : {std::pair{0, 2}, std::pair{1, 0}, std::pair{1, 1}, std::pair{1, 2}})
      for (int k = 0; k < 4; ++k) want.push_back(at(i, j, k));
    EXPECT_EQ(values(r), want);
    // a mask over the last dim after a slice, and a CPU mask for a tensor elsewhere
    Tensor mk = tensor({true, false, false, true});
    Tensor s = x.index({Ellipsis, mk});
    EXPECT_EQ(shape(s), (std::vector<int64_t>{2, 3, 2}));
    EXPECT_EQ(values(s.index({1, 2})), (std::vector<double>{at(1, 2, 0), at(1, 2, 3)}));
    // a mask covering every dim gives the selected elements; an all-false one none
    EXPECT_EQ(values(x.index({x > 20})), (std::vector<double>{21, 22, 23}));
    EXPECT_EQ(shape(x.index({x > 100})), (std::vector<int64_t>{0}));
    // a 0-d bool tensor adds a dim, as a bool does
    EXPECT_EQ(shape(x.index({full({}, true, kBool)})), (std::vector<int64_t>{1, 2, 3, 4}));
  }
}

TEST(TensorIndex, NonContiguousSourcesAndIndices) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = positions(d).transpose(0, 2);  // [4, 3, 2], strided
    Tensor xc = x.contiguous();
    Tensor idx = tensor({{3, 0, 1, 1}}).t().to(d);  // [4, 1], non-contiguous
    for (const std::vector<TensorIndex>& list :
         {std::vector<TensorIndex>{idx}, {Slice(), tensor({2, 0})}, {idx, Slice(), tensor({1, 0})},
          {Slice(None, None, 2), x.index({0, Slice(), 0}) > 3}}) {
      EXPECT_EQ(values(x.index(list)), values(xc.index(list)));
      EXPECT_EQ(shape(x.index(list)), shape(xc.index(list)));
    }
  }
}

TEST(TensorIndex, IndexPut) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor y = zeros({3, 4}, TensorOptions(kFloat32).device(d));
    y.index_put_({Slice(), tensor({1, 3})}, 7);  // y[:, [1, 3]] = 7
    EXPECT_EQ(values(y), (std::vector<double>{0, 7, 0, 7, 0, 7, 0, 7, 0, 7, 0, 7}));
    // accumulate: every repeated index adds
    y.index_put_({tensor({0, 0, 2})}, ones({3, 4}, TensorOptions(kFloat32).device(d)), true);
    EXPECT_EQ(values(y), (std::vector<double>{2, 9, 2, 9, 0, 7, 0, 7, 1, 8, 1, 8}));
    // values broadcast to the indexed shape (a float64 tensor is cast)
    y.index_put_({tensor({1}), Slice()}, tensor({1.0, 2.0, 3.0, 4.0}).to(d));
    EXPECT_EQ(values(y.index({1})), (std::vector<double>{1, 2, 3, 4}));
    // y[y > 5] = 0, and a mask with one value per selected element
    y.index_put_({y > 5}, 0);
    EXPECT_EQ(values(y), (std::vector<double>{2, 0, 2, 0, 1, 2, 3, 4, 1, 0, 1, 0}));
    y.index_put_({y == 1}, tensor({10.0f, 20.0f, 30.0f}).to(d));
    EXPECT_EQ(values(y), (std::vector<double>{2, 0, 2, 0, 10, 2, 3, 4, 20, 0, 30, 0}));
    // basic indices only: a view written
    y.index_put_({0}, 5);
    y.index_put_({Slice(), -1}, tensor({1.0f, 1.0f, 1.0f}).to(d), true);
    EXPECT_EQ(values(y), (std::vector<double>{5, 5, 5, 6, 10, 2, 3, 5, 20, 0, 30, 1}));
    // separated indices into a [2, 3, 4] tensor: x[[1, 0], :, [3, 1]] = v (v: [2, 3])
    Tensor x = positions(d);
    Tensor v = tensor({{-1.0, -2.0, -3.0}, {-4.0, -5.0, -6.0}}).to(d);
    x.index_put_({tensor({1, 0}), Slice(), tensor({3, 1})}, v);
    Tensor want = positions();
    for (int j = 0; j < 3; ++j) {
      want.index_put_({1, j, 3}, -1.0 - j);
      want.index_put_({0, j, 1}, -4.0 - j);
    }
    EXPECT_EQ(values(x), values(want));
    // the same through a transposed tensor (its indexed dims do not merge into one)
    Tensor xt = positions(d).permute({2, 1, 0});  // [4, 3, 2]
    xt.index_put_({tensor({3, 1}), Slice(), tensor({1, 0})}, v, true);
    Tensor wt = positions().permute({2, 1, 0}).contiguous();
    wt.index_put_({tensor({3, 1}), Slice(), tensor({1, 0})}, v.cpu(), true);
    EXPECT_EQ(values(xt), values(wt));
    // index_put: on a copy
    Tensor p = zeros({3});
    Tensor q = p.index_put({tensor({2})}, tensor({4.0f}));
    EXPECT_EQ(values(p), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(values(q), (std::vector<double>{0, 0, 4}));
  }
}

TEST(TensorIndex, MaskedSelectAndNonzero) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}).to(d);
    EXPECT_EQ(values(x.masked_select(tensor({{true, false}, {false, true}}).to(d))), (std::vector<double>{1, 4}));
    EXPECT_EQ(values(masked_select(x, tensor({true, false}).to(d))), (std::vector<double>{1, 3}));  // broadcast
    Tensor nz = tensor({{0, 5}, {-2, 0}}).to(d).nonzero();
    EXPECT_EQ(nz.dtype(), kInt64);
    EXPECT_EQ(values(nz), (std::vector<double>{0, 1, 1, 0}));
    EXPECT_EQ(shape(nz), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(values(tensor({0.0, 1.5, 0.0, -1.0}).to(d).argwhere()), (std::vector<double>{1, 3}));
    EXPECT_EQ(shape(nonzero(full({}, 3.0).to(d))), (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(shape(nonzero(zeros({0, 3}).to(d))), (std::vector<int64_t>{0, 2}));
    // random 3-D bool input against a loop over the host copy
    manual_seed(3);
    Tensor r = rand({3, 5, 4}).to(d) > 0.6;
    std::vector<double> want;
    auto host = r.cpu().to(kFloat64).to_vector<double>();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 4; ++k)
          if (host[size_t(i * 20 + j * 4 + k)] != 0) want.insert(want.end(), {double(i), double(j), double(k)});
    EXPECT_EQ(values(r.nonzero()), want);
  }
}

TEST(TensorIndex, ErrorsAsPyTorchsAndNothingChanged) {
  Tensor x = positions();
  EXPECT_EQ(error_of([&] { x.index({0, 0, 0, 0}); }), "[index] too many indices for tensor of dimension 3");
  EXPECT_EQ(error_of([&] { x.index({Ellipsis, 0, Ellipsis}); }),
            "[index] an index can only have a single ellipsis ('...')");
  EXPECT_EQ(error_of([&] { x.index({Slice(), tensor({0, 3})}); }),
            "[index] index 3 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(error_of([&] { x.index({tensor({-3})}); }), "[index] index -3 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(error_of([&] { x.index({tensor({0.5})}); }),
            "[index] tensors used as indices must be long, int, byte or bool tensors");
  EXPECT_EQ(error_of([&] { x.index({zeros({2, 4}, kBool)}); }),
            "[index] The shape of the mask [2, 4] at index 1 does not match the shape of the indexed tensor [2, 3, 4] "
            "at index 1");
  EXPECT_EQ(error_of([&] { x.index({tensor({0, 1}), tensor({0, 1, 2})}); }),
            "[index] shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
  EXPECT_EQ(error_of([&] { x.index({Slice(None, None, 0)}); }), "[index] step must be greater than zero");
  EXPECT_EQ(error_of([&] { x.index({5}); }), "[index] index 5 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(error_of([&] { TensorIndex("..x"); }),
            "[TensorIndex] expected \"...\" to represent an ellipsis index, but got \"..x\"");
  EXPECT_THROW(x.index({Slice(), tensor({0, 1}), tensor({0, 1, 2})}), IndexError);
  // index_put_: a failed call changes nothing
  const auto before = values(x);
  EXPECT_EQ(error_of([&] { x.index_put_({tensor({0}), tensor({1}), tensor({0, 4})}, 1.0); }),
            "[index_put_] index 4 is out of bounds for dimension 2 with size 4");
  EXPECT_EQ(error_of([&] { x.index_put_({tensor({0, 1})}, zeros({3, 3}, kFloat64)); }),
            "[index_put_] shape mismatch: value tensor of shape [3, 3] cannot be broadcast to indexing result of "
            "shape [2, 3, 4]");
  EXPECT_EQ(values(x), before);
  EXPECT_EQ(error_of([&] { x.masked_select(ones({3}, kFloat32)); }), "[masked_select] expected BoolTensor for mask");
}

TEST(TensorIndex, CudaMatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  manual_seed(11);
  Tensor x = randn({5, 6, 7});
  Tensor xc = x.cuda();
  Tensor i0 = randint(-5, 5, {3, 1}), i2 = randint(0, 7, {4});
  Tensor m = rand({6, 7}) > 0.5;
  for (const std::vector<TensorIndex>& list :
       {std::vector<TensorIndex>{i0, Slice(1, None, 2), i2}, {Slice(), m}, {None, Ellipsis, i2}, {i0, i2.index({Slice(0, 3)}).view({1, 3})}}) {
    EXPECT_EQ(values(xc.index(list)), values(x.index(list)));
    Tensor a = x.clone(), b = xc.clone();
    Tensor v = randn(x.index(list).sizes());
    a.index_put_(list, v, true);
    b.index_put_(list, v.cuda(), true);
    wick::testing::expect_close(b, a, 1e-5, 1e-5);
  }
}

}  // namespace
