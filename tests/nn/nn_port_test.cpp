// adaptive_max_pool2d/1d, instance_norm, bilinear and embedding_bag; the modules
// AdaptiveMaxPool2d/1d, BatchNorm3d, InstanceNorm1d/2d/3d, Bilinear, EmbeddingBag, the 1-D and
// 3-D padding layers; TransformerEncoderOptions / TransformerDecoderOptions and
// autograd::GradMode. Values against float64 loops written here or against what PyTorch 1.13
// printed (tests/gen/nn_port_gen.py), gradients against central differences, non-contiguous
// inputs, errors (their type, the name of the function or module called, nothing changed) and
// printing as PyTorch's.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::names;
using wick::testing::repr;
namespace F = wick::nn::functional;

namespace {

const TensorOptions kF64 = TensorOptions(kFloat64);


std::vector<std::string> keys(const nn::Module& m) {
  std::vector<std::string> k;
  for (const auto& [name, t] : m.state_dict()) k.push_back(name);
  return k;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) { return std::vector<double>(v.begin(), v.end()); }

// ---- references

// Adaptive max pooling of planes [P, h, w] (row-major) to [P, oh, ow]: windows
// [floor(i h / oh), ceil((i + 1) h / oh)), the first maximum of each, its index in the plane.
void adaptive_max_ref(const std::vector<double>& x, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                      std::vector<double>& values, std::vector<double>& indices) {
  values.clear();
  indices.clear();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
        const int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
        double best = -INFINITY;
        int64_t at = -1;
        for (int64_t r = h0; r < h1; ++r)
          for (int64_t q = w0; q < w1; ++q) {
            const double v = x[size_t(p * h * w + r * w + q)];
            if (at < 0 || v > best) {
              best = v;
              at = r * w + q;
            }
          }
        values.push_back(best);
        indices.push_back(double(at));
      }
}

// embedding_bag by loops: bags from starts (the last one an end with include_last_offset).
std::vector<double> bag_ref(const std::vector<double>& weight, int64_t dim, const std::vector<int64_t>& idx,
                            const std::vector<int64_t>& starts, bool include_last, const std::string& mode,
                            int64_t pad = -1, const std::vector<double>& psw = {}) {
  const int64_t bags = include_last ? int64_t(starts.size()) - 1 : int64_t(starts.size());
  std::vector<double> out;
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t s = starts[size_t(b)], e = size_t(b) + 1 < starts.size() ? starts[size_t(b) + 1] : int64_t(idx.size());
    for (int64_t d = 0; d < dim; ++d) {
      double acc = mode == "max" ? -INFINITY : 0.0;
      int64_t count = 0;
      for (int64_t m = s; m < e; ++m) {
        if (idx[size_t(m)] == pad) continue;
        const double v = weight[size_t(idx[size_t(m)] * dim + d)] * (psw.empty() ? 1.0 : psw[size_t(m)]);
        acc = mode == "max" ? std::max(acc, v) : acc + v;
        ++count;
      }
      if (count == 0) acc = 0;
      if (mode == "mean" && count > 0) acc /= double(count);
      out.push_back(acc);
    }
  }
  return out;
}

class NnPort : public wick::testing::OnEachDevice<2024> {};

// ---- adaptive max pooling

TEST_P(NnPort, AdaptiveMaxPool2dMatchesPyTorch) {
  Tensor x = sin(arange(0, 2 * 3 * 5 * 7, 1, kF64) + 1).view({2, 3, 5, 7}).to(dev());
  auto [v, i] = F::adaptive_max_pool2d_with_indices(x, {3, 4});
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 3, 3, 4}));
  EXPECT_EQ(i.dtype(), kInt64);
  // printed by tests/gen/nn_port_gen.py
  const std::vector<int64_t> want_i = {7,  1,  12, 13, 7,  8,  26, 13, 21, 31, 32, 26, 8,  3,  3,  5,  22, 22,
                                       10, 27, 22, 22, 33, 34, 0,  1,  12, 6,  7,  24, 25, 12, 29, 31, 31, 26,
                                       8,  9,  3,  13, 15, 15, 10, 27, 21, 22, 33, 34, 0,  10, 5,  5,  7,  24,
                                       24, 12, 29, 24, 24, 26, 8,  8,  3,  13, 14, 8,  26, 20, 21, 22, 33, 33};
  expect_close(i, as_doubles(want_i), 0);
  const std::vector<double> want_v_head = {0.9893582466, 0.9092974268, 0.4201670368, 0.9906073557,
                                           0.9893582466, 0.4121184852, 0.9563759284, 0.9906073557};
  expect_close(v.flatten().narrow(0, 0, 8), want_v_head, 1e-9);
  // the values are the input's at the indices
  expect_close(v, x.flatten(2).gather(2, i.flatten(2)).view(v.sizes()), 0);
  expect_close(F::adaptive_max_pool2d(x, {3, 4}), v, 0);

  // 1-D: x[0] read as [N = 3, C = 5, L = 7]
  auto [v1, i1] = F::adaptive_max_pool1d_with_indices(x[0], 3);
  const std::vector<int64_t> want_i1 = {1, 2, 6, 0, 4, 6, 0, 4, 5, 0, 4, 5, 2, 4, 4, 2, 3, 4, 2, 3, 4, 2, 2,
                                        6, 1, 2, 6, 0, 2, 6, 0, 4, 6, 0, 4, 5, 0, 4, 5, 2, 4, 4, 2, 3, 4};
  EXPECT_EQ(v1.sizes().vec(), (std::vector<int64_t>{3, 5, 3}));
  expect_close(i1, as_doubles(want_i1), 0);
  expect_close(v1.flatten().narrow(0, 0, 4), {0.9092974268, 0.1411200081, 0.6569865987, 0.9893582466}, 1e-9);
}

