// Autocast as the ops see it (docs/design.md, "Mixed precision"). An op on one of PyTorch's
// autocast lists begins, before its autograd line, with
//
//   if (autocast::active()) [[unlikely]]
//     return autocast::run(Policy::Lower, Policy::Lower, "mm", [](auto& a, auto& b) { return mm(a, b); }, a,
//     b);
//
// active() reads one thread-local flag: true while some device type has autocast on and no
// autocast-run op is executing on this thread. run() picks the policy of the arguments' device
// type (CUDA's list, then CPU's), casts the eligible tensors (float32/float16/bfloat16 on that
// device type; a recorded op, cached for weights) and calls the op again with autocast
// excluded, so that the ops it is made of run in the types it was given, as PyTorch's
// redispatch below its autocast key.
#pragma once

#include <type_traits>
#include <vector>

#include "wick/amp.h"
#include "wick/tensor.h"

namespace wick::detail::autocast {

// Lower: the autocast dtype. Fp32: float32. Promote: the widest floating input type, as
// PyTorch's prioritize (float32 over the autocast dtype; any other floating type raises).
// None: the inputs' types (a composite op on no list: its pieces are not cast either).
enum class Policy : uint8_t { Lower, Fp32, Promote, None };

extern thread_local bool t_active;
inline bool active() { return t_active; }

// While alive, no op on this thread autocasts (the state is kept, not changed).
class Exclude {
 public:
  Exclude();
  ~Exclude();
  Exclude(const Exclude&) = delete;
  Exclude& operator=(const Exclude&) = delete;
};

bool enabled(DeviceType d);
Dtype lower_dtype(DeviceType d);
// t cast to dtype when eligible (defined, on device type d, float32/float16/bfloat16, another
// dtype); weights (float32 leaves that require grad) cast to the autocast dtype are cached.
Tensor cast(const Tensor& t, Dtype dtype, DeviceType d);
// Promote's result over ts (starting from the autocast dtype of d); op names an error.
Dtype promote(const std::vector<const Tensor*>& ts, DeviceType d, const char* op);

namespace impl {
inline void collect(std::vector<const Tensor*>& v, const Tensor& t) { v.push_back(&t); }
inline void collect(std::vector<const Tensor*>& v, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) v.push_back(&t);
}
inline bool on_cuda(const Tensor& t) { return t.defined() && t.device().is_cuda(); }
inline bool on_cuda(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (on_cuda(t)) return true;
  return false;
}
inline Tensor cast_arg(const Tensor& t, Dtype dt, DeviceType d) { return cast(t, dt, d); }
inline std::vector<Tensor> cast_arg(const std::vector<Tensor>& ts, Dtype dt, DeviceType d) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast(t, dt, d));
  return out;
}
}  // namespace impl

// The device type whose autocast state applies: CUDA if any argument is on CUDA, else CPU.
template <class... Ts>
DeviceType device_type_of(const Ts&... args) {
  return (impl::on_cuda(args) || ...) ? kCUDA : kCPU;
}

// Runs f(args...) under the policy of the arguments' device type; args are Tensors or
// vectors of Tensors (other arguments travel in f's captures).
template <class F, class... Ts>
auto run(Policy on_cuda, Policy on_cpu, const char* op, F&& f, const Ts&... args) {
  const DeviceType d = device_type_of(args...);
  const Policy p = d == kCUDA ? on_cuda : on_cpu;
  Exclude ex;
  if (p == Policy::None || !enabled(d)) return f(args...);
  Dtype dt = kFloat32;
  if (p == Policy::Lower) dt = lower_dtype(d);
  else if (p == Policy::Promote) {
    std::vector<const Tensor*> v;
    (impl::collect(v, args), ...);
    dt = promote(v, d, op);
  }
  return f(impl::cast_arg(args, dt, d)...);
}

}  // namespace wick::detail::autocast
