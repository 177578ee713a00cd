// torch.linalg's vector_norm, matrix_norm and norm over wick::norm, sum, amax and amin (no
// kernels of their own; the node is each of those ops'). Errors as PyTorch's, named as the op.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/as_op.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick {

namespace {

// The dims of dim wrapped into [0, n), checked (in range, no repeats).
DimVector wrap_dims(IntArrayRef dim, int64_t n, const char* op) {
  DimVector out;
  for (int64_t d : dim) {
    WICK_CHECK(d >= -std::max<int64_t>(n, 1) && d < std::max<int64_t>(n, 1), IndexError, op,
               "Dimension out of range (expected to be in range of [", -std::max<int64_t>(n, 1), ", ",
               std::max<int64_t>(n, 1) - 1, "], but got ", d, ")");
    const int64_t w = d < 0 ? d + n : d;
    for (int64_t e : out) WICK_CHECK(e != w, ValueError, op, "dim ", w, " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

void check_floating(const Tensor& t, std::optional<Dtype> dtype, const char* op) {
  detail::check_defined(t, op, "self");
  WICK_CHECK(is_floating_point(t.dtype()), TypeError, op, "Expected a floating point or complex tensor as input. Got ",
             t.dtype());
  WICK_CHECK(!dtype || is_floating_point(*dtype), TypeError, op, "dtype should be floating point or complex. Got ",
             *dtype);
}

}  // namespace

Tensor linalg_vector_norm(const Tensor& t, const Scalar& ord, IntArrayRef dim, bool keepdim,
                          std::optional<Dtype> dtype) {
  constexpr const char* kOp = "linalg_vector_norm";
  check_floating(t, dtype, kOp);
  const DimVector dims = wrap_dims(dim, t.dim(), kOp);
  const double p = ord.to<double>();
  WICK_CHECK(t.numel() > 0 || p >= 0, ValueError, kOp, "linalg.vector_norm cannot compute the ", p,
             " norm on an empty tensor because the operation does not have an identity");
  return detail::as_op(kOp, [&] {
    const Tensor x = dtype ? t.to(*dtype) : t;
    if (!dims.empty()) return wick::norm(x, ord, dims, keepdim);
    if (!keepdim) return wick::norm(x, ord);
    DimVector all;  // every dim, kept as size 1
    for (int64_t d = 0; d < x.dim(); ++d) all.push_back(d);
    return wick::norm(x, ord, all, true);
  });
}

namespace {

// |t| summed over sum_dim, then the largest (smallest) over max_dim: the matrix 1- and
// inf-norms and their negative orders.
Tensor sum_then_extreme(const Tensor& t, int64_t sum_dim, int64_t max_dim, bool largest, bool keepdim) {
  Tensor s = t.abs().sum({sum_dim}, true);
  s = largest ? wick::amax(s, {max_dim}, true) : wick::amin(s, {max_dim}, true);
  if (keepdim) return s;
  return s.squeeze(std::max(sum_dim, max_dim)).squeeze(std::min(sum_dim, max_dim));
}

}  // namespace

Tensor linalg_matrix_norm(const Tensor& t, const Scalar& ord, IntArrayRef dim, bool keepdim,
                          std::optional<Dtype> dtype) {
  constexpr const char* kOp = "linalg_matrix_norm";
  check_floating(t, dtype, kOp);
  WICK_CHECK(t.dim() >= 2, ValueError, kOp, "The input tensor A must have at least 2 dimensions.");
  WICK_CHECK(dim.size() == 2, ValueError, kOp, "dim must be a 2-tuple. Got ", dim);
  const DimVector d = wrap_dims(dim, t.dim(), kOp);
  const double p = ord.to<double>();
  const bool one = std::abs(p) == 1, inf = std::isinf(p);
  WICK_CHECK(one || inf || std::abs(p) == 2, ValueError, kOp, "Order ", p,
             " not supported. (valid orders: 2, -2, 1, -1, inf, -inf)");
  WICK_CHECK(!(std::abs(p) == 2), NotImplementedError, kOp,
             "the spectral norms (ord 2, -2) need singular values, which wick does not compute yet");
  return detail::as_op(kOp, [&] {
    const Tensor x = dtype ? t.to(*dtype) : t;
    // ord 1: the largest column sum (sum over the rows, d[0]); inf: the largest row sum.
    return one ? sum_then_extreme(x, d[0], d[1], p > 0, keepdim) : sum_then_extreme(x, d[1], d[0], p > 0, keepdim);
  });
}

Tensor linalg_matrix_norm(const Tensor& t, const char* ord, IntArrayRef dim, bool keepdim,
                          std::optional<Dtype> dtype) {
  constexpr const char* kOp = "linalg_matrix_norm";
  if (!ord) return linalg_matrix_norm(t, Scalar(0), dim, keepdim, dtype);  // a literal 0
  const bool fro = std::strcmp(ord, "fro") == 0, nuc = std::strcmp(ord, "nuc") == 0;
  WICK_CHECK(fro || nuc, ValueError, kOp, "Order ", ord, " not supported.");
  check_floating(t, dtype, kOp);
  WICK_CHECK(t.dim() >= 2, ValueError, kOp, "The input tensor A must have at least 2 dimensions.");
  WICK_CHECK(dim.size() == 2, ValueError, kOp, "dim must be a 2-tuple. Got ", dim);
  const DimVector d = wrap_dims(dim, t.dim(), kOp);
  WICK_CHECK(fro, NotImplementedError, kOp,
             "the nuclear norm needs singular values, which wick does not compute yet");
  return detail::as_op(kOp, [&] { return linalg_vector_norm(t, 2, d, keepdim, dtype); });
}

Tensor linalg_norm(const Tensor& t, const std::optional<Scalar>& ord, IntArrayRef dim, bool keepdim,
                   std::optional<Dtype> dtype) {
  constexpr const char* kOp = "linalg_norm";
  detail::check_defined(t, kOp, "self");
  if (!ord) return detail::as_op(kOp, [&] { return linalg_vector_norm(t, 2, dim, keepdim, dtype); });
  const size_t n = dim.empty() ? size_t(t.dim()) : dim.size();
  WICK_CHECK(!dim.empty() || t.dim() == 1 || t.dim() == 2, ValueError, kOp,
             "If dim is not specified but ord is, the input must be 1D or 2D. Got ", t.dim(), "D.");
  WICK_CHECK(n == 1 || n == 2, ValueError, kOp, "dim must be a 1-tuple or a 2-tuple, got ", dim);
  return detail::as_op(kOp, [&] {
    if (n == 1) return linalg_vector_norm(t, *ord, dim, keepdim, dtype);
    return linalg_matrix_norm(t, *ord, dim.empty() ? IntArrayRef{-2, -1} : dim, keepdim, dtype);
  });
}

Tensor linalg_norm(const Tensor& t, const char* ord, IntArrayRef dim, bool keepdim, std::optional<Dtype> dtype) {
  constexpr const char* kOp = "linalg_norm";
  if (!ord) return linalg_norm(t, std::optional<Scalar>(Scalar(0)), dim, keepdim, dtype);  // a literal 0
  detail::check_defined(t, kOp, "self");
  WICK_CHECK(dim.empty() ? t.dim() == 2 : dim.size() == 2, ValueError, kOp, "Order ", ord,
             " requires a 2D input or a 2-tuple dim; got a ", t.dim(), "D input and dim ", dim);
  return detail::as_op(kOp, [&] { return linalg_matrix_norm(t, ord, dim.empty() ? IntArrayRef{-2, -1} : dim, keepdim, dtype); });
}

}  // namespace wick
