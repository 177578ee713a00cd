// MultiheadAttention and the transformer layers against float64 references written with loops
// from the definitions; their parameter names (PyTorch's), masks, gradients; RMSNorm,
// GroupNorm, Embedding's padding_idx and max_norm, GELU's tanh form, and weight tying.
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;
using testing::error_of;
using testing::expect_close;
using testing::gradcheck;
using testing::rnd;
using T = std::vector<Tensor>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- the reference: row-major matrices of doubles and loops

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

Mat mat(const Tensor& t) {
  const int64_t r = t.size(0), c = t.size(1);
  Vec v = t.detach().to(kFloat64).contiguous().to_vector<double>();
  Mat m(static_cast<size_t>(r), Vec(static_cast<size_t>(c)));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) m[size_t(i)][size_t(j)] = v[size_t(i * c + j)];
  return m;
}
Vec vec(const Tensor& t) { return t.detach().to(kFloat64).contiguous().to_vector<double>(); }
Tensor tensor_of(const Mat& m) {
  Vec flat;
  for (const auto& r : m) flat.insert(flat.end(), r.begin(), r.end());
  return from_blob(flat.data(), {int64_t(m.size()), int64_t(m[0].size())}, TensorOptions(kFloat64)).clone();
}

// x [n, in] @ w[rows0:rows0+out, :]^T + b[rows0:...]
Mat linear(const Mat& x, const Mat& w, const Vec& b, size_t rows0 = 0, size_t out = 0) {
  if (out == 0) out = w.size();
  Mat y(x.size(), Vec(out, 0.0));
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[rows0 + o];
      for (size_t k = 0; k < x[i].size(); ++k) s += x[i][k] * w[rows0 + o][k];
      y[i][o] = s;
    }
  return y;
}
Mat add(Mat a, const Mat& b) {
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) a[i][j] += b[i][j];
  return a;
}
Mat layer_norm(const Mat& x, const Vec& w, const Vec& b, double eps) {
  Mat y = x;
  for (auto& r : y) {
    double m = 0, v = 0;
    for (double a : r) m += a;
    m /= double(r.size());
    for (double a : r) v += (a - m) * (a - m);
    v /= double(r.size());
    for (size_t j = 0; j < r.size(); ++j) r[j] = (r[j] - m) / std::sqrt(v + eps) * w[j] + (b.empty() ? 0 : b[j]);
  }
  return y;
}
Mat relu(Mat x) {
  for (auto& r : x)
    for (auto& a : r) a = std::max(a, 0.0);
  return x;
}

// The parameters of a MultiheadAttention by PyTorch's names.
struct MhaParams {
  Mat wq, wk, wv, wo;
  Vec bq, bk, bv, bo;
};
MhaParams params_of(nn::MultiheadAttentionImpl& m) {
  MhaParams p;
  const int64_t e = m.options.embed_dim();
  if (m.in_proj_weight.defined()) {
    p.wq = mat(m.in_proj_weight.narrow(0, 0, e));
    p.wk = mat(m.in_proj_weight.narrow(0, e, e));
    p.wv = mat(m.in_proj_weight.narrow(0, 2 * e, e));
  } else {
    p.wq = mat(m.q_proj_weight), p.wk = mat(m.k_proj_weight), p.wv = mat(m.v_proj_weight);
  }
  if (m.in_proj_bias.defined()) {
    p.bq = vec(m.in_proj_bias.narrow(0, 0, e));
    p.bk = vec(m.in_proj_bias.narrow(0, e, e));
    p.bv = vec(m.in_proj_bias.narrow(0, 2 * e, e));
    p.bo = vec(m.out_proj->bias);
  }
  p.wo = mat(m.out_proj->weight);
  return p;
}

// One batch element: xq [L, E], xk [S, kdim], xv [S, vdim]; bias(h, i, j) added to the scores.
// Returns the output [L, E] and the weights per head [H][L][S]. A row of only -inf gives zeros
// (zero_dead) or NaN (PyTorch's need_weights path).
struct MhaOut {
  Mat out;
  std::vector<Mat> weights;
};
// Attention over projected q [L, E], k [S, E], v [S, E], then out_proj.
template <class Bias>
MhaOut attend(const Mat& q, const Mat& k, const Mat& v, const MhaParams& p, int64_t heads, Bias bias,
              bool zero_dead = true) {
  const size_t L = q.size(), S = k.size(), E = q[0].size(), hd = E / size_t(heads);
  Mat concat(L, Vec(E, 0.0));
  std::vector<Mat> weights(size_t(heads), Mat(L, Vec(S, 0.0)));
  for (size_t h = 0; h < size_t(heads); ++h)
    for (size_t i = 0; i < L; ++i) {
      Vec s(S);
      double mx = -kInf;
      for (size_t j = 0; j < S; ++j) {
        double d = 0;
        for (size_t e = 0; e < hd; ++e) d += q[i][h * hd + e] * k[j][h * hd + e];
        s[j] = d / std::sqrt(double(hd)) + bias(int64_t(h), int64_t(i), int64_t(j));
        mx = std::max(mx, s[j]);
      }
      if (mx == -kInf) {
        for (size_t j = 0; j < S; ++j) weights[h][i][j] = zero_dead ? 0.0 : NAN;
        if (!zero_dead)
          for (size_t e = 0; e < hd; ++e) concat[i][h * hd + e] = NAN;
        continue;
      }
      double z = 0;
      for (auto& a : s) z += (a = std::exp(a - mx));
      for (size_t j = 0; j < S; ++j) {
        weights[h][i][j] = s[j] / z;
        for (size_t e = 0; e < hd; ++e) concat[i][h * hd + e] += s[j] / z * v[j][h * hd + e];
      }
    }
  return {linear(concat, p.wo, p.bo), weights};
}
template <class Bias>
MhaOut mha_ref(const Mat& xq, const Mat& xk, const Mat& xv, const MhaParams& p, int64_t heads, Bias bias,
               bool zero_dead = true) {
  return attend(linear(xq, p.wq, p.bq), linear(xk, p.wk, p.bk), linear(xv, p.wv, p.bv), p, heads, bias, zero_dead);
}

