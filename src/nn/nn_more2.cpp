// adaptive_max_pool2d/1d, instance_norm, bilinear and embedding_bag, and the modules built on
// them (AdaptiveMaxPool2d/1d, InstanceNorm1d/2d/3d, Bilinear, EmbeddingBag), BatchNorm3d and
// the 1-D and 3-D padding layers. Everything is composed of other ops and records their nodes
// (PyTorch records one node for each of the four functions; the gradients are the same):
//   - adaptive max pooling gathers every window of the input plane into a [cells, k] block
//     (index_select; a window smaller than the largest is padded with its own first element,
//     which changes no maximum) and takes max over it, so the gradient of each maximum flows
//     to the one element it came from, as PyTorch's;
//   - instance_norm is batch_norm over [1, N C, *], as ATen's;
//   - embedding_bag looks rows up with embedding (EmbeddingBackward0: padding_idx's row gets no
//     gradient) and sums them per bag with index_add, or takes max over a [bags, k] block as
//     adaptive pooling does. Offsets and indices are read on the host, which checks them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/as_op.h"
#include "core/checks.h"
#include "core/host_upload.h"
#include "core/tensor_ops.h"
#include "nn/repr.h"
#include "wick/autograd.h"
#include "wick/nn/embedding.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/nn/linear.h"
#include "wick/nn/normalization.h"
#include "wick/nn/padding.h"
#include "wick/nn/pooling.h"
#include "wick/ops.h"

