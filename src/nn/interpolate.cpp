// nn::functional::interpolate and nn::Upsample, as torch.nn.functional.interpolate. Each spatial
// dim is resampled on its own (the modes are separable): nearest and nearest-exact select source
// positions with index_select; the linear modes select the two neighbours of each output
// position and blend them with per-position weights (two index_selects, two products and a sum).
// The source positions and weights follow ATen's CPU formulas (float scales for nearest, the
// input's precision for the linear modes; half and bfloat16 blend in float32). Every piece
// records its own autograd node and runs on any device, so this file has no kernel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/as_op.h"
#include "core/host_upload.h"
#include "nn/repr.h"
#include "wick/nn/functional.h"
#include "wick/nn/upsampling.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace {

constexpr const char* kOp = "interpolate";

template <class T>
std::string list(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// ATen's compute_scales_value: 1 / scale_factor when one was given, else in / out.
template <class T>
T scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? T(1.0 / *scale) : T(in) / T(out);
}

// Source position of each output position along one dim, for nearest and nearest-exact.
std::vector<int64_t> nearest_sources(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  std::vector<int64_t> src(static_cast<size_t>(out));
  const float s = scale_value<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = 0;
    if (exact) {
      i = int64_t(std::floor(float((double(o) + 0.5) * s)));
    } else if (out == in) {
      i = o;
    } else if (out == 2 * in) {
      i = o >> 1;
    } else {
      i = int64_t(std::floor(float(o) * s));
    }
    src[size_t(o)] = std::min(i, in - 1);
  }
  return src;
}

// The two neighbours and the weight of the second, for each output position of a linear mode
// (ATen's area_pixel_compute_scale / area_pixel_compute_source_index), computed in T.
template <class T>
void linear_sources(int64_t in, int64_t out, std::optional<double> scale, bool align_corners,
                    std::vector<int64_t>& i0, std::vector<int64_t>& i1, std::vector<double>& w1) {
  T s = align_corners ? (out > 1 ? T(in - 1) / T(out - 1) : T(0)) : scale_value<T>(scale, in, out);
  i0.resize(size_t(out));
  i1.resize(size_t(out));
  w1.resize(size_t(out));
  for (int64_t o = 0; o < out; ++o) {
    T real = align_corners ? s * T(o) : s * (T(o) + T(0.5)) - T(0.5);
    if (!align_corners && real < T(0)) real = T(0);
    const int64_t a = int64_t(real);
    const int64_t offset = a < in - 1 ? 1 : 0;
    T lambda = std::min(std::max(real - T(a), T(0)), T(1));
    i0[size_t(o)] = a;
    i1[size_t(o)] = a + offset;
    w1[size_t(o)] = double(lambda);
  }
}

Tensor index_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = wick::detail::as_op(kOp, [&] { return wick::empty({int64_t(v.size())}, TensorOptions(kInt64)); });
  std::copy(v.begin(), v.end(), static_cast<int64_t*>(t.data_ptr()));
  return wick::detail::to_device_async(t, device);
}

bool is_identity(const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != int64_t(i)) return false;
  return true;
}

}  // namespace