// batch b of a [seq, batch, feature] (or [batch, seq, feature]) tensor.
Mat batch_of(const Tensor& x, int64_t b, bool batch_first) { return mat(batch_first ? x[b] : x.select(1, b)); }

class Transformer : public ::testing::Test {
 protected:
  void SetUp() override { manual_seed(3); }
};

// ---- MultiheadAttention

TEST_F(Transformer, MultiheadAttentionParameterNames) {
  nn::MultiheadAttention a(8, 2);
  std::vector<std::string> names;
  for (const auto& [n, t] : a->state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(a->in_proj_weight.sizes().vec(), (std::vector<int64_t>{24, 8}));
  nn::MultiheadAttention b(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(3).bias(false));
  names.clear();
  for (const auto& [n, t] : b->state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "out_proj.weight"}));
  EXPECT_EQ(b->k_proj_weight.sizes().vec(), (std::vector<int64_t>{8, 5}));
  EXPECT_EQ(b->v_proj_weight.sizes().vec(), (std::vector<int64_t>{8, 3}));
  // PyTorch's init: zero biases, xavier-uniform in_proj
  expect_close(a->in_proj_bias, zeros({24}), 0, 0);
  expect_close(a->out_proj->bias, zeros({8}), 0, 0);
  const double bound = std::sqrt(6.0 / (24 + 8));
  EXPECT_LE(a->in_proj_weight.abs().max().item<double>(), bound);
  EXPECT_EQ(error_of([] { nn::MultiheadAttention(10, 3); }), "[MultiheadAttention] embed_dim must be divisible by num_heads");
}

TEST_F(Transformer, MultiheadAttentionMatchesReference) {
  const int64_t L = 4, S = 5, B = 2, E = 6, H = 2;
  for (bool batch_first : {false, true}) {
    for (bool need_weights : {true, false}) {
      nn::MultiheadAttention m(nn::MultiheadAttentionOptions(E, H).batch_first(batch_first));
      m->to(kFloat64);
      {
        NoGradGuard g;  // non-zero biases, so that they matter
        m->in_proj_bias.uniform_(-0.5, 0.5);
        m->out_proj->bias.uniform_(-0.5, 0.5);
      }
      auto shape = [&](int64_t seq) { return batch_first ? std::vector<int64_t>{B, seq, E} : std::vector<int64_t>{seq, B, E}; };
      Tensor q = randn(shape(L), kFloat64), k = randn(shape(S), kFloat64), v = randn(shape(S), kFloat64);
      Tensor kpm = zeros({B, S}, kBool);
      kpm[1][4].fill_(true);
      kpm[0][0].fill_(true);
      Tensor attn_mask = randn({L, S}, kFloat64);
      auto [out, w] = m(q, k, v, kpm, need_weights, attn_mask);
      const MhaParams p = params_of(*m);
      auto am = mat(attn_mask), km = mat(kpm.to(kFloat64));
      for (int64_t b = 0; b < B; ++b) {
        auto bias = [&](int64_t, int64_t i, int64_t j) { return am[size_t(i)][size_t(j)] + (km[size_t(b)][size_t(j)] ? -kInf : 0.0); };
        MhaOut r = mha_ref(batch_of(q, b, batch_first), batch_of(k, b, batch_first), batch_of(v, b, batch_first), p, H, bias);
        expect_close(batch_first ? out[b] : out.select(1, b), tensor_of(r.out), 1e-12, 1e-10, "output");
        if (need_weights) {
          Mat avg(size_t(L), Vec(size_t(S), 0.0));
          for (const Mat& wh : r.weights)
            for (size_t i = 0; i < size_t(L); ++i)
              for (size_t j = 0; j < size_t(S); ++j) avg[i][j] += wh[i][j] / double(H);
          expect_close(w[b], tensor_of(avg), 1e-12, 1e-10, "weights");
        }
      }
      EXPECT_EQ(w.defined(), need_weights);
      // averaged and per-head weights
      if (need_weights) {
        EXPECT_EQ(w.sizes().vec(), (std::vector<int64_t>{B, L, S}));
        auto [o2, w2] = m(q, k, v, kpm, true, attn_mask, false);
        EXPECT_EQ(w2.sizes().vec(), (std::vector<int64_t>{B, H, L, S}));
        expect_close(w2.mean({1}), w, 1e-14, 0);
      }
    }
  }
}

