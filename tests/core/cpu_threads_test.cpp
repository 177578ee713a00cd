// The CPU kernels' parallel paths against their serial ones: set_num_threads(1) and (2, 3)
// give the same values, bitwise for elementwise ops, softmax and the losses (each element or
// row is computed the same way whichever thread does it), within rounding for sums whose
// order changes with the split. Sizes below and above the parallel threshold (32768
// elements), contiguous and non-contiguous inputs; every result is also checked against a
// reference computed here in double. And set_num_threads's errors, and ops called from many
// threads and from inside an OpenMP parallel region (run serially there: no nested teams).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "wick/wick.h"

namespace wick {
namespace {

// Restores the thread count a test changed.
class ThreadsScope {
 public:
  ThreadsScope() : saved_(get_num_threads()) {}
  ~ThreadsScope() { set_num_threads(saved_); }

 private:
  int saved_;
};

std::vector<double> values(const Tensor& t) {
  auto c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Same dtype, shape and bits.
void expect_same_bits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  auto ca = a.contiguous(), cb = b.contiguous();
  EXPECT_EQ(std::memcmp(ca.data_ptr(), cb.data_ptr(), size_t(ca.numel()) * ca.element_size()), 0);
}

void expect_near(const Tensor& t, const std::vector<double>& want, double rel) {
  auto got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1 + std::abs(want[i]))) << "element " << i;
}

// f() computed with 1 thread and with 2 and 3 threads (3: an uneven split).
template <class F>
std::vector<Tensor> with_threads(const F& f) {
  ThreadsScope scope;
  std::vector<Tensor> r;
  for (int n : {1, 2, 3}) {
    set_num_threads(n);
    r.push_back(f());
  }
  return r;
}

// Sizes on both sides of the threshold, and one not a multiple of anything.
const int64_t kSizes[] = {1000, 32768, 100003, int64_t(1) << 20};

TEST(CpuThreads, SetAndGet) {
  ThreadsScope scope;
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  // The setting holds for ops run on other threads too.
  int seen = 0;
  std::thread([&] { seen = get_num_threads(); }).join();
  EXPECT_EQ(seen, 1);
}

TEST(CpuThreads, NonPositiveCountsThrowAndChangeNothing) {
  ThreadsScope scope;
  set_num_threads(2);
  for (int n : {0, -1}) {
    try {
      set_num_threads(n);
      FAIL() << "no error for " << n;
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[set_num_threads] ", 0), 0u) << e.what();
    }
    EXPECT_EQ(get_num_threads(), 2);
  }
}

TEST(CpuThreads, ElementwiseBitwiseAcrossThreadCounts) {
  for (int64_t n : kSizes) {
    auto a = randn({n}), b = randn({n});
    auto va = values(a), vb = values(b);
    // Contiguous binary, scalar, unary, comparison, where and clamp.
    auto add = with_threads([&] { return a + b; });
    auto scaled = with_threads([&] { return a * 2.5; });
    auto ex = with_threads([&] { return exp(a); });
    auto sig = with_threads([&] { return sigmoid(a); });
    auto cmp = with_threads([&] { return lt(a, b); });
    auto wh = with_threads([&] { return where(gt(a, 0.0), a, b); });
    auto cl = with_threads([&] { return clamp(a, std::optional<Scalar>(-0.5), std::optional<Scalar>(0.5)); });
    for (int k = 1; k < 3; ++k) {
      expect_same_bits(add[0], add[k]);
      expect_same_bits(scaled[0], scaled[k]);
      expect_same_bits(ex[0], ex[k]);
      expect_same_bits(sig[0], sig[k]);
      expect_same_bits(cmp[0], cmp[k]);
      expect_same_bits(wh[0], wh[k]);
      expect_same_bits(cl[0], cl[k]);
    }
    std::vector<double> want_add(va.size()), want_exp(va.size()), want_cl(va.size()), want_wh(va.size());
    for (size_t i = 0; i < va.size(); ++i) {
      want_add[i] = double(float(va[i]) + float(vb[i]));
      want_exp[i] = std::exp(va[i]);
      want_cl[i] = std::min(std::max(va[i], -0.5), 0.5);
      want_wh[i] = va[i] > 0 ? va[i] : vb[i];
    }
    expect_near(add[2], want_add, 0);
    expect_near(ex[2], want_exp, 1e-6);
    expect_near(cl[2], want_cl, 0);
    expect_near(wh[2], want_wh, 0);
    auto c = values(cmp[2]);
    for (size_t i = 0; i < va.size(); ++i) ASSERT_EQ(c[i] != 0, va[i] < vb[i]) << i;
  }
}