Tensor interpolate(const Tensor& input, IntArrayRef size, const std::vector<double>& scale_factor,
                   const std::string& mode, std::optional<bool> align_corners,
                   std::optional<bool> recompute_scale_factor, bool antialias) {
  WICK_CHECK(input.defined(), ValueError, kOp, "input is an undefined tensor");
  const bool nearest = mode == "nearest", exact = mode == "nearest-exact";
  const bool linear_mode = mode == "linear" || mode == "bilinear" || mode == "trilinear" || mode == "bicubic";
  if (nearest || exact || mode == "area") {
    WICK_CHECK(!align_corners, ValueError, kOp,
               "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
               "trilinear");
  }
  const int64_t nd = input.dim(), dim = nd - 2;
  std::vector<int64_t> in_spatial;
  for (int64_t d = 2; d < nd; ++d) in_spatial.push_back(input.size(d));
  WICK_CHECK(size.empty() || scale_factor.empty(), ValueError, kOp, "only one of size or scale_factor should be defined");
  WICK_CHECK(!size.empty() || !scale_factor.empty(), ValueError, kOp, "either size or scale_factor should be defined");
  std::vector<int64_t> out_size;
  std::vector<std::optional<double>> scales(size_t(std::max<int64_t>(dim, 0)));
  if (!size.empty()) {
    std::vector<int64_t> sz(size.begin(), size.end());
    if (sz.size() == 1 && dim > 1) sz.assign(size_t(dim), sz[0]);
    WICK_CHECK(int64_t(sz.size()) == dim, ValueError, kOp,
               "Input and output must have the same number of spatial dimensions, but got input with spatial "
               "dimensions of ",
               list(in_spatial), " and output size of ", list(sz),
               ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
               "format.");
    out_size = sz;
    WICK_CHECK(!recompute_scale_factor.value_or(false), ValueError, kOp,
               "recompute_scale_factor is not meaningful with an explicit size.");
  } else {
    std::vector<double> sf = scale_factor;
    if (sf.size() == 1 && dim > 1) sf.assign(size_t(dim), sf[0]);
    WICK_CHECK(int64_t(sf.size()) == dim, ValueError, kOp,
               "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
               "dimensions of ",
               list(in_spatial), " and scale_factor of shape ", list(sf),
               ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
               "format.");
    for (size_t i = 0; i < sf.size() && i < in_spatial.size(); ++i) {
      // ATen's output size: floor(in * scale), computed in double.
      out_size.push_back(int64_t(std::floor(double(in_spatial[i]) * sf[i])));
      if (!recompute_scale_factor.value_or(false)) scales[i] = sf[i];
    }
  }
  WICK_CHECK(!antialias, NotImplementedError, kOp, "antialias is not implemented");
  const bool supported = (nearest || exact) ? (nd >= 3 && nd <= 5)
                         : mode == "linear"    ? nd == 3
                         : mode == "bilinear"  ? nd == 4
                         : mode == "trilinear" ? nd == 5
                                               : false;
  if (!supported) {
    if (nd >= 3 && nd <= 5 && linear_mode && mode != "bicubic") {
      const char* needs = mode == "linear" ? "3D" : mode == "bilinear" ? "4D" : "5D";
      wick::detail::raise<NotImplementedError>(kOp, "Got ", nd, "D input, but ", mode, " mode needs ", needs, " input");
    }
    if (nd >= 3 && nd <= 5 && (mode == "bicubic" || mode == "area"))
      wick::detail::raise<NotImplementedError>(kOp, "mode '", mode, "' is not implemented");
    wick::detail::raise<NotImplementedError>(
        kOp, "Input Error: Only 3D, 4D and 5D input Tensors supported (got ", nd,
        "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got ", mode, ")");
  }
  // ATen's checks of the upsample ops
  int64_t inner = 1;
  for (int64_t d = 1; d < nd; ++d) inner *= input.size(d);
  WICK_CHECK(inner != 0, ValueError, kOp, "Non-empty ", nd, "D data tensor expected but got a tensor with sizes ",
             input.sizes());
  bool positive = true;
  for (int64_t v : out_size) positive = positive && v > 0;
  WICK_CHECK(positive, ValueError, kOp, "Input and output sizes should be greater than 0, but got input ",
             list(in_spatial), " output ", list(out_size));
  const bool linear = !(nearest || exact);
  if (linear)
    WICK_CHECK(is_floating_point(input.dtype()), NotImplementedError, kOp, "mode '", mode,
               "' is not implemented for ", name(input.dtype()), " input");

  const bool corners = align_corners.value_or(false);
  const bool low = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
  Tensor y = linear && low ? input.to(kFloat32) : input;
  bool changed = false;
  for (int64_t k = 0; k < dim; ++k) {
    const int64_t d = k + 2, in = in_spatial[size_t(k)], out = out_size[size_t(k)];
    if (!linear) {
      auto src = nearest_sources(in, out, scales[size_t(k)], exact);
      if (out == in && is_identity(src)) continue;
      Tensor idx = index_tensor(src, input.device());
      y = wick::detail::as_op(kOp, [&] { return wick::index_select(y, d, idx); });
      changed = true;
      continue;
    }
    std::vector<int64_t> i0, i1;
    std::vector<double> w1;
    if (y.dtype() == kFloat64)
      linear_sources<double>(in, out, scales[size_t(k)], corners, i0, i1, w1);
    else
      linear_sources<float>(in, out, scales[size_t(k)], corners, i0, i1, w1);
    bool zero_weights = true;
    for (double w : w1) zero_weights = zero_weights && w == 0;
    if (out == in && zero_weights && is_identity(i0)) continue;
    std::vector<double> w0(w1.size());
    for (size_t i = 0; i < w1.size(); ++i) w0[i] = 1.0 - w1[i];
    y = wick::detail::as_op(kOp, [&] {
      // weights [out, 1, ...]: broadcast over the dims after d
      std::vector<int64_t> wshape(size_t(nd - d), 1);
      wshape[0] = out;
      auto weights = [&](const std::vector<double>& w) {
        Tensor t = wick::detail::tensor_from_values(w.data(), kFloat64, {out}, TensorOptions(kFloat64), kOp);
        return t.to(y.device(), y.dtype()).view(wshape);
      };
      Tensor a = wick::index_select(y, d, index_tensor(i0, input.device()));
      Tensor b = wick::index_select(y, d, index_tensor(i1, input.device()));
      return a * weights(w0) + b * weights(w1);
    });
    changed = true;
  }
  if (!changed) return input.clone();
  return linear && low ? y.to(input.dtype()) : y;
}

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  const std::vector<int64_t> size = options.size().value_or(std::vector<int64_t>{});
  return interpolate(input, size, options.scale_factor().value_or(std::vector<double>{}), options.mode(),
                     options.align_corners(), options.recompute_scale_factor(), options.antialias());
}

}  // namespace wick::nn::functional

namespace wick::nn {

UpsampleImpl::UpsampleImpl(const UpsampleOptions& options) : options(options) {}

Tensor UpsampleImpl::forward(const Tensor& x) {
  const std::vector<int64_t> size = options.size().value_or(std::vector<int64_t>{});
  return functional::interpolate(x, size, options.scale_factor().value_or(std::vector<double>{}), options.mode(),
                                 options.align_corners(), options.recompute_scale_factor());
}

// Python's: "scale_factor=2.0, mode='nearest'" (a tuple for several factors) or "size=(4, 4), ...".
std::string UpsampleImpl::extra_repr() const {
  std::string s;
  if (const auto& sf = options.scale_factor()) {
    s = "scale_factor=";
    if (sf->size() == 1) {
      s += detail::py_float((*sf)[0]);
    } else {
      s += "(";
      for (size_t i = 0; i < sf->size(); ++i) s += (i ? ", " : "") + detail::py_float((*sf)[i]);
      s += ")";
    }
  } else {
    s = "size=";
    const auto sz = options.size().value_or(std::vector<int64_t>{});
    if (sz.size() == 1) {
      s += std::to_string(sz[0]);
    } else {
      s += "(";
      for (size_t i = 0; i < sz.size(); ++i) s += (i ? ", " : "") + std::to_string(sz[i]);
      s += ")";
    }
  }
  return s + ", mode='" + options.mode() + "'";
}

}  // namespace wick::nn
