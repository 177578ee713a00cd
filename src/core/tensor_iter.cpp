#include "core/tensor_iter.h"

#include <algorithm>
#include <new>
#include <string>

#include "core/small_blocks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

// PyTorch's TensorIterator dimension order: perm[0] the innermost dim. Starting from row-major,
// an insertion sort by the operands' strides over shape: the first operand that can order two
// dims decides (one with a stride 0 there can't); of two dims with equal strides, the larger
// goes outside, else the next operand is asked; dims no operand orders stay as they were.
DimVector stride_order(IntArrayRef shape, const DimVector* strides, int n) {
  const size_t nd = shape.size();
  DimVector perm(nd, 0);
  for (size_t i = 0; i < nd; ++i) perm[i] = int64_t(nd - 1 - i);
  auto order = [&](int64_t d0, int64_t d1) {  // 1: d0 goes outside d1, -1: inside, 0: can't tell
    for (int k = 0; k < n; ++k) {
      const int64_t s0 = strides[k][size_t(d0)], s1 = strides[k][size_t(d1)];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 < s1 ? -1 : 1;
      if (shape[size_t(d0)] > shape[size_t(d1)]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < nd; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      const int c = order(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return perm;
}

// The strides TensorIterator gives a new output of shape (PyTorch's fast setup, then
// reorder_dimensions): inputs all of that shape and all channels-last: channels-last; all
// non-overlapping and dense with equal strides: those strides. Else dense in stride_order of
// the inputs' strides over the broadcast shape (0 on a broadcast dim); row-major when that
// order is row-major.
DimVector new_output_strides(IntArrayRef shape, std::initializer_list<Tensor> inputs) {
  const size_t nd = shape.size();
  bool same_shape = inputs.size() > 0, channels_last = nd == 4, same_dense = true;
  const Tensor& first = *inputs.begin();
  for (const Tensor& t : inputs) {
    same_shape = same_shape && t.sizes().equals(shape);
    channels_last = channels_last && same_shape && t.is_contiguous(MemoryFormat::ChannelsLast);
    same_dense = same_dense && same_shape && is_non_overlapping_and_dense(t) && t.strides().equals(first.strides());
  }
  if (same_shape && channels_last) return format_strides(shape, MemoryFormat::ChannelsLast, "TensorIterator");
  if (same_shape && same_dense) return DimVector(first.strides());
  DimVector strides[TensorIter::kMaxOperands];
  int n = 0;
  for (const Tensor& t : inputs) {
    DimVector& st = strides[n++];
    st.resize(nd, 0);
    const IntArrayRef sizes = t.sizes(), ts = t.strides();
    const size_t off = nd - sizes.size();
    for (size_t d = off; d < nd; ++d) st[d] = sizes[d - off] == 1 && shape[d] != 1 ? 0 : ts[d - off];
  }
  const DimVector perm = stride_order(shape, strides, n);
  bool row_major = true;
  for (size_t i = 0; i < nd; ++i) row_major = row_major && perm[i] == int64_t(nd - 1 - i);
  if (row_major) return contiguous_strides(shape);
  DimVector out(nd, 1);
  uint64_t next = 1;  // wraps only for an empty shape, whose strides don't matter
  for (int64_t d : perm) {
    out[size_t(d)] = int64_t(next);
    next *= uint64_t(shape[size_t(d)]);
  }
  return out;
}

}  // namespace

DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides) {
  const DimVector st(strides.begin(), strides.end());
  const DimVector perm = stride_order(sizes, &st, 1);  // TensorIterator's order, innermost first
  DimVector out(sizes.size(), 1);
  int64_t next = 1;
  for (int64_t d : perm) {
    out[size_t(d)] = next;
    // Sizes 0 and 1 take no room; an empty tensor's huge sizes stop at INT64_MAX.
    if (sizes[size_t(d)] > 1 && __builtin_mul_overflow(next, sizes[size_t(d)], &next)) next = INT64_MAX;
  }
  return out;
}

Tensor new_flat_output(const Tensor& like, Dtype dtype, const char* op) {
  const IntArrayRef sizes = like.impl()->sizes();
  try {
    const int64_t numel = like.impl()->numel();
    Storage st = make_storage(size_t(numel) * element_size(dtype), like.impl()->device());
    return Tensor(IntrusivePtr<TensorImpl>(
        new Pooled<TensorImpl>(std::move(st), dtype, sizes, numel, TensorImpl::Contiguous{})));
  } catch (const OutOfMemoryError& e) {
    std::string what = e.what();
    const size_t close = what.find("] ");
    raise<OutOfMemoryError>(op, close == std::string::npos ? what : what.substr(close + 2));
  }
}

bool TensorIter::can_build_flat(const Tensor& out, const Tensor& a, const Tensor* b, const IterConfig& cfg) {
  if (!a.defined() || (b && !b->defined())) return false;
  const TensorImpl* ai = a.impl();
  if (!ai->is_contiguous() || ai->numel() == 0) return false;
  const Dtype d = ai->dtype();
  if (b) {
    const TensorImpl* bi = b->impl();
    if (bi->dtype() != d || !bi->is_contiguous() || !bi->sizes().equals(ai->sizes()) ||
        bi->device() != ai->device())
      return false;
  }
  // The compute dtype build() would find is d: every input has it (so promotion among the
  // tensors gives it, dimensioned or not), a scalar's category is not higher, and no rule
  // moves it to the default float.
  if (cfg.compute_dtype && *cfg.compute_dtype != d) return false;
  if (cfg.int_to_float && !is_floating_point(d)) return false;
  if (cfg.scalar && !cfg.compute_dtype) {
    const int s = cfg.scalar->is_floating_point() ? 2 : cfg.scalar->is_integral() ? 1 : 0;
    if (s > promotion_category(d)) return false;
  }
  // In place: the output is a, so of its shape and dtype.
  return !out.defined() || (out.is_same(a) && (!cfg.out_dtype || *cfg.out_dtype == d));
}

TensorIter TensorIter::build_flat(const Tensor& out, const Tensor& a, const Tensor* b,
                                  const IterConfig& cfg) {
  // In place on a: contiguous, a repeats no element and overlaps itself fully; b must not share
  // part of its memory (an exact alias is allowed), as build() checks.
  if (out.defined() && b && cfg.check_overlap) check_no_partial_overlap(out, *b, cfg.op);
  TensorIter it;
  const Dtype d = a.impl()->dtype();
  const Dtype out_dtype = cfg.out_dtype ? *cfg.out_dtype : d;
  it.device_ = a.impl()->device();
  it.dtype_ = d;
  if (out.defined()) it.borrowed_[0] = &out;
  else it.ops_[0] = new_flat_output(a, out_dtype, cfg.op);
  it.borrowed_[1] = &a;
  it.borrowed_[2] = b;
  it.nops_ = b ? 3 : 2;
  it.numel_ = a.impl()->numel();
  it.shape_.resize(1, it.numel_);
  it.strides_[0].resize(1, element_size(out_dtype));
  const int64_t es = element_size(d);
  for (int i = 1; i < it.nops_; ++i) it.strides_[i].resize(1, es);
  return it;
}

TensorIter TensorIter::build(const Tensor& out, std::initializer_list<Tensor> inputs, const IterConfig& cfg) {
  TensorIter it;
  const int nin = int(inputs.size());

  // 0. Every input defined (an undefined Tensor() raises, never reads null), and the output
  //    when there is no input (fill_).
  {
    int j = 0;
    for (const Tensor& t : inputs) check_defined(t, cfg.op, cfg.names[j++]);
    if (nin == 0) check_defined(out, cfg.op, "self");
  }
  // 1. Devices: every input on the first input's device (the output's when none), the output too.
  const Tensor& first = nin ? *inputs.begin() : out;
  it.device_ = first.device();
  int k = 0;
  for (const Tensor& t : inputs) check_same_device(t, it.device_, cfg.op, cfg.names[k++]);
  if (out.defined()) check_same_device(out, it.device_, cfg.op, "out");

  // 1b. A given output must not repeat an element nor share some (not all) of an input's.
  if (out.defined() && cfg.check_overlap) {
    check_no_internal_overlap(out, cfg.op);
    for (const Tensor& t : inputs) check_no_partial_overlap(out, t, cfg.op);
  }

  // 2. Shapes and dtypes.
  DimVector shape(first.sizes());
  for (const Tensor& t : inputs) {
    if (!t.sizes().equals(shape)) shape = broadcast_shapes(shape, t.sizes(), cfg.op);
  }
  // Inputs every one contiguous with the full shape (the common case): the output is made
  // without empty()'s checks (its size is an input's), and the plan is one flat run (3b).
  bool flat = nin > 0;
  bool same_dtype = nin > 0, all_dims = true;  // every input of first's dtype; none 0-d
  for (const Tensor& t : inputs) {
    flat = flat && t.impl()->is_contiguous() && t.sizes().equals(shape);
    same_dtype = same_dtype && t.dtype() == first.dtype();
    all_dims = all_dims && t.dim() > 0;
  }
  Dtype compute = cfg.compute_dtype                       ? *cfg.compute_dtype
                  : same_dtype && all_dims && !cfg.scalar ? first.dtype()  // what promotion gives
                  : nin                                   ? result_type(inputs, cfg.scalar)
                                                          : out.dtype();
  if (cfg.int_to_float && !is_floating_point(compute)) compute = get_default_dtype();
  it.dtype_ = compute;
  Dtype out_dtype = cfg.out_dtype ? *cfg.out_dtype : compute;

  // 3. The output: the caller's (shape must match; a temporary when its dtype differs) or new.
  if (out.defined()) {
    WICK_CHECK(out.sizes().equals(shape), ValueError, cfg.op, "output with shape ", out.sizes(),
               " doesn't match the broadcast shape ", IntArrayRef(shape));
    if (out.dtype() != out_dtype) {
      WICK_CHECK(can_cast(out_dtype, out.dtype()), TypeError, cfg.op, "result type ", out_dtype, " can't be cast to the desired output type ",
                 out.dtype());
      it.ops_[0] = empty_for(shape, TensorOptions(out_dtype).device(it.device_), cfg.op);
      it.writeback_ = out;
    } else {
      it.ops_[0] = out;
    }
  } else if (flat) {
    it.ops_[0] = new_flat_output(first, out_dtype, cfg.op);
  } else if (cfg.contiguous_output || nin == 0) {
    it.ops_[0] = empty_for(shape, TensorOptions(out_dtype).device(it.device_), cfg.op);
  } else {
    // TensorIterator's layout: a transposed or channels-last input gives an output laid out
    // the same way.
    it.ops_[0] = empty_dense_for(shape, new_output_strides(shape, inputs),
                                 TensorOptions(out_dtype).device(it.device_), cfg.op);
  }
  k = 1;
  for (const Tensor& t : inputs) {
    it.ops_[k] = t.dtype() == compute || (cfg.keep_dtype >> (k - 1) & 1) ? t : t.to(compute);
    ++k;
  }
  it.nops_ = nin + 1;
  it.numel_ = it.ops_[0].numel();

  // 3b. The common case, every operand contiguous with the full shape (a new output, inputs
  //     not broadcast): one flat run with unit strides, without the general passes below.
  if (it.numel_ > 0 && flat) {
    bool all = true;  // the output too, and inputs cast to the compute dtype
    for (int i = 0; i < it.nops_ && all; ++i)
      all = it.ops_[i].impl()->is_contiguous() && it.ops_[i].sizes().equals(shape);
    if (all) {
      it.shape_.assign(&it.numel_, &it.numel_ + 1);
      for (int i = 0; i < it.nops_; ++i) {
        const int64_t es = it.ops_[i].element_size();
        it.strides_[i].assign(&es, &es + 1);
      }
      return it;
    }
  }

  // 3c. No element: nothing is visited, and an empty tensor's other sizes may be huge (merging
  //     them could overflow), so the plan is one run of 0 elements.
  if (it.numel_ == 0) {
    const int64_t zero = 0;
    it.shape_.assign(&zero, &zero + 1);
    for (int i = 0; i < it.nops_; ++i) it.strides_[i].assign(&zero, &zero + 1);
    it.contiguous_ = false;
    return it;
  }

  // 4. Strides in bytes over the broadcast shape (0 where an operand is broadcast).
  const size_t nd = shape.size();
  for (int i = 0; i < it.nops_; ++i) {
    const Tensor& t = it.ops_[i];
    const int64_t es = t.element_size();
    DimVector& st = it.strides_[i];
    st.resize(nd, 0);
    const IntArrayRef sizes = t.sizes(), strides = t.strides();
    const size_t off = nd - sizes.size();
    // With no elements nothing is visited: an empty tensor may have any strides (2^62, say),
    // and scaling or merging them could overflow, so all are 0.
    for (size_t d = off; d < nd; ++d)
      st[d] = it.numel_ == 0 || sizes[d - off] == 1 ? 0 : strides[d - off] * es;
  }

  // 5. Coalesce: drop size-1 dims, merge d-1 into d when every operand steps evenly across both.
  //    Dims go in the order of the output's strides when it is not row-major, whether the plan
  //    made it so or the caller's output is (a transposed input's result, or a copy between two
  //    transposed tensors, is then one flat run, as TensorIterator makes it).
  DimVector order(nd, 0);
  for (size_t d = 0; d < nd; ++d) order[d] = int64_t(d);
  if (!it.ops_[0].impl()->is_contiguous()) {
    const DimVector perm = stride_order(shape, &it.strides_[0], 1);
    for (size_t d = 0; d < nd; ++d) order[d] = perm[nd - 1 - d];
  }
  DimVector cs;
  DimVector cst[kMaxOperands];
  for (const int64_t od : order) {
    const size_t d = size_t(od);
    if (shape[d] == 1) continue;
    if (!cs.empty()) {
      bool merge = true;
      for (int i = 0; i < it.nops_; ++i)
        if (cst[i].back() != it.strides_[i][d] * shape[d]) merge = false;
      if (merge) {
        cs.back() *= shape[d];
        for (int i = 0; i < it.nops_; ++i) cst[i].back() = it.strides_[i][d];
        continue;
      }
    }
    cs.push_back(shape[d]);
    for (int i = 0; i < it.nops_; ++i) cst[i].push_back(it.strides_[i][d]);
  }
  if (cs.empty()) {  // a 0-d or all-ones shape: one element
    cs.push_back(1);
    for (int i = 0; i < it.nops_; ++i) cst[i].push_back(it.ops_[i].element_size());
  }
  it.shape_ = std::move(cs);
  it.contiguous_ = it.shape_.size() == 1;
  for (int i = 0; i < it.nops_; ++i) {
    it.strides_[i] = std::move(cst[i]);
    if (it.contiguous_ && it.strides_[i][0] != it.ops_[i].element_size()) it.contiguous_ = false;
  }
  return it;
}

void TensorIter::finish() const {
  if (writeback_.defined()) const_cast<Tensor&>(writeback_).copy_(ops_[0]);
}

}  // namespace wick::detail
