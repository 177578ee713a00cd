// The second half of the table-driven op test (ops_table_test.cpp): the matmul family,
// index_select, gather, cat, stack, one_hot, clone, fill_ and the views, for each dtype and
// layout on each device, against float64 references computed with plain loops.
#include <algorithm>
#include <optional>

#include "core/checks.h"
#include "op_reference.h"

namespace wick::test {
namespace {

using Values = std::vector<double>;
using Run = std::function<Tensor(std::vector<Tensor>&)>;

// ============================================================================ matmul family

// numpy's matmul on host values (1-D operands promoted and their dim removed after).
Host ref_matmul(const Host& a, const Host& b) {
  Host A = a, B = b;
  if (A.sizes.size() == 1) A.sizes.insert(A.sizes.begin(), 1);
  if (B.sizes.size() == 1) B.sizes.push_back(1);
  const int64_t n = A.sizes[A.sizes.size() - 2], k = A.sizes.back(), m = B.sizes.back();
  Shape ba(A.sizes.begin(), A.sizes.end() - 2), bb(B.sizes.begin(), B.sizes.end() - 2);
  Shape batch = broadcast_shape({ba, bb});
  Shape ea(batch), eb(batch);
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  Host a3 = expand_host(A, ea), b3 = expand_host(B, eb);
  Shape out_sizes(batch);
  if (a.sizes.size() > 1) out_sizes.push_back(n);
  if (b.sizes.size() > 1) out_sizes.push_back(m);
  Host out{out_sizes, {}};
  for (int64_t q = 0; q < numel_of(batch); ++q)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a3.v[size_t((q * n + i) * k + p)] * b3.v[size_t((q * k + p) * m + j)];
        out.v.push_back(s);
      }
  return out;
}

// One operand: the shape it is made in, and the shape it is expanded to (empty: none).
struct Operand {
  Shape shape;
  Shape expand_to = {};
};

struct MatCase {
  std::string name;
  std::vector<Dtype> dtypes;
  Run run;
  std::function<Host(const std::vector<Host>&, Dtype)> ref;
  // Operands for each layout; a layout missing here is not meaningful for the op.
  std::vector<std::pair<Layout, std::vector<Operand>>> shapes;
};

Host ref_addmm(const std::vector<Host>& h, double beta, double alpha) {
  Host p = ref_matmul(h[1], h[2]);
  Host in = expand_host(h[0], p.sizes);
  for (size_t i = 0; i < p.v.size(); ++i) p.v[i] = beta * in.v[i] + alpha * p.v[i];
  return p;
}

Host ref_linear(const std::vector<Host>& h) {
  Host wt{{h[1].sizes[1], h[1].sizes[0]}, {}};
  for (int64_t j = 0; j < h[1].sizes[1]; ++j)
    for (int64_t i = 0; i < h[1].sizes[0]; ++i) wt.v.push_back(h[1].v[size_t(i * h[1].sizes[1] + j)]);
  Host y = ref_matmul(h[0], wt);
  if (h.size() > 2) {
    Host b = expand_host(h[2], y.sizes);
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += b.v[i];
  }
  return y;
}

std::vector<MatCase> matmul_table() {
  // One row per op reads better than the formatter's layout.
  // clang-format off
  const std::vector<Dtype> dt = {kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  auto mm_ref = [](const std::vector<Host>& h, Dtype) { return ref_matmul(h[0], h[1]); };
  using L = Layout;
  return {
      {"mm", dt, [](auto& x) { return mm(x[0], x[1]); }, mm_ref,
       {{L::Contiguous, {{{3, 4}}, {{4, 5}}}},
        {L::Transposed, {{{3, 4}}, {{4, 5}}}},
        {L::Sliced, {{{3, 4}}, {{4, 5}}}},
        {L::Broadcast, {{{1, 4}, {3, 4}}, {{4, 1}, {4, 5}}}},
        {L::Empty, {{{3, 0}}, {{0, 5}}}}}},
      {"bmm", dt, [](auto& x) { return bmm(x[0], x[1]); }, mm_ref,
       {{L::Contiguous, {{{2, 3, 4}}, {{2, 4, 5}}}},
        {L::Transposed, {{{2, 3, 4}}, {{2, 4, 5}}}},
        {L::Sliced, {{{2, 3, 4}}, {{2, 4, 5}}}},
        {L::Broadcast, {{{1, 3, 4}, {2, 3, 4}}, {{2, 4, 5}}}},
        {L::Empty, {{{2, 0, 4}}, {{2, 4, 5}}}}}},
      {"matmul", dt, [](auto& x) { return matmul(x[0], x[1]); }, mm_ref,
       {{L::Contiguous, {{{4}}, {{4}}}},
        {L::Contiguous, {{{3, 4}}, {{4}}}},
        {L::Contiguous, {{{4}}, {{4, 5}}}},
        {L::Contiguous, {{{2, 3, 4}}, {{4, 5}}}},
        {L::Transposed, {{{3, 4}}, {{2, 4, 5}}}},
        {L::Sliced, {{{2, 3, 4}}, {{2, 4, 5}}}},
        {L::Broadcast, {{{2, 1, 3, 4}}, {{5, 4, 2}}}},
        {L::Empty, {{{0, 3, 4}}, {{4, 5}}}}}},
      {"addmm", dt,
       [](auto& x) {
         return is_floating_point(x[0].dtype()) ? addmm(x[0], x[1], x[2], 0.5, 2.0) : x[0].addmm(x[1], x[2], 2, 3);
       },
       [](const std::vector<Host>& h, Dtype t) { return is_floating_point(t) ? ref_addmm(h, 0.5, 2) : ref_addmm(h, 2, 3); },
       {{L::Contiguous, {{{3, 5}}, {{3, 4}}, {{4, 5}}}},
        {L::Transposed, {{{3, 5}}, {{3, 4}}, {{4, 5}}}},
        {L::Sliced, {{{3, 5}}, {{3, 4}}, {{4, 5}}}},
        {L::Broadcast, {{{5}}, {{3, 4}}, {{4, 5}}}},
        {L::Empty, {{{3, 5}}, {{3, 0}}, {{0, 5}}}}}},
      {"linear", dt, [](auto& x) { return linear(x[0], x[1], x[2]); },
       [](const std::vector<Host>& h, Dtype) { return ref_linear(h); },
       {{L::Contiguous, {{{2, 3, 4}}, {{5, 4}}, {{5}}}},
        {L::Transposed, {{{3, 4}}, {{5, 4}}, {{5}}}},
        {L::Sliced, {{{2, 3, 4}}, {{5, 4}}, {{5}}}},
        {L::Broadcast, {{{1, 4}, {3, 4}}, {{5, 4}}, {{1}, {5}}}},
        {L::Empty, {{{0, 4}}, {{5, 4}}, {{5}}}}}},
      {"linear", dt, [](auto& x) { return linear(x[0], x[1]); },
       [](const std::vector<Host>& h, Dtype) { return ref_linear(h); },
       {{L::Contiguous, {{{4}}, {{5, 4}}}}, {L::Transposed, {{{2, 3, 4}}, {{5, 4}}}}}},
  };
  // clang-format on
}

TEST_P(OpsTable, MatmulFamily) {
  for (const auto& op : matmul_table()) {
    for (Dtype t : op.dtypes) {
      for (const auto& [l, operands] : op.shapes) {
        std::vector<Host> hosts;
        std::vector<Tensor> ins;
        for (const Operand& o : operands) {
          Host h = random_host(o.shape, t, Domain::Any, rng_);
          Tensor x = with_layout(h, t, device_, l);
          if (!o.expand_to.empty()) {
            x = x.expand(o.expand_to);
            h = expand_host(h, o.expand_to);
          }
          hosts.push_back(h);
          ins.push_back(x);
        }
        std::string shapes;
        for (auto& h : hosts) shapes.append(" ").append(str(h.sizes));
        const std::string w = what(op.name, t, l, shapes);
        Tensor got;
        try {
          got = op.run(ins);
        } catch (const std::exception& e) {
          ADD_FAILURE() << w << ": " << e.what();
          continue;
        }
        // Sums of k products: allow for k roundings of the 16-bit inputs' products.
        expect_matches(got, op.ref(hosts, t), t, w, 4);
      }
    }
    // 0-d operands and bool are errors.
    std::vector<Tensor> scalars(op.shapes[0].second.size(),
                                ones({}, TensorOptions(kFloat32).device(device_)));
    EXPECT_THROW(op.run(scalars), Error) << op.name << " with 0-d operands";
  }
}

TEST_P(OpsTable, IndexSelectAndGather) {
  const Shape base{3, 4, 5};
  for (Dtype t : kAllDtypes) {
    for (Layout l :
         {Layout::Contiguous, Layout::Transposed, Layout::Sliced, Layout::Broadcast, Layout::Empty}) {
      Shape shape = l == Layout::Empty ? Shape{3, 0, 5} : base;
      Host h = random_host(l == Layout::Broadcast ? Shape{3, 1, 5} : shape, t, Domain::Any, rng_);
      Tensor x = with_layout(h, t, device_, l);
      if (l == Layout::Broadcast) {
        x = x.expand(base);
        h = expand_host(h, base);
      }
      for (int64_t dim : {0, 1, -1}) {
        const size_t d = size_t(dim < 0 ? dim + 3 : dim);
        const int64_t n = h.sizes[d];
        if (n == 0) {  // nothing to index: any index is out of bounds
          EXPECT_THROW(index_select(x, dim, tensor({0}).to(device_)), IndexError);
          continue;
        }
        // index_select with a 1-D index (int64, or int32 laid out with a step).
        for (Dtype it : {kInt64, kInt32}) {
          Host idx{{6}, {}};
          for (int i = 0; i < 6; ++i) idx.v.push_back(double(rng_() % uint64_t(n)));
          Tensor index = with_layout(idx, it, device_, it == kInt32 ? Layout::Sliced : Layout::Contiguous);
          Shape os(h.sizes);
          os[d] = 6;
          Host want{os, std::vector<double>(size_t(numel_of(os)))};
          Shape pos(3);
          for (size_t e = 0; e < want.v.size(); ++e) {
            int64_t rem = int64_t(e);
            for (size_t k = 3; k-- > 0;) pos[k] = rem % os[k], rem /= os[k];
            Shape src(pos);
            src[d] = int64_t(idx.v[size_t(pos[d])]);
            want.v[e] = h.at(src);
          }
          expect_matches(x.index_select(dim, index), want, t,
                         what("index_select", t, l, " dim " + std::to_string(dim)));
        }
        // gather: index of x's rank, smaller in other dims.
        Shape is(h.sizes);
        is[d] = 6;
        for (size_t k = 0; k < 3; ++k)
          if (k != d && is[k] > 1) is[k] -= 1;
        Host idx{is, {}};
        for (int64_t i = 0; i < numel_of(is); ++i) idx.v.push_back(double(rng_() % uint64_t(n)));
        Host want{is, {}};
        Shape pos(3);
        for (size_t e = 0; e < idx.v.size(); ++e) {
          int64_t rem = int64_t(e);
          for (size_t k = 3; k-- > 0;) pos[k] = rem % is[k], rem /= is[k];
          Shape src(pos);
          src[d] = int64_t(idx.v[e]);
          want.v.push_back(h.at(src));
        }
        Tensor index = with_layout(idx, kInt64, device_, l == Layout::Transposed ? l : Layout::Contiguous);
        expect_matches(gather(x, dim, index), want, t, what("gather", t, l, " dim " + std::to_string(dim)));
      }
    }
    // 0-d: index 0 only.
    Tensor s = full({}, 1, TensorOptions(t).device(device_));
    EXPECT_EQ(index_select(s, 0, tensor({0}).to(device_)).dim(), 0);
    EXPECT_EQ(gather(s, 0, tensor({0}).view({}).to(device_)).dim(), 0);
  }
}

TEST_P(OpsTable, CatStackOneHotCloneFill) {
  for (Dtype t : kAllDtypes) {
    for (Layout l :
         {Layout::Contiguous, Layout::Transposed, Layout::Sliced, Layout::Broadcast, Layout::Empty}) {
      // cat along each dim, with a second dtype that promotes.
      for (int64_t dim : {0, 1, -1}) {
        const size_t d = size_t(dim < 0 ? dim + 3 : dim);
        Shape sa{3, 4, 5}, sb{3, 4, 5};
        sb[d] = 2;
        if (l == Layout::Empty) sa[d] = 0;
        for (Dtype t2 : {t, kFloat32}) {
          Host ha = random_host(sa, t, Domain::Any, rng_), hb = random_host(sb, t2, Domain::Any, rng_);
          Tensor a = with_layout(ha, t, device_, l), b = with_layout(hb, t2, device_, l);
          if (l == Layout::Broadcast) {  // a stride-0 first input
            Shape small(sa);
            small[(d + 1) % 3] = 1;
            ha = random_host(small, t, Domain::Any, rng_);
            a = to_tensor(ha, t, device_).expand(sa);
            ha = expand_host(ha, sa);
          }
          Shape so(sa);
          so[d] = sa[d] + sb[d];
          Host want{so, std::vector<double>(size_t(numel_of(so)))};
          Shape pos(3);
          for (size_t e = 0; e < want.v.size(); ++e) {
            int64_t rem = int64_t(e);
            for (size_t k = 3; k-- > 0;) pos[k] = rem % so[k], rem /= so[k];
            Shape src(pos);
            if (pos[d] < sa[d]) {
              want.v[e] = ha.at(src);
            } else {
              src[d] -= sa[d];
              want.v[e] = hb.at(src);
            }
          }
          expect_matches(cat({a, b}, dim), want, promote_types(t, t2),
                         what("cat", t, l, " dim " + std::to_string(dim)));
        }
      }
      // stack of three along each new dim; clone; fill_.
      Shape s = l == Layout::Empty ? Shape{3, 0} : Shape{3, 4};
      std::vector<Host> hs;
      std::vector<Tensor> ts;
      for (int i = 0; i < 3; ++i) {
        hs.push_back(random_host(s, t, Domain::Any, rng_));
        ts.push_back(with_layout(hs.back(), t, device_, l));
      }
      for (int64_t dim : {0, 1, 2, -1}) {
        const size_t d = size_t(dim < 0 ? dim + 3 : dim);
        Shape so(s);
        so.insert(so.begin() + int64_t(d), 3);
        Host want{so, std::vector<double>(size_t(numel_of(so)))};
        Shape pos(3);
        for (size_t e = 0; e < want.v.size(); ++e) {
          int64_t rem = int64_t(e);
          for (size_t k = 3; k-- > 0;) pos[k] = rem % so[k], rem /= so[k];
          Shape src(pos);
          src.erase(src.begin() + int64_t(d));
          want.v[e] = hs[size_t(pos[d])].at(src);
        }
        expect_matches(stack(ts, dim), want, t, what("stack", t, l, " dim " + std::to_string(dim)));
      }
      Tensor c = ts[0].clone();
      expect_matches(c, hs[0], t, what("clone", t, l));
      // PyTorch's preserve_format: a dense source's strides, else dense in the source's order
      // (tests/core/memory_format_test.cpp checks the orders); row-major when asked for.
      if (detail::is_non_overlapping_and_dense(ts[0])) {
        EXPECT_EQ(c.strides().vec(), ts[0].strides().vec()) << what("clone", t, l);
      }
      EXPECT_TRUE(detail::is_non_overlapping_and_dense(c)) << what("clone", t, l);
      EXPECT_TRUE(ts[0].clone(MemoryFormat::Contiguous).is_contiguous()) << what("clone", t, l);
      expect_matches(ts[1].contiguous(), hs[1], t, what("contiguous", t, l));
      ts[2].fill_(3);
      Host threes{s, Values(size_t(numel_of(s)), 3.0)};
      expect_matches(ts[2], threes, t, what("fill_", t, l));
    }
  }
  // one_hot: int64 class indices (any layout) to int64 [..., C].
  for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced, Layout::Scalar, Layout::Empty}) {
    Shape s = l == Layout::Scalar ? Shape{} : l == Layout::Empty ? Shape{0, 3} : Shape{3, 4};
    Host h{s, {}};
    for (int64_t i = 0; i < numel_of(s); ++i) h.v.push_back(double(rng_() % 5));
    Tensor x = with_layout(h, kInt64, device_, l);
    for (int64_t classes : {7, -1}) {
      if (l == Layout::Empty && classes == -1) {
        EXPECT_THROW(one_hot(x), ValueError);
        continue;
      }
      double mx = 0;
      for (double v : h.v) mx = std::max(mx, v);
      const int64_t c = classes == -1 ? int64_t(mx) + 1 : classes;
      Shape so(s);
      so.push_back(c);
      Host want{so, {}};
      for (double v : h.v)
        for (int64_t k = 0; k < c; ++k) want.v.push_back(double(int64_t(v) == k));
      expect_matches(one_hot(x, classes), want, kInt64, what("one_hot", kInt64, l));
    }
  }
}