TEST_F(Transformer, MultiheadAttentionKdimVdimBoolMaskUnbatchedCausal) {
  const int64_t L = 3, S = 4, E = 4, H = 2;
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(E, H).kdim(5).vdim(3));
  m->to(kFloat64);
  Tensor q = randn({L, 1, E}, kFloat64), k = randn({S, 1, 5}, kFloat64), v = randn({S, 1, 3}, kFloat64);
  Tensor mask = rand({L, S}) > 0.6;  // true: masked out
  mask.select(1, 0).fill_(false);      // every row attends key 0
  auto [out, w] = m(q, k, v, Tensor(), true, mask);
  auto mm = mat(mask.to(kFloat64));
  MhaOut r = mha_ref(mat(q.select(1, 0)), mat(k.select(1, 0)), mat(v.select(1, 0)), params_of(*m), H,
                     [&](int64_t, int64_t i, int64_t j) { return mm[size_t(i)][size_t(j)] ? -kInf : 0.0; });
  expect_close(out.select(1, 0), tensor_of(r.out), 1e-12, 1e-10);
  // unbatched inputs give unbatched outputs
  auto [ou, wu] = m(q.select(1, 0), k.select(1, 0), v.select(1, 0), Tensor(), true, mask);
  expect_close(ou, out.select(1, 0), 1e-14, 0);
  expect_close(wu, w[0], 1e-14, 0);
  // is_causal is a hint: the causal mask must be given, and gives what the mask gives
  nn::MultiheadAttention s(E, H);
  s->to(kFloat64);
  Tensor x = randn({L, 2, E}, kFloat64), causal = nn::generate_square_subsequent_mask(L, kFloat64);
  auto [c1, cw1] = s(x, x, x, Tensor(), false, causal, true, true);
  auto [c2, cw2] = s(x, x, x, Tensor(), false, causal);
  expect_close(c1, c2, 1e-12, 1e-12);
  EXPECT_NE(error_of([&] { s(x, x, x, Tensor(), false, Tensor(), true, true); }).find("Need attn_mask if specifying the is_causal hint"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s(x, x, x, Tensor(), false, ones({2, 2}, kBool)); }).find("The shape of the 2D attn_mask is"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s(x, x, randn({L + 1, 2, E}, kFloat64)); }).find("does not match value shape"),
            std::string::npos);
}

TEST_F(Transformer, MultiheadAttentionBiasKvAndZeroAttn) {
  // The projected keys and values get bias_k/bias_v as one more row, then a row of zeros; the
  // masks a column of zeros for each (the extra keys attend).
  const int64_t L = 3, S = 4, B = 2, E = 4, H = 2;
  for (bool bias_kv : {false, true})
    for (bool zero_attn : {false, true})
      for (bool need_weights : {true, false}) {
        if (!bias_kv && !zero_attn) continue;
        SCOPED_TRACE(::testing::Message() << "bias_kv " << bias_kv << " zero_attn " << zero_attn << " need_weights "
                                          << need_weights);
        nn::MultiheadAttention m(
            nn::MultiheadAttentionOptions(E, H).add_bias_kv(bias_kv).add_zero_attn(zero_attn));
        m->to(kFloat64);
        {
          NoGradGuard g;
          m->in_proj_bias.uniform_(-0.5, 0.5);
          m->out_proj->bias.uniform_(-0.5, 0.5);
        }
        Tensor q = randn({L, B, E}, kFloat64), k = randn({S, B, E}, kFloat64), v = randn({S, B, E}, kFloat64);
        Tensor kpm = zeros({B, S}, kBool);
        kpm[1][0].fill_(true);
        Tensor attn_mask = randn({L, S}, kFloat64);
        auto [out, w] = m(q, k, v, kpm, need_weights, attn_mask);
        const int64_t Sx = S + int64_t(bias_kv) + int64_t(zero_attn);
        if (need_weights) {
          EXPECT_EQ(w.sizes().vec(), (std::vector<int64_t>{B, L, Sx}));
        }
        const MhaParams p = params_of(*m);
        auto am = mat(attn_mask), km = mat(kpm.to(kFloat64));
        for (int64_t b = 0; b < B; ++b) {
          Mat pk = linear(mat(k.select(1, b)), p.wk, p.bk), pv = linear(mat(v.select(1, b)), p.wv, p.bv);
          if (bias_kv) {
            pk.push_back(vec(m->bias_k));
            pv.push_back(vec(m->bias_v));
          }
          if (zero_attn) {
            pk.push_back(Vec(size_t(E), 0.0));
            pv.push_back(Vec(size_t(E), 0.0));
          }
          auto bias = [&](int64_t, int64_t i, int64_t j) {
            return j < S ? am[size_t(i)][size_t(j)] + (km[size_t(b)][size_t(j)] ? -kInf : 0.0) : 0.0;
          };
          MhaOut r = attend(linear(mat(q.select(1, b)), p.wq, p.bq), pk, pv, p, H, bias);
          expect_close(out.select(1, b), tensor_of(r.out), 1e-12, 1e-10, "output");
          if (need_weights) {
            Mat avg(size_t(L), Vec(size_t(Sx), 0.0));
            for (const Mat& wh : r.weights)
              for (size_t i = 0; i < size_t(L); ++i)
                for (size_t j = 0; j < size_t(Sx); ++j) avg[i][j] += wh[i][j] / double(H);
            expect_close(w[b], tensor_of(avg), 1e-12, 1e-10, "weights");
          }
        }
      }
  // PyTorch's names (bias_k, bias_v after in_proj_bias), shapes and xavier_normal_ init; a
  // state_dict with them loads strictly, and not into a module without them.
  nn::MultiheadAttention a(nn::MultiheadAttentionOptions(8, 2).add_bias_kv(true));
  std::vector<std::string> names;
  for (const auto& [n, t] : a->state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                             "out_proj.bias"}));
  EXPECT_EQ(a->bias_k.sizes().vec(), (std::vector<int64_t>{1, 1, 8}));
  EXPECT_EQ(a->bias_v.sizes().vec(), (std::vector<int64_t>{1, 1, 8}));
  const double std_kv = std::sqrt(2.0 / (8 + 8));  // fan_in = fan_out = 1 * 8
  EXPECT_GT(a->bias_k.abs().max().item<double>(), 0.0);
  EXPECT_LT(a->bias_v.abs().max().item<double>(), 6 * std_kv);
  nn::MultiheadAttention b(nn::MultiheadAttentionOptions(8, 2).add_bias_kv(true).add_zero_attn(true));
  b->load_state_dict(a->state_dict());
  expect_close(b->bias_k, a->bias_k, 0, 0);
  Tensor x = randn({3, 2, 8});
  nn::MultiheadAttention c(nn::MultiheadAttentionOptions(8, 2).add_bias_kv(true));
  c->load_state_dict(a->state_dict());
  expect_close(std::get<0>(c(x, x, x)), std::get<0>(a(x, x, x)), 0, 0);
  nn::MultiheadAttention plain(8, 2);
  EXPECT_ANY_THROW(plain->load_state_dict(a->state_dict()));
  // Gradients reach the inputs and bias_k, bias_v.
  nn::MultiheadAttention g(nn::MultiheadAttentionOptions(4, 2).add_bias_kv(true).add_zero_attn(true).batch_first(true));
  g->to(kFloat64);
  Tensor gk = zeros({2, 3}, kBool);
  gk[0][2].fill_(true);
  gradcheck([&](const T& in) { return std::get<0>(g(in[0], in[1], in[2], gk, false)); },
            {rnd({2, 2, 4}), rnd({2, 3, 4}), rnd({2, 3, 4})});
  auto [go, gw] = g(rnd({2, 2, 4}, false), rnd({2, 3, 4}, false), rnd({2, 3, 4}, false));
  go.sum().backward();
  EXPECT_TRUE(g->bias_k.grad().defined());
  EXPECT_TRUE(g->bias_v.grad().defined());
}