TEST_P(NnPort, AdaptiveMaxPoolMatchesLoopsOnNonContiguousInput) {
  // [2, 3, 5, 7] as a transpose: not contiguous
  Tensor base = randn({2, 3, 7, 5}, kF64);
  Tensor x = base.to(dev()).transpose(2, 3);
  ASSERT_FALSE(x.is_contiguous());
  const auto xv = base.transpose(2, 3).contiguous().to_vector<double>();
  for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{{3, 4}, {5, 7}, {1, 1}, {2, 3}, {8, 9}, {4, 1}}) {
    SCOPED_TRACE(::testing::Message() << oh << " x " << ow);
    std::vector<double> wv, wi;
    adaptive_max_ref(xv, 6, 5, 7, oh, ow, wv, wi);
    auto [v, i] = F::adaptive_max_pool2d_with_indices(x, {oh, ow});
    EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 3, oh, ow}));
    expect_close(v, wv, 0);
    expect_close(i, wi, 0);
    // the module, and an unbatched input
    nn::AdaptiveMaxPool2d pool(nn::AdaptiveMaxPool2dOptions({oh, ow}));
    expect_close(pool(x), v, 0);
    auto [mv, mi] = pool->forward_with_indices(x[1]);
    expect_close(mv, v[1], 0);
    expect_close(mi, i[1], 0);
    // float32
    expect_close(F::adaptive_max_pool2d(x.to(kFloat32), {oh, ow}), wv, 1e-6);
  }
  // 1-D over [N, C, L] = [6, 5, 7] (a non-contiguous view) and unbatched [C, L]
  Tensor x1 = x.flatten(0, 1);
  ASSERT_FALSE(x1.is_contiguous());
  for (int64_t o : {1, 3, 7, 10}) {
    std::vector<double> wv, wi;
    adaptive_max_ref(xv, 30, 1, 7, 1, o, wv, wi);
    nn::AdaptiveMaxPool1d pool(o);
    auto [v, i] = pool->forward_with_indices(x1);
    EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{6, 5, o}));
    expect_close(v, wv, 0);
    expect_close(i, wi, 0);
    expect_close(pool(x1[2]), v[2], 0);
    expect_close(F::adaptive_max_pool1d(x1, F::AdaptiveMaxPool1dFuncOptions(o)), v, 0);
  }
}

TEST_P(NnPort, AdaptiveMaxPoolGradients) {
  using wick::testing::gradcheck;
  using Args = std::vector<Tensor>;
  Tensor x = randn({2, 2, 5, 7}, kF64);
  gradcheck([](const Args& in) { return F::adaptive_max_pool2d(in[0], {3, 4}); }, {x.clone().requires_grad_()}, dev());
  gradcheck([](const Args& in) { return F::adaptive_max_pool2d(in[0], {2, 2}); }, {x.clone().requires_grad_()}, dev());
  gradcheck([](const Args& in) { return F::adaptive_max_pool1d(in[0], 4); }, {randn({2, 3, 9}, kF64).requires_grad_()},
            dev());
  // overlapping windows: an element that is the maximum of two windows gets both gradients
  Tensor y = tensor({{{0.0, 5.0, 1.0}}}, kF64).to(dev()).requires_grad_();
  F::adaptive_max_pool1d(y, 2).sum().backward();  // windows [0, 2) and [1, 3): both pick 5
  expect_close(y.grad(), {0.0, 2.0, 0.0}, 0);
}

// ---- BatchNorm3d and InstanceNorm

TEST_P(NnPort, BatchNorm3dMatchesLoops) {
  Tensor base = randn({2, 3, 2, 3, 2}, kF64);
  Tensor x = base.to(dev()).transpose(3, 4).contiguous().transpose(3, 4);  // non-contiguous strides
  ASSERT_FALSE(x.is_contiguous());
  nn::BatchNorm3d bn(nn::BatchNorm3dOptions(3).momentum(0.25));
  bn->to(dev(), kFloat64);
  const auto xv = base.to_vector<double>();
  std::vector<double> want(xv.size()), mean(3), var(3);
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, s2 = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 12; ++k) s += xv[size_t((n * 3 + c) * 12 + k)];
    mean[size_t(c)] = s / 24;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 12; ++k) s2 += std::pow(xv[size_t((n * 3 + c) * 12 + k)] - mean[size_t(c)], 2);
    var[size_t(c)] = s2 / 24;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 12; ++k) {
        const size_t at = size_t((n * 3 + c) * 12 + k);
        want[at] = (xv[at] - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5);
      }
  }
  expect_close(bn(x), want, 1e-10);
  for (int64_t c = 0; c < 3; ++c) {
    expect_close(bn->running_mean[c], {0.25 * mean[size_t(c)]}, 1e-12);
    expect_close(bn->running_var[c], {0.75 + 0.25 * var[size_t(c)] * 24 / 23}, 1e-12);
  }
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  // a 4-D input is refused, naming the module, and changes nothing
  Tensor rm = bn->running_mean.clone();
  EXPECT_THROW(bn(x[0]), ValueError);
  EXPECT_TRUE(names([&] { bn(x[0]); }, "BatchNorm3d"));
  expect_close(bn->running_mean, rm, 0);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