// Views share storage and run no kernel; reading them back (and reshape, which copies when no
// view can express the result) runs the copy kernel over every stride pattern they make.
struct ViewCase {
  std::string name;
  std::function<Tensor(const Tensor&)> run;  // on a [3, 4, 5] tensor
  Shape out;
  std::function<Shape(const Shape&)> src;  // the input index of an output index
};

std::vector<ViewCase> view_table() {
  // One row per op reads better than the formatter's layout.
  // clang-format off
  auto flat = [](const Shape& o, const Shape& os) {  // row-major position of o in os -> [3, 4, 5] index
    int64_t f = 0;
    for (size_t d = 0; d < o.size(); ++d) f = f * os[d] + o[d];
    return Shape{f / 20, f / 5 % 4, f % 5};
  };
  return {
      {"transpose", [](const Tensor& x) { return x.transpose(0, 2); }, {5, 4, 3},
       [](const Shape& o) { return Shape{o[2], o[1], o[0]}; }},
      {"permute", [](const Tensor& x) { return x.permute({1, 2, 0}); }, {4, 5, 3},
       [](const Shape& o) { return Shape{o[2], o[0], o[1]}; }},
      {"t", [](const Tensor& x) { return x.select(2, 1).t(); }, {4, 3},
       [](const Shape& o) { return Shape{o[1], o[0], 1}; }},
      {"narrow", [](const Tensor& x) { return x.narrow(1, 1, 2); }, {3, 2, 5},
       [](const Shape& o) { return Shape{o[0], o[1] + 1, o[2]}; }},
      {"select", [](const Tensor& x) { return x.select(1, -1); }, {3, 5},
       [](const Shape& o) { return Shape{o[0], 3, o[1]}; }},
      {"slice", [](const Tensor& x) { return x.slice(2, 1, std::nullopt, 2); }, {3, 4, 2},
       [](const Shape& o) { return Shape{o[0], o[1], 1 + 2 * o[2]}; }},
      {"unsqueeze", [](const Tensor& x) { return x.unsqueeze(1); }, {3, 1, 4, 5},
       [](const Shape& o) { return Shape{o[0], o[2], o[3]}; }},
      {"squeeze", [](const Tensor& x) { return x.unsqueeze(0).unsqueeze(3).squeeze(); }, {3, 4, 5},
       [](const Shape& o) { return o; }},
      {"flatten", [](const Tensor& x) { return x.flatten(1); }, {3, 20},
       [](const Shape& o) { return Shape{o[0], o[1] / 5, o[1] % 5}; }},
      {"reshape", [](const Tensor& x) { return x.reshape({5, -1}); }, {5, 12},
       [flat](const Shape& o) { return flat(o, {5, 12}); }},
      {"expand", [](const Tensor& x) { return x.unsqueeze(0).expand({2, 3, 4, 5}); }, {2, 3, 4, 5},
       [](const Shape& o) { return Shape{o[1], o[2], o[3]}; }},
      {"chunk", [](const Tensor& x) { return x.chunk(2, 1)[1]; }, {3, 2, 5},
       [](const Shape& o) { return Shape{o[0], o[1] + 2, o[2]}; }},
      {"split", [](const Tensor& x) { return x.split(IntArrayRef{1, 3}, 1)[1]; }, {3, 3, 5},
       [](const Shape& o) { return Shape{o[0], o[1] + 1, o[2]}; }},
      {"unbind", [](const Tensor& x) { return x.unbind(0)[2]; }, {4, 5},
       [](const Shape& o) { return Shape{2, o[0], o[1]}; }},
      {"contiguous", [](const Tensor& x) { return x.contiguous(); }, {3, 4, 5}, [](const Shape& o) { return o; }},
  };
  // clang-format on
}

TEST_P(OpsTable, Views) {
  const Shape base{3, 4, 5};
  for (const auto& op : view_table()) {
    for (Dtype t : kAllDtypes) {
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced, Layout::Broadcast}) {
        Host h = random_host(l == Layout::Broadcast ? Shape{3, 1, 5} : base, t, Domain::Any, rng_);
        Tensor x = with_layout(h, t, device_, l);
        if (l == Layout::Broadcast) {
          x = x.expand(base);
          h = expand_host(h, base);
        }
        Host want{op.out, std::vector<double>(size_t(numel_of(op.out)))};
        Shape pos(op.out.size());
        for (size_t e = 0; e < want.v.size(); ++e) {
          int64_t rem = int64_t(e);
          for (size_t k = pos.size(); k-- > 0;) pos[k] = rem % op.out[k], rem /= op.out[k];
          want.v[e] = h.at(op.src(pos));
        }
        Tensor v = op.run(x);
        expect_matches(v, want, t, what(op.name, t, l));
      }
    }
  }
}

}  // namespace
}  // namespace wick::test
