/* nll_loss on CUDA (kernel_table.h's nll_loss_forward/backward): input [N, C, S], int64
 * target [N, S].
 *
 * - reduce_kernel (log-probabilities, mean/sum): one block of 1024 threads gathers
 *   -w[t] * x[n, t, s] and w[t] and sums both in a fixed order (deterministic), then writes
 *   the loss (divided by the total weight for mean) and the total weight.
 * - none_kernel: one thread per element.
 * - rows_kernel (logits, S = 1: cross_entropy's forward): one block per row keeps a running
 *   (max, sum of exp) pair over the row, 16-byte loads where aligned, so the logits are read
 *   once and log_softmax is never written; per-row results go to sum_kernel for mean/sum.
 *   cols_kernel: the same for S > 1, one thread per (n, s).
 * - log_softmax_nll_kernel (cross_entropy's forward when small logits [N, C] need grad): one
 *   block writes log_softmax (a warp per row, log_softmax's own arithmetic) and then the loss
 *   of it as reduce_kernel or none_kernel would: one launch instead of log_softmax's and
 *   nll_loss's.
 * - backward_kernel writes the whole gradient, -w[t] * g at the target class, 0 elsewhere.
 * - log_softmax_nll_backward_kernel (cross_entropy's backward after log_softmax_nll_kernel):
 *   the gradient wrt the logits, backward_kernel's values passed through log_softmax's
 *   backward in the same launch, a thread per element: one launch instead of two.
 *
 * Bad targets. The host never waits for a check of the targets (gather's scan would cost a
 * synchronization per training step). A kernel meeting a target outside [0, C) that is not
 * ignore_index writes it to a slot of mapped (zero-copy) pinned host memory, makes that
 * element's loss NaN, and goes on; the host reads the slot, without synchronizing, at the
 * start of every nll_loss call and in cuda::synchronize, and raises PyTorch's IndexError
 * "[nll_loss] Target v is out of bounds." there, clearing the slot. PyTorch asserts inside the
 * kernel instead, which poisons the CUDA context for the rest of the process.
 */
#include <atomic>
#include <mutex>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"
#include "cuda/kernels/softmax_rows.cuh"

namespace wick::detail::gpu {

namespace {

constexpr int kReduceThreads = 1024;
constexpr int kChunk = 4;  // rows_kernel: vectors each thread loads before it computes

// slot[0]: 1 once a bad target was met; slot[1]: its value. Mapped pinned memory, portable
// to every device; with unified addressing the host pointer is also the device pointer.
std::atomic<long long*> g_target_slot{nullptr};

long long* target_error_slot() {
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    RelaxedCaptureMode relaxed;  // kept for the process, not part of any graph
    WICK_CUDA_CHECK(cudaHostAlloc(&p, 2 * sizeof(long long), cudaHostAllocMapped | cudaHostAllocPortable),
                    "nll_loss");
    static_cast<volatile long long*>(p)[0] = 0;
    static_cast<volatile long long*>(p)[1] = 0;
    void* d = nullptr;
    WICK_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0), "nll_loss");
    WICK_CUDA_CHECK(d == p ? cudaSuccess : cudaErrorNotSupported, "nll_loss");
    g_target_slot.store(static_cast<long long*>(p));
  });
  return g_target_slot.load();
}

__device__ __forceinline__ void report_bad_target(long long* slot, int64_t v) {
  volatile long long* s = slot;
  if (s[0] == 0) {
    s[1] = v;
    __threadfence_system();
    s[0] = 1;
  }
}

template <class M>
__device__ __forceinline__ M nan_value() {
  return M(NAN);
}

// Whether target v is a class of [0, c) whose loss the kernel computes. For ignore_index it is
// not (the loss stays 0); for any other target outside [0, c) it is not either: loss becomes
// NaN and the target is reported to the host (by this thread when report; the threads of a
// block that share v let one of them report).
template <class M>
__device__ __forceinline__ bool target_class(int64_t v, int64_t c, int64_t ignore, long long* slot, M& loss,
                                             bool report = true) {
  if (v == ignore) return false;
  if (v < 0 || v >= c) {
    if (report) report_bad_target(slot, v);
    loss = nan_value<M>();
    return false;
  }
  return true;
}

// Whether target v has a gradient: a class of [0, c), not ignore_index.
__device__ __forceinline__ bool has_class(int64_t v, int64_t c, int64_t ignore) {
  return v != ignore && v >= 0 && v < c;
}

// Sum of v over the block; the result is valid in thread 0 (a block may call it again at once).
template <class M>
__device__ __forceinline__ M block_sum(M v) {
  return block_reduce(v, SumMerge{}, M(0));
}