TEST_F(Transformer, FullyMaskedRows) {
  // PyTorch: the need_weights path gives NaN for a row that attends nothing; the attention path
  // (need_weights=false) gives zeros before out_proj, so the output row is out_proj's bias.
  nn::MultiheadAttention m(4, 1);
  m->to(kFloat64);
  {
    NoGradGuard g;
    m->out_proj->bias.uniform_(-1, 1);
  }
  Tensor x = randn({3, 1, 4}, kFloat64);
  Tensor mask = zeros({3, 3}, kBool);
  mask[1].fill_(true);
  auto [o1, w1] = m(x, x, x, Tensor(), true, mask);
  EXPECT_TRUE(std::isnan(o1[1][0][0].item<double>()));
  auto [o2, w2] = m(x, x, x, Tensor(), false, mask);
  expect_close(o2[1][0], m->out_proj->bias, 1e-14, 0);
}

TEST_F(Transformer, MultiheadAttentionGradients) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(2).batch_first(true));
  m->to(kFloat64);
  Tensor kpm = zeros({2, 3}, kBool);
  kpm[0][2].fill_(true);
  gradcheck(
      [&](const T& x) { return std::get<0>(m(x[0], x[1], x[2], kpm, false)); },
      {rnd({2, 2, 4}), rnd({2, 3, 3}), rnd({2, 3, 2})});
  gradcheck(
      [&](const T& x) {
        auto [o, w] = m(x[0], x[1], x[2], kpm, true);
        return o.sum() + (w * w).sum();
      },
      {rnd({2, 2, 4}), rnd({2, 3, 3}), rnd({2, 3, 2})});
  // parameters get gradients
  auto [o, w] = m(rnd({2, 2, 4}, false), rnd({2, 3, 3}, false), rnd({2, 3, 2}, false));
  o.sum().backward();
  for (const auto& [n, p] : m->named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
}

// ---- the layers

