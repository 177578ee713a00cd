// Normalize's constants and its channel check (the rest of the transforms are templates).
#include "wick/data/transforms.h"

#include "wick/ops.h"

namespace wick::data::transforms::detail {

namespace {
constexpr const char* kOp = "Normalize";
}

std::pair<Tensor, Tensor> normalize_constants(const std::vector<double>& mean, const std::vector<double>& stddev) {
  WICK_CHECK(!mean.empty() && !stddev.empty(), ValueError, kOp, "mean and stddev need at least one value");
  WICK_CHECK(mean.size() == stddev.size() || mean.size() == 1 || stddev.size() == 1, ValueError, kOp,
             "mean has ", mean.size(), " values and stddev ", stddev.size(),
             "; they need one per channel (or a single value)");
  auto column = [](const std::vector<double>& v) {
    Tensor t = empty({int64_t(v.size()), 1, 1}, kFloat32);
    float* p = t.data_ptr<float>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = float(v[i]);
    return t;
  };
  return {column(mean), column(stddev)};
}

Tensor normalize(const Tensor& input, const Tensor& mean, const Tensor& stddev) {
  WICK_CHECK(input.defined(), ValueError, kOp, "the input is an undefined tensor");
  // The constants are [C, 1, 1]: C lines up with the input's dim -3, and broadcasts only when it
  // is 1 there or C is 1.
  const int64_t c = std::max(mean.size(0), stddev.size(0));
  if (input.dim() >= 3) {
    const int64_t have = input.size(-3);
    WICK_CHECK(c == 1 || have == 1 || have == c, ValueError, kOp, "mean and stddev have ", c,
               " channels but the input of size ", input.sizes(), " has ", have, " (its dim -3)");
  }
  return input.sub(mean.to(input.device())).div(stddev.to(input.device()));
}

}  // namespace wick::data::transforms::detail