// The running (max m, sum s of exp(x - m)) pair of a row's logits.
template <class M>
struct LogSumExp {
  M m = M(-INFINITY), s = M(0);
  __device__ __forceinline__ void add(M x) {
    if (x > m) {
      s = s * m_exp(m - x) + M(1);
      m = x;
    } else if (x != M(-INFINITY)) {
      s += m_exp(x - m);  // a NaN x makes s NaN
    }
  }
  // Adds N values at once: their max, then one exp each; a NaN among them makes s NaN.
  template <int N>
  __device__ __forceinline__ void add_chunk(const M (&x)[N]) {
    M cm = x[0];
#pragma unroll
    for (int i = 1; i < N; ++i) cm = x[i] > cm ? x[i] : cm;
    if (cm != cm) {  // x[0] is NaN (a later NaN reaches cs below)
      s = cm;
      return;
    }
    if (cm == M(-INFINITY)) return;  // all -inf: nothing to add
    M cs = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) cs += m_exp(x[i] - cm);
    merge(cm, cs);
  }
  __device__ __forceinline__ void merge(M om, M os) {
    const M nm = m < om ? om : m;
    if (nm == M(-INFINITY)) {  // nothing but -inf (or a NaN) on either side
      if (os != os) s = os;
      return;
    }
    s = (s == M(0) ? M(0) : s * m_exp(m - nm)) + (os == M(0) ? M(0) : os * m_exp(om - nm));
    m = nm;
  }
};

// LogSumExp's merge, as block_reduce.cuh's reductions take it.
struct LseMerge {
  template <class M>
  __device__ __forceinline__ void operator()(LogSumExp<M>& a, const LogSumExp<M>& b) const {
    a.merge(b.m, b.s);
  }
};

// The pair over the block; valid in thread 0.
template <class M>
__device__ __forceinline__ LogSumExp<M> block_lse(LogSumExp<M> r) {
  return block_reduce(r, LseMerge{}, LogSumExp<M>{});
}

// reduce_kernel's work, for a block of kReduceThreads threads (log_softmax_nll_kernel runs it
// too, so that its loss is the two-kernel path's bit for bit).
template <class T>
__device__ __forceinline__ void reduce_block(const T* x, const int64_t* tgt, const T* w, int64_t ns, int64_t c,
                                             int64_t s, int64_t ignore, bool mean, T* out, T* total,
                                             long long* slot) {
  using M = opmath_t<T>;
  M sum = 0, wsum = 0;
  for (int64_t i = threadIdx.x; i < ns; i += kReduceThreads) {
    const int64_t v = tgt[i];
    if (!target_class(v, c, ignore, slot, sum)) continue;
    const M wt = w ? cast<M>(w[v]) : M(1);
    const int64_t n = i / s, j = i - n * s;
    sum -= wt * cast<M>(x[(n * c + v) * s + j]);
    wsum += wt;
  }
  sum = block_sum(sum);
  wsum = block_sum(wsum);
  if (threadIdx.x == 0) {
    *out = cast<T>(mean ? sum / wsum : sum);
    *total = cast<T>(wsum);
  }
}

template <class T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_kernel(const T* x, const int64_t* tgt, const T* w, int64_t ns, int64_t c, int64_t s,
                  int64_t ignore, bool mean, T* out, T* total, long long* slot) {
  reduce_block(x, tgt, w, ns, c, s, ignore, mean, out, total, slot);
}

// none_kernel's loss of element i.
template <class T>
__device__ __forceinline__ T none_element(const T* x, const int64_t* tgt, const T* w, int64_t i, int64_t c,
                                          int64_t s, int64_t ignore, long long* slot) {
  using M = opmath_t<T>;
  const int64_t v = tgt[i];
  M loss = 0;
  if (target_class(v, c, ignore, slot, loss)) {
    const int64_t n = i / s, j = i - n * s;
    loss = -(w ? cast<M>(w[v]) : M(1)) * cast<M>(x[(n * c + v) * s + j]);
  }
  return cast<T>(loss);
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    none_kernel(const T* x, const int64_t* tgt, const T* w, int64_t ns, int64_t c, int64_t s, int64_t ignore,
                T* out, long long* slot) {
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < ns; i += int64_t(gridDim.x) * kBlock)
    out[i] = none_element(x, tgt, w, i, c, s, ignore, slot);
}