namespace wick::nn {

namespace functional {

using wick::detail::as_op;

namespace {

// An int64 tensor of values on device (built on the host; wick's allocation, so a size too
// large is wick's OutOfMemoryError).
Tensor index_tensor(const std::vector<int64_t>& values, Device device) {
  Tensor t = wick::empty({int64_t(values.size())}, TensorOptions(kInt64));
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return wick::detail::to_device_async(t, device);
}

// The window of cell i of out cells over a dim of size n: [floor(i n / out), ceil((i + 1) n / out)).
std::pair<int64_t, int64_t> window(int64_t i, int64_t n, int64_t out) {
  return {i * n / out, ((i + 1) * n + out - 1) / out};
}

// adaptive_max_pool2d of a checked 4-D floating x: (values, indices), [N, C, oh, ow] each.
std::tuple<Tensor, Tensor> adaptive_max4(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (oh == 0 || ow == 0)
    return {wick::empty({n, c, oh, ow}, x.options()), wick::empty({n, c, oh, ow}, x.options().dtype(kInt64))};
  int64_t kh = 0, kw = 0;  // the largest window
  for (int64_t i = 0; i < oh; ++i) kh = std::max(kh, window(i, h, oh).second - window(i, h, oh).first);
  for (int64_t j = 0; j < ow; ++j) kw = std::max(kw, window(j, w, ow).second - window(j, w, ow).first);
  const int64_t k = kh * kw;
  // Row (i, j) of cells: the flat positions of window (i, j) in row-major order, then its first
  // position again up to k (a repeat changes no maximum, and max keeps the first of equals).
  std::vector<int64_t> cells;
  cells.reserve(size_t(oh * ow * k));
  for (int64_t i = 0; i < oh; ++i) {
    const auto [h0, h1] = window(i, h, oh);
    for (int64_t j = 0; j < ow; ++j) {
      const auto [w0, w1] = window(j, w, ow);
      const size_t first = cells.size();
      for (int64_t r = h0; r < h1; ++r)
        for (int64_t q = w0; q < w1; ++q) cells.push_back(r * w + q);
      const int64_t at = cells[first];
      while (cells.size() < first + size_t(k)) cells.push_back(at);
    }
  }
  Tensor index = index_tensor(cells, x.device());
  Tensor blocks = wick::index_select(x.reshape({n, c, h * w}), 2, index).view({n, c, oh, ow, k});
  auto [values, local] = blocks.max(4);
  // The local argmax read back through the cells' positions: indices into the H * W plane.
  Tensor flat = wick::gather(index.view({1, 1, oh, ow, k}).expand({n, c, oh, ow, k}), 4, local.unsqueeze(4));
  return {values, flat.squeeze(4)};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_impl(const Tensor& x, Pair output_size, const char* op) {
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, op, "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: ",
             x.sizes());
  for (int64_t i = 1; i < x.dim(); ++i)
    WICK_CHECK(x.size(i) > 0, ValueError, op,
               "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input "
               "has sizes ",
               x.sizes(), " with dimension ", i, " being empty");
  WICK_CHECK(is_floating_point(x.dtype()), TypeError, op, "\"adaptive_max_pool2d\" not implemented for '", x.dtype(),
             "'");
  WICK_CHECK(output_size.h >= 0 && output_size.w >= 0, ValueError, op,
             "Trying to create tensor with negative dimension: output_size (", output_size.h, ", ", output_size.w,
             ")");
  return as_op(op, [&]() -> std::tuple<Tensor, Tensor> {
    if (x.dim() == 4) return adaptive_max4(x, output_size.h, output_size.w);
    auto [v, i] = adaptive_max4(x.unsqueeze(0), output_size.h, output_size.w);
    return {v.squeeze(0), i.squeeze(0)};
  });
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_impl(const Tensor& x, int64_t output_size) {
  constexpr const char* op = "adaptive_max_pool1d";
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, op, "Expected 2 to 3 dimensions, but got ", x.dim(),
             "-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)");
  // The 2-D pooling over [*, C, 1, L]: a window spans the one row, so the plane index is the
  // position along L.
  auto [v, i] = adaptive_max_pool2d_impl(x.unsqueeze(-2), Pair(1, output_size), op);
  return {v.squeeze(-2), i.squeeze(-2)};
}

}  // namespace

Tensor adaptive_max_pool2d(const Tensor& x, Pair output_size) {
  return std::get<0>(adaptive_max_pool2d_impl(x, output_size, "adaptive_max_pool2d"));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, Pair output_size) {
  return adaptive_max_pool2d_impl(x, output_size, "adaptive_max_pool2d");
}
Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size) {
  return std::get<0>(adaptive_max_pool1d_impl(x, output_size));
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, int64_t output_size) {
  return adaptive_max_pool1d_impl(x, output_size);
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  constexpr const char* op = "instance_norm";
  wick::detail::check_defined(x, op, "input");
  WICK_CHECK(x.dim() >= 2, ValueError, op, "expected at least 2D input (got ", x.dim(), "D input)");
  WICK_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()), ValueError, op,
             "Expected running_mean and running_var to be defined when use_input_stats is false");
  const int64_t b = x.size(0), c = x.size(1);
  // Every per-channel tensor checked here, before batch_norm writes the repeated statistics
  // (whose sizes would name N C, not C).
  for (auto [t, what] : {std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"},
                         std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    WICK_CHECK(!t->defined() || t->numel() == c, ValueError, op, what, " should contain ", c, " elements not ",
               t->numel());
  if (use_input_stats) {
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
    WICK_CHECK(spatial != 1, ValueError, op, "Expected more than 1 spatial element when training, got input size ",
               x.sizes());
  }
  return as_op(op, [&] {
    DimVector shape(x.sizes().begin(), x.sizes().end());
    shape[0] = 1;
    shape[1] = b * c;
    auto repeated = [&](const Tensor& t) { return t.defined() ? t.reshape({c}).repeat({b}) : Tensor(); };
    Tensor rm = repeated(running_mean), rv = repeated(running_var);
    Tensor y = batch_norm(x.reshape(shape), rm, rv, repeated(weight), repeated(bias), use_input_stats, momentum, eps);
    // batch_norm updated the repeated copies; each running statistic becomes their mean over
    // the batch (unchanged without input statistics).
    if (use_input_stats && (running_mean.defined() || running_var.defined())) {
      NoGradGuard g;
      if (running_mean.defined()) Tensor(running_mean).copy_(rm.view({b, c}).mean({0}).view(running_mean.sizes()));
      if (running_var.defined()) Tensor(running_var).copy_(rv.view({b, c}).mean({0}).view(running_var.sizes()));
    }
    return y.reshape(x.sizes());
  });
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  constexpr const char* op = "bilinear";
  wick::detail::check_defined(x1, op, "input1");
  wick::detail::check_defined(x2, op, "input2");
  wick::detail::check_defined(weight, op, "weight");
  WICK_CHECK(weight.dim() == 3, ValueError, op, "bilinear(): weight must be 3-D [out, in1, in2], got sizes ",
             weight.sizes());
  WICK_CHECK(x1.dim() == x2.dim(), ValueError, op, "bilinear(): input dimensions do not match: got ", x1.dim(),
             " and ", x2.dim());
  WICK_CHECK(x1.dim() >= 1, ValueError, op, "bilinear(): expected inputs of at least 1 dimension, got 0");
  for (int64_t i = 0; i + 1 < x1.dim(); ++i)
    WICK_CHECK(x1.size(i) == x2.size(i), ValueError, op, "bilinear(): input batch dimensions do not match at dim ",
               i, ": got ", x1.size(i), " and ", x2.size(i));
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  WICK_CHECK(x1.size(-1) == in1, ValueError, op, "bilinear(): input1 size does not match weight size: got ",
             x1.size(-1), " but expected ", in1);
  WICK_CHECK(x2.size(-1) == in2, ValueError, op, "bilinear(): input2 size does not match weight size: got ",
             x2.size(-1), " but expected ", in2);
  WICK_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out), ValueError, op,
             "bilinear(): bias size does not match weight size: got ", bias.defined() ? bias.size(0) : 0,
             " but expected ", out);
  return as_op(op, [&] {
    DimVector lead(x1.sizes().begin(), x1.sizes().end() - 1);
    int64_t rows = 1;
    for (int64_t s : lead) rows *= s;
    // t[r, o, j] = sum_i x1[r, i] weight[o, i, j], then y[r, o] = sum_j t[r, o, j] x2[r, j].
    Tensor t = x1.reshape({rows, in1}).matmul(weight.permute({1, 0, 2}).reshape({in1, out * in2}));
    Tensor y = (t.view({rows, out, in2}) * x2.reshape({rows, 1, in2})).sum({2});
    if (bias.defined()) y = y + bias;
    lead.push_back(out);
    return y.reshape(lead);
  });
}