TEST_F(Transformer, EncoderLayerMatchesReference) {
  const int64_t L = 5, B = 2, E = 4, H = 2, FF = 6;
  for (bool norm_first : {false, true}) {
    for (std::string act : {"relu", "gelu"}) {
      nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(E, H)
                                            .dim_feedforward(FF)
                                            .dropout(0.0)
                                            .activation(act)
                                            .norm_first(norm_first)
                                            .layer_norm_eps(1e-6));
      layer->to(kFloat64);
      {
        NoGradGuard g;
        for (auto& p : layer->parameters()) p.uniform_(-0.7, 0.7);
      }
      Tensor x = randn({L, B, E}, kFloat64);
      Tensor kpm = zeros({B, L}, kBool);
      kpm[1][3].fill_(true);
      Tensor mask = nn::generate_square_subsequent_mask(L, kFloat64);
      Tensor y = layer(x, mask, kpm);
      const MhaParams p = params_of(*layer->self_attn);
      auto sd = layer->state_dict();
      std::map<std::string, Tensor> st(sd.begin(), sd.end());
      auto act_fn = [&](Mat m) {
        if (act == "relu") return relu(m);
        for (auto& r : m)
          for (auto& a : r) a = 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
        return m;
      };
      auto ff = [&](const Mat& m) {
        return linear(act_fn(linear(m, mat(st["linear1.weight"]), vec(st["linear1.bias"]))), mat(st["linear2.weight"]),
                      vec(st["linear2.bias"]));
      };
      auto ln = [&](const Mat& m, const char* n) {
        return layer_norm(m, vec(st[std::string(n) + ".weight"]), vec(st[std::string(n) + ".bias"]), 1e-6);
      };
      for (int64_t b = 0; b < B; ++b) {
        auto bias = [&](int64_t, int64_t i, int64_t j) {
          return (j > i ? -kInf : 0.0) + (kpm[b][j].item<bool>() ? -kInf : 0.0);
        };
        Mat xb = mat(x.select(1, b)), out;
        if (norm_first) {
          Mat n1 = ln(xb, "norm1");
          Mat x1 = add(xb, mha_ref(n1, n1, n1, p, H, bias).out);
          out = add(x1, ff(ln(x1, "norm2")));
        } else {
          Mat x1 = ln(add(xb, mha_ref(xb, xb, xb, p, H, bias).out), "norm1");
          out = ln(add(x1, ff(x1)), "norm2");
        }
        expect_close(y.select(1, b), tensor_of(out), 1e-12, 1e-10, act + (norm_first ? " norm_first" : " post-norm"));
      }
    }
  }
  EXPECT_NE(error_of([] { nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(4, 2).activation("tanh")); })
                .find("activation should be relu/gelu, not tanh"),
            std::string::npos);
}

TEST_F(Transformer, DecoderLayerMatchesReference) {
  const int64_t L = 3, S = 4, B = 2, E = 4, H = 2, FF = 5;
  for (bool norm_first : {false, true}) {
    nn::TransformerDecoderLayer layer(
        nn::TransformerDecoderLayerOptions(E, H).dim_feedforward(FF).dropout(0.0).norm_first(norm_first).batch_first(true));
    layer->to(kFloat64);
    {
      NoGradGuard g;
      for (auto& p : layer->parameters()) p.uniform_(-0.7, 0.7);
    }
    Tensor tgt = randn({B, L, E}, kFloat64), mem = randn({B, S, E}, kFloat64);
    Tensor mkpm = zeros({B, S}, kBool);
    mkpm[0][1].fill_(true);
    Tensor y = layer(tgt, mem, nn::generate_square_subsequent_mask(L, kFloat64), Tensor(), Tensor(), mkpm);
    auto sd = layer->state_dict();
    std::map<std::string, Tensor> st(sd.begin(), sd.end());
    auto ln = [&](const Mat& m, const char* n) {
      return layer_norm(m, vec(st[std::string(n) + ".weight"]), vec(st[std::string(n) + ".bias"]), 1e-5);
    };
    auto ff = [&](const Mat& m) {
      return linear(relu(linear(m, mat(st["linear1.weight"]), vec(st["linear1.bias"]))), mat(st["linear2.weight"]),
                    vec(st["linear2.bias"]));
    };
    const MhaParams ps = params_of(*layer->self_attn), pc = params_of(*layer->multihead_attn);
    for (int64_t b = 0; b < B; ++b) {
      auto causal = [](int64_t, int64_t i, int64_t j) { return j > i ? -kInf : 0.0; };
      auto pad = [&](int64_t, int64_t, int64_t j) { return mkpm[b][j].item<bool>() ? -kInf : 0.0; };
      Mat x = mat(tgt[b]), m = mat(mem[b]), out;
      if (norm_first) {
        Mat n1 = ln(x, "norm1");
        Mat x1 = add(x, mha_ref(n1, n1, n1, ps, H, causal).out);
        Mat x2 = add(x1, mha_ref(ln(x1, "norm2"), m, m, pc, H, pad).out);
        out = add(x2, ff(ln(x2, "norm3")));
      } else {
        Mat x1 = ln(add(x, mha_ref(x, x, x, ps, H, causal).out), "norm1");
        Mat x2 = ln(add(x1, mha_ref(x1, m, m, pc, H, pad).out), "norm2");
        out = ln(add(x2, ff(x2)), "norm3");
      }
      expect_close(y[b], tensor_of(out), 1e-12, 1e-10, norm_first ? "norm_first" : "post-norm");
    }
  }
}

