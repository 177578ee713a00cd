// Python's t[indices] and t[indices] = v as LibTorch spells them (Tensor::index, index_put_; see
// wick/indexing.h), masked_select and nonzero, composed of existing ops.
//
// Integers, slices, None, Ellipsis and bools are applied first, as views (select, slice,
// unsqueeze; each records its own view node). What remains are the advanced indices: int64
// tensors, one per indexed dim of that view (a bool mask stands for its nonzero() columns). They
// broadcast to one shape B; the indexed dims move to the front and merge into one dim of
// N = the product of their sizes, and the indices merge into one linear index into it, so
// that the gather is one index_select (and the write one index_copy_ / index_add_, repeated
// indices adding with accumulate). The result's B dims stand where the indexed dims were when
// these are adjacent, else first (PyTorch's rule).
#include <string_view>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "wick/indexing.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;
using indexing::TensorIndex;

indexing::TensorIndex::TensorIndex(const char* s) : type_(TensorIndexType::Ellipsis) {
  WICK_CHECK(s && std::string_view(s) == "...", ValueError, "TensorIndex",
             "expected \"...\" to represent an ellipsis index, but got \"", s ? s : "", "\"");
}

namespace {

// The view that the basic indices make and the advanced index of each of its dims (undefined
// where a dim is not indexed).
struct Basic {
  Tensor view;
  std::vector<Tensor> adv;
  bool any_adv = false;
};

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

Basic apply_basic(const Tensor& self, const TensorIndex* idx, size_t n, const char* op) {
  int64_t consumed = 0, ellipses = 0;
  for (size_t i = 0; i < n; ++i) {
    const TensorIndex& x = idx[i];
    if (x.is_integer() || x.is_slice()) ++consumed;
    else if (x.is_ellipsis()) ++ellipses;
    else if (x.is_tensor()) {
      check_defined(x.tensor(), op, "indices");
      consumed += is_mask(x.tensor()) ? x.tensor().dim() : 1;
    }
  }
  WICK_CHECK(ellipses <= 1, IndexError, op, "an index can only have a single ellipsis ('...')");
  WICK_CHECK(consumed <= self.dim(), IndexError, op, "too many indices for tensor of dimension ", self.dim());

  Basic b;
  b.view = self;
  const TensorOptions long_opts = TensorOptions(kInt64).device(self.device());
  auto put = [&](int64_t at, Tensor t) {
    if (int64_t(b.adv.size()) <= at) b.adv.resize(size_t(at) + 1);
    b.adv[size_t(at)] = std::move(t);
    b.any_adv = true;
  };
  int64_t d = 0;
  for (size_t i = 0; i < n; ++i) {
    const TensorIndex& x = idx[i];
    switch (x.type()) {
      case indexing::TensorIndexType::None:
        b.view = b.view.unsqueeze(d++);
        break;
      case indexing::TensorIndexType::Ellipsis:
        d += self.dim() - consumed;
        break;
      case indexing::TensorIndexType::Integer:
        b.view = b.view.select(d, x.integer());
        break;
      case indexing::TensorIndexType::Boolean:
        // t[True] adds a dim of size 1; t[False] one of size 0 (an empty advanced index)
        b.view = b.view.unsqueeze(d);
        if (!x.boolean()) put(d, wick::empty({0}, long_opts));
        ++d;
        break;
      case indexing::TensorIndexType::Slice: {
        const auto& s = x.slice();
        WICK_CHECK(s.step() > 0, ValueError, op, "step must be greater than zero");
        b.view = b.view.slice(d++, s.start(), s.stop(), s.step());
        break;
      }
      case indexing::TensorIndexType::Tensor: {
        const Tensor& t = x.tensor();
        if (is_mask(t)) {
          if (t.dim() == 0) {
            b.view = b.view.unsqueeze(d);
            const bool on = (t != 0).item<bool>();
            put(d, on ? wick::zeros({1}, long_opts) : wick::empty({0}, long_opts));
            ++d;
            break;
          }
          for (int64_t j = 0; j < t.dim(); ++j)
            WICK_CHECK(t.size(j) == b.view.size(d + j), IndexError, op, "The shape of the mask ", t.sizes(),
                       " at index ", j, " does not match the shape of the indexed tensor ", b.view.sizes(),
                       " at index ", d + j);
          Tensor nz = wick::nonzero(t.to(self.device()));
          for (int64_t j = 0; j < t.dim(); ++j) put(d + j, nz.select(1, j));
          d += t.dim();
        } else {
          WICK_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32 || t.dtype() == kInt16 || t.dtype() == kInt8,
                     IndexError, op, "tensors used as indices must be long, int, byte or bool tensors");
          put(d++, t.to(self.device(), kInt64));
        }
        break;
      }
    }
  }
  b.adv.resize(size_t(b.view.dim()));
  return b;
}