namespace {

// The host copy of an int32 or int64 index tensor.
std::vector<int64_t> host_indices(const Tensor& t) {
  Tensor h = t.to(Device(kCPU), kInt64).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + h.numel());
}

}  // namespace

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets, std::optional<double> max_norm,
                     double norm_type, bool scale_grad_by_freq, const std::string& mode, bool sparse,
                     const Tensor& per_sample_weights, bool include_last_offset, std::optional<int64_t> padding_idx) {
  constexpr const char* op = "embedding_bag";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(weight, op, "weight");
  WICK_CHECK(mode == "sum" || mode == "mean" || mode == "max", ValueError, op,
             "mode has to be one of sum, mean or max");
  if (mode == "max") {
    WICK_CHECK(!scale_grad_by_freq, ValueError, op, "max mode does not support scaling the gradient by the frequency");
    WICK_CHECK(!sparse, ValueError, op, "max mode does not support sparse weights");
  }
  WICK_CHECK(!sparse, NotImplementedError, op, "sparse gradients are not supported");
  WICK_CHECK(input.dtype() == kInt64 || input.dtype() == kInt32, TypeError, op,
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
             "got ",
             input.dtype(), " instead");
  WICK_CHECK(weight.dim() == 2, ValueError, op, "'weight' must be 2-D");
  if (per_sample_weights.defined()) {
    WICK_CHECK(per_sample_weights.sizes().equals(input.sizes()), ValueError, op, "embedding_bag: If per_sample_weights (",
               per_sample_weights.sizes(), ") is not None, then it must have the same shape as the input (",
               input.sizes(), ")");
    WICK_CHECK(mode == "sum", NotImplementedError, op,
               "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
               "(got mode='",
               mode, "'). Please open a feature request on GitHub.");
  }
  const int64_t rows = weight.size(0), dim = weight.size(1);
  int64_t pad = -1;  // no index equals it
  if (padding_idx) {
    WICK_CHECK(*padding_idx >= -rows && *padding_idx < rows, ValueError, op,
               "padding_idx must be within the number of embeddings, ", -rows, " through ", rows - 1, ", but got ",
               *padding_idx);
    pad = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
  }
  // The bags' starts: 2-D input [B, L] is B bags of L (Python builds arange(0, numel, L) as the
  // offsets, which include_last_offset then reads as B - 1 bags and an end).
  std::vector<int64_t> starts;
  if (input.dim() == 2) {
    WICK_CHECK(!offsets.defined(), ValueError, op,
               "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
               "sequences. However, found offsets of type Tensor");
    for (int64_t i = 0; i < input.size(0); ++i) starts.push_back(i * input.size(1));
  } else if (input.dim() == 1) {
    WICK_CHECK(offsets.defined(), ValueError, op, "offsets has to be a 1D Tensor but got None");
    WICK_CHECK(offsets.dim() == 1, ValueError, op, "offsets has to be a 1D Tensor");
    WICK_CHECK(offsets.dtype() == kInt64 || offsets.dtype() == kInt32, TypeError, op,
               "Expected tensor for argument #1 'offsets' to have one of the following scalar types: Long, Int; "
               "but got ",
               offsets.dtype(), " instead");
    starts = host_indices(offsets);
  } else {
    wick::detail::raise<ValueError>(op, "input has to be 1D or 2D Tensor, but got Tensor of dimension ", input.dim());
  }
  const std::vector<int64_t> idx = host_indices(input);
  const int64_t n = int64_t(idx.size());
  if (include_last_offset)
    WICK_CHECK(!starts.empty(), ValueError, op, "include_last_offset: number of offsets should be at least 1");
  if (!starts.empty()) {
    WICK_CHECK(starts[0] == 0, ValueError, op,
               "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
               "However, got ",
               starts[0]);
    WICK_CHECK(starts.back() <= n, ValueError, op, "offsets[-1] can not be greater than input's length ", n,
               " but got offsets[-1] of ", starts.back());
    for (size_t i = 0; i + 1 < starts.size(); ++i)
      WICK_CHECK(starts[i] <= starts[i + 1], ValueError, op, "offsets must be non-decreasing, but offsets[", i,
                 "] = ", starts[i], " > offsets[", i + 1, "] = ", starts[i + 1]);
  }
  for (int64_t i : idx) WICK_CHECK(i >= 0 && i < rows, IndexError, op, "index out of range in self");
  const int64_t bags = include_last_offset ? int64_t(starts.size()) - 1 : int64_t(starts.size());
  auto end_of = [&](int64_t bag) { return size_t(bag) + 1 < starts.size() ? starts[size_t(bag) + 1] : n; };

  return as_op(op, [&]() -> Tensor {
    // max_norm renormalizes every row looked up (padding_idx's too), in place, as PyTorch's.
    if (max_norm) {
      NoGradGuard g;
      embedding(input.reshape({-1}), weight, std::nullopt, max_norm, norm_type);
    }
    const Device device = weight.device();
    if (mode != "max") {
      // The positions that count (in a bag, not padding) and their bags.
      std::vector<int64_t> positions, rows_at, bag_of;
      std::vector<double> count(size_t(bags), 0.0);
      for (int64_t bag = 0; bag < bags; ++bag)
        for (int64_t m = starts[size_t(bag)]; m < end_of(bag); ++m)
          if (idx[size_t(m)] != pad) {
            positions.push_back(m);
            rows_at.push_back(idx[size_t(m)]);
            bag_of.push_back(bag);
            count[size_t(bag)] += 1;
          }
      // scale_grad_by_freq: each lookup's gradient over the count of its row among the bags'
      // lookups (PyTorch's documented rule; PyTorch's CPU kernel before 2.14 divided some rows
      // by another row's count, its CUDA kernel by their own).
      Tensor src = embedding(index_tensor(rows_at, device), weight, padding_idx, std::nullopt, 2.0, scale_grad_by_freq);
      if (per_sample_weights.defined())
        src = src * wick::index_select(per_sample_weights.reshape({-1}), 0,
                                       index_tensor(positions, per_sample_weights.device()))
                        .unsqueeze(1);
      Tensor out = wick::zeros({bags, dim}, src.options()).index_add(0, index_tensor(bag_of, device), src);
      if (mode == "sum") return out;
      // mean: an empty bag stays zero (divided by 1)
      for (double& k : count) k = std::max(k, 1.0);
      Tensor counts = wick::empty({bags, 1}, TensorOptions(kFloat64));
      std::copy(count.begin(), count.end(), counts.data_ptr<double>());
      return out / wick::detail::to_device_async(counts.to(out.dtype()), device);
    }
    // max: each bag's rows in a [bags, k] block, a shorter bag padded with its own first row
    // (an empty one with row 0, its result then zeroed).
    std::vector<std::vector<int64_t>> members(static_cast<size_t>(bags));
    size_t k = 0;
    for (int64_t bag = 0; bag < bags; ++bag) {
      for (int64_t m = starts[size_t(bag)]; m < end_of(bag); ++m)
        if (idx[size_t(m)] != pad) members[size_t(bag)].push_back(idx[size_t(m)]);
      k = std::max(k, members[size_t(bag)].size());
    }
    if (k == 0 || rows == 0) return wick::zeros({bags, dim}, weight.options());
    std::vector<int64_t> block;
    std::vector<int64_t> empty_bag;
    for (auto& m : members) {
      empty_bag.push_back(m.empty() ? 1 : 0);
      const int64_t first = m.empty() ? 0 : m.front();
      for (size_t j = 0; j < k; ++j) block.push_back(j < m.size() ? m[j] : first);
    }
    Tensor looked_up = embedding(index_tensor(block, device).view({bags, int64_t(k)}), weight, padding_idx);
    Tensor values = std::get<0>(looked_up.max(1));
    Tensor empty = index_tensor(empty_bag, device).view({bags, 1}) != 0;
    return wick::where(empty, 0.0, values);
  });
}

}  // namespace functional

