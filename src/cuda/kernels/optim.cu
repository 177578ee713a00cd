/* The multi-tensor optimizer steps on CUDA (KernelTable's sgd_step and adam_step): one launch
 * updates a whole list of parameters.
 *
 * Work split: every parameter is cut into chunks of `chunk` elements, and each block of the
 * launch takes one (tensor, chunk) pair from a table passed by value in the kernel's arguments
 * (the operands' addresses and sizes of up to kMaxTensors tensors, and the pair of each of up
 * to kMaxBlocks blocks; under the 4 KiB argument limit). When the table is full the host
 * launches it and starts a new one, so a list of any length takes ceil(chunks / kMaxBlocks)
 * launches or so, and the host never waits for the device. Each thread updates kIlp elements
 * per round (all loads of a round before any store, for memory-level parallelism), the whole
 * update in registers (core/optim_math.h), arithmetic in opmath_t (float for 16-bit floats).
 * The chunk is sized from the list's total so that the launch has about two blocks per SM:
 * between kMinChunk and kMaxChunk elements. A fixed 64 Ki-element chunk gave the small MLP's
 * 100 Ki-element weight two blocks, and its whole step 34 us of a 130 us step.
 */
#include <algorithm>
#include <array>

#include "core/optim_math.h"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

constexpr int kMaxTensors = 36;
constexpr int kMaxBlocks = 320;
constexpr int kThreads = 512;
constexpr int kIlp = 4;
constexpr int64_t kMinChunk = int64_t(kThreads) * kIlp;  // one round of a block
constexpr int64_t kMaxChunk = 65536;

// Operand k of tensor t starts at ptr[k][t]; block b updates chunk block_chunk[b] of tensor
// block_tensor[b].
template <int N>
struct TensorTable {
  void* ptr[N][kMaxTensors];
  int64_t numel[kMaxTensors];
  int64_t chunk;
  unsigned char block_tensor[kMaxBlocks];
  int block_chunk[kMaxBlocks];
};

// Operand 1 is the gradient (read only); every other operand is read and written.
template <class T, int N, class F>
__global__ void __launch_bounds__(kThreads) multi_tensor_kernel(TensorTable<N> table, F f) {
  using M = opmath_t<T>;
  const int t = table.block_tensor[blockIdx.x];
  const int64_t begin = int64_t(table.block_chunk[blockIdx.x]) * table.chunk;
  const int64_t rest = table.numel[t] - begin;
  const int64_t n = rest < table.chunk ? rest : table.chunk;
  T* ptr[N];
#pragma unroll
  for (int k = 0; k < N; ++k) ptr[k] = static_cast<T*>(table.ptr[k][t]) + begin;
  for (int64_t base = 0; base < n; base += int64_t(kThreads) * kIlp) {
    M v[kIlp][N];
#pragma unroll
    for (int j = 0; j < kIlp; ++j) {
      const int64_t i = base + threadIdx.x + int64_t(j) * kThreads;
      if (i < n) {
#pragma unroll
        for (int k = 0; k < N; ++k) v[j][k] = cast<M>(ptr[k][i]);
      }
    }
#pragma unroll
    for (int j = 0; j < kIlp; ++j) {
      const int64_t i = base + threadIdx.x + int64_t(j) * kThreads;
      if (i < n) {
        f(v[j]);
#pragma unroll
        for (int k = 0; k < N; ++k)
          if (k != 1) ptr[k][i] = cast<T>(v[j][k]);
      }
    }
  }
}

// The chunk of a list's launch (0 when it has no element): about two blocks per SM.
int64_t chunk_of(std::span<const Tensor> list) {
  int64_t total = 0;
  for (const Tensor& t : list) total += t.numel();
  if (total == 0) return 0;
  const int64_t want = total / (2 * int64_t(sm_count(list[0].device().index())));
  return std::min(kMaxChunk, std::max(kMinChunk, (want + kMinChunk - 1) / kMinChunk * kMinChunk));
}