TEST(CpuThreads, NonContiguousElementwiseBitwise) {
  // A transposed operand, a strided slice and a broadcast row: each takes the strided runs.
  for (int64_t rows : {16, 700}) {
    auto base = randn({rows, 512});
    auto tr = randn({512, rows}).t();
    auto sliced = randn({rows, 1024}).slice(1, 0, 1024, 2);
    auto row = randn({512});
    auto sum3 = with_threads([&] { return base + tr * sliced - row; });
    auto cp = with_threads([&] { return tr.contiguous(); });
    for (int k = 1; k < 3; ++k) {
      expect_same_bits(sum3[0], sum3[k]);
      expect_same_bits(cp[0], cp[k]);
    }
    auto vb = values(base), vt = values(tr), vs = values(sliced), vr = values(row);
    std::vector<double> want(vb.size());
    for (size_t i = 0; i < vb.size(); ++i)
      want[i] = double(float(float(vb[i]) + float(float(vt[i]) * float(vs[i]))) - float(vr[i % 512]));
    expect_near(sum3[1], want, 0);
    expect_near(cp[2], vt, 0);
  }
}

TEST(CpuThreads, FillAndCopyAcrossThreadCounts) {
  for (int64_t n : kSizes) {
    auto f = with_threads([&] { return full({n}, 1.25); });
    auto h = with_threads([&] { return f[0].to(kFloat16); });
    for (int k = 1; k < 3; ++k) {
      expect_same_bits(f[0], f[k]);
      expect_same_bits(h[0], h[k]);
    }
    expect_near(h[1], std::vector<double>(size_t(n), 1.25), 0);
  }
}

// Sums: the split changes the order of additions, so the thread counts agree within rounding,
// and all agree with a double sum.
TEST(CpuThreads, SumsWithinRounding) {
  for (int64_t n : kSizes) {
    auto a = randn({n});
    auto va = values(a);
    double want = 0;
    for (double v : va) want += v;
    auto s = with_threads([&] { return sum(a); });
    auto m = with_threads([&] { return mean(a); });
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(s[k].item<double>(), want, 1e-4 * std::sqrt(double(n))) << n << " threads " << k + 1;
      EXPECT_NEAR(m[k].item<double>(), want / double(n), 1e-4 / std::sqrt(double(n))) << n;
    }
  }
  // A few long rows (fewer rows than threads: the rows are split), many short rows, and
  // columns (the reduced dim not innermost), contiguous and transposed.
  for (auto shape :
       {std::vector<int64_t>{2, 300000}, std::vector<int64_t>{3000, 100}, std::vector<int64_t>{70000, 3}}) {
    auto a = randn(shape);
    const int64_t R = shape[0], C = shape[1];
    auto va = values(a);
    // Float sums err by a few ulps of the sum of magnitudes (pairwise: log n, not n).
    std::vector<double> rows(size_t(R), 0.0), cols(size_t(C), 0.0), row_tol(size_t(R), 0.0),
        col_tol(size_t(C), 0.0);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const double v = va[size_t(r * C + c)];
        rows[size_t(r)] += v;
        cols[size_t(c)] += v;
        row_tol[size_t(r)] += 1e-6 * std::abs(v);
        col_tol[size_t(c)] += 1e-6 * std::abs(v);
      }
    auto sr = with_threads([&] { return sum(a, {1}); });
    auto sc = with_threads([&] { return sum(a, {0}); });
    auto st = with_threads([&] { return sum(a.t(), {0}); });  // rows again, through a transposed view
    auto check = [](const Tensor& t, const std::vector<double>& want, const std::vector<double>& tol) {
      auto got = values(t);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol[i]) << "element " << i;
    };
    for (int k = 0; k < 3; ++k) {
      check(sr[k], rows, row_tol);
      check(sc[k], cols, col_tol);
      check(st[k], rows, row_tol);
    }
  }
}

TEST(CpuThreads, MaxArgmaxVarNormAcrossThreadCounts) {
  for (auto shape : {std::vector<int64_t>{1, 1000}, std::vector<int64_t>{1, 200003},
                     std::vector<int64_t>{3, 70000}, std::vector<int64_t>{5000, 64}}) {
    auto a = randn(shape);
    const int64_t R = shape[0], C = shape[1];
    auto va = values(a);
    std::vector<double> mx(size_t(R), -INFINITY), am(size_t(R), 0), mean_(size_t(R), 0), var_(size_t(R), 0),
        nrm(size_t(R), 0);
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t c = 0; c < C; ++c) {
        const double v = va[size_t(r * C + c)];
        if (v > mx[size_t(r)]) {
          mx[size_t(r)] = v;
          am[size_t(r)] = double(c);
        }
        mean_[size_t(r)] += v / double(C);
        nrm[size_t(r)] += v * v;
      }
      for (int64_t c = 0; c < C; ++c) {
        const double d = va[size_t(r * C + c)] - mean_[size_t(r)];
        var_[size_t(r)] += d * d / double(C - 1);
      }
      nrm[size_t(r)] = std::sqrt(nrm[size_t(r)]);
    }
    auto m = with_threads([&] { return std::get<0>(max(a, 1)); });
    auto i = with_threads([&] { return std::get<1>(max(a, 1)); });
    auto ai = with_threads([&] { return argmax(a, 1); });
    auto v = with_threads([&] { return var(a, {1}); });
    auto nm = with_threads([&] { return norm(a, 2, {1}); });
    for (int k = 0; k < 3; ++k) {
      expect_same_bits(m[0], m[k]);  // max and its index never depend on the split
      expect_same_bits(i[0], i[k]);
      expect_same_bits(ai[0], ai[k]);
      expect_near(m[k], mx, 0);
      expect_near(i[k], am, 0);
      expect_near(v[k], var_, 1e-5);
      expect_near(nm[k], nrm, 1e-5);
    }
  }
}