// The advanced indices of a view, checked, wrapped to non-negative and broadcast.
struct Advanced {
  std::vector<int64_t> dims;  // the indexed dims of the view, ascending
  std::vector<int64_t> rest;  // the others
  std::vector<Tensor> idx;    // int64, broadcast to shape
  DimVector shape;            // B
  bool front = false;         // B goes first (the indexed dims are not adjacent)
  int64_t at = 0;             // where B goes in the result
};

Advanced prepare(const Tensor& view, const std::vector<Tensor>& adv, const char* op) {
  Advanced a;
  bool compatible = true;
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (!adv[size_t(d)].defined()) {
      a.rest.push_back(d);
      continue;
    }
    IntArrayRef s = adv[size_t(d)].sizes();
    if (a.dims.empty()) {
      a.shape = DimVector(s);
    } else {
      const size_t nd = std::max(a.shape.size(), s.size());
      DimVector out(nd);
      for (size_t k = 0; k < nd; ++k) {
        const int64_t x = k + a.shape.size() >= nd ? a.shape[k + a.shape.size() - nd] : 1;
        const int64_t y = k + s.size() >= nd ? s[k + s.size() - nd] : 1;
        if (x != y && x != 1 && y != 1) compatible = false;
        out[k] = x == 1 ? y : x;
      }
      a.shape = out;
    }
    a.dims.push_back(d);
  }
  if (!compatible) {
    std::ostringstream os;
    for (size_t j = 0; j < a.dims.size(); ++j) os << (j ? ", " : "") << adv[size_t(a.dims[j])].sizes();
    raise<IndexError>(op, "shape mismatch: indexing tensors could not be broadcast together with shapes ", os.str());
  }
  for (size_t j = 1; j < a.dims.size(); ++j)
    if (a.dims[j] != a.dims[j - 1] + 1) a.front = true;
  a.at = a.front ? 0 : a.dims[0];
  for (int64_t d : a.dims) {
    Tensor i = adv[size_t(d)];
    const int64_t s = view.size(d);
    if (i.numel() > 0) {
      i = wick::where(i < 0, i + s, i);
      const int64_t bad = ((i < 0).sum() + (i >= s).sum()).item<int64_t>();
      if (bad) [[unlikely]] {
        for (int64_t v : adv[size_t(d)].cpu().to_vector<int64_t>())
          if (v < -s || v >= s)
            raise<IndexError>(op, "index ", v, " is out of bounds for dimension ", d, " with size ", s);
      }
    }
    a.idx.push_back(i.expand(a.shape));
  }
  return a;
}

// One int64 index into the indexed dims merged (row-major), flattened: [numel(B)].
Tensor linear_index(const Tensor& view, const Advanced& a) {
  Tensor lin;
  int64_t stride = 1;
  for (size_t j = a.dims.size(); j-- > 0;) {
    Tensor term = stride == 1 ? a.idx[j] : a.idx[j] * stride;
    lin = lin.defined() ? lin + term : term;
    stride *= view.size(a.dims[j]);
  }
  return lin.reshape({-1});
}

