// nn::init: PyTorch's initializers, drawn from wick's generator without recording grads.
#include "wick/nn/init.h"

#include <cmath>
#include <vector>

#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::nn::init {

Tensor uniform_(Tensor t, double a, double b) {
  NoGradGuard g;
  t.uniform_(a, b);
  return t;
}

Tensor normal_(Tensor t, double mean, double std) {
  NoGradGuard g;
  t.normal_(mean, std);
  return t;
}

Tensor constant_(Tensor t, const Scalar& value) {
  NoGradGuard g;
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(std::move(t), 0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1); }

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  WICK_CHECK(t.dim() >= 2, ValueError, "calculate_fan_in_and_fan_out",
             "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.rfind("conv", 0) == 0) return 1;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4;
  wick::detail::raise<ValueError>("calculate_gain", "Unsupported nonlinearity ", nonlinearity);
}

namespace {
double kaiming_std(const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  WICK_CHECK(mode == "fan_in" || mode == "fan_out", ValueError, "kaiming", "Mode ", mode,
             " not supported, please use one of fan_in, fan_out");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  return calculate_gain(nonlinearity, a) / std::sqrt(double(fan));
}
}  // namespace

Tensor kaiming_uniform_(Tensor t, double a, const std::string& mode, const std::string& nonlinearity) {
  if (t.defined() && t.numel() == 0) return t;  // PyTorch: initializing zero-element tensors is a no-op
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(std::move(t), -bound, bound);
}

Tensor kaiming_normal_(Tensor t, double a, const std::string& mode, const std::string& nonlinearity) {
  if (t.defined() && t.numel() == 0) return t;  // PyTorch: initializing zero-element tensors is a no-op
  return normal_(t, 0, kaiming_std(t, a, mode, nonlinearity));
}

Tensor xavier_uniform_(Tensor t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return uniform_(std::move(t), -bound, bound);
}

Tensor xavier_normal_(Tensor t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

Tensor orthogonal_(Tensor t, double gain) {
  constexpr const char* op = "orthogonal_";
  WICK_CHECK(t.defined() && t.dim() >= 2, ValueError, op, "Only tensors with 2 or more dimensions are supported");
  if (t.numel() == 0) return t;  // PyTorch: a no-op
  NoGradGuard g;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // The draws PyTorch makes: a [rows, cols] standard normal matrix on t's device in t's dtype.
  Tensor flat = wick::empty({rows, cols}, t.options());
  flat.normal_(0, 1);
  // A = flat, or its transpose when wide: m x n with m >= n; Q's columns by Gram-Schmidt, each
  // orthogonalized twice against the previous ones (the positive-diagonal QR's Q).
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  const std::vector<double> a = (wide ? flat.t() : flat).to(Device(kCPU), kFloat64).contiguous().to_vector<double>();
  std::vector<double> q(static_cast<size_t>(m * n));
  std::vector<double> v(static_cast<size_t>(m));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) v[size_t(i)] = a[size_t(i * n + j)];
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t k = 0; k < j; ++k) {
        double dot = 0;
        for (int64_t i = 0; i < m; ++i) dot += q[size_t(i * n + k)] * v[size_t(i)];
        for (int64_t i = 0; i < m; ++i) v[size_t(i)] -= dot * q[size_t(i * n + k)];
      }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += v[size_t(i)] * v[size_t(i)];
    norm = std::sqrt(norm);
    // a column dependent on the previous ones (probability zero) is left zero, as PyTorch's
    // sign(0) leaves it
    for (int64_t i = 0; i < m; ++i) q[size_t(i * n + j)] = norm > 0 ? v[size_t(i)] / norm : 0.0;
  }
  Tensor result = wick::tensor(q, TensorOptions(kFloat64)).view({m, n});
  if (wide) result = result.t();
  t.copy_(result.reshape(t.sizes()));
  t.mul_(gain);
  return t;
}

}  // namespace wick::nn::init