TEST_P(NnPort, InstanceNormMatchesPyTorch) {
  nn::InstanceNorm1d m(nn::InstanceNorm1dOptions(3).track_running_stats(true).affine(true));
  m->to(dev(), kFloat64);
  {
    NoGradGuard g;
    m->weight.copy_(tensor({1.5, -0.5, 2.0}, kF64));
    m->bias.copy_(tensor({0.1, 0.2, -0.3}, kF64));
  }
  Tensor y = sin(arange(0, 24, 1, kF64)).pow(3).view({2, 3, 4}).to(dev());
  // printed by tests/gen/nn_port_gen.py
  expect_close(m(y), {-1.3863301229, 1.2367454315,  1.9235422665,  -1.3739575751, 0.3939798849,  0.9052440141,
                      -0.0754728512, -0.4237510477, 2.5509039398,  -0.0128210804, -0.672010257,  -3.0660726024,
                      -1.4889443183, -0.674625353,  2.5230489941,  0.0405206771,  -0.2266100416, 0.9661164643,
                      0.3246623392,  -0.2641687619, 1.8456541494,  1.1925298837,  -0.9899826821, -3.248201351},
               1e-9);
  expect_close(m->running_mean, {0.0314653491, -0.0298263534, 0.0077253027}, 1e-9);
  expect_close(m->running_var, {0.9195653797, 0.9215740781, 0.9519481099}, 1e-9);
  EXPECT_EQ(m->num_batches_tracked.item<int64_t>(), 0);  // InstanceNorm does not count, as PyTorch's
  m->eval();
  expect_close(m(y).flatten().narrow(0, 0, 4), {0.0507812992, 0.982779401, 1.2268033847, 0.0551773568}, 1e-9);
  EXPECT_EQ(keys(*m), (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_TRUE(keys(*nn::InstanceNorm2d(3)).empty());
}

TEST_P(NnPort, InstanceNormMatchesLoops) {
  // InstanceNorm2d on [2, 3, 4, 5], non-contiguous, and unbatched [3, 4, 5]
  Tensor base = randn({2, 3, 5, 4}, kF64);
  Tensor x = base.to(dev()).transpose(2, 3);
  const auto xv = base.transpose(2, 3).contiguous().to_vector<double>();
  std::vector<double> want(xv.size());
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0, s2 = 0;
    for (int64_t k = 0; k < 20; ++k) s += xv[size_t(p * 20 + k)];
    const double mean = s / 20;
    for (int64_t k = 0; k < 20; ++k) s2 += std::pow(xv[size_t(p * 20 + k)] - mean, 2);
    for (int64_t k = 0; k < 20; ++k)
      want[size_t(p * 20 + k)] = (xv[size_t(p * 20 + k)] - mean) / std::sqrt(s2 / 20 + 1e-5);
  }
  nn::InstanceNorm2d in(3);
  expect_close(in(x), want, 1e-10);
  expect_close(in(x[1]), std::vector<double>(want.begin() + 60, want.end()), 1e-10);
  expect_close(F::instance_norm(x), want, 1e-10);
  expect_close(F::instance_norm(x.to(kFloat32), F::InstanceNormFuncOptions().eps(1e-5)), want, 1e-5);
  // InstanceNorm3d on [1, 2, 2, 3, 2]: each of the 2 planes of 12 normalized
  Tensor z = randn({1, 2, 2, 3, 2}, kF64).to(dev());
  Tensor flat = z.view({2, 12});
  Tensor zz = (flat - flat.mean({1}, true)) / (flat.var({1}, false, true) + 1e-5).sqrt();
  expect_close(nn::InstanceNorm3d(2)(z), zz.view(z.sizes()), 1e-10);
}

TEST_P(NnPort, InstanceNormGradientsAndErrors) {
  using wick::testing::gradcheck;
  using Args = std::vector<Tensor>;
  gradcheck([](const Args& in) { return F::instance_norm(in[0], {}, {}, in[1], in[2]); },
            {randn({2, 3, 5}, kF64).requires_grad_(), randn({3}, kF64).requires_grad_(),
             randn({3}, kF64).requires_grad_()},
            dev());
  nn::InstanceNorm2d m(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  m->to(dev());
  Tensor rm = m->running_mean.clone(), w = m->weight.clone();
  // the wrong rank, one spatial element, the wrong channels: ValueError naming the module
  for (const Tensor& bad : {randn({3, 4}).to(dev()), randn({2, 3, 1, 1}).to(dev()), randn({2, 4, 3, 3}).to(dev())}) {
    EXPECT_THROW(m(bad), ValueError);
    EXPECT_TRUE(names([&] { m(bad); }, "InstanceNorm2d")) << error_of([&] { m(bad); });
  }
  expect_close(m->running_mean, rm, 0);
  expect_close(m->weight, w, 0);
  EXPECT_THROW(F::instance_norm(randn({2, 3, 4}).to(dev()), {}, {}, {}, {}, false), ValueError);
  EXPECT_TRUE(names([&] { F::instance_norm(randn({2, 3, 4}).to(dev()), {}, {}, randn({4}).to(dev())); },
                    "instance_norm"));
  EXPECT_THROW(F::instance_norm(ones({2, 3, 4}, TensorOptions(kInt64)).to(dev())), TypeError);
  // momentum None: the running statistics stay (PyTorch 2's reading)
  nn::InstanceNorm1d frozen(nn::InstanceNorm1dOptions(2).track_running_stats(true).momentum(std::nullopt));
  frozen->to(dev());
  frozen(randn({3, 2, 6}).to(dev()));
  expect_close(frozen->running_mean, {0.0, 0.0}, 0);
  expect_close(frozen->running_var, {1.0, 1.0}, 0);
}

// ---- Bilinear

TEST_P(NnPort, BilinearMatchesLoops) {
  // x1 [2, 3, 4] and x2 [2, 3, 5] (non-contiguous), weight [6, 4, 5]
  Tensor a = randn({4, 3, 2}, kF64), b = randn({5, 2, 3}, kF64), w = randn({6, 4, 5}, kF64), bias = randn({6}, kF64);
  Tensor x1 = a.to(dev()).permute({2, 1, 0}), x2 = b.to(dev()).permute({1, 2, 0});
  ASSERT_FALSE(x1.is_contiguous());
  const auto av = a.permute({2, 1, 0}).contiguous().to_vector<double>();
  const auto bv = b.permute({1, 2, 0}).contiguous().to_vector<double>();
  const auto wv = w.to_vector<double>(), biv = bias.to_vector<double>();
  std::vector<double> want;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t o = 0; o < 6; ++o) {
      double s = biv[size_t(o)];
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 5; ++j) s += av[size_t(r * 4 + i)] * wv[size_t((o * 4 + i) * 5 + j)] * bv[size_t(r * 5 + j)];
      want.push_back(s);
    }
  Tensor y = F::bilinear(x1, x2, w.to(dev()), bias.to(dev()));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 6}));
  expect_close(y, want, 1e-10);
  // the module, with that weight and bias; without bias; 1-D inputs
  nn::Bilinear m(4, 5, 6);
  m->to(dev(), kFloat64);
  {
    NoGradGuard g;
    m->weight.copy_(w);
    m->bias.copy_(bias);
  }
  expect_close(m(x1, x2), want, 1e-10);
  nn::Bilinear nb(nn::BilinearOptions(4, 5, 6).bias(false));
  EXPECT_FALSE(nb->bias.defined());
  EXPECT_EQ(keys(*nb), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(keys(*m), (std::vector<std::string>{"weight", "bias"}));
  Tensor one = F::bilinear(x1[0][0], x2[0][0], w.to(dev()), bias.to(dev()));
  EXPECT_EQ(one.sizes().vec(), (std::vector<int64_t>{6}));
  expect_close(one, std::vector<double>(want.begin(), want.begin() + 6), 1e-10);
}