TEST_F(Transformer, LayerNamesAsPyTorch) {
  nn::TransformerEncoderLayer enc(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  std::vector<std::string> names;
  for (const auto& [n, t] : enc->state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                             "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                                             "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
                                             "norm1.bias", "norm2.weight", "norm2.bias"}));
  nn::TransformerEncoderLayer nobias(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).bias(false));
  names.clear();
  for (const auto& [n, t] : nobias->state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight",
                                             "linear2.weight", "norm1.weight", "norm2.weight"}));
  nn::TransformerDecoderLayer dec(nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16));
  names.clear();
  for (const auto& [n, t] : dec->state_dict()) names.push_back(n);
  EXPECT_EQ(names.size(), 18u);
  EXPECT_EQ(names[4], "multihead_attn.in_proj_weight");
  EXPECT_EQ(names.back(), "norm3.bias");
}

TEST_F(Transformer, EncoderStacksCopiesOfTheLayer) {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8).dropout(0.0));
  nn::TransformerEncoder enc(layer, 3, nn::LayerNorm(std::vector<int64_t>{4}));
  auto sd = enc->state_dict();
  std::map<std::string, Tensor> st(sd.begin(), sd.end());
  EXPECT_EQ(sd.size(), 3 * 12 + 2u);
  EXPECT_TRUE(st.count("layers.0.self_attn.in_proj_weight"));
  EXPECT_TRUE(st.count("layers.2.norm2.bias"));
  EXPECT_TRUE(st.count("norm.weight"));
  // equal values at the start, separate tensors
  expect_close(st["layers.2.linear1.weight"], layer->linear1->weight, 0, 0);
  EXPECT_NE(st["layers.2.linear1.weight"].data_ptr(), layer->linear1->weight.data_ptr());
  EXPECT_NE(st["layers.1.linear1.weight"].data_ptr(), st["layers.0.linear1.weight"].data_ptr());
  EXPECT_EQ(enc->parameters().size(), 3 * 12 + 2u);
  // the stack is its layers in turn, then the norm
  Tensor x = randn({5, 2, 4});
  Tensor want = x;
  for (size_t i = 0; i < 3; ++i) want = enc->layers->ptr<nn::TransformerEncoderLayerImpl>(i)->forward(want);
  expect_close(enc(x), enc->norm(want), 1e-6, 1e-6);
  // without a norm: no "norm." names
  nn::TransformerEncoder bare(layer, 2);
  for (const auto& [n, t] : bare->state_dict()) EXPECT_EQ(n.rfind("layers.", 0), 0u) << n;
}

TEST_F(Transformer, TransformerNamesMasksAndShapes) {
  nn::Transformer t(nn::TransformerOptions().d_model(8).nhead(2).num_encoder_layers(2).num_decoder_layers(1)
                        .dim_feedforward(16).dropout(0.0));
  auto sd = t->state_dict();
  std::set<std::string> names;
  for (const auto& [n, x] : sd) names.insert(n);
  EXPECT_EQ(sd.size(), 2 * 12 + 2 + 18 + 2u);
  for (const char* n : {"encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.1.norm2.weight", "encoder.norm.weight",
                        "decoder.layers.0.multihead_attn.out_proj.bias", "decoder.norm.bias"})
    EXPECT_TRUE(names.count(n)) << n;
  Tensor src = randn({6, 3, 8}), tgt = randn({4, 3, 8});
  Tensor y = t(src, tgt, Tensor(), nn::generate_square_subsequent_mask(4));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{4, 3, 8}));
  // encoder then decoder
  Tensor mem = t->encoder(src);
  expect_close(y, t->decoder(tgt, mem, nn::generate_square_subsequent_mask(4)), 1e-6, 1e-6);
  EXPECT_NE(error_of([&] { t(src, randn({4, 2, 8})); }).find("the batch number of src and tgt must be equal"),
            std::string::npos);
  // the causal mask
  Tensor m = nn::generate_square_subsequent_mask(3);
  EXPECT_EQ(m.dtype(), kFloat32);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, -INFINITY, -INFINITY, 0, 0, -INFINITY, 0, 0, 0}));
}

TEST_F(Transformer, EncoderLayerGradients) {
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(6).dropout(0.0).activation("gelu").norm_first(true));
  layer->to(kFloat64);
  Tensor mask = nn::generate_square_subsequent_mask(3, kFloat64);
  gradcheck([&](const T& x) { return layer(x[0], mask); }, {rnd({3, 2, 4})});
  nn::TransformerDecoderLayer dec(nn::TransformerDecoderLayerOptions(4, 2).dim_feedforward(6).dropout(0.0));
  dec->to(kFloat64);
  gradcheck([&](const T& x) { return dec(x[0], x[1], mask); }, {rnd({3, 2, 4}), rnd({5, 2, 4})});
}

TEST_F(Transformer, DropoutOnlyInTraining) {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8).dropout(0.5));
  Tensor x = randn({5, 2, 4});
  layer->eval();
  Tensor a = layer(x), b = layer(x);
  expect_close(a, b, 0, 0);
  layer->train();
  manual_seed(1);
  Tensor c = layer(x);
  EXPECT_GT((c - a).abs().max().item<double>(), 1e-3);
}