// cross_entropy's forward when the logits need grad ([N, C], S = 1, small): one block of
// kReduceThreads threads. A warp per row takes the row's (max, sum of exp) pair as
// log_softmax's online_kernel does for rows of up to 1024 values (the same Running pair, the
// same order) and writes logp[row, k] = (x - max) - log(sum); then, after a barrier (the
// block's writes of logp are visible to the whole block), the loss of logp exactly as
// nll_loss's reduce_kernel (mean/sum) or none_kernel (none) computes it. One launch for the
// two of log_softmax then nll_loss.
template <class T>
__global__ void __launch_bounds__(kReduceThreads)
    log_softmax_nll_kernel(const T* x, const int64_t* tgt, const T* w, int64_t rows, int64_t c, int64_t ignore,
                           LossReduction reduction, T* logp, T* out, T* total, long long* slot) {
  using M = opmath_t<T>;
  const int lane = int(threadIdx.x) % 32;
  for (int64_t row = threadIdx.x / 32; row < rows; row += kReduceThreads / 32) {
    const T* xr = x + row * c;
    T* yr = logp + row * c;
    Running<M> r{M(-INFINITY), M(0)};
    for (int64_t k = lane; k < c; k += 32) r.add(cast<M>(xr[k]));
    r = warp_merge(r);
    r.m = __shfl_sync(0xffffffffu, r.m, 0);
    r.s = __shfl_sync(0xffffffffu, r.s, 0);
    const M lsum = m_log(r.s);
    for (int64_t k = lane; k < c; k += 32) yr[k] = cast<T>((cast<M>(xr[k]) - r.m) - lsum);
  }
  __syncthreads();
  if (reduction == LossReduction::None) {
    for (int64_t i = threadIdx.x; i < rows; i += kReduceThreads)
      out[i] = none_element<T>(logp, tgt, w, i, c, 1, ignore, slot);
  } else {
    reduce_block<T>(logp, tgt, w, rows, c, 1, ignore, reduction == LossReduction::Mean, out, total, slot);
  }
}

// Logits, S = 1: a block per row. Writes out[row] (none) or loss_buf/wt_buf[row].
template <class T, int VEC>
__global__ void __launch_bounds__(kBlock)
    rows_kernel(const T* x, const int64_t* tgt, const T* w, int64_t rows, int64_t c, int64_t ignore, T* out,
                opmath_t<T>* loss_buf, opmath_t<T>* wt_buf, long long* slot) {
  using M = opmath_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t v = tgt[row];  // the same for the whole block: the branches below are uniform
    M loss = 0, wt = 0;
    if (target_class(v, c, ignore, slot, loss, threadIdx.x == 0)) {
      const T* xr = x + row * c;
      LogSumExp<M> r;
      if constexpr (VEC > 1) {
        // kChunk vectors are loaded before any arithmetic, so each thread has that many loads
        // in flight; each chunk then costs one exp per element and one rescale (add_chunk).
        const auto* xv = reinterpret_cast<const Vec<T, VEC>*>(xr);
        const int64_t nv = c / VEC;
        int64_t k = threadIdx.x;
        for (; k + (kChunk - 1) * kBlock < nv; k += kChunk * kBlock) {
          Vec<T, VEC> a[kChunk];
#pragma unroll
          for (int u = 0; u < kChunk; ++u) a[u] = xv[k + u * kBlock];
          M e[kChunk * VEC];
#pragma unroll
          for (int u = 0; u < kChunk; ++u)
#pragma unroll
            for (int j = 0; j < VEC; ++j) e[u * VEC + j] = cast<M>(a[u].v[j]);
          r.add_chunk(e);
        }
        for (; k < nv; k += kBlock) {
          const Vec<T, VEC> a = xv[k];
#pragma unroll
          for (int j = 0; j < VEC; ++j) r.add(cast<M>(a.v[j]));
        }
      } else {
        for (int64_t k = threadIdx.x; k < c; k += kBlock) r.add(cast<M>(xr[k]));
      }
      r = block_lse(r);
      wt = w ? cast<M>(w[v]) : M(1);
      loss = -wt * (cast<M>(xr[v]) - r.m - m_log(r.s));
    }
    if (threadIdx.x == 0) {
      if (out) {
        out[row] = cast<T>(loss);
      } else {
        loss_buf[row] = loss;
        wt_buf[row] = wt;
      }
    }
  }
}

