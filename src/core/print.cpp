// Printing as PyTorch's repr (torch/_tensor_str.py), with "dtype=float16" for "dtype=torch.float16".
// The elements a repr shows (all of them, or past 1000 elements each long dim's first and last
// three) are cut out on the tensor's device, copied to the host as float64 or int64, and one
// Formatter picks whole, fixed or scientific notation and a common width for them, as
// PyTorch's _Formatter does. Numbers go through printf, which rounds exactly as Python's
// format() does (correctly, ties to even on the binary value).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "core/print_hooks.h"
#include "wick/ops.h"

namespace wick {
namespace {

// PyTorch's default print options (torch.set_printoptions(profile="default")).
constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;  // more elements than this: summarize
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;
constexpr int64_t kPrefixWidth = 7;  // "tensor("

// The elements a repr shows, on the host, row-major over `sizes`. A dim marked in `cut` kept
// only its kEdgeItems first and last entries ("..." goes between them).
struct Shown {
  bool floating = false;
  bool is_bool = false;
  std::vector<int64_t> sizes;
  std::vector<bool> cut;
  std::vector<double> f;   // floating dtypes
  std::vector<int64_t> i;  // integer dtypes and bool (0/1)
};

// Cut first, then copy: copying the whole tensor to the host and indexing it there would be
// simpler, but a 1 GB CUDA tensor would cross the bus to show 36 numbers.
Shown shown_elements(const Tensor& t) {
  Shown s;
  Tensor c = t.detach();
  const bool summarize = c.numel() > kThreshold;
  for (int64_t d = 0; d < c.dim(); ++d) {
    const int64_t n = c.size(d);
    s.cut.push_back(summarize && n > 2 * kEdgeItems);
    if (s.cut.back()) c = cat({c.narrow(d, 0, kEdgeItems), c.narrow(d, n - kEdgeItems, kEdgeItems)}, d);
  }
  c = c.cpu();
  s.sizes = c.sizes().vec();
  s.floating = c.is_floating_point();
  s.is_bool = c.dtype() == kBool;
  if (s.floating) {
    Tensor v = c.to(kFloat64).contiguous();
    const double* p = v.data_ptr<double>();
    s.f.assign(p, p + v.numel());
  } else {
    Tensor v = c.to(kInt64).contiguous();
    const int64_t* p = v.data_ptr<int64_t>();
    s.i.assign(p, p + v.numel());
  }
  return s;
}

// printf's text of v with `digits` decimals; Python's text for nan and inf (no "-nan").
std::string number_text(double v, char conversion, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[400];  // "%.0f" of 1.8e308 is 309 digits
  const int n = conversion == 'e' ? std::snprintf(buf, sizeof buf, "%.*e", digits, v)
                                  : std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return std::string(buf, size_t(std::clamp(n, 0, int(sizeof buf) - 1)));
}
std::string fixed_text(double v) { return number_text(v, 'f', kPrecision); }
std::string sci_text(double v) { return number_text(v, 'e', kPrecision); }
std::string whole_text(double v) { return number_text(v, 'f', 0); }

// One notation and width for all shown elements (PyTorch's _Formatter). Floats: whole
// ("1.") when every nonzero finite value is whole, scientific when those values span more
// than 1000x, exceed 1e8 or fall below 1e-4; zeros and nan/inf don't count for either.
class Formatter {
 public:
  explicit Formatter(const Shown& s) : floating_(s.floating), bool_(s.is_bool) {
    if (!floating_) {
      for (int64_t v : s.i) width_ = std::max(width_, text(v).size());
      return;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    bool any = false;
    for (double v : s.f) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) whole_ = false;
    }
    if (!any) return;
    sci_ = hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4;
    for (double v : s.f) {
      if (!std::isfinite(v) || v == 0) continue;
      const size_t n = sci_ ? sci_text(v).size() : whole_ ? whole_text(v).size() + 1 : fixed_text(v).size();
      width_ = std::max(width_, n);
    }
  }

  size_t width() const { return width_; }

  std::string text(int64_t v) const {
    if (bool_) return v ? "True" : "False";
    return std::to_string(v);
  }
  std::string text(double v) const {
    if (sci_) return sci_text(v);
    if (whole_) return std::isfinite(v) ? whole_text(v) + "." : whole_text(v);
    return fixed_text(v);
  }
  // The element's text right-aligned to the common width.
  template <class T>
  std::string format(T v) const {
    std::string r = text(v);
    return r.size() < width_ ? std::string(width_ - r.size(), ' ') + r : r;
  }

 private:
  bool floating_, bool_;
  bool whole_ = true, sci_ = false;
  size_t width_ = 1;
};

// open + parts joined by sep + close.
std::string join(const std::vector<std::string>& parts, const std::string& sep, const char* open = "",
                 const char* close = "") {
  std::string r = open;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) r += sep;
    r += parts[k];
  }
  return r += close;
}