// Fills tables for lists (N parallel lists of contiguous tensors) and calls launch(table, nb)
// for each full one and the last; blocks are numbered in the lists' order across the tables.
template <int N, class Launch>
void for_each_table(const std::array<std::span<const Tensor>, N>& lists, const Launch& launch) {
  TensorTable<N> table;
  table.chunk = chunk_of(lists[0]);
  if (table.chunk == 0) return;
  const int64_t chunk = table.chunk;
  int nt = 0, nb = 0;
  for (size_t i = 0; i < lists[0].size(); ++i) {
    const int64_t n = lists[0][i].numel();
    if (n == 0) continue;
    for (int k = 0; k < N; ++k) table.ptr[k][nt] = lists[k][i].data_ptr();
    table.numel[nt] = n;
    const int64_t chunks = (n + chunk - 1) / chunk;
    for (int64_t c = 0; c < chunks; ++c) {
      table.block_tensor[nb] = static_cast<unsigned char>(nt);
      table.block_chunk[nb] = int(c);
      ++nb;
      const bool last_chunk = c == chunks - 1;
      if (nb == kMaxBlocks || (last_chunk && nt + 1 == kMaxTensors)) {
        launch(table, nb);
        nb = 0;
        if (last_chunk) {
          nt = -1;  // the next tensor takes slot 0
        } else {    // this tensor goes on in slot 0 of the next table
          for (int k = 0; k < N; ++k) table.ptr[k][0] = table.ptr[k][nt];
          table.numel[0] = n;
          nt = 0;
        }
      }
    }
    ++nt;
  }
  if (nb > 0) launch(table, nb);
}

// Launches f over lists (N parallel lists of contiguous tensors of dtype T), one launch per
// full table.
template <class T, int N, class F>
void launch_lists(const std::array<std::span<const Tensor>, N>& lists, const F& f, cudaStream_t stream) {
  for_each_table<N>(lists, [&](const TensorTable<N>& table, int nb) {
    multi_tensor_kernel<T, N, F><<<nb, kThreads, 0, stream>>>(table, f);
  });
}

// The max of two magnitudes, NaN if either is (as the inf norm of a tensor holding a NaN).
template <class M>
__device__ __forceinline__ M max_or_nan(M a, M b) {
  return a != a ? a : (b != b || b > a) ? b : a;
}

// Block b of a table writes out[first + b]: the sum of the squares (Inf: the max of the
// magnitudes) of its chunk, in opmath_t.
template <class T, bool Inf>
__global__ void __launch_bounds__(kThreads) norm_partials_kernel(TensorTable<1> table, opmath_t<T>* out,
                                                                 int64_t first) {
  using M = opmath_t<T>;
  const int t = table.block_tensor[blockIdx.x];
  const int64_t begin = int64_t(table.block_chunk[blockIdx.x]) * table.chunk;
  const int64_t rest = table.numel[t] - begin;
  const int64_t n = rest < table.chunk ? rest : table.chunk;
  const T* p = static_cast<const T*>(table.ptr[0][t]) + begin;
  M acc[kIlp];
#pragma unroll
  for (int j = 0; j < kIlp; ++j) acc[j] = M(0);
  for (int64_t base = 0; base < n; base += int64_t(kThreads) * kIlp) {
#pragma unroll
    for (int j = 0; j < kIlp; ++j) {
      const int64_t i = base + threadIdx.x + int64_t(j) * kThreads;
      if (i < n) {
        const M v = cast<M>(p[i]);
        if constexpr (Inf) acc[j] = max_or_nan(acc[j], v < M(0) ? -v : v);
        else acc[j] += v * v;
      }
    }
  }
  M s = acc[0];
#pragma unroll
  for (int j = 1; j < kIlp; ++j) s = Inf ? max_or_nan(s, acc[j]) : s + acc[j];
  s = block_reduce(
      s, [](M& a, const M& b) { a = Inf ? max_or_nan(a, b) : a + b; }, M(0));
  if (threadIdx.x == 0) out[first + blockIdx.x] = s;
}

template <class M, int N>
struct SgdFn {
  SgdScalars<M> s;
  __device__ __forceinline__ void operator()(M (&v)[N]) const {
    M buf = M(0);
    if constexpr (N == 3) buf = v[2];
    sgd_update(s, v[0], v[1], buf);
    if constexpr (N == 3) v[2] = buf;
  }
};

template <class M, int N>
struct AdamFn {
  AdamScalars<M> s;
  __device__ __forceinline__ void operator()(M (&v)[N]) const {
    M vmax = M(0);
    if constexpr (N == 5) vmax = v[4];
    adam_update(s, v[0], v[1], v[2], v[3], vmax);
    if constexpr (N == 5) v[4] = vmax;
  }
};