// Logits, S > 1: a thread per (n, s) walks its column of C logits.
template <class T>
__global__ void __launch_bounds__(kBlock)
    cols_kernel(const T* x, const int64_t* tgt, const T* w, int64_t ns, int64_t c, int64_t s, int64_t ignore,
                T* out, opmath_t<T>* loss_buf, opmath_t<T>* wt_buf, long long* slot) {
  using M = opmath_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < ns; i += int64_t(gridDim.x) * kBlock) {
    const int64_t v = tgt[i];
    M loss = 0, wt = 0;
    if (target_class(v, c, ignore, slot, loss)) {
      const int64_t n = i / s, j = i - n * s;
      const T* xc = x + n * c * s + j;
      LogSumExp<M> r;
      for (int64_t k = 0; k < c; ++k) r.add(cast<M>(xc[k * s]));
      wt = w ? cast<M>(w[v]) : M(1);
      loss = -wt * (cast<M>(xc[v * s]) - r.m - m_log(r.s));
    }
    if (out) {
      out[i] = cast<T>(loss);
    } else {
      loss_buf[i] = loss;
      wt_buf[i] = wt;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kReduceThreads)
    sum_kernel(const opmath_t<T>* loss_buf, const opmath_t<T>* wt_buf, int64_t n, bool mean, T* out,
               T* total) {
  using M = opmath_t<T>;
  M sum = 0, wsum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kReduceThreads) {
    sum += loss_buf[i];
    wsum += wt_buf[i];
  }
  sum = block_sum(sum);
  wsum = block_sum(wsum);
  if (threadIdx.x == 0) {
    *out = cast<T>(mean ? sum / wsum : sum);
    *total = cast<T>(wsum);
  }
}

// The whole gradient [N, C, S]: a block per row n; g is grad_out[N * S] (none) or 0-d.
template <class T, int VEC>
__global__ void __launch_bounds__(kBlock)
    backward_kernel(T* gi, const T* g, const int64_t* tgt, const T* w, const T* total, int64_t rows,
                    int64_t c, int64_t s, int64_t ignore, LossReduction reduction) {
  using M = opmath_t<T>;
  M scale = M(1);
  if (reduction != LossReduction::None) scale = cast<M>(g[0]);
  if (reduction == LossReduction::Mean) scale /= cast<M>(*total);
  const int64_t cs = c * s;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    T* out = gi + row * cs;
    const int64_t* t = tgt + row * s;
    if constexpr (VEC > 1) {  // s == 1, rows 16-byte aligned
      const int64_t v = t[0];
      M val = 0;
      if (has_class(v, c, ignore))
        val = -(w ? cast<M>(w[v]) : M(1)) * (reduction == LossReduction::None ? cast<M>(g[row]) : scale);
      auto* ov = reinterpret_cast<Vec<T, VEC>*>(out);
      for (int64_t k = threadIdx.x; k < c / VEC; k += kBlock) {
        Vec<T, VEC> o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) o.v[j] = cast<T>(k * VEC + j == v ? val : M(0));
        ov[k] = o;
      }
    } else {
      for (int64_t k = threadIdx.x; k < cs; k += kBlock) {
        const int64_t cls = s == 1 ? k : k / s, j = k - cls * s;
        const int64_t v = t[j];
        M val = 0;
        if (v == cls && v != ignore)
          val = -(w ? cast<M>(w[v]) : M(1)) *
                (reduction == LossReduction::None ? cast<M>(g[row * s + j]) : scale);
        out[k] = cast<T>(val);
      }
    }
  }
}

// cross_entropy's backward to the logits [N, C] (S = 1), a thread per element: what
// backward_kernel writes (gt at the target class, 0 elsewhere, stored as T) and then
// backward_rows_kernel of log_softmax makes of it, g - exp(y) * sum(g), with the row sum
// being gt itself. The same expressions in the same types, so the same bits as the two
// kernels (ignored rows and bad targets have gt = 0, so a NaN logp still gives NaN there).
template <class T>
__global__ void __launch_bounds__(kBlock)
    log_softmax_nll_backward_kernel(T* gi, const T* g, int64_t g_stride, const T* logp, const int64_t* tgt,
                                    const T* w, const T* total, int64_t rows, int64_t c, int64_t ignore,
                                    LossReduction reduction) {
  using M = opmath_t<T>;
  M scale = M(1);
  if (reduction != LossReduction::None) scale = cast<M>(g[0]);
  if (reduction == LossReduction::Mean) scale /= cast<M>(*total);
  const int64_t numel = rows * c;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < numel; i += int64_t(gridDim.x) * kBlock) {
    const int64_t row = i / c, k = i - row * c;
    const int64_t v = tgt[row];
    M val = 0;
    if (has_class(v, c, ignore))
      val = -(w ? cast<M>(w[v]) : M(1)) * (reduction == LossReduction::None ? cast<M>(g[row * g_stride]) : scale);
    const M s = cast<M>(cast<T>(val));  // the row's one nonzero gradient wrt logp, as stored
    const M gv = k == v ? s : M(0), yv = cast<M>(logp[i]);
    gi[i] = cast<T>(gv - m_exp(yv) * s);
  }
}