TEST(CpuThreads, SoftmaxBitwiseAcrossThreadCounts) {
  // Rows (last dim), columns (dim 0 of a [n, inner] tensor), and a non-contiguous input.
  for (auto shape :
       {std::vector<int64_t>{8, 100}, std::vector<int64_t>{512, 1024}, std::vector<int64_t>{300, 257}}) {
    auto x = randn(shape);
    for (int64_t dim : {1, 0}) {
      auto s = with_threads([&] { return softmax(x, dim); });
      auto l = with_threads([&] { return log_softmax(x, dim); });
      auto t = with_threads([&] { return softmax(x.t(), 1 - dim); });
      for (int k = 1; k < 3; ++k) {
        expect_same_bits(s[0], s[k]);
        expect_same_bits(l[0], l[k]);
        expect_same_bits(t[0], t[k]);
      }
      const int64_t R = shape[0], C = shape[1];
      auto vx = values(x);
      std::vector<double> want(vx.size());
      const int64_t outer = dim == 1 ? R : C, len = dim == 1 ? C : R;
      for (int64_t o = 0; o < outer; ++o) {
        auto at = [&](int64_t j) { return dim == 1 ? size_t(o * C + j) : size_t(j * C + o); };
        double mx = -INFINITY, se = 0;
        for (int64_t j = 0; j < len; ++j) mx = std::max(mx, vx[at(j)]);
        for (int64_t j = 0; j < len; ++j) se += std::exp(vx[at(j)] - mx);
        for (int64_t j = 0; j < len; ++j) want[at(j)] = std::exp(vx[at(j)] - mx) / se;
      }
      expect_near(s[2], want, 1e-6);
    }
  }
  // The backward through autograd, per row.
  auto x = randn({256, 1024});
  auto g = randn({256, 1024});
  auto grads = with_threads([&] {
    auto leaf = x.clone().requires_grad_();
    softmax(leaf, 1).backward(g);
    return leaf.grad().clone();
  });
  for (int k = 1; k < 3; ++k) expect_same_bits(grads[0], grads[k]);
}

// Softmax and log_softmax over the rows of the benchmark's shape family (rows of 1024, and of
// lengths that leave a tail after the 16-lane blocks), on 16 threads and on 4, against float64:
// scaled and shifted rows, a row of one large value, rows holding -inf, and a NaN row.
TEST(CpuThreads, SoftmaxRowsAgainstFloat64) {
  ThreadsScope scope;
  for (auto shape : {std::vector<int64_t>{4096, 1024}, std::vector<int64_t>{1000, 1003}}) {
    const int64_t R = shape[0], C = shape[1];
    auto x = randn(shape) * 4 + 3;
    x.select(0, 1).fill_(-INFINITY);
    x.select(0, 1).select(0, 5).fill_(2.5);  // one finite entry
    x.select(0, 2).select(0, C - 1).fill_(-INFINITY);
    x.select(0, 3).fill_(1e30);
    x.select(0, 4).select(0, 7).fill_(NAN);
    auto vx = values(x);
    std::vector<double> want(vx.size()), want_log(vx.size());
    for (int64_t r = 0; r < R; ++r) {
      const double* row = vx.data() + r * C;
      double mx = -INFINITY, se = 0;
      for (int64_t j = 0; j < C; ++j) mx = std::max(mx, row[j]);
      for (int64_t j = 0; j < C; ++j) se += std::exp(row[j] - mx);
      for (int64_t j = 0; j < C; ++j) {
        want[size_t(r * C + j)] = std::exp(row[j] - mx) / se;
        want_log[size_t(r * C + j)] = row[j] - mx - std::log(se);
      }
    }
    for (int threads : {16, 4}) {
      SCOPED_TRACE(::testing::Message() << R << "x" << C << " on " << threads << " threads");
      set_num_threads(threads);
      auto got = values(softmax(x, 1)), got_log = values(log_softmax(x, 1));
      for (size_t i = 0; i < want.size(); ++i) {
        if (i / size_t(C) == 4) {  // the NaN row is NaN throughout
          ASSERT_TRUE(std::isnan(got[i]) && std::isnan(got_log[i])) << i;
          continue;
        }
        // Relative: float's rounding of x - max (|x| up to about 20 here) and of exp.
        ASSERT_NEAR(got[i], want[i], 4e-6 * want[i] + 1e-12) << "softmax element " << i;
        if (std::isinf(want_log[i])) ASSERT_EQ(got_log[i], want_log[i]) << "log_softmax element " << i;
        else ASSERT_NEAR(got_log[i], want_log[i], 2e-6 * (1 + std::abs(want_log[i]))) << "log_softmax " << i;
      }
    }
  }
}