// view permuted to [indexed dims..., rest...] and the sizes that merge the indexed dims.
std::pair<Tensor, DimVector> indexed_first(const Tensor& view, const Advanced& a) {
  DimVector perm(a.dims.begin(), a.dims.end());
  DimVector flat{1};
  for (int64_t d : a.dims) flat[0] *= view.size(d);
  for (int64_t d : a.rest) {
    perm.push_back(d);
    flat.push_back(view.size(d));
  }
  return {view.permute(perm), flat};
}

// The permutation that moves the nb leading dims of an (nb + nr)-dim tensor to position at.
DimVector block_to(int64_t nb, int64_t nr, int64_t at) {
  DimVector p;
  for (int64_t k = 0; k < at; ++k) p.push_back(nb + k);
  for (int64_t k = 0; k < nb; ++k) p.push_back(k);
  for (int64_t k = at; k < nr; ++k) p.push_back(nb + k);
  return p;
}
// Its inverse: the block of nb dims at position at back to the front.
DimVector block_from(int64_t nb, int64_t nr, int64_t at) {
  DimVector p;
  for (int64_t k = 0; k < nb; ++k) p.push_back(at + k);
  for (int64_t k = 0; k < at; ++k) p.push_back(k);
  for (int64_t k = at + nb; k < nb + nr; ++k) p.push_back(k);
  return p;
}

Tensor gather_advanced(const Tensor& view, const Advanced& a) {
  auto [src, flat] = indexed_first(view, a);
  Tensor out = src.reshape(flat).index_select(0, linear_index(view, a));
  DimVector sizes = a.shape;
  for (int64_t d : a.rest) sizes.push_back(view.size(d));
  out = out.view(sizes);
  const int64_t nb = int64_t(a.shape.size()), nr = int64_t(a.rest.size());
  if (a.at > 0 && nb > 0) out = out.permute(block_to(nb, nr, a.at)).contiguous();
  return out;
}

void put_advanced(const Tensor& view, const Advanced& a, const Tensor& values, bool accumulate, const char* op) {
  const int64_t nb = int64_t(a.shape.size()), nr = int64_t(a.rest.size());
  DimVector result;  // the shape view.index(...) has
  for (int64_t k = 0; k < a.at; ++k) result.push_back(view.size(a.rest[size_t(k)]));
  for (int64_t s : a.shape) result.push_back(s);
  for (int64_t k = a.at; k < nr; ++k) result.push_back(view.size(a.rest[size_t(k)]));
  // values broadcast to it (leading dims of size 1 dropped first, as PyTorch)
  Tensor v = values;
  while (v.dim() > 0 && v.size(0) == 1 && v.dim() > int64_t(result.size())) v = v.squeeze(0);
  bool fits = v.dim() <= int64_t(result.size());
  for (int64_t k = 1; fits && k <= v.dim(); ++k)
    fits = v.size(-k) == 1 || v.size(-k) == result[result.size() - size_t(k)];
  WICK_CHECK(fits, ValueError, op, "shape mismatch: value tensor of shape ", values.sizes(),
             " cannot be broadcast to indexing result of shape ", IntArrayRef(result));
  v = v.to(view.device(), view.dtype()).expand(result);
  if (a.at > 0 && nb > 0) v = v.permute(block_from(nb, nr, a.at));
  auto [src, flat] = indexed_first(view, a);
  DimVector vflat{1};
  for (int64_t s : a.shape) vflat[0] *= s;
  for (size_t k = 1; k < flat.size(); ++k) vflat.push_back(flat[k]);
  v = v.reshape(vflat);
  Tensor lin = linear_index(view, a);
  // The merged view of src when its indexed dims merge without a copy; else a copy written back.
  Tensor target;
  if (a.dims.size() == 1) {
    target = src;
  } else {
    bool mergeable = true;
    for (size_t j = 0; j + 1 < a.dims.size(); ++j) {
      const int64_t k = int64_t(j);
      if (src.size(k + 1) != 1 && src.stride(k) != src.stride(k + 1) * src.size(k + 1)) mergeable = false;
    }
    if (mergeable) {
      try {
        target = src.view(flat);
      } catch (const Error&) {
        target = Tensor();
      }
    }
  }
  const bool direct = target.defined();
  if (!direct) target = src.reshape(flat).clone();
  if (accumulate) target.index_add_(0, lin, v);
  else target.index_copy_(0, lin, v);
  if (!direct) src.copy_(target.view(src.sizes()));
}