TEST_P(NnPort, BilinearInitGradientsAndErrors) {
  using wick::testing::gradcheck;
  using Args = std::vector<Tensor>;
  nn::Bilinear m(9, 2, 3);
  const double bound = 1.0 / 3;  // 1 / sqrt(in1_features)
  EXPECT_LE(m->weight.abs().max().item<double>(), bound);
  EXPECT_LE(m->bias.abs().max().item<double>(), bound);
  EXPECT_GT(m->weight.abs().max().item<double>(), bound / 2);
  gradcheck([](const Args& in) { return F::bilinear(in[0], in[1], in[2], in[3]); },
            {randn({3, 2}, kF64).requires_grad_(), randn({3, 4}, kF64).requires_grad_(),
             randn({2, 2, 4}, kF64).requires_grad_(), randn({2}, kF64).requires_grad_()},
            dev());
  Tensor w = randn({5, 3, 4}).to(dev());
  auto expect_value_error = [&](const Tensor& x1, const Tensor& x2, const Tensor& bias) {
    EXPECT_THROW(F::bilinear(x1, x2, w, bias), ValueError);
    EXPECT_TRUE(names([&] { F::bilinear(x1, x2, w, bias); }, "bilinear"));
  };
  expect_value_error(randn({2, 3}).to(dev()), randn({3, 4}).to(dev()), {});     // batch dims
  expect_value_error(randn({2, 3}).to(dev()), randn({2, 2, 4}).to(dev()), {});  // ranks
  expect_value_error(randn({2, 2}).to(dev()), randn({2, 4}).to(dev()), {});     // in1
  expect_value_error(randn({2, 3}).to(dev()), randn({2, 3}).to(dev()), {});     // in2
  expect_value_error(randn({2, 3}).to(dev()), randn({2, 4}).to(dev()), randn({4}).to(dev()));
  nn::Bilinear mod(3, 4, 5);
  mod->to(dev());
  EXPECT_TRUE(names([&] { mod(randn({2, 2}).to(dev()), randn({2, 4}).to(dev())); }, "Bilinear"));
  EXPECT_THROW(nn::Bilinear(0, 2, 3), ValueError);
}

// ---- EmbeddingBag

TEST_P(NnPort, EmbeddingBagMatchesPyTorch) {
  Tensor w = cos(arange(0, 18, 1, kF64)).view({6, 3}).to(dev());
  Tensor input = tensor({1, 2, 4, 5, 4, 3, 2, 0}).to(dev()), offsets = tensor({0, 2, 2, 5}).to(dev());
  // printed by tests/gen/nn_port_gen.py
  expect_close(F::embedding_bag(input, w, offsets, std::nullopt, 2.0, false, "sum"),
               {-0.02982221, 0.1002586335, 0.1381621517, 0.0, 0.0, 0.0, 0.9280200046, 0.8572340826, -0.0016889016,
                1.0490400248, 0.4551330311, -0.5572211724},
               1e-9);
  expect_close(F::embedding_bag(input, w, offsets),  // mean
               {-0.014911105, 0.0501293167, 0.0690810758, 0.0, 0.0, 0.0, 0.3093400015, 0.2857446942, -0.0005629672,
                0.3496800083, 0.1517110104, -0.1857403908},
               1e-9);
  expect_close(F::embedding_bag(input, w, F::EmbeddingBagFuncOptions().offsets(offsets).mode(kMax)),
               {0.9601702867, 0.7539022543, 0.2836621855, 0.0, 0.0, 0.0, 0.8438539587, 0.9074467815, 0.1367372182, 1.0,
                0.7539022543, 0.004425698},
               1e-9);
  const std::vector<double> pad4_bag2 = {-0.7596879129, -0.9576594803, -0.2751633381};
  for (std::string mode : {"sum", "mean", "max"}) {
    Tensor got = F::embedding_bag(input, w, F::EmbeddingBagFuncOptions().offsets(offsets).mode(mode).padding_idx(4));
    expect_close(got[2], pad4_bag2, 1e-9, mode);  // bag {4, 5, 4} without 4: row 5 alone, in every mode
    expect_close(got[0], F::embedding_bag(input, w, offsets, std::nullopt, 2.0, false, mode)[0], 0, 0, mode);
  }
  Tensor psw = (arange(1, 9, 1, kF64) / 4).to(dev());
  expect_close(F::embedding_bag(input, w, offsets, std::nullopt, 2.0, false, "sum", false, psw),
               bag_ref(w.cpu().to_vector<double>(), 3, input.cpu().to_vector<int64_t>(), {0, 2, 2, 5}, false, "sum", -1,
                       psw.cpu().to_vector<double>()),
               1e-12);
}

TEST_P(NnPort, EmbeddingBagMatchesLoops) {
  Tensor w = randn({7, 4}, kF64);
  const auto wv = w.to_vector<double>();
  const std::vector<int64_t> idx = {3, 0, 6, 6, 2, 5, 1, 3, 4};
  Tensor input = tensor(idx).to(dev());
  for (bool last : {false, true})
    for (std::string mode : {"sum", "mean", "max"})
      for (int64_t pad : {-1, 3}) {
        SCOPED_TRACE(::testing::Message() << mode << " last " << last << " pad " << pad);
        const std::vector<int64_t> starts = {0, 3, 3, 7};  // with last: 3 bags ending at 7 (8, 9 unread)
        Tensor got = F::embedding_bag(input, w.to(dev()), tensor(starts).to(dev(), kInt32), std::nullopt, 2.0, false,
                                      mode, false, {}, last, pad < 0 ? std::nullopt : std::optional<int64_t>(pad));
        EXPECT_EQ(got.size(0), last ? 3 : 4);
        expect_close(got, bag_ref(wv, 4, idx, starts, last, mode, pad), 1e-12);
      }
  // 2-D input: bags of 3, as 1-D input with offsets 0, 3, 6; int32 indices; a strided input
  Tensor two = tensor(idx).view({3, 3}).to(dev(), kInt32).t().contiguous().t();
  ASSERT_FALSE(two.is_contiguous());
  expect_close(F::embedding_bag(two, w.to(dev())), bag_ref(wv, 4, idx, {0, 3, 6}, false, "mean"), 1e-12);
  // per_sample_weights of 2-D input
  Tensor psw = randn({3, 3}, kF64);
  expect_close(F::embedding_bag(two, w.to(dev()), {}, std::nullopt, 2.0, false, "sum", false, psw.to(dev())),
               bag_ref(wv, 4, idx, {0, 3, 6}, false, "sum", -1, psw.to_vector<double>()), 1e-12);
  // an empty input: every bag empty
  expect_close(F::embedding_bag(tensor(std::vector<int64_t>{}).to(dev()), w.to(dev()), tensor({0, 0}).to(dev())),
               std::vector<double>(8, 0.0), 0);
}