// The bracketed body: rows wrap at kLineWidth; slices of an n-d block are separated by n-1
// newlines and indented under their opening bracket.
class Body {
 public:
  Body(const Shown& s, const Formatter& f) : s_(s), f_(f), stride_(s.sizes.size(), 1) {
    for (size_t d = s.sizes.size(); d-- > 1;) stride_[d - 1] = stride_[d] * s.sizes[d];
  }

  std::string str(int64_t indent) const { return s_.sizes.empty() ? element(0) : block(0, 0, indent); }

 private:
  std::string element(int64_t k) const {
    return s_.floating ? f_.format(s_.f[size_t(k)]) : f_.format(s_.i[size_t(k)]);
  }

  std::string block(size_t d, int64_t offset, int64_t indent) const {
    const int64_t n = s_.sizes[d];
    const bool cut = s_.cut[d];
    const bool last = d + 1 == s_.sizes.size();
    std::vector<std::string> parts;
    for (int64_t k = 0; k < n; ++k) {
      if (cut && k == kEdgeItems) parts.push_back(last ? " ..." : "...");
      const int64_t at = offset + k * stride_[d];
      parts.push_back(last ? element(at) : block(d + 1, at, indent + 1));
    }
    const std::string margin(size_t(indent + 1), ' ');
    if (!last) {
      std::string sep = ",";
      sep.append(s_.sizes.size() - d - 1, '\n');
      return join(parts, sep += margin, "[", "]");
    }
    // " ..." counts as an element when rows are cut into lines (as in PyTorch).
    const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / int64_t(f_.width() + 2));
    std::vector<std::string> lines;
    for (size_t k = 0; k < parts.size(); k += size_t(per_line)) {
      const auto end = parts.begin() + int64_t(std::min(parts.size(), k + size_t(per_line)));
      lines.push_back(join(std::vector<std::string>(parts.begin() + int64_t(k), end), ", "));
    }
    return join(lines, ",\n" + margin, "[", "]");
  }

  const Shown& s_;
  const Formatter& f_;
  std::vector<int64_t> stride_;
};

// Python's str of a tuple of sizes: (0, 3), (0,)
std::string size_tuple(IntArrayRef sizes) {
  std::string r = "(";
  for (size_t k = 0; k < sizes.size(); ++k) r += (k ? ", " : "") + std::to_string(sizes[k]);
  return r + (sizes.size() == 1 ? ",)" : ")");
}

// Each suffix goes on the current line when it fits in kLineWidth, else on a new line indented
// under "tensor(". The width counts as PyTorch's does (two more than the last line's length).
std::string add_suffixes(std::string text, const std::vector<std::string>& suffixes) {
  const size_t nl = text.rfind('\n');
  int64_t line = int64_t(text.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  for (const std::string& s : suffixes) {
    const int64_t n = int64_t(s.size());
    if (line + n + 2 > kLineWidth) {
      text += ",\n" + std::string(size_t(kPrefixWidth), ' ') + s;
      line = kPrefixWidth + n;
    } else {
      text += ", " + s;
      line += n + 2;
    }
  }
  return text + ")";
}

}  // namespace

namespace detail {

std::string repr_on(const Tensor& t, Device shown) {
  if (!t.defined()) return "[ Tensor (undefined) ]";
  std::vector<std::string> suffixes;
  // PyTorch shows the device when its type is not the default tensor type's (the CPU).
  if (!shown.is_cpu()) suffixes.push_back("device='" + shown.str() + "'");
  const Dtype dtype = t.dtype();
  const std::string dtype_suffix = "dtype=" + std::string(name(dtype));
  std::string body;
  if (t.numel() == 0) {
    // Nothing shows the dtype here, so it is named unless it is the default float.
    if (t.dim() != 1) suffixes.push_back("size=" + size_tuple(t.sizes()));
    if (dtype != get_default_dtype()) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    if (dtype != get_default_dtype() && dtype != kInt64 && dtype != kBool) suffixes.push_back(dtype_suffix);
    const Shown s = shown_elements(t);
    const Formatter f(s);
    body = Body(s, f).str(kPrefixWidth);
  }
  const std::string fn = grad_fn_name(t);
  if (!fn.empty()) suffixes.push_back("grad_fn=<" + fn + ">");
  else if (t.requires_grad()) suffixes.push_back("requires_grad=True");
  return add_suffixes("tensor(" + body, suffixes);
}

}  // namespace detail

std::string repr(const Tensor& t) { return detail::repr_on(t, t.defined() ? t.device() : Device(kCPU)); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << repr(t); }

std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t k = 0; k < a.size(); ++k) os << (k ? ", " : "") << a[k];
  return os << ']';
}

}  // namespace wick
