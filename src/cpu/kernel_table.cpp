// The CPU kernel table: elementwise families over cpu::loop (loops.h), reductions with
// blocked pairwise summation, GEMM through OpenBLAS; convolution through explicit im2col + BLAS
// (conv.cpp), core's generic im2col + GEMM (core/conv.h) for the dtypes BLAS lacks.
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/conv.h"
#include "core/kernel_table.h"
#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/random.h"

namespace wick::detail::cpu {

namespace {

template <class T>
void fill_impl(const TensorIter& it, const Scalar& value) {
  const T v = value.to<T>();
  if (it.is_contiguous()) {
    T* p = static_cast<T*>(it.output().data_ptr());
    const int64_t n = it.numel();
    const int nt = threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t i = 0; i < n; ++i) p[i] = v;
    return;
  }
  loop(it, [v](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
  });
}

void fill(const TensorIter& it, const Scalar& value) {
  if (it.numel() == 0) return;
  WICK_DISPATCH_ALL(it.output().dtype(), "fill_", [&]<class T>() { fill_impl<T>(it, value); });
}

// Copies that write this many bytes or more go around the caches (streaming stores): their
// destination cannot stay cached anyway, and a cached store first reads the line it writes,
// so a copy moves 3 bytes for each byte copied where a streaming one moves 2 (256 MB on a
// 2-core x86 host: 21 ms through memmove, 12 ms streaming). glibc's memmove streams only
// above three quarters of the last-level cache per call, which a copy cut among threads
// rarely reaches. pin_memory() is the case in point: the GPU's DMA reads its result from
// memory, not from a cache.
constexpr size_t kStreamingCopyBytes = size_t(64) << 20;

// memmove for n bytes, with streaming stores when the two ranges are apart.
void copy_run(char* dst, const char* src, size_t n, bool streaming) {
#if defined(__SSE2__)
  if (streaming && (dst + n <= src || src + n <= dst) && n >= 4096) {
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    const size_t blocks = n / 64;
    for (size_t i = 0; i < blocks; ++i, dst += 64, src += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    }
    std::memcpy(dst, src, n - blocks * 64);
    _mm_sfence();  // the streamed stores are ordered before whatever follows the copy
    return;
  }
#endif
  (void)streaming;
  std::memmove(dst, src, n);
}

void copy(const TensorIter& it) {
  WICK_DISPATCH_ALL(it.output().dtype(), "copy_", [&]<class To>() {
    WICK_DISPATCH_ALL(it.input(0).dtype(), "copy_", [&]<class From>() {
      const bool streaming = size_t(it.numel()) * sizeof(To) >= kStreamingCopyBytes;
      loop(it, [streaming](char** p, const int64_t* s, int64_t n) {
        if constexpr (std::is_same_v<To, From>) {
          if (s[0] == sizeof(To) && s[1] == sizeof(To)) {
            // memmove semantics: a layout the overlap checks cannot analyse (holes or repeats)
            // may still share memory between the two runs.
            copy_run(p[0], p[1], size_t(n) * sizeof(To), streaming);
            return;
          }
        }
        if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
          To* o = reinterpret_cast<To*>(p[0]);
          const From* a = reinterpret_cast<const From*>(p[1]);
          for (int64_t i = 0; i < n; ++i) o[i] = convert<To>(a[i]);
          return;
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<To*>(p[0] + i * s[0]) = convert<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
      });
    });
  });
}

template <class T, class Op>
void binary_loop(const TensorIter& it, const Scalar* scalar, Op op) {
  using M = opmath_t<T>;
  if (scalar) {
    const M b = scalar->to<M>();
    loop(it, [b, op](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
        T* o = reinterpret_cast<T*>(p[0]);
        const T* a = reinterpret_cast<const T*>(p[1]);
        for (int64_t i = 0; i < n; ++i) o[i] = T(op(M(a[i]), b));
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = T(op(M(*reinterpret_cast<const T*>(p[1] + i * s[1])), b));
    });
    return;
  }
  if (it.is_contiguous() && threads_for(it.numel()) == 1) {
    // One flat run on this thread (a small contiguous op): the loop below without loop()'s
    // plan walk.
    T* o = static_cast<T*>(it.output().impl()->data());
    const T* a = static_cast<const T*>(it.input(0).impl()->data());
    const T* b = static_cast<const T*>(it.input(1).impl()->data());
    const int64_t n = it.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = T(op(M(a[i]), M(b[i])));
    return;
  }
  loop(it, [op](char** p, const int64_t* s, int64_t n) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    constexpr int64_t e = sizeof(T);
    if (s[0] == e && s[1] == e && s[2] == e) {  // contiguous: vectorized
      for (int64_t i = 0; i < n; ++i) o[i] = T(op(M(a[i]), M(b[i])));
    } else if (s[0] == e && s[1] == e && s[2] == 0) {  // b broadcast along the run
      const M bv = M(*b);
      for (int64_t i = 0; i < n; ++i) o[i] = T(op(M(a[i]), bv));
    } else if (s[0] == e && s[1] == 0 && s[2] == e) {
      const M av = M(*a);
      for (int64_t i = 0; i < n; ++i) o[i] = T(op(av, M(b[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = T(op(M(*reinterpret_cast<const T*>(p[1] + i * s[1])),
                                                      M(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
    }
  });
}

// Calls f with the element function of op in T's opmath type (alpha folded in for Add and Sub).
template <class T, class F>
void with_binary_op(BinaryOp op, const Scalar& alpha, F&& f) {
  using M = opmath_t<T>;
  switch (op) {
    case BinaryOp::Add: {
      const M al = alpha.to<M>();
      if (al == M(1)) return f([](M a, M b) { return M(a + b); });
      return f([al](M a, M b) { return M(a + al * b); });
    }
    case BinaryOp::Sub: {
      const M al = alpha.to<M>();
      return f([al](M a, M b) { return M(a - al * b); });
    }
    case BinaryOp::Mul: return f([](M a, M b) { return M(a * b); });
    case BinaryOp::Div: return f([](M a, M b) { return M(a / b); });
  }
}

void binary(BinaryOp op, const TensorIter& it, const Scalar* scalar, const Scalar& alpha) {
  WICK_DISPATCH_ALL(it.dtype(), op_name(op), [&]<class T>() {
    with_binary_op<T>(op, alpha, [&](auto fn) { binary_loop<T>(it, scalar, fn); });
  });
}

// binary_loop's contiguous runs, over plain buffers.
void binary_flat(BinaryOp op, Dtype dtype, void* out, const void* pa, const void* pb,
                     const Scalar* scalar, const Scalar& alpha, int64_t n) {
  WICK_DISPATCH_ALL(dtype, op_name(op), [&]<class T>() {
    using M = opmath_t<T>;
    with_binary_op<T>(op, alpha, [&](auto fn) {
      T* o = static_cast<T*>(out);
      const T* a = static_cast<const T*>(pa);
      if (pb) {
        const T* b = static_cast<const T*>(pb);
        for (int64_t i = 0; i < n; ++i) o[i] = T(fn(M(a[i]), M(b[i])));
      } else {
        const M b = scalar->to<M>();
        for (int64_t i = 0; i < n; ++i) o[i] = T(fn(M(a[i]), b));
      }
    });
  });
}

}  // namespace

}  // namespace wick::detail::cpu

namespace wick::detail {

const KernelTable& cpu_kernels() {
  static const KernelTable table = {
      .fill = cpu::fill,
      .copy = cpu::copy,
      .binary = cpu::binary,
      .binary_flat = cpu::binary_flat,
      .reduce = cpu::reduce,
      .gemm = cpu::gemm,
      .random = cpu::random,
      .unary = cpu::unary,
      .pointwise = cpu::pointwise,
      .compare = cpu::compare,
      .bitwise = cpu::bitwise,
      .where = cpu::where,
      .softmax = cpu::softmax,
      .softmax_backward = cpu::softmax_backward,
      .causal_softmax = cpu::causal_softmax,
      .norm_forward = cpu::norm_forward,
      .norm_backward = cpu::norm_backward,
      .add_norm_forward = nullptr,  // add_layer_norm composes add, norm_forward and a cast: the same passes
      .add_norm_backward = nullptr,
      .gelu_backward_bias = nullptr,  // GELU's elementwise backward, then a column sum
      .scan = cpu::scan,
      .gather = cpu::gather,
      .scatter = cpu::scatter,
      .sort = cpu::sort,
      .multinomial = cpu::multinomial,
      .nll_loss_forward = cpu::nll_loss_forward,
      .nll_loss_backward = cpu::nll_loss_backward,
      .log_softmax_nll_loss_forward = nullptr,  // CUDA only: cross_entropy composes on the CPU
      .log_softmax_nll_loss_backward = nullptr,  // CUDA only, as the forward above
      .cross_entropy_rows = cpu::cross_entropy_rows,
      .cross_entropy_rows_backward = cpu::cross_entropy_rows_backward,
      .conv2d_forward = cpu::conv2d_forward,
      .conv2d_backward = cpu::conv2d_backward,
      .max_pool2d_forward = cpu::max_pool2d_forward,
      .max_pool2d_backward = cpu::max_pool2d_backward,
      .sgd_step = cpu::sgd_step,
      .adam_step = cpu::adam_step,
      .unscale_check = cpu::unscale_check,
      .foreach_norm_partials = nullptr,  // a norm per gradient: no launches to save
      .binary_mixed_float = false,       // core casts the 16-bit operand (the CPU has no such kernels)
  };
  return table;
}

}  // namespace wick::detail