Tensor index_impl(const Tensor& self, const TensorIndex* idx, size_t n) {
  return as_op("index", [&] {
    check_defined(self, "index", "self");
    Basic b = apply_basic(self, idx, n, "index");
    if (!b.any_adv) return b.view;
    const bool grad = needs_grad(b.view);
    Tensor out = forward_once(grad, [&] { return gather_advanced(b.view, prepare(b.view, b.adv, "index")); });
    if (grad) [[unlikely]] {
      std::vector<TensorIndex> list;
      for (const Tensor& t : b.adv) list.push_back(t.defined() ? TensorIndex(t) : TensorIndex(indexing::Slice()));
      autograd::record_index("IndexBackward0", b.view, std::move(list), out, b.view.sizes());
    }
    return out;
  });
}

// self[idx] = values in place, nothing recorded.
void index_put_impl(Tensor& self, const TensorIndex* idx, size_t n, const Tensor& values, bool accumulate,
                    const char* op) {
  // self[mask] = value for a mask over self's leading dims and a single value: masked_fill_
  if (n == 1 && idx[0].is_tensor() && idx[0].tensor().dtype() == kBool && !accumulate && values.numel() == 1 &&
      values.dim() == 0 && idx[0].tensor().dim() > 0 && idx[0].tensor().dim() <= self.dim() &&
      idx[0].tensor().device() == self.device()) {
    const Tensor& mask = idx[0].tensor();
    bool leading = true;
    for (int64_t k = 0; k < mask.dim(); ++k) leading = leading && mask.size(k) == self.size(k);
    if (leading) {
      DimVector ms(mask.sizes());
      ms.resize(size_t(self.dim()), 1);
      self.masked_fill_(mask.view(ms), values.to(self.device()));
      return;
    }
  }
  Basic b = apply_basic(self, idx, n, op);
  if (!b.any_adv) {
    Tensor v = values.to(self.device(), self.dtype());
    if (accumulate) b.view.add_(v);
    else b.view.copy_(v);
    return;
  }
  put_advanced(b.view, prepare(b.view, b.adv, op), values, accumulate, op);
}

Tensor index_put_out(const Tensor& self, const TensorIndex* idx, size_t n, const Tensor& values, bool accumulate,
                     const char* op) {
  check_defined(self, op, "self");
  check_defined(values, op, "values");
  const bool grad = needs_grad(self, values);
  Tensor out = forward_once(grad, [&] {
    Tensor c = self.clone();
    index_put_impl(c, idx, n, values, accumulate, op);
    return c;
  });
  if (grad) [[unlikely]]
    autograd::record_index_put(self, values, std::vector<TensorIndex>(idx, idx + n), accumulate, out);
  return out;
}

Tensor& index_put_inplace(Tensor& self, const TensorIndex* idx, size_t n, const Tensor& values, bool accumulate) {
  const char* op = "index_put_";
  return as_op(op, [&]() -> Tensor& {
    check_defined(self, op, "self");
    check_defined(values, op, "values");
    if (needs_grad(self, values)) [[unlikely]]
      return autograd::inplace(self, op, [&](const Tensor& t) { return index_put_out(t, idx, n, values, accumulate, op); });
    check_no_internal_overlap(self, op);
    index_put_impl(self, idx, n, values, accumulate, op);
    return self;
  });
}

}  // namespace