// GradScaler's unscale: v[0] is a gradient element, multiplied in place (PyTorch's
// _amp_foreach_non_finite_check_and_unscale_: unchanged when inv_scale is 1).
template <class M>
struct UnscaleFn {
  float* found_inf;
  const float* inv_scale;
  __device__ __forceinline__ void operator()(M (&v)[1]) const {
    const M g = v[0];
    if (!(g - g == M(0))) *found_inf = 1.0f;  // g - g is NaN exactly when g is infinite or NaN
    const float s = *inv_scale;
    if (s != 1.0f) v[0] = g * M(s);
  }
};

}  // namespace

void unscale_check(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale) {
  if (grads.empty()) return;
  const int device = grads[0].device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  float* flag = static_cast<float*>(found_inf.data_ptr());
  const float* inv = static_cast<const float*>(inv_scale.data_ptr());
  WICK_DISPATCH_FLOATING(grads[0].dtype(), "unscale_", [&]<class T>() {
    using M = opmath_t<T>;
    launch_lists<T, 1>({grads}, UnscaleFn<M>{flag, inv}, stream);
  });
  WICK_CUDA_AFTER_LAUNCH("unscale_", stream);
}

void sgd_step(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> bufs,
              const SgdStepArgs& a) {
  if (params.empty()) return;
  const int device = params[0].device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  WICK_DISPATCH_FLOATING(params[0].dtype(), "sgd_step", [&]<class T>() {
    using M = opmath_t<T>;
    const SgdScalars<M> s = sgd_scalars<M>(a);
    if (s.has_momentum) launch_lists<T, 3>({params, grads, bufs}, SgdFn<M, 3>{s}, stream);
    else launch_lists<T, 2>({params, grads}, SgdFn<M, 2>{s}, stream);
  });
  WICK_CUDA_AFTER_LAUNCH("sgd_step", stream);
}

void adam_step(std::span<const Tensor> params, std::span<const Tensor> grads,
               std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
               std::span<const Tensor> max_exp_avg_sqs, const AdamStepArgs& a) {
  if (params.empty()) return;
  const int device = params[0].device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  WICK_DISPATCH_FLOATING(params[0].dtype(), "adam_step", [&]<class T>() {
    using M = opmath_t<T>;
    const AdamScalars<M> s = adam_scalars<M>(a);
    if (s.amsgrad)
      launch_lists<T, 5>({params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs}, AdamFn<M, 5>{s}, stream);
    else launch_lists<T, 4>({params, grads, exp_avgs, exp_avg_sqs}, AdamFn<M, 4>{s}, stream);
  });
  WICK_CUDA_AFTER_LAUNCH("adam_step", stream);
}

Tensor foreach_norm_partials(std::span<const Tensor> tensors, bool inf_norm) {
  const Device dev = tensors[0].device();
  const Dtype dt = tensors[0].dtype();
  const int64_t chunk = gpu::chunk_of(tensors);
  int64_t blocks = 0;
  if (chunk > 0)
    for (const Tensor& t : tensors) blocks += (t.numel() + chunk - 1) / chunk;
  const TensorOptions o = TensorOptions(dt == kFloat64 ? kFloat64 : kFloat32).device(dev);
  if (blocks == 0) return wick::zeros({1}, o);
  Tensor out = wick::empty({blocks}, o);  // every block writes its element
  CudaDeviceScope scope(dev.index());
  cudaStream_t stream = gpu::current_cuda_stream(dev.index());
  WICK_DISPATCH_FLOATING(dt, "clip_grad_norm_", [&]<class T>() {
    using M = opmath_t<T>;
    M* partials = static_cast<M*>(out.data_ptr());
    int64_t first = 0;
    gpu::for_each_table<1>({tensors}, [&](const gpu::TensorTable<1>& table, int nb) {
      if (inf_norm) gpu::norm_partials_kernel<T, true><<<nb, gpu::kThreads, 0, stream>>>(table, partials, first);
      else gpu::norm_partials_kernel<T, false><<<nb, gpu::kThreads, 0, stream>>>(table, partials, first);
      first += nb;
    });
  });
  WICK_CUDA_AFTER_LAUNCH("clip_grad_norm_", stream);
  return out;
}

}  // namespace wick::detail::gpu
