// sum and mean over all or some dims. Core moves the reduced dims last and makes the input a
// contiguous [outer, inner] matrix; the backend reduces rows. Accumulation dtypes follow
// PyTorch: integers and bool sum in int64, 16-bit floats accumulate in float32.
#include <algorithm>

#include "autograd/hooks.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

struct ReducePlan {
  DimVector out_sizes;       // with keepdim
  DimVector out_sizes_final; // as returned
  DimVector perm;            // kept dims, then reduced dims
  int64_t outer = 1, inner = 1;
};

ReducePlan plan_reduce(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  const int64_t nd = t.dim();
  std::vector<bool> red(size_t(std::max<int64_t>(nd, 1)), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd, op);
    WICK_CHECK(!red[size_t(w)] || dims.empty(), ValueError, op, "dim ", w, " appears multiple times in the list of dims");
    red[size_t(w)] = true;
  }
  ReducePlan p;
  for (int64_t d = 0; d < nd; ++d) {
    if (!red[size_t(d)]) {
      p.perm.push_back(d);
      p.outer *= t.size(d);
    }
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (red[size_t(d)]) {
      p.perm.push_back(d);
      p.inner *= t.size(d);
    }
    p.out_sizes.push_back(red[size_t(d)] ? 1 : t.size(d));
    if (!red[size_t(d)] || keepdim) p.out_sizes_final.push_back(p.out_sizes.back());
  }
  return p;
}

Tensor reduce(ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype,
              const char* name) {
  Dtype out_dtype = dtype ? *dtype : (is_integral(t.dtype(), true) ? kInt64 : t.dtype());
  if (op == ReduceOp::Mean)
    WICK_CHECK(is_floating_point(out_dtype), TypeError, name,
               "could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ",
               out_dtype);
  ReducePlan p = plan_reduce(t, dims, keepdim, name);
  Tensor in = t.dtype() == out_dtype ? t : t.to(out_dtype);
  in = in.permute(p.perm).contiguous().view({p.outer, p.inner});
  Tensor out = empty({p.outer}, TensorOptions(out_dtype).device(t.device()));
  kernel<&KernelTable::reduce>(t.device(), name)(op, out, in);
  return out.view(p.out_sizes_final);
}

}  // namespace

Tensor sum(const Tensor& t, std::optional<Dtype> dtype) {
  if (needs_grad(t)) [[unlikely]] return autograd::sum(t, dtype);
  return reduce(ReduceOp::Sum, t, {}, false, dtype, "sum");
}
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) {
  if (needs_grad(t)) [[unlikely]] return autograd::sum(t, dims, keepdim, dtype);
  return reduce(ReduceOp::Sum, t, dims, keepdim, dtype, "sum");
}
Tensor mean(const Tensor& t, std::optional<Dtype> dtype) {
  if (needs_grad(t)) [[unlikely]] return autograd::mean(t, dtype);
  return reduce(ReduceOp::Mean, t, {}, false, dtype, "mean");
}
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) {
  if (needs_grad(t)) [[unlikely]] return autograd::mean(t, dims, keepdim, dtype);
  return reduce(ReduceOp::Mean, t, dims, keepdim, dtype, "mean");
}

Tensor Tensor::sum(std::optional<Dtype> dtype) const { return wick::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) const {
  return wick::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<Dtype> dtype) const { return wick::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) const {
  return wick::mean(*this, dims, keepdim, dtype);
}

}  // namespace wick
