// TensorImpl: what a Tensor handle points to. Sizes and strides in elements, an offset into
// a shared Storage, a dtype; views are TensorImpls sharing one Storage.
#pragma once

#include <memory>

#include "wick/detail/array_ref.h"
#include "wick/detail/storage.h"
#include "wick/dtype.h"

namespace wick::detail {

// Autograd's per-tensor record (grad, grad_fn, ...); defined by src/autograd.
struct AutogradMetaBase {
  virtual ~AutogradMetaBase() = default;
};

class TensorImpl : public IntrusiveTarget {
 public:
  TensorImpl(Storage storage, Dtype dtype, DimVector sizes, DimVector strides, int64_t offset)
      : storage_(std::move(storage)), sizes_(std::move(sizes)), strides_(std::move(strides)),
        offset_(offset), dtype_(dtype) {
    refresh();
  }

  // A contiguous tensor of sizes holding numel elements (sizes checked by the caller): its
  // strides are computed here, and nothing is recomputed from them.
  struct Contiguous {};
  TensorImpl(Storage storage, Dtype dtype, IntArrayRef sizes, int64_t numel, Contiguous)
      : storage_(std::move(storage)), sizes_(sizes), strides_(sizes.size(), 1), numel_(numel), dtype_(dtype) {
    int64_t s = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      strides_[i] = s;
      // Only an empty tensor's sizes can overflow here ({0, 2^62, 2^62}); its strides don't
      // matter, so they stop at INT64_MAX instead of wrapping around.
      if (__builtin_mul_overflow(s, sizes[i] > 1 ? sizes[i] : 1, &s)) s = INT64_MAX;
    }
  }

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return offset_; }
  Dtype dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return contiguous_; }
  const Storage& storage() const { return storage_; }
  // Address of element 0 of this view.
  // An empty storage may have no memory at all: its views (narrowed, say) keep a null address
  // whatever their offset, since arithmetic on a null pointer is undefined.
  void* data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + offset_ * element_size(dtype_) : nullptr;
  }

  void set_geometry(DimVector sizes, DimVector strides, int64_t offset) {
    sizes_ = std::move(sizes);
    strides_ = std::move(strides);
    offset_ = offset;
    refresh();
  }
  void set_storage(Storage s) { storage_ = std::move(s); }
  void set_dtype(Dtype d) { dtype_ = d; }

  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad(bool r) { requires_grad_ = r; }
  // Set by the view ops on the tensors they return (Tensor::is_view).
  bool is_view() const { return is_view_; }
  void set_is_view(bool v) { is_view_ = v; }
  AutogradMetaBase* autograd_meta() const { return autograd_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaBase> m) { autograd_ = std::move(m); }

 private:
  void refresh() {
    // The ops that make sizes refuse products beyond int64; should one slip through, numel
    // wraps around (defined behavior) instead of overflowing.
    numel_ = 1;
    bool zero = false;
    for (auto s : sizes_) {
      zero |= s == 0;
      (void)__builtin_mul_overflow(numel_, s, &numel_);
    }
    if (zero) numel_ = 0;
    contiguous_ = true;
    if (numel_ == 0) return;  // an empty tensor is contiguous whatever its strides (as PyTorch)
    int64_t expected = 1;
    for (size_t i = sizes_.size(); i-- > 0;) {
      if (sizes_[i] == 1) continue;
      if (strides_[i] != expected) contiguous_ = false;
      (void)__builtin_mul_overflow(expected, sizes_[i], &expected);
    }
  }

  Storage storage_;
  DimVector sizes_, strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  Dtype dtype_;
  bool contiguous_ = true;
  bool requires_grad_ = false;
  bool is_view_ = false;
  std::unique_ptr<AutogradMetaBase> autograd_;
};

}  // namespace wick::detail