template <class T>
void forward_typed(const Tensor& out, const Tensor& total_weight, const Tensor& input, const Tensor& target,
                   const Tensor& weight, int64_t ignore, LossReduction reduction, bool logits,
                   cudaStream_t stream, long long* slot) {
  using M = opmath_t<T>;
  const int device = input.device().index();
  const int64_t n = input.size(0), c = input.size(1), s = input.size(2), ns = n * s;
  const T* x = static_cast<const T*>(input.data_ptr());
  const auto* t = static_cast<const int64_t*>(target.data_ptr());
  const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
  T* o = static_cast<T*>(out.data_ptr());
  T* tw = static_cast<T*>(total_weight.data_ptr());
  const bool none = reduction == LossReduction::None, mean = reduction == LossReduction::Mean;
  const int elem_blocks = grid_blocks(blocks_for(ns), device, 4);
  if (!logits) {
    if (!none) {
      reduce_kernel<T><<<1, kReduceThreads, 0, stream>>>(x, t, w, ns, c, s, ignore, mean, o, tw, slot);
    } else if (ns > 0) {
      none_kernel<T><<<int(elem_blocks), kBlock, 0, stream>>>(x, t, w, ns, c, s, ignore, o, slot);
    }
    return;
  }
  Tensor loss_buf, wt_buf;
  M *lb = nullptr, *wb = nullptr;
  if (!none) {
    const auto acc = TensorOptions(std::is_same_v<M, double> ? kFloat64 : kFloat32).device(input.device());
    loss_buf = empty({ns}, acc);
    wt_buf = empty({ns}, acc);
    lb = static_cast<M*>(loss_buf.data_ptr());
    wb = static_cast<M*>(wt_buf.data_ptr());
  }
  T* direct = none ? o : nullptr;
  if (ns > 0) {
    if (s == 1) {
      constexpr int VEC = 16 / sizeof(T);
      const int grid = grid_blocks(n, device, 4);
      if (c % VEC == 0 && uintptr_t(x) % 16 == 0)
        rows_kernel<T, VEC><<<grid, kBlock, 0, stream>>>(x, t, w, n, c, ignore, direct, lb, wb, slot);
      else rows_kernel<T, 1><<<grid, kBlock, 0, stream>>>(x, t, w, n, c, ignore, direct, lb, wb, slot);
    } else {
      cols_kernel<T>
          <<<int(elem_blocks), kBlock, 0, stream>>>(x, t, w, ns, c, s, ignore, direct, lb, wb, slot);
    }
  }
  if (!none) sum_kernel<T><<<1, kReduceThreads, 0, stream>>>(lb, wb, ns, mean, o, tw);
}

template <class T>
void backward_typed(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                    const Tensor& weight, const Tensor& total_weight, int64_t ignore, LossReduction reduction,
                    cudaStream_t stream) {
  const int device = grad_input.device().index();
  const int64_t n = grad_input.size(0), c = grad_input.size(1), s = grad_input.size(2);
  if (n * c * s == 0) return;
  T* gi = static_cast<T*>(grad_input.data_ptr());
  const T* g = static_cast<const T*>(grad_out.data_ptr());
  const auto* t = static_cast<const int64_t*>(target.data_ptr());
  const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
  const T* tw = total_weight.defined() ? static_cast<const T*>(total_weight.data_ptr()) : nullptr;
  const int grid = grid_blocks(n, device, 4);
  constexpr int VEC = 16 / sizeof(T);
  if (s == 1 && c % VEC == 0 && uintptr_t(gi) % 16 == 0)
    backward_kernel<T, VEC><<<grid, kBlock, 0, stream>>>(gi, g, t, w, tw, n, c, s, ignore, reduction);
  else backward_kernel<T, 1><<<grid, kBlock, 0, stream>>>(gi, g, t, w, tw, n, c, s, ignore, reduction);
}

// cross_entropy's rows (KernelTable::cross_entropy_rows), below: a block per row keeps the
// running (max, sum of exp) pair of softmax_rows.cuh over the row, one read of the logits;
// thread 0 writes lse and nll. A bad target makes nll NaN and is reported as nll_loss's are.
// Row n's lse (its pair's max + log(sum)) and nll (lse minus the target's logit; 0 for
// ignore_index, NaN and reported for a bad target), by one thread.
template <class T, class M>
__device__ __forceinline__ void write_row(const Running<M>& r, const T* row, int64_t n, int64_t c,
                                          const int64_t* tgt, int64_t ignore, M* lse, M* nll, long long* slot) {
  const M l = r.m + m_log(r.s);
  lse[n] = l;
  const int64_t t = tgt[n];
  M loss = M(0);
  if (target_class(t, c, ignore, slot, loss)) loss = l - cast<M>(row[t]);
  nll[n] = loss;
}

