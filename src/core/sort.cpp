// sort, argsort, topk and multinomial.
//
// sort and topk move the sorted dim last and make the rows contiguous, ask the backend's sort
// entry for the first k indices of each sorted row (core/kernel_table.h: NaN largest, ties in
// index order on every backend), and read the values through gather. With grad, the values'
// node (SortBackward0, TopkBackward0) scatters the gradient back through the indices.
//
// multinomial (docs/design.md, "multinomial") draws its uniforms from the device's Philox
// stream in float64, element (row, j) of a rand() of [rows, m], so the same seed gives the same
// uniforms on every device. With replacement each sample is an inverse-CDF search of its row
// (the backend's multinomial entry); without replacement (and for one sample) the categories
// race: category c's key is p_c / e_c with e_c = -log(u_c) an exponential draw, and the
// samples are the top num_samples keys (a draw without replacement in proportion to the
// weights, PyTorch's algorithm). Given a Generator, the draws come from it (GeneratorScope).
#include <cmath>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/generator.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace wick {

using namespace detail;

namespace {

// {values, indices} of the first k elements of t's rows along dim, sorted.
std::tuple<Tensor, Tensor> sorted_first(const Tensor& t, int64_t dim, int64_t k, bool descending, const char* op) {
  const TensorOptions longs = TensorOptions(kInt64).device(t.device());
  if (t.dim() == 0) {
    if (k == 0) return {empty({0}, t.options()), empty({0}, longs)};
    return {t.clone(), zeros({}, longs)};
  }
  const int64_t d = wrap_dim(dim, t.dim(), op);
  const int64_t n = t.size(d);
  Tensor moved = t.transpose(d, -1);
  DimVector sizes(moved.sizes());
  sizes.back() = k;
  const int64_t rows = n == 0 ? 0 : t.numel() / n;
  if (rows == 0 || k == 0) {
    return {empty(sizes, t.options()).transpose(d, -1), empty(sizes, longs).transpose(d, -1)};
  }
  Tensor rows_in = moved.contiguous().view({rows, n});
  Tensor idx = empty({rows, k}, longs);
  kernel<&KernelTable::sort>(t.device(), op)(idx, rows_in, k, descending);
  Tensor values = gather(rows_in, 1, idx);
  return {values.view(sizes).transpose(d, -1), idx.view(sizes).transpose(d, -1)};
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending, bool stable) {
  (void)stable;  // every sort is stable (see sorted_first)
  return as_op("sort", [&]() -> std::tuple<Tensor, Tensor> {
    check_defined(t, "sort", "self");
    const int64_t wrapped = wrap_dim(dim, t.dim(), "sort");  // a 0-d tensor takes -1 and 0 only
    const int64_t n = t.dim() == 0 ? 1 : t.size(wrapped);
    const bool grad = needs_grad(t);
    auto r = forward_once(grad, [&] { return sorted_first(t, dim, n, descending, "sort"); });
    if (grad) [[unlikely]] autograd::record_sort(t, std::get<0>(r), std::get<1>(r), dim, "SortBackward0");
    return r;
  });
}

Tensor argsort(const Tensor& t, int64_t dim, bool descending, bool stable) {
  return as_op("argsort", [&]() -> Tensor {
    check_defined(t, "argsort", "self");
    NoGradGuard no_grad;  // indices only: nothing to differentiate
    return std::get<1>(sort(t, dim, descending, stable));
  });
}

std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // the k values always come in sorted order
  return as_op("topk", [&]() -> std::tuple<Tensor, Tensor> {
    check_defined(t, "topk", "self");
    WICK_CHECK(t.dtype() != kBool, TypeError, "topk", "\"topk\" not implemented for 'Bool'");
    const int64_t wrapped = wrap_dim(dim, t.dim(), "topk");  // a 0-d tensor takes -1 and 0 only
    const int64_t n = t.dim() == 0 ? 1 : t.size(wrapped);
    WICK_CHECK(k >= 0 && k <= n, ValueError, "topk", "selected index k out of range");  // a RuntimeError
    const bool grad = needs_grad(t);
    auto r = forward_once(grad, [&] { return sorted_first(t, dim, k, largest, "topk"); });
    if (grad) [[unlikely]] autograd::record_sort(t, std::get<0>(r), std::get<1>(r), dim, "TopkBackward0");
    return r;
  });
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  return as_op("multinomial", [&]() -> Tensor {
    check_defined(probs, "multinomial", "self");
    WICK_CHECK(probs.dim() == 1 || probs.dim() == 2, ValueError, "multinomial", "prob_dist must be 1 or 2 dim");
    WICK_CHECK(is_floating_point(probs.dtype()), TypeError, "multinomial",
               "multinomial only supports floating-point dtypes for input, got: ", probs.dtype());
    WICK_CHECK(num_samples > 0, ValueError, "multinomial", "cannot sample n_sample <= 0 samples");
    const int64_t n = probs.size(-1);
    WICK_CHECK(replacement || num_samples <= n, ValueError, "multinomial",
               "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    WICK_CHECK(n <= (int64_t(1) << 24), ValueError, "multinomial", "number of categories cannot exceed 2^24");
    NoGradGuard no_grad;
    const int64_t rows = probs.dim() == 1 ? 1 : probs.size(0);
    const TensorOptions longs = TensorOptions(kInt64).device(probs.device());
    if (rows == 0) return empty(probs.dim() == 1 ? DimVector{num_samples} : DimVector{0, num_samples}, longs);
    WICK_CHECK(n > 0, ValueError, "multinomial", "invalid multinomial distribution (sum of probabilities <= 0)");
    // The checks read three numbers back in one host wait.
    Tensor p = probs.reshape({rows, n});
    Tensor zero_rows = (p.sum({1}, false, kFloat64) <= 0).sum();
    Tensor flags = cat({(wick::max(p) < INFINITY).to(kInt64).reshape({1}), (wick::min(p) >= 0).to(kInt64).reshape({1}),
                        zero_rows.reshape({1})});
    const std::vector<int64_t> f = flags.cpu().to_vector<int64_t>();
    WICK_CHECK(f[0] && f[1], ValueError, "multinomial", "probability tensor contains either `inf`, `nan` or element < 0");
    WICK_CHECK(f[2] == 0, ValueError, "multinomial", "invalid multinomial distribution (sum of probabilities <= 0)");
    const TensorOptions doubles = TensorOptions(kFloat64).device(probs.device());
    Tensor out;
    if (replacement && num_samples > 1) {
      Tensor u = rand({rows, num_samples}, doubles);
      out = empty({rows, num_samples}, longs);
      kernel<&KernelTable::multinomial>(probs.device(), "multinomial")(out, p.contiguous(), u);
    } else {
      Tensor u = rand({rows, n}, doubles);
      Tensor keys = p.to(kFloat64) / -log(u);
      out = std::get<1>(topk(keys, num_samples, -1));
    }
    return probs.dim() == 1 ? out.view({num_samples}) : out;
  });
}

Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return wick::argsort(*this, dim, descending, stable);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return wick::sort(*this, dim, descending, stable);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return wick::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  return wick::multinomial(*this, num_samples, replacement);
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator& generator) {
  check_defined(probs, "multinomial", "self");
  GeneratorScope scope(generator, probs.device(), "multinomial");
  return multinomial(probs, num_samples, replacement);
}
Tensor Tensor::multinomial(int64_t num_samples, bool replacement, Generator& generator) const {
  return wick::multinomial(*this, num_samples, replacement, generator);
}

}  // namespace wick