TEST_F(Transformer, OnCuda) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  nn::TransformerEncoder enc(layer, 2);
  Tensor x = randn({5, 3, 8});
  Tensor kpm = zeros({3, 5}, kBool);
  kpm[2][4].fill_(true);
  Tensor mask = nn::generate_square_subsequent_mask(5);
  Tensor want = enc(x, mask, kpm);
  enc->to(Device(kCUDA, 0));
  expect_close(enc(x.cuda(), mask.cuda(), kpm.cuda()), want, 1e-5, 1e-5);
  nn::MultiheadAttention m(8, 2);
  auto [o, w] = m(x, x, x);
  m->to(Device(kCUDA, 0));
  auto [oc, wc] = m(x.cuda(), x.cuda(), x.cuda());
  expect_close(oc, o, 1e-5, 1e-5);
  expect_close(wc, w, 1e-5, 1e-5);
}

// ---- RMSNorm, GroupNorm

TEST_F(Transformer, RMSNormMatchesDefinition) {
  nn::RMSNorm n(std::vector<int64_t>{3, 4});
  EXPECT_EQ(n->weight.sizes().vec(), (std::vector<int64_t>{3, 4}));
  {
    NoGradGuard g;
    n->weight.uniform_(0.5, 1.5);
  }
  n->to(kFloat64);
  Tensor x = randn({2, 3, 4}, kFloat64).transpose(0, 0);
  Tensor y = n(x);
  auto xv = vec(x), wv = vec(n->weight), yv = vec(y);
  for (int64_t b = 0; b < 2; ++b) {
    double ms = 0;
    for (int64_t i = 0; i < 12; ++i) ms += xv[size_t(b * 12 + i)] * xv[size_t(b * 12 + i)];
    ms /= 12;
    for (int64_t i = 0; i < 12; ++i)
      EXPECT_NEAR(yv[size_t(b * 12 + i)],
                  xv[size_t(b * 12 + i)] / std::sqrt(ms + std::numeric_limits<double>::epsilon()) * wv[size_t(i)], 1e-12);
  }
  EXPECT_EQ(n->repr(), "RMSNorm((3, 4), eps=None, elementwise_affine=True)");
  // explicit eps; float32 takes float32's epsilon; non-contiguous input
  Tensor x32 = randn({4, 5}).t();
  Tensor r = F::rms_norm(x32, {4}, Tensor(), 0.1);
  Tensor want = x32.to(kFloat64) * rsqrt((x32.to(kFloat64) * x32.to(kFloat64)).mean({1}, true) + 0.1);
  expect_close(r, want, 1e-6, 1e-6);
  Tensor r2 = F::rms_norm(x32, {4});
  expect_close(r2, x32.to(kFloat64) * rsqrt((x32.to(kFloat64) * x32.to(kFloat64)).mean({1}, true) +
                                              double(std::numeric_limits<float>::epsilon())),
               1e-6, 1e-6);
  // bfloat16 computes in float32 and gives bfloat16
  Tensor xb = randn({3, 8}).to(kBFloat16);
  Tensor yb = F::rms_norm(xb, {8});
  EXPECT_EQ(yb.dtype(), kBFloat16);
  expect_close(yb, F::rms_norm(xb.to(kFloat32), {8}), 1e-2, 1e-2);
  EXPECT_NE(error_of([&] { F::rms_norm(x32, {5}); }).find("[rms_norm] Given normalized_shape="), std::string::npos);
  gradcheck([](const T& a) { return F::rms_norm(a[0], {3}, a[1], 1e-3); }, {rnd({2, 3}), rnd({3})});
  if (cuda::is_available()) expect_close(F::rms_norm(x32.cuda(), {4}, Tensor(), 0.1), r, 1e-6, 1e-6);
}

TEST_F(Transformer, GroupNormMatchesDefinition) {
  nn::GroupNorm gn(2, 4);
  EXPECT_EQ(gn->repr(), "GroupNorm(2, 4, eps=1e-05, affine=True)");
  gn->to(kFloat64);
  {
    NoGradGuard g;
    gn->weight.uniform_(0.5, 1.5);
    gn->bias.uniform_(-1, 1);
  }
  Tensor x = randn({3, 4, 5}, kFloat64);
  Tensor y = gn(x);
  auto xv = vec(x), yv = vec(y), w = vec(gn->weight), b = vec(gn->bias);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t g = 0; g < 2; ++g) {
      double m = 0, v = 0;
      const int64_t base = n * 20 + g * 10;
      for (int64_t i = 0; i < 10; ++i) m += xv[size_t(base + i)];
      m /= 10;
      for (int64_t i = 0; i < 10; ++i) v += (xv[size_t(base + i)] - m) * (xv[size_t(base + i)] - m);
      v /= 10;
      for (int64_t i = 0; i < 10; ++i) {
        const int64_t c = g * 2 + i / 5;
        EXPECT_NEAR(yv[size_t(base + i)], (xv[size_t(base + i)] - m) / std::sqrt(v + 1e-5) * w[size_t(c)] + b[size_t(c)],
                    1e-12);
      }
    }
  EXPECT_EQ(error_of([] { nn::GroupNorm(3, 4); }), "[GroupNorm] num_channels must be divisible by num_groups");
  EXPECT_NE(error_of([&] { F::group_norm(x, 3); }).find("divisible by num_groups"), std::string::npos);
  gradcheck([](const T& a) { return F::group_norm(a[0], 2, a[1], a[2]); }, {rnd({2, 4, 3}), rnd({4}), rnd({4})});
  // 4-D, non-contiguous
  Tensor x4 = randn({2, 3, 4, 6}).permute({0, 3, 1, 2});
  expect_close(F::group_norm(x4, 3), F::group_norm(x4.contiguous(), 3), 1e-6, 1e-6);
}