// The (max, sum of exp) pair of one row over the block, in every thread: a scalar load an
// element.
template <class T>
__device__ __forceinline__ Running<opmath_t<T>> row_pair(const T* row, int64_t c) {
  using M = opmath_t<T>;
  Running<M> r{M(-INFINITY), M(0)};
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) r.add(cast<M>(row[k]));
  return block_all_reduce(r, RunningMerge{}, Running<M>{M(-INFINITY), M(0)});
}

// The same over a row read as 16-byte vectors (c a multiple of VEC, row 16-byte aligned): two
// vectors in flight a thread, each folded into the thread's (max, sum of exp) pair by its own
// maximum (one exp a value, one more when the maximum grows), so that the loads, not the
// instructions, bound it. Scalar loads of 2 bytes left the 50k-class bfloat16 rows at a third
// of the memory's rate.
template <class T, class M>
__device__ __forceinline__ void fold(M& m, M& s, const Vec<T, int(16 / sizeof(T))>& a) {
  constexpr int VEC = int(16 / sizeof(T));
  M x[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) x[k] = cast<M>(a.v[k]);
  M cm = x[0];
#pragma unroll
  for (int k = 1; k < VEC; ++k) cm = max_of(cm, x[k]);
  if (cm == M(-INFINITY)) return;  // nothing but -inf: adds nothing
  if (!(cm <= m)) {                // a larger maximum, or a NaN (which then stays)
    s = m == M(-INFINITY) ? M(0) : s * m_exp(m - cm);
    m = cm;
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) s += m_exp(x[k] - m);
}

template <class T>
__device__ __forceinline__ Running<opmath_t<T>> row_pair_vec(const T* row, int64_t c) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t nvec = c / VEC, step = blockDim.x;
  const auto* src = reinterpret_cast<const Vec<T, VEC>*>(row);
  M m = M(-INFINITY), s = M(0);
  int64_t v = threadIdx.x;
  for (; v + step < nvec; v += 2 * step) {
    const Vec<T, VEC> a = src[v], b = src[v + step];
    fold<T>(m, s, a);
    fold<T>(m, s, b);
  }
  if (v < nvec) fold<T>(m, s, src[v]);
  return block_all_reduce(Running<M>{m, s}, RunningMerge{}, Running<M>{M(-INFINITY), M(0)});
}

// One row's gradient a * (exp(x - l) - [k == t]) by the block, or zeros on a row ignored or of a
// bad target (t outside [0, c)): a scalar store an element.
template <class T>
__device__ __forceinline__ void write_grad_row(T* g, const T* row, int64_t c, int64_t t, int64_t ignore,
                                               opmath_t<T> a, opmath_t<T> l) {
  using M = opmath_t<T>;
  if (!has_class(t, c, ignore)) {
    for (int64_t k = threadIdx.x; k < c; k += blockDim.x) g[k] = cast<T>(M(0));
    return;
  }
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
    const M p = m_exp(cast<M>(row[k]) - l);
    g[k] = cast<T>(a * (k == t ? p - M(1) : p));
  }
}

// The same over 16-byte vectors (c a multiple of VEC, row and g 16-byte aligned), two in flight
// a thread.
template <class T>
__device__ __forceinline__ Vec<T, int(16 / sizeof(T))> ce_grad(const Vec<T, int(16 / sizeof(T))>& in, int64_t k0,
                                                              int64_t t, opmath_t<T> a, opmath_t<T> l) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  Vec<T, VEC> o;
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    const M p = m_exp(cast<M>(in.v[k]) - l);
    o.v[k] = cast<T>(a * (k0 + k == t ? p - M(1) : p));
  }
  return o;
}

template <class T>
__device__ __forceinline__ void write_grad_row_vec(T* g, const T* row, int64_t c, int64_t t, int64_t ignore,
                                                   opmath_t<T> a, opmath_t<T> l) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t nvec = c / VEC, step = blockDim.x;
  const auto* src = reinterpret_cast<const Vec<T, VEC>*>(row);
  auto* dst = reinterpret_cast<Vec<T, VEC>*>(g);
  if (!has_class(t, c, ignore)) {
    Vec<T, VEC> z;
#pragma unroll
    for (int k = 0; k < VEC; ++k) z.v[k] = cast<T>(M(0));
    for (int64_t v = threadIdx.x; v < nvec; v += step) dst[v] = z;
    return;
  }
  int64_t v = threadIdx.x;
  for (; v + step < nvec; v += 2 * step) {
    const Vec<T, VEC> p = src[v], q = src[v + step];
    dst[v] = ce_grad<T>(p, v * VEC, t, a, l);
    dst[v + step] = ce_grad<T>(q, (v + step) * VEC, t, a, l);
  }
  if (v < nvec) dst[v] = ce_grad<T>(src[v], v * VEC, t, a, l);
}

