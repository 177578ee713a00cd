// An intrusive reference count: one atomic in the object, one pointer in the handle.
// Chosen over std::shared_ptr, whose separate control block costs a second allocation and
// a second cache line on every op's output.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace wick::detail {

class IntrusiveTarget {
 public:
  IntrusiveTarget() = default;
  IntrusiveTarget(const IntrusiveTarget&) = delete;
  IntrusiveTarget& operator=(const IntrusiveTarget&) = delete;
  virtual ~IntrusiveTarget() = default;
  int64_t use_count() const { return refs_.load(std::memory_order_relaxed); }

 private:
  template <class T> friend class IntrusivePtr;
  mutable std::atomic<int64_t> refs_{0};
};

template <class T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  IntrusivePtr(std::nullptr_t) {}
  explicit IntrusivePtr(T* p) : p_(p) { retain(); }
  IntrusivePtr(const IntrusivePtr& o) : p_(o.p_) { retain(); }
  IntrusivePtr(IntrusivePtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  IntrusivePtr(IntrusivePtr<U> o) noexcept : p_(o.release()) {}
  ~IntrusivePtr() { reset(); }
  IntrusivePtr& operator=(IntrusivePtr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  template <class... Args>
  static IntrusivePtr make(Args&&... args) { return IntrusivePtr(new T(std::forward<Args>(args)...)); }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const IntrusivePtr& o) const { return p_ == o.p_; }
  int64_t use_count() const { return p_ ? p_->use_count() : 0; }
  void reset() {
    if (p_ && p_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  // Gives up ownership without changing the count.
  T* release() { return std::exchange(p_, nullptr); }

 private:
  void retain() {
    if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  T* p_ = nullptr;
};

}  // namespace wick::detail