TEST_P(NnPort, EmbeddingBagModuleAndGradients) {
  using wick::testing::gradcheck;
  using Args = std::vector<Tensor>;
  Tensor input = tensor({1, 2, 4, 5, 4, 3, 2, 0}).to(dev()), offsets = tensor({0, 2, 2, 5}).to(dev());
  for (std::string mode : {"sum", "mean", "max"})
    gradcheck([&](const Args& in) { return F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, mode); },
              {randn({6, 3}, kF64).requires_grad_()}, dev());
  gradcheck(
      [&](const Args& in) {
        return F::embedding_bag(input, in[0], offsets, std::nullopt, 2.0, false, "sum", false, in[1], false, 4);
      },
      {randn({6, 3}, kF64).requires_grad_(), randn({8}, kF64).requires_grad_()}, dev());
  // padding_idx's row gets no gradient
  Tensor w = randn({6, 3}, kF64).to(dev()).requires_grad_();
  F::embedding_bag(input, w, F::EmbeddingBagFuncOptions().offsets(offsets).padding_idx(4).mode(kSum)).sum().backward();
  expect_close(w.grad()[4], {0.0, 0.0, 0.0}, 0);
  expect_close(w.grad()[2], {2.0, 2.0, 2.0}, 0);

  // the module: padding row zero at init, kSum, from_pretrained
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(6, 3).mode(kSum).padding_idx(-2));
  EXPECT_EQ(*bag->options.padding_idx(), 4);
  expect_close(bag->weight[4], {0.0, 0.0, 0.0}, 0);
  bag->to(dev());
  expect_close(bag(input, offsets), F::embedding_bag(input, bag->weight, offsets, std::nullopt, 2.0, false, "sum"), 1e-6);
  EXPECT_EQ(keys(*bag), (std::vector<std::string>{"weight"}));
  Tensor table = randn({6, 3}, kF64).to(dev());
  auto pre = nn::EmbeddingBag::from_pretrained(table, nn::EmbeddingBagFromPretrainedOptions().mode(kMax));
  EXPECT_FALSE(pre->weight.requires_grad());
  EXPECT_EQ(pre->weight.data_ptr(), table.data_ptr());  // shared, not copied
  expect_close(pre(input.view({2, 4})), F::embedding_bag(input.view({2, 4}), table, {}, std::nullopt, 2.0, false, "max"),
               0);
  auto trainable = nn::EmbeddingBag::from_pretrained(table, nn::EmbeddingBagFromPretrainedOptions().freeze(false));
  EXPECT_TRUE(trainable->weight.requires_grad());
  // max_norm renormalizes the rows looked up, in place
  Tensor big = (ones({4, 2}, kF64) * 3).to(dev());
  F::embedding_bag(tensor({0, 2}).to(dev()), big, tensor({0}).to(dev()), 1.0);
  expect_close(big.norm(2, {1}), {1.0, 3 * std::sqrt(2.0), 1.0, 3 * std::sqrt(2.0)}, 1e-6);
}

TEST_P(NnPort, EmbeddingBagErrorsNameTheFunctionAndChangeNothing) {
  Tensor w = (ones({5, 2}, kF64) * 3).to(dev());
  Tensor keep = w.clone();
  Tensor in = tensor({1, 2, 3}).to(dev());
  auto check = [&](const std::function<void()>& f, const std::string& what) {
    EXPECT_TRUE(names(f, "embedding_bag")) << what << ": " << error_of(f);
  };
  auto bag = [&](const Tensor& input, const Tensor& offsets, F::EmbeddingBagFuncOptions o = {}) {
    return F::embedding_bag(input, w, o.offsets(offsets).max_norm(1.0));
  };
  EXPECT_THROW(bag(in, tensor({1, 2}).to(dev())), ValueError);  // offsets[0] != 0
  check([&] { bag(in, tensor({1, 2}).to(dev())); }, "offsets[0]");
  EXPECT_THROW(bag(in, tensor({0, 4}).to(dev())), ValueError);  // past the end
  EXPECT_THROW(bag(in, tensor({0, 2, 1}).to(dev())), ValueError);  // decreasing
  EXPECT_THROW(bag(tensor({1, 5}).to(dev()), tensor({0}).to(dev())), IndexError);
  check([&] { bag(tensor({1, -1}).to(dev()), tensor({0}).to(dev())); }, "index");
  EXPECT_THROW(bag(in, {}), ValueError);  // 1-D without offsets
  EXPECT_THROW(bag(in.view({1, 3}), tensor({0}).to(dev())), ValueError);  // 2-D with offsets
  EXPECT_THROW(bag(in.view({1, 1, 3}), {}), ValueError);
  EXPECT_THROW(bag(in.to(kFloat64), tensor({0}).to(dev())), TypeError);
  EXPECT_THROW(bag(in, tensor({0}).to(dev()), F::EmbeddingBagFuncOptions().mode("median")), ValueError);
  EXPECT_THROW(bag(in, tensor({0}).to(dev()), F::EmbeddingBagFuncOptions().mode(kMean).per_sample_weights(ones({3}, kF64).to(dev()))),
               NotImplementedError);
  EXPECT_THROW(bag(in, tensor({0}).to(dev()), F::EmbeddingBagFuncOptions().mode(kSum).per_sample_weights(ones({2}, kF64).to(dev()))),
               ValueError);
  EXPECT_THROW(bag(in, tensor({0}).to(dev()), F::EmbeddingBagFuncOptions().padding_idx(5)), ValueError);
  EXPECT_THROW(bag(in, tensor({0}).to(dev()), F::EmbeddingBagFuncOptions().sparse(true)), NotImplementedError);
  EXPECT_THROW(bag(in, tensor({0}).to(dev()), F::EmbeddingBagFuncOptions().mode(kMax).scale_grad_by_freq(true)),
               ValueError);
  EXPECT_THROW(bag(in, tensor(std::vector<int64_t>{}).to(dev()), F::EmbeddingBagFuncOptions().include_last_offset(true)),
               ValueError);
  // max_norm was never applied
  expect_close(w, keep, 0);
  nn::EmbeddingBag m(5, 2);
  m->to(dev());
  EXPECT_TRUE(names([&] { m(in, tensor({2}).to(dev())); }, "EmbeddingBag"));
  EXPECT_THROW(nn::EmbeddingBag(nn::EmbeddingBagOptions(5, 2).mode("median")), ValueError);
  EXPECT_THROW(nn::EmbeddingBag(nn::EmbeddingBagOptions(5, 2).padding_idx(5)), ValueError);
}