TEST(CpuThreads, LossesBitwiseAcrossThreadCounts) {
  for (int64_t N : {16, 4096}) {
    const int64_t C = 64;
    auto logits = randn({N, C});
    auto target = randint(C, {N});
    auto ce = with_threads([&] { return nn::functional::cross_entropy(logits, target); });
    auto none = with_threads([&] { return nn::functional::cross_entropy(logits, target, {}, -100, "none"); });
    auto grads = with_threads([&] {
      auto leaf = logits.clone().requires_grad_();
      nn::functional::cross_entropy(leaf, target).backward();
      return leaf.grad().clone();
    });
    for (int k = 1; k < 3; ++k) {
      expect_same_bits(ce[0], ce[k]);
      expect_same_bits(none[0], none[k]);
      expect_same_bits(grads[0], grads[k]);
    }
    auto vx = values(logits), vt = values(target);
    std::vector<double> want(static_cast<size_t>(N));
    double total = 0;
    for (int64_t n = 0; n < N; ++n) {
      double mx = -INFINITY, se = 0;
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, vx[size_t(n * C + c)]);
      for (int64_t c = 0; c < C; ++c) se += std::exp(vx[size_t(n * C + c)] - mx);
      want[size_t(n)] = -(vx[size_t(n * C + int64_t(vt[size_t(n)]))] - mx - std::log(se));
      total += want[size_t(n)];
    }
    expect_near(none[1], want, 1e-5);
    EXPECT_NEAR(ce[2].item<double>(), total / double(N), 1e-5);
  }
}

// Ops run concurrently from several std::threads, each with its own large tensors.
TEST(CpuThreads, OpsFromManyThreads) {
  ThreadsScope scope;
  set_num_threads(2);
  std::vector<double> got(4), want(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      auto a = full({200000}, double(t + 1));
      got[size_t(t)] = sum(a * 2.0 + 1.0).item<double>();
      want[size_t(t)] = 200000.0 * (2.0 * (t + 1) + 1.0);
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_DOUBLE_EQ(got[size_t(t)], want[size_t(t)]);
}

int os_threads() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
  return n;
}

// Inside an OpenMP parallel region (a caller's own, or wick's), wick's loops and the BLAS run
// on the calling thread: no nested team is started, even where nesting is allowed. A nested
// team's threads exist only while it runs, so a sampling thread watches the process's thread
// count meanwhile: it never exceeds the outer team plus the sampler.
TEST(CpuThreads, CallsFromInsideAParallelRegionStartNoNestedTeam) {
  ThreadsScope scope;
  set_num_threads(2);
  auto a = randn({300000});
  auto m1 = randn({192, 192}), m2 = randn({192, 192});
  const double want_sum = sum(a.to(kFloat64)).item<double>();
  auto want_mm = values(mm(m1.to(kFloat64), m2.to(kFloat64)));
  std::vector<double> sums(2);
  std::vector<Tensor> prods(2);
#pragma omp parallel num_threads(2)
  { (void)omp_get_thread_num(); }  // the outer team's threads exist from here on
  const int before = os_threads();
  const int saved_levels = omp_get_max_active_levels();
  omp_set_max_active_levels(4);
  std::atomic<bool> stop{false};
  std::atomic<int> most{0};
  std::thread sampler([&] {
    while (!stop.load()) most.store(std::max(most.load(), os_threads()));
  });
  for (int round = 0; round < 10; ++round) {
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      sums[size_t(t)] = sum(exp(a * 0.0)).item<double>() + sum(a).item<double>();
      prods[size_t(t)] = mm(m1, m2);
    }
  }
  stop.store(true);
  sampler.join();
  omp_set_max_active_levels(saved_levels);
  EXPECT_LE(most.load(), before + 1);
  for (int t = 0; t < 2; ++t) {
    EXPECT_NEAR(sums[size_t(t)], 300000.0 + want_sum, 1e-2) << t;
    expect_near(prods[size_t(t)], want_mm, 1e-4);
  }
}

}  // namespace
}  // namespace wick