// ---- Embedding, GELU, weight tying

TEST_F(Transformer, EmbeddingPaddingIdx) {
  nn::Embedding e(nn::EmbeddingOptions(5, 3).padding_idx(-1));
  EXPECT_EQ(*e->options.padding_idx(), 4);
  expect_close(e->weight[4], zeros({3}), 0, 0);
  Tensor idx = tensor({4, 1, 4, 2});
  e(idx).pow(2).sum().backward();
  expect_close(e->weight.grad()[4], zeros({3}), 0, 0);
  expect_close(e->weight.grad()[1], e->weight[1] * 2, 1e-6, 0);
}

TEST_F(Transformer, EmbeddingMaxNorm) {
  nn::Embedding e(nn::EmbeddingOptions(6, 4).max_norm(1.0));
  {
    NoGradGuard g;
    e->weight.mul_(3);
    e->weight[5].fill_(0.1);  // norm 0.2: left as it is
  }
  Tensor before = e->weight.detach().clone();
  Tensor idx = tensor({{1, 5}, {1, 3}});
  Tensor out = e(idx);
  // rows 1, 3, 5 looked up; 1 and 3 scaled to norm ~1 in the weight itself; others unchanged
  for (int64_t r : {1, 3}) {
    const double n = before[r].norm().item<double>();
    expect_close(e->weight[r], before[r] * (1.0 / (n + 1e-7)), 1e-6, 1e-6);
  }
  for (int64_t r : {0, 2, 4, 5}) expect_close(e->weight[r], before[r], 0, 0);
  expect_close(out[0][0], e->weight[1], 0, 0);
  // norm_type 1
  Tensor w = randn({4, 3}, kFloat64) * 5;
  Tensor w0 = w.clone();
  F::embedding(tensor({2}), w, std::nullopt, 0.5, 1.0);
  expect_close(w[2], w0[2] * (0.5 / (w0[2].abs().sum().item<double>() + 1e-7)), 1e-12, 1e-12);
  expect_close(w[0], w0[0], 0, 0);
  // gradient still flows to the weight
  out.sum().backward();
  expect_close(e->weight.grad()[1], ones({4}) * 2, 0, 0);
  EXPECT_EQ(e->repr(), "Embedding(6, 4, max_norm=1.0)");
}

TEST_F(Transformer, GeluTanhMatchesFormula) {
  Tensor x = randn({50}, kFloat64) * 3;
  auto xv = vec(x), yv = vec(nn::GELU("tanh")(x));
  for (size_t i = 0; i < xv.size(); ++i) {
    const double a = xv[i];
    EXPECT_NEAR(yv[i], 0.5 * a * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (a + 0.044715 * a * a * a))), 1e-14);
  }
  Tensor x32 = x.to(kFloat32);
  expect_close(F::gelu(x32, "tanh"), nn::GELU("tanh")(x), 1e-6, 1e-6);
  gradcheck([](const T& a) { return F::gelu(a[0], "tanh"); }, {rnd({7})});
}

TEST_F(Transformer, WeightTying) {
  struct LmImpl : nn::Module {
    LmImpl() {
      emb = register_module("emb", nn::Embedding(10, 4));
      head = register_module("head", nn::Linear(nn::LinearOptions(4, 10).bias(false)));
      head->weight = head->replace_parameter("weight", emb->weight);
    }
    Tensor forward(const Tensor& idx) { return head(emb(idx)); }
    nn::Embedding emb{nullptr};
    nn::Linear head{nullptr};
  };
  auto lm = std::make_shared<LmImpl>();
  std::vector<std::string> names;
  for (const auto& [n, t] : lm->state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"emb.weight", "head.weight"}));
  ASSERT_EQ(lm->parameters().size(), 1u);
  EXPECT_TRUE(lm->parameters()[0].is_same(lm->emb->weight));
  // one gradient, the sum of both uses; one SGD step moves it once
  Tensor idx = tensor({1, 3});
  Tensor before = lm->emb->weight.detach().clone();
  optim::SGD opt(lm->parameters(), optim::SGDOptions(0.1));
  Tensor loss = lm->forward(idx).pow(2).sum();
  loss.backward();
  Tensor g = lm->emb->weight.grad().clone();
  opt.step();
  expect_close(lm->emb->weight, before - g * 0.1, 1e-6, 1e-6);
  expect_close(lm->head->weight, lm->emb->weight, 0, 0);
  // the gradient is that of both uses: against the untied computation
  Tensor w1 = before.clone().requires_grad_(), w2 = before.clone().requires_grad_();
  F::linear(F::embedding(idx, w1), w2).pow(2).sum().backward();
  expect_close(g, w1.grad() + w2.grad(), 1e-5, 1e-5);
  // a state dict with both names loads strictly
  lm->load_state_dict(lm->state_dict());
  EXPECT_NE(error_of([&] { lm->replace_parameter("bias", Tensor()); }).find("no parameter named 'bias'"),
            std::string::npos);
}

}  // namespace
}  // namespace wick
