/* fill and copy (with casts) on the elementwise kernel (elementwise.cuh).
 * fill writes the value's bit pattern, so it is instantiated per element size (4 kernels),
 * not per dtype; a same-dtype copy moves raw bits likewise. Casting copies are one instance
 * per (out, in) dtype pair: they are what .to(dtype) runs, and each must be exact.
 */
#include <cstring>

#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/kernels.h"

namespace wick::detail::gpu {

namespace {

template <class T>
struct FillFn {
  T value;
  __device__ T operator()() const { return value; }
};

template <class Out, class In>
struct CastFn {
  __device__ Out operator()(In v) const { return cast<Out>(v); }
};

template <size_t N> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };

}  // namespace

void fill(const TensorIter& it, const Scalar& value) {
  const Plan p = make_plan(it, "fill_");
  auto body = [&]<class T>() {
    using B = typename Bits<sizeof(T)>::type;
    const T v = value.to<T>();
    B bits;
    std::memcpy(&bits, &v, sizeof bits);
    launch_elementwise<B>("fill_", p, FillFn<B>{bits});
  };
  WICK_DISPATCH_ALL(it.output().dtype(), "fill_", body);
}

void copy(const TensorIter& it) {
  const Plan p = make_plan(it, "copy_");
  const Dtype out = it.output().dtype(), in = it.input(0).dtype();
  if (out == in) {
    auto same = [&]<class T>() {
      using B = typename Bits<sizeof(T)>::type;
      launch_elementwise<B, B>("copy_", p, CastFn<B, B>{});
    };
    WICK_DISPATCH_ALL(out, "copy_", same);
    return;
  }
  auto outer = [&]<class O>() {
    auto inner = [&]<class I>() { launch_elementwise<O, I>("copy_", p, CastFn<O, I>{}); };
    WICK_DISPATCH_ALL(in, "copy_", inner);
  };
  WICK_DISPATCH_ALL(out, "copy_", outer);
}

}  // namespace wick::detail::gpu