namespace F = functional;
using detail::py_bool;
using detail::py_float;
using detail::py_tuple;

// ---- adaptive max pooling

Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& x) { return F::adaptive_max_pool2d(x, options.output_size()); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool2dImpl::forward_with_indices(const Tensor& x) {
  return F::adaptive_max_pool2d_with_indices(x, options.output_size());
}
std::string AdaptiveMaxPool2dImpl::extra_repr() const {
  const F::Pair p = options.output_size();
  // one number when both are, as the int PyTorch users usually pass
  return "output_size=" + (p.h == p.w ? std::to_string(p.h) : py_tuple({p.h, p.w}));
}

Tensor AdaptiveMaxPool1dImpl::forward(const Tensor& x) { return F::adaptive_max_pool1d(x, options.output_size()); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool1dImpl::forward_with_indices(const Tensor& x) {
  return F::adaptive_max_pool1d_with_indices(x, options.output_size());
}
std::string AdaptiveMaxPool1dImpl::extra_repr() const {
  return "output_size=" + std::to_string(options.output_size());
}

// ---- BatchNorm3d, InstanceNorm

void BatchNorm3dImpl::check_input(const Tensor& x) const {
  WICK_CHECK(x.dim() == 5, ValueError, "BatchNorm3d", "expected 5D input (got ", x.dim(), "D input)");
}

InstanceNormImplBase::InstanceNormImplBase(const InstanceNormOptions& options, const char* name, int64_t spatial_dims)
    : NormBaseImpl(name, options.num_features(), options.affine(), options.track_running_stats()),
      options(options),
      spatial_dims_(spatial_dims) {}

Tensor InstanceNormImplBase::forward(const Tensor& x) {
  const char* op = name().c_str();
  wick::detail::check_defined(x, op, "input");
  const int64_t batched = spatial_dims_ + 2;
  WICK_CHECK(x.dim() == batched - 1 || x.dim() == batched, ValueError, op, "expected ", batched - 1, "D or ",
             batched, "D input (got ", x.dim(), "D input)");
  const int64_t feature_dim = x.dim() - spatial_dims_ - 1;
  // PyTorch 2's check (1.13 failed later, in batch_norm's, for the repeated weight): the
  // channels must match wherever a per-channel tensor is applied.
  WICK_CHECK(x.size(feature_dim) == options.num_features() || (!options.affine() && !options.track_running_stats()),
             ValueError, op, "expected input's size at dim=", feature_dim, " to match num_features (",
             options.num_features(), "), but got: ", x.size(feature_dim), ".");
  const bool use_input_stats = is_training() || !options.track_running_stats();
  return wick::detail::as_op(op, [&] {
    Tensor in = x.dim() == batched ? x : x.unsqueeze(0);
    Tensor y = F::instance_norm(in, running_mean, running_var, weight, bias, use_input_stats,
                                options.momentum().value_or(0.0), options.eps());
    return x.dim() == batched ? y : y.squeeze(0);
  });
}

std::string InstanceNormImplBase::extra_repr() const {
  std::string m = options.momentum() ? py_float(*options.momentum()) : "None";
  return std::to_string(options.num_features()) + ", eps=" + py_float(options.eps()) + ", momentum=" + m +
         ", affine=" + py_bool(options.affine()) + ", track_running_stats=" + py_bool(options.track_running_stats());
}

// ---- Bilinear

BilinearImpl::BilinearImpl(const BilinearOptions& options) : options(options) {
  // PyTorch's init divides by sqrt(in1_features): 0 raises there (ZeroDivisionError).
  WICK_CHECK(options.in1_features() > 0 && options.in2_features() >= 0 && options.out_features() >= 0, ValueError,
             "Bilinear", "in1_features must be positive, in2_features and out_features non-negative, got ",
             options.in1_features(), ", ", options.in2_features(), " and ", options.out_features());
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.out_features(), options.in1_features(), options.in2_features()}, {},
                                        "Bilinear"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_features()}, {}, "Bilinear"));
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1.0 / std::sqrt(double(options.in1_features()));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& x1, const Tensor& x2) {
  return wick::detail::as_op("Bilinear", [&] { return F::bilinear(x1, x2, weight, bias); });
}