// ---- padding

TEST_P(NnPort, Padding1dAnd3dLayersArePad) {
  Tensor x1 = randn({2, 3, 5}, kF64).to(dev()).transpose(0, 1).contiguous().transpose(0, 1);  // [2, 3, 5]
  Tensor x3 = randn({1, 2, 3, 4, 5}, kF64).to(dev()).transpose(3, 4).contiguous().transpose(3, 4);
  ASSERT_FALSE(x3.is_contiguous());
  const std::vector<int64_t> p2 = {2, 1}, p6 = {1, 2, 0, 1, 2, 1};
  expect_close(nn::ZeroPad1d(nn::ZeroPad1dOptions({2, 1}))(x1), F::pad(x1, p2), 0);
  expect_close(nn::ZeroPad1d(2)(x1), F::pad(x1, {2, 2}), 0);
  expect_close(nn::ConstantPad1d(nn::ConstantPad1dOptions({2, 1}, 3.5))(x1), F::pad(x1, p2, "constant", 3.5), 0);
  expect_close(nn::ReflectionPad1d(nn::ReflectionPad1dOptions({2, 1}))(x1), F::pad(x1, p2, "reflect"), 0);
  expect_close(nn::ReplicationPad1d(nn::ReplicationPad1dOptions({2, 1}))(x1[0]), F::pad(x1[0], p2, "replicate"), 0);
  expect_close(nn::ZeroPad3d(nn::ZeroPad3dOptions(p6))(x3), F::pad(x3, p6), 0);
  expect_close(nn::ConstantPad3d(1, -1.0)(x3), F::pad(x3, {1, 1, 1, 1, 1, 1}, "constant", -1.0), 0);
  expect_close(nn::ReflectionPad3d(nn::ReflectionPad3dOptions(p6))(x3), F::pad(x3, p6, "reflect"), 0);
  expect_close(nn::ReplicationPad3d(nn::ReplicationPad3dOptions(p6))(x3[0]), F::pad(x3[0], p6, "replicate"), 0);
  // reflection by its index formula: out[o] = x[|o - l|] mirrored at the end
  Tensor r = nn::ReflectionPad1d(2)(x1);
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3, 9}));
  const auto xv = x1.contiguous().cpu().to_vector<double>(), rv = r.contiguous().cpu().to_vector<double>();
  for (int64_t row = 0; row < 6; ++row)
    for (int64_t o = 0; o < 9; ++o) {
      int64_t p = std::abs(o - 2);
      if (p > 4) p = 8 - p;
      EXPECT_EQ(rv[size_t(row * 9 + o)], xv[size_t(row * 5 + p)]);
    }
  // gradients
  using wick::testing::gradcheck;
  using Args = std::vector<Tensor>;
  gradcheck([](const Args& in) { return nn::ReflectionPad3d(1)(in[0]); }, {randn({1, 1, 2, 3, 3}, kF64).requires_grad_()},
            dev());
  gradcheck([](const Args& in) { return nn::ReplicationPad1d(nn::ReplicationPad1dOptions({3, 1}))(in[0]); },
            {randn({2, 4}, kF64).requires_grad_()}, dev());
  // errors name the layer
  EXPECT_THROW(nn::ReflectionPad1d(5)(x1), ValueError);
  EXPECT_TRUE(names([&] { nn::ReflectionPad1d(5)(x1); }, "ReflectionPad1d"));
  EXPECT_TRUE(names([&] { nn::ReplicationPad3d(1)(x1); }, "ReplicationPad3d"));
}

// scale_grad_by_freq: each lookup's gradient over its row's count of lookups; the padding row
// gets none. The values PyTorch 1.13 gives for Embedding(5, 2, padding_idx=3,
// scale_grad_by_freq=True), indices [[0, 2, 0], [2, 2, 4], [3, 3, 1]], loss sum(out * arange(18)).
TEST_P(NnPort, EmbeddingScalesTheGradientByFrequency) {
  nn::Embedding emb(nn::EmbeddingOptions(5, 2).padding_idx(3).scale_grad_by_freq(true));
  emb->to(dev());
  EXPECT_EQ(repr(*emb), "Embedding(5, 2, padding_idx=3, scale_grad_by_freq=True)");
  Tensor idx = tensor({0, 2, 0, 2, 2, 4, 3, 3, 1}, TensorOptions(kInt64).device(dev())).view({3, 3});
  Tensor c = arange(18, TensorOptions(kFloat32).device(dev())).view({3, 3, 2});
  (emb(idx) * c).sum().backward();
  expect_close(emb->weight.grad(), {2, 3, 16, 17, 16.0 / 3, 19.0 / 3, 0, 0, 10, 11}, 1e-6);
  // Non-contiguous indices, float64, through the functional form.
  Tensor w = randn({4, 3}, TensorOptions(kFloat64).device(dev())).requires_grad_();
  Tensor i2 = tensor({1, 1, 3, 1}, TensorOptions(kInt64).device(dev())).view({2, 2}).t();
  F::embedding(i2, w, std::nullopt, std::nullopt, 2.0, true).sum().backward();
  expect_close(w.grad(), {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}, 1e-12);
  EXPECT_THROW(F::embedding(i2, w, std::nullopt, std::nullopt, 2.0, false, true), NotImplementedError);
  EXPECT_THROW(nn::Embedding(nn::EmbeddingOptions(3, 2).sparse(true))(i2), NotImplementedError);
}