// cross_entropy's rows (KernelTable::cross_entropy_rows): a block per row reduces the row's
// pair, thread 0 writes lse and nll; with gi, the block then writes the row's gradient for
// coef[n], reading the row again while it is still in L2 (the launch keeps few rows in flight).
template <class T, bool VEC>
__global__ void ce_rows_kernel(const T* x, const int64_t* tgt, int64_t rows, int64_t c, int64_t ignore,
                               opmath_t<T>* lse, opmath_t<T>* nll, long long* slot, T* gi, const opmath_t<T>* coef) {
  using M = opmath_t<T>;
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T* row = x + n * c;
    const Running<M> r = VEC ? row_pair_vec(row, c) : row_pair(row, c);
    if (threadIdx.x == 0) write_row(r, row, n, c, tgt, ignore, lse, nll, slot);
    if (gi == nullptr) continue;
    const M l = r.m + m_log(r.s);
    if (VEC) write_grad_row_vec(gi + n * c, row, c, tgt[n], ignore, coef[n], l);
    else write_grad_row(gi + n * c, row, c, tgt[n], ignore, coef[n], l);
  }
}

// Their gradient: a block per row writes coef[n] * scale * (exp(x - lse) - [k == t]); nothing
// at all when scale is given and is 1 (grad_input holds the forward's gradient already).
template <class T, bool VEC>
__global__ void __launch_bounds__(kBlock)
    ce_rows_backward_kernel(T* gi, const opmath_t<T>* coef, const opmath_t<T>* scale, const T* x,
                            const opmath_t<T>* lse, const int64_t* tgt, int64_t rows, int64_t c, int64_t ignore) {
  using M = opmath_t<T>;
  const M s = scale ? *scale : M(1);
  if (scale && s == M(1)) return;
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    if (VEC) write_grad_row_vec(gi + n * c, x + n * c, c, tgt[n], ignore, coef[n] * s, lse[n]);
    else write_grad_row(gi + n * c, x + n * c, c, tgt[n], ignore, coef[n] * s, lse[n]);
  }
}

}  // namespace

void raise_pending_target_error() {
  long long* slot = g_target_slot.load(std::memory_order_acquire);
  if (!slot) return;
  volatile long long* s = slot;
  if (s[0] == 0) return;
  std::atomic_thread_fence(std::memory_order_acquire);
  const long long v = s[1];
  s[1] = 0;
  s[0] = 0;
  raise<IndexError>("nll_loss", "Target ", v, " is out of bounds.");
}

void nll_loss_forward(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                      const Tensor& target, const Tensor& weight, int64_t ignore_index,
                      LossReduction reduction, bool logits) {
  raise_pending_target_error();
  const int device = input.device().index();
  CudaDeviceScope scope(device);
  long long* slot = target_error_slot();
  cudaStream_t stream = current_cuda_stream(device);
  WICK_DISPATCH_FLOATING(input.dtype(), "nll_loss", [&]<class T>() {
    forward_typed<T>(out, total_weight, input, target, weight, ignore_index, reduction, logits, stream, slot);
  });
  WICK_CUDA_AFTER_LAUNCH("nll_loss", stream);
}

void nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                       const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                       LossReduction reduction) {
  raise_pending_target_error();
  const int device = grad_input.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  WICK_DISPATCH_FLOATING(grad_input.dtype(), "nll_loss_backward", [&]<class T>() {
    backward_typed<T>(grad_input, grad_out, target, weight, total_weight, ignore_index, reduction, stream);
  });
  WICK_CUDA_AFTER_LAUNCH("nll_loss_backward", stream);
}

void log_softmax_nll_loss_forward(const Tensor& logp, const Tensor& out, const Tensor& total_weight,
                                  const Tensor& input, const Tensor& target, const Tensor& weight,
                                  int64_t ignore_index, LossReduction reduction) {
  raise_pending_target_error();
  const int device = input.device().index();
  CudaDeviceScope scope(device);
  long long* slot = target_error_slot();
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t n = input.size(0), c = input.size(1);
  if (reduction == LossReduction::None && n == 0) return;
  WICK_DISPATCH_FLOATING(input.dtype(), "cross_entropy", [&]<class T>() {
    log_softmax_nll_kernel<T><<<1, kReduceThreads, 0, stream>>>(
        static_cast<const T*>(input.data_ptr()), static_cast<const int64_t*>(target.data_ptr()),
        weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr, n, c, ignore_index, reduction,
        static_cast<T*>(logp.data_ptr()), static_cast<T*>(out.data_ptr()),
        static_cast<T*>(total_weight.data_ptr()), slot);
  });
  WICK_CUDA_AFTER_LAUNCH("cross_entropy", stream);
}