std::string BilinearImpl::extra_repr() const {
  return "in1_features=" + std::to_string(options.in1_features()) +
         ", in2_features=" + std::to_string(options.in2_features()) +
         ", out_features=" + std::to_string(options.out_features()) + ", bias=" + py_bool(options.bias());
}

// ---- EmbeddingBag

namespace {
// mode and padding_idx checked, padding_idx made non-negative.
EmbeddingBagOptions checked_bag_options(EmbeddingBagOptions options) {
  const std::string& mode = options.mode();
  WICK_CHECK(mode == "sum" || mode == "mean" || mode == "max", ValueError, "EmbeddingBag",
             "mode has to be one of sum, mean or max, got '", mode, "'");
  if (auto p = options.padding_idx()) {
    const int64_t n = options.num_embeddings();
    WICK_CHECK(*p >= -n && *p < n, ValueError, "EmbeddingBag", "padding_idx must be within num_embeddings");
    if (*p < 0) options.padding_idx(*p + n);
  }
  return options;
}
}  // namespace

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options) : options(checked_bag_options(options)) {
  weight = register_parameter(
      "weight",
      wick::detail::empty_for({options.num_embeddings(), options.embedding_dim()}, {}, "EmbeddingBag"));
  reset_parameters();
}

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options, const Tensor& weight, bool requires_grad)
    : options(checked_bag_options(options)) {
  wick::detail::check_defined(weight, "EmbeddingBag", "_weight");
  WICK_CHECK(weight.dim() == 2 && weight.size(0) == options.num_embeddings() &&
                 weight.size(1) == options.embedding_dim(),
             ValueError, "EmbeddingBag", "Shape of weight does not match num_embeddings and embedding_dim");
  this->weight = register_parameter("weight", weight.detach(), requires_grad);
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options) {
  constexpr const char* op = "EmbeddingBag.from_pretrained";
  wick::detail::check_defined(embeddings, op, "embeddings");
  WICK_CHECK(embeddings.dim() == 2, ValueError, op, "Embeddings parameter is expected to be 2-dimensional");
  WICK_CHECK(!options.sparse(), NotImplementedError, op, "sparse gradients are not supported");
  EmbeddingBagOptions o(embeddings.size(0), embeddings.size(1));
  o.max_norm(options.max_norm())
      .norm_type(options.norm_type())
      .mode(options.mode())
      .scale_grad_by_freq(options.scale_grad_by_freq())
      .include_last_offset(options.include_last_offset())
      .padding_idx(options.padding_idx());
  const bool trainable = !options.freeze();
  auto impl = std::make_shared<EmbeddingBagImpl>(o, embeddings, trainable);
  // A replica (DataParallel) gets a weight of its own, of the same dtype and trainability.
  const Dtype dtype = embeddings.dtype();
  impl->set_replicator([o, trainable, dtype] {
    auto m = std::make_shared<EmbeddingBagImpl>(o);
    if (is_floating_point(dtype)) m->to(dtype);
    m->weight.requires_grad_(trainable);
    return std::shared_ptr<Module>(m);
  });
  return EmbeddingBag(impl);
}