Tensor index(const Tensor& t, const std::vector<TensorIndex>& indices) {
  return index_impl(t, indices.data(), indices.size());
}
Tensor index_put(const Tensor& t, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  return as_op("index_put", [&] { return index_put_out(t, indices.data(), indices.size(), values, accumulate, "index_put"); });
}

Tensor masked_select(const Tensor& t, const Tensor& mask) {
  const char* op = "masked_select";
  return as_op(op, [&] {
    check_defined(t, op, "self");
    check_defined(mask, op, "mask");
    WICK_CHECK(mask.dtype() == kBool, TypeError, op, "expected BoolTensor for mask");
    check_same_device(mask, t.device(), op, "mask");
    const DimVector shape = broadcast_shapes(t.sizes(), mask.sizes(), op);
    const Tensor m = mask.expand(shape);
    const bool grad = needs_grad(t);
    Tensor out = forward_once(grad, [&] {
      const Tensor lin = wick::nonzero(m.reshape({-1})).reshape({-1});
      return t.expand(shape).reshape({-1}).index_select(0, lin);
    });
    if (grad) [[unlikely]] autograd::record_index("MaskedSelectBackward0", t, {TensorIndex(m)}, out, shape);
    return out;
  });
}

Tensor nonzero(const Tensor& t) {
  const char* op = "nonzero";
  return as_op(op, [&] {
    check_defined(t, op, "self");
    NoGradGuard no_grad;  // integer results: nothing to record
    const TensorOptions long_opts = TensorOptions(kInt64).device(t.device());
    const int64_t n = t.numel();
    if (n == 0) return wick::empty({0, t.dim()}, long_opts);
    // Position of each non-zero element among them (cumsum), the count (one read back), and a
    // scatter of the flat indices to those positions; zero elements go to a spare last slot.
    const Tensor flat = t.reshape({-1}) != 0;
    const Tensor pos = flat.cumsum(0);
    const int64_t count = pos.select(0, -1).item<int64_t>();
    Tensor buf = wick::empty({count + 1}, long_opts);
    buf.scatter_(0, wick::where(flat, pos - 1, Scalar(count)), wick::arange(n, long_opts));
    const Tensor lin = buf.slice(0, 0, count);
    if (t.dim() == 0) return wick::empty({count, 0}, long_opts);
    if (t.dim() == 1) return lin.unsqueeze(1);
    // Each dim's coordinate: lin's digits in the mixed radix of the sizes (row-major).
    std::vector<Tensor> cols(size_t(t.dim()));
    Tensor rem = lin;
    for (int64_t d = t.dim(); d-- > 0;) {
      const int64_t s = t.size(d);
      cols[size_t(d)] = rem.remainder(s);
      // (exact: the difference is a multiple of s below 2^53)
      if (d > 0) rem = (rem - cols[size_t(d)]).to(kFloat64).div(s).to(kInt64);
    }
    return wick::stack(cols, 1);
  });
}

Tensor argwhere(const Tensor& t) { return as_op("argwhere", [&] { return wick::nonzero(t); }); }

// ---- Tensor methods

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index_impl(*this, indices.begin(), indices.size());
}
Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  return index_impl(*this, indices.data(), indices.size());
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& values, bool accumulate) {
  return index_put_inplace(*this, indices.begin(), indices.size(), values, accumulate);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  return index_put_inplace(*this, indices.data(), indices.size(), values, accumulate);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) {
  check_defined(*this, "index_put_", "self");
  return index_put_inplace(*this, indices.begin(), indices.size(), wick::full({}, value, options()), false);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value) {
  check_defined(*this, "index_put_", "self");
  return index_put_inplace(*this, indices.data(), indices.size(), wick::full({}, value, options()), false);
}
Tensor Tensor::index_put(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) const {
  return wick::index_put(*this, indices, values, accumulate);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return wick::masked_select(*this, mask); }
Tensor Tensor::nonzero() const { return wick::nonzero(*this); }
Tensor Tensor::argwhere() const { return wick::argwhere(*this); }

}  // namespace wick