void log_softmax_nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& logp,
                                   const Tensor& target, const Tensor& weight, const Tensor& total_weight,
                                   int64_t ignore_index, LossReduction reduction) {
  raise_pending_target_error();
  const int device = grad_input.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t n = grad_input.size(0), c = grad_input.size(1);
  if (n * c == 0) return;
  const int64_t g_stride = grad_out.dim() == 1 ? grad_out.stride(0) : 0;
  const int grid = grid_blocks(blocks_for(n * c), device, 4);
  WICK_DISPATCH_FLOATING(grad_input.dtype(), "cross_entropy_backward", [&]<class T>() {
    log_softmax_nll_backward_kernel<T><<<grid, kBlock, 0, stream>>>(
        static_cast<T*>(grad_input.data_ptr()), static_cast<const T*>(grad_out.data_ptr()), g_stride,
        static_cast<const T*>(logp.data_ptr()), static_cast<const int64_t*>(target.data_ptr()),
        weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr,
        total_weight.defined() ? static_cast<const T*>(total_weight.data_ptr()) : nullptr, n, c, ignore_index,
        reduction);
  });
  WICK_CUDA_AFTER_LAUNCH("cross_entropy_backward", stream);
}

void cross_entropy_rows(const Tensor& lse, const Tensor& nll, const Tensor& input, const Tensor& target,
                        int64_t ignore_index, const Tensor& grad_input, const Tensor& coef) {
  raise_pending_target_error();
  const int64_t rows = input.size(0), c = input.size(1);
  if (rows == 0) return;
  const int device = input.device().index();
  CudaDeviceScope scope(device);
  long long* slot = target_error_slot();
  cudaStream_t stream = current_cuda_stream(device);
  WICK_DISPATCH_FLOATING(input.dtype(), "cross_entropy", [&]<class T>() {
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(input.data_ptr());
    const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
    M* l = static_cast<M*>(lse.data_ptr());
    M* o = static_cast<M*>(nll.data_ptr());
    T* g = grad_input.defined() ? static_cast<T*>(grad_input.data_ptr()) : nullptr;
    const M* a = g ? static_cast<const M*>(coef.data_ptr()) : nullptr;
    const bool vec = c % int64_t(16 / sizeof(T)) == 0 && uintptr_t(x) % 16 == 0 && uintptr_t(g) % 16 == 0;
    // Writing the gradient too, a block of 512 threads a row and two blocks an SM: the rows in
    // flight (two a multiprocessor, 100 KB each at 50k bfloat16 classes) stay in L2 for their
    // second read. Without it, four blocks of kBlock an SM for the loads in flight.
    const int block = g ? 512 : kBlock;
    const int grid = g ? int(std::max<int64_t>(1, std::min<int64_t>(rows, 2 * int64_t(sm_count(device)))))
                       : grid_blocks(rows, device, 4);
    if (vec) ce_rows_kernel<T, true><<<grid, block, 0, stream>>>(x, t, rows, c, ignore_index, l, o, slot, g, a);
    else ce_rows_kernel<T, false><<<grid, block, 0, stream>>>(x, t, rows, c, ignore_index, l, o, slot, g, a);
  });
  WICK_CUDA_AFTER_LAUNCH("cross_entropy", stream);
}

void cross_entropy_rows_backward(const Tensor& grad_input, const Tensor& coef, const Tensor& scale,
                                 const Tensor& input, const Tensor& lse, const Tensor& target, int64_t ignore_index) {
  raise_pending_target_error();
  const int64_t rows = input.size(0), c = input.size(1);
  if (rows == 0 || c == 0) return;
  const int device = input.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  WICK_DISPATCH_FLOATING(input.dtype(), "cross_entropy_backward", [&]<class T>() {
    using M = opmath_t<T>;
    T* g = static_cast<T*>(grad_input.data_ptr());
    const T* x = static_cast<const T*>(input.data_ptr());
    const M* a = static_cast<const M*>(coef.data_ptr());
    const M* s = scale.defined() ? static_cast<const M*>(scale.data_ptr()) : nullptr;
    const M* l = static_cast<const M*>(lse.data_ptr());
    const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
    const int grid = grid_blocks(rows, device, 4);
    if (c % int64_t(16 / sizeof(T)) == 0 && uintptr_t(x) % 16 == 0 && uintptr_t(g) % 16 == 0)
      ce_rows_backward_kernel<T, true><<<grid, kBlock, 0, stream>>>(g, a, s, x, l, t, rows, c, ignore_index);
    else ce_rows_backward_kernel<T, false><<<grid, kBlock, 0, stream>>>(g, a, s, x, l, t, rows, c, ignore_index);
  });
  WICK_CUDA_AFTER_LAUNCH("cross_entropy_backward", stream);
}

}  // namespace wick::detail::gpu