void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (auto p = options.padding_idx()) {
    NoGradGuard g;
    weight[*p].fill_(0);
  }
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return wick::detail::as_op("EmbeddingBag", [&] {
    return F::embedding_bag(input, weight, offsets, options.max_norm(), options.norm_type(),
                            options.scale_grad_by_freq(), options.mode(), options.sparse(), per_sample_weights,
                            options.include_last_offset(), options.padding_idx());
  });
}

std::string EmbeddingBagImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.max_norm()) s += ", max_norm=" + py_float(*options.max_norm());
  if (options.norm_type() != 2.0) s += ", norm_type=" + py_float(options.norm_type());
  if (options.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  s += ", mode=" + options.mode();
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  return s;
}

// ---- 1-D and 3-D padding

std::vector<int64_t> detail::padding_n(std::vector<int64_t> values, size_t n, const char* op) {
  if (values.size() == 1) values.assign(n, values[0]);
  WICK_CHECK(values.size() == n, ValueError, op, "expected 1 or ", n, " padding values, got ", values.size());
  return values;
}

// Each layer: its padding checked again (options built by assignment skip the constructors),
// then pad under the layer's name.
#define WICK_DETAIL_PAD_LAYER_DEFS(Name, n, mode)                                                          \
  Name##Impl::Name##Impl(const Name##Options& options) : options(options) {                                \
    this->options.padding(detail::padding_n(options.padding(), n, #Name));                                 \
  }                                                                                                        \
  Tensor Name##Impl::forward(const Tensor& x) {                                                            \
    return wick::detail::as_op(#Name, [&] { return F::pad(x, options.padding(), mode); });                 \
  }                                                                                                        \
  std::string Name##Impl::extra_repr() const { return py_tuple(options.padding()); }
WICK_DETAIL_PAD_LAYER_DEFS(ZeroPad1d, 2, "constant")
WICK_DETAIL_PAD_LAYER_DEFS(ZeroPad3d, 6, "constant")
WICK_DETAIL_PAD_LAYER_DEFS(ReflectionPad1d, 2, "reflect")
WICK_DETAIL_PAD_LAYER_DEFS(ReflectionPad3d, 6, "reflect")
WICK_DETAIL_PAD_LAYER_DEFS(ReplicationPad1d, 2, "replicate")
WICK_DETAIL_PAD_LAYER_DEFS(ReplicationPad3d, 6, "replicate")
#undef WICK_DETAIL_PAD_LAYER_DEFS

#define WICK_DETAIL_CONSTANT_PAD_LAYER_DEFS(Name, n)                                                           \
  Name##Impl::Name##Impl(const Name##Options& options) : options(options) {                                    \
    this->options.padding(detail::padding_n(options.padding(), n, #Name));                                     \
  }                                                                                                            \
  Tensor Name##Impl::forward(const Tensor& x) {                                                                \
    return wick::detail::as_op(#Name, [&] { return F::pad(x, options.padding(), "constant", options.value()); }); \
  }                                                                                                            \
  std::string Name##Impl::extra_repr() const {                                                                 \
    return "padding=" + py_tuple(options.padding()) + ", value=" + py_float(options.value());                  \
  }
WICK_DETAIL_CONSTANT_PAD_LAYER_DEFS(ConstantPad1d, 2)
WICK_DETAIL_CONSTANT_PAD_LAYER_DEFS(ConstantPad3d, 6)
#undef WICK_DETAIL_CONSTANT_PAD_LAYER_DEFS

}  // namespace wick::nn