// EmbeddingBag's scale_grad_by_freq: each lookup's gradient over its row's count of lookups
// (input [1, 2, 4, 5, 4, 3, 2, 0], offsets [0, 2, 2, 5], loss sum(out * [[1, 2, 3], ..., [10,
// 11, 12]])): values by hand from that rule. PyTorch 1.13's CPU kernel divides rows 3 to 5 by
// another row's count (fixed in PyTorch 2.14); its CUDA kernel follows the rule.
TEST_P(NnPort, EmbeddingBagScalesTheGradientByFrequency) {
  Tensor input = tensor({1, 2, 4, 5, 4, 3, 2, 0}).to(dev()), offsets = tensor({0, 2, 2, 5}).to(dev());
  const Tensor c = arange(1, 13, 1, kF64).view({4, 3}).to(dev());
  auto grad_of = [&](const std::string& mode, std::optional<int64_t> pad, const Tensor& psw) {
    Tensor w = cos(arange(0, 18, 1, kF64)).view({6, 3}).to(dev()).requires_grad_();
    (F::embedding_bag(input, w, offsets, std::nullopt, 2.0, true, mode, false, psw, false, pad) * c).sum().backward();
    return w.grad();
  };
  expect_close(grad_of("sum", std::nullopt, {}), {10, 11, 12, 1, 2, 3, 5.5, 6.5, 7.5, 10, 11, 12, 7, 8, 9, 7, 8, 9},
               1e-12, "sum");
  expect_close(grad_of("sum", 4, {}), {10, 11, 12, 1, 2, 3, 5.5, 6.5, 7.5, 10, 11, 12, 0, 0, 0, 7, 8, 9}, 1e-12,
               "sum, padding 4");
  const double t = 1.0 / 3;
  expect_close(grad_of("mean", std::nullopt, {}),
               {10 * t, 11 * t, 4, 0.5, 1, 1.5, 23.0 / 12, 7 * t, 2.75, 10 * t, 11 * t, 4, 7 * t, 8 * t, 3, 7 * t, 8 * t,
                3},
               1e-12, "mean");
  // padding 4: bag 2 is row 5 alone, of size 1
  expect_close(grad_of("mean", 4, {}),
               {10 * t, 11 * t, 4, 0.5, 1, 1.5, 23.0 / 12, 7 * t, 2.75, 10 * t, 11 * t, 4, 0, 0, 0, 7, 8, 9}, 1e-12,
               "mean, padding 4");
  expect_close(grad_of("sum", std::nullopt, (arange(1, 9, 1, kF64) / 4).to(dev())),
               {20, 22, 24, 0.25, 0.5, 0.75, 9, 10.125, 11.25, 15, 16.5, 18, 7, 8, 9, 7, 8, 9}, 1e-12,
               "per_sample_weights");
  // the module and from_pretrained carry the option
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(6, 3).mode(kSum).scale_grad_by_freq(true));
  EXPECT_EQ(repr(*bag), "EmbeddingBag(6, 3, scale_grad_by_freq=True, mode=sum)");
  bag->to(dev());
  (bag(input, offsets) * c.to(kFloat32)).sum().backward();
  expect_close(bag->weight.grad(), {10, 11, 12, 1, 2, 3, 5.5, 6.5, 7.5, 10, 11, 12, 7, 8, 9, 7, 8, 9}, 1e-5);
  auto pre = nn::EmbeddingBag::from_pretrained(
      cos(arange(0, 18, 1, kF64)).view({6, 3}).to(dev()),
      nn::EmbeddingBagFromPretrainedOptions().freeze(false).mode(kSum).scale_grad_by_freq(true));
  (pre(input, offsets) * c).sum().backward();
  expect_close(pre->weight.grad(), {10, 11, 12, 1, 2, 3, 5.5, 6.5, 7.5, 10, 11, 12, 7, 8, 9, 7, 8, 9}, 1e-12);
}

WICK_INSTANTIATE_ON_DEVICES(NnPort);

// ---- errors of the pooling functions, printing, options and the LibTorch spellings

TEST(NnPortModules, AdaptiveMaxPoolErrors) {
  auto check = [](const std::function<void()>& f, const std::string& op) {
    EXPECT_TRUE(names(f, op)) << error_of(f);
  };
  EXPECT_THROW(F::adaptive_max_pool2d(randn({5, 7}), 2), ValueError);
  check([] { F::adaptive_max_pool2d(randn({5, 7}), 2); }, "adaptive_max_pool2d");
  EXPECT_THROW(F::adaptive_max_pool2d(randn({2, 0, 5, 7}), 2), ValueError);
  EXPECT_THROW(F::adaptive_max_pool2d(ones({2, 3, 5, 7}, TensorOptions(kInt64)), 2), TypeError);
  EXPECT_THROW(F::adaptive_max_pool2d(randn({2, 3, 5, 7}), {-1, 2}), ValueError);
  EXPECT_THROW(F::adaptive_max_pool1d(randn({5}), 2), ValueError);
  check([] { F::adaptive_max_pool1d(randn({5}), 2); }, "adaptive_max_pool1d");
  check([] { F::adaptive_max_pool1d(randn({2, 3, 0}), 2); }, "adaptive_max_pool1d");
  EXPECT_EQ(F::adaptive_max_pool2d(randn({2, 3, 5, 7}), {0, 2}).sizes().vec(), (std::vector<int64_t>{2, 3, 0, 2}));
}

TEST(NnPortModules, PrintAsPyTorch) {
  EXPECT_EQ(repr(*nn::AdaptiveMaxPool2d(3)), "AdaptiveMaxPool2d(output_size=3)");
  EXPECT_EQ(repr(*nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({2, 3}))), "AdaptiveMaxPool2d(output_size=(2, 3))");
  EXPECT_EQ(repr(*nn::AdaptiveMaxPool1d(4)), "AdaptiveMaxPool1d(output_size=4)");
  EXPECT_EQ(repr(*nn::BatchNorm3d(4)), "BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(repr(*nn::InstanceNorm1d(3)),
            "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  EXPECT_EQ(repr(*nn::InstanceNorm2d(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true))),
            "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(repr(*nn::InstanceNorm3d(nn::InstanceNorm3dOptions(3).momentum(std::nullopt))),
            "InstanceNorm3d(3, eps=1e-05, momentum=None, affine=False, track_running_stats=False)");
  EXPECT_EQ(repr(*nn::Bilinear(2, 3, 4)), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)");
  EXPECT_EQ(repr(*nn::Bilinear(nn::BilinearOptions(2, 3, 4).bias(false))),
            "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=False)");
  EXPECT_EQ(repr(*nn::EmbeddingBag(10, 3)), "EmbeddingBag(10, 3, mode=mean)");
  EXPECT_EQ(repr(*nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).mode(kMax).padding_idx(0))),
            "EmbeddingBag(10, 3, mode=max, padding_idx=0)");
  EXPECT_EQ(repr(*nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).include_last_offset(true).max_norm(2.0))),
            "EmbeddingBag(10, 3, max_norm=2.0, mode=mean)");
  EXPECT_EQ(repr(*nn::ConstantPad1d(2, 3.5)), "ConstantPad1d(padding=(2, 2), value=3.5)");
  EXPECT_EQ(repr(*nn::ConstantPad3d(nn::ConstantPad3dOptions({1, 2, 3, 4, 5, 6}, 0.5))),
            "ConstantPad3d(padding=(1, 2, 3, 4, 5, 6), value=0.5)");
  EXPECT_EQ(repr(*nn::ReflectionPad1d(2)), "ReflectionPad1d((2, 2))");
  EXPECT_EQ(repr(*nn::ReflectionPad3d(1)), "ReflectionPad3d((1, 1, 1, 1, 1, 1))");
  EXPECT_EQ(repr(*nn::ReplicationPad1d(nn::ReplicationPad1dOptions({1, 2}))), "ReplicationPad1d((1, 2))");
  EXPECT_EQ(repr(*nn::ReplicationPad3d(2)), "ReplicationPad3d((2, 2, 2, 2, 2, 2))");
  // PyTorch 2's ZeroPad1d and ZeroPad3d (1.13 has neither)
  EXPECT_EQ(repr(*nn::ZeroPad1d(nn::ZeroPad1dOptions({1, 2}))), "ZeroPad1d((1, 2))");
  EXPECT_EQ(repr(*nn::ZeroPad3d(1)), "ZeroPad3d((1, 1, 1, 1, 1, 1))");
}

TEST(NnPortModules, PaddingOptionsTakeOneOrEveryValue) {
  EXPECT_EQ(nn::ZeroPad1dOptions(3).padding(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(nn::ReflectionPad3dOptions({1, 2, 3, 4, 5, 6}).padding(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(nn::ConstantPad3dOptions({2}, 1.0).padding(), (std::vector<int64_t>(6, 2)));
  EXPECT_THROW(nn::ZeroPad1dOptions({1, 2, 3}), ValueError);
  EXPECT_TRUE(names([] { nn::ZeroPad1dOptions({1, 2, 3}); }, "ZeroPad1dOptions"));
  EXPECT_THROW(nn::ReplicationPad3dOptions({1, 2, 3, 4}), ValueError);
  EXPECT_TRUE(names([] { nn::ConstantPad3dOptions({1, 2}, 0.0); }, "ConstantPad3dOptions"));
  // options assigned after construction are checked by the layer
  nn::ZeroPad1dOptions o(1);
  o.padding({1, 2, 3});
  EXPECT_THROW(nn::ZeroPad1d{o}, ValueError);
  EXPECT_TRUE(names([&] { nn::ZeroPad1d{o}; }, "ZeroPad1d"));
}

TEST(NnPortModules, InstanceNormLoadsAPyTorchStateDict) {
  nn::InstanceNorm2d src(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  {
    NoGradGuard g;
    src->weight.copy_(tensor({1.0, 2.0, 3.0}));
    src->running_var.copy_(tensor({4.0, 5.0, 6.0}));
  }
  nn::InstanceNorm2d dst(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  dst->load_state_dict(src->state_dict());
  expect_close(dst->weight, {1.0, 2.0, 3.0}, 0);
  expect_close(dst->running_var, {4.0, 5.0, 6.0}, 0);
  nn::BatchNorm3d bn(3);
  EXPECT_EQ(keys(*bn), (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
}

TEST(NnPortModules, TransformerOptionsSpellings) {
  auto layer_options = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0);
  nn::TransformerEncoder from_options(nn::TransformerEncoderOptions(layer_options, 3).norm(nn::LayerNorm(std::vector<int64_t>{8})));
  EXPECT_EQ(from_options->layers->size(), 3u);
  EXPECT_TRUE(bool(from_options->norm));
  EXPECT_EQ(from_options->num_layers, 3);
  nn::TransformerEncoderLayer layer(layer_options);
  nn::TransformerEncoder from_layer(nn::TransformerEncoderOptions(layer, 2));
  nn::TransformerEncoder classic(layer, 2);
  EXPECT_FALSE(bool(from_layer->norm));
  EXPECT_EQ(keys(*from_layer), keys(*classic));
  // copies of the layer: the same values at the start
  Tensor x = randn({5, 2, 8});
  from_layer->eval();
  classic->eval();
  expect_close(from_layer(x), classic(x), 1e-6);

  nn::TransformerDecoder dec(nn::TransformerDecoderOptions(nn::TransformerDecoderLayerOptions(8, 2).dropout(0.0), 2)
                                 .norm(nn::LayerNorm(std::vector<int64_t>{8})));
  EXPECT_EQ(dec->layers->size(), 2u);
  EXPECT_TRUE(bool(dec->norm));
  nn::TransformerDecoderLayer dlayer(nn::TransformerDecoderLayerOptions(8, 2));
  nn::TransformerDecoder dec2(nn::TransformerDecoderOptions(dlayer, 1));
  EXPECT_EQ(dec2(randn({3, 2, 8}), randn({4, 2, 8})).sizes().vec(), (std::vector<int64_t>{3, 2, 8}));
  EXPECT_THROW(nn::TransformerEncoder(nn::TransformerEncoderOptions(layer_options, -1)), ValueError);
}

TEST(NnPortModules, AutogradGradModeIsGradMode) {
  static_assert(std::is_same_v<autograd::GradMode, GradMode>);
  ASSERT_TRUE(GradMode::is_enabled());
  autograd::GradMode::set_enabled(false);
  EXPECT_FALSE(GradMode::is_enabled());
  EXPECT_FALSE(ones({2}).requires_grad_().mul(2).requires_grad());
  autograd::GradMode::set_enabled(true);
  EXPECT_TRUE(autograd::GradMode::is_enabled());
}

}  // namespace
