/* The backward of a linear layer's GELU with its bias gradient (kernel_table.h's
 * gelu_backward_bias): dx = g * gelu'(x) over contiguous rows [m, n], and the bias gradient, the
 * columns' sums of dx, in the same pass.
 *
 * A block is 32 x 8 threads over a strip of 32 * VEC columns (VEC: a 16-byte vector) and a band
 * of rows: thread (tx, ty) reads the vectors of g and x at its columns in rows ty, ty + 8, ...
 * of the band, writes dx and adds dx (as rounded to its dtype, the values a separate sum would
 * read) into float sums of its VEC columns. The block's eight row lanes are then added in
 * shared memory in lane order and written as the band's partial row; column_sums.cuh's
 * sum_parts adds the bands' partial rows. The bands are fixed by the device and the problem,
 * so the sums repeat bit for bit. Before it, the elementwise backward wrote dx and cuBLASLt's
 * bias-gradient epilogue read it again in a kernel of its own (GPT-2's MLP: 32k x 3072 values
 * read twice a layer).
 */
#include <algorithm>

#include "cuda/kernels/column_sums.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/gelu_math.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

constexpr int kLanesX = 32, kLanesY = 8;

template <class T, bool kTanh>
__global__ void __launch_bounds__(kLanesX* kLanesY)
    gelu_bias_backward_kernel(T* dx, opmath_t<T>* part, const T* g, const T* x, int64_t m, int64_t n,
                              int64_t band) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  __shared__ M lanes[kLanesY][kLanesX * VEC];
  const int64_t col = (int64_t(blockIdx.x) * kLanesX + threadIdx.x) * VEC;
  const int64_t r0 = int64_t(blockIdx.y) * band, r1 = r0 + band < m ? r0 + band : m;
  M acc[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) acc[k] = M(0);
  if (col < n) {
#pragma unroll 2
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kLanesY) {
      const int64_t at = r * n + col;
      const Vec<T, VEC> gv = *reinterpret_cast<const Vec<T, VEC>*>(g + at);
      const Vec<T, VEC> xv = *reinterpret_cast<const Vec<T, VEC>*>(x + at);
      Vec<T, VEC> d;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const M gm = cast<M>(gv.v[k]), xm = cast<M>(xv.v[k]);
        d.v[k] = cast<T>(kTanh ? gelu_tanh_grad(gm, xm) : gelu_grad(gm, xm));
        acc[k] += cast<M>(d.v[k]);
      }
      *reinterpret_cast<Vec<T, VEC>*>(dx + at) = d;
    }
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) lanes[threadIdx.y][threadIdx.x * VEC + k] = acc[k];
  __syncthreads();
  // The band's partial row: the lanes in order, a thread a column.
  for (int j = int(threadIdx.y * kLanesX + threadIdx.x); j < kLanesX * VEC; j += kLanesX * kLanesY) {
    const int64_t c = int64_t(blockIdx.x) * kLanesX * VEC + j;
    if (c >= n) continue;
    M s = M(0);
#pragma unroll
    for (int l = 0; l < kLanesY; ++l) s += lanes[l][j];
    part[int64_t(blockIdx.y) * n + c] = s;
  }
}

}  // namespace

bool gelu_backward_bias(const Tensor& grad_input, const Tensor& bias_grad, const Tensor& grad, const Tensor& input,
                        bool tanh_form) {
  const char* op = "gelu_backward";
  const int64_t m = input.size(0), n = input.size(1);
  bool taken = false;
  WICK_DISPATCH_FLOATING(input.dtype(), op, [&]<class T>() {
    using M = opmath_t<T>;
    constexpr int VEC = int(16 / sizeof(T));
    auto aligned = [](const Tensor& t) { return uintptr_t(t.data_ptr()) % 16 == 0; };
    if (m == 0 || n == 0 || n % VEC != 0 || !aligned(grad_input) || !aligned(grad) || !aligned(input)) return;
    const int device = input.device().index();
    CudaDeviceScope scope(device);
    cudaStream_t stream = current_cuda_stream(device);
    // Bands of rows for four blocks an SM in all (one wave at 64 registers a thread); each band's rows a multiple of the
    // row lanes.
    const int64_t strips = (n + int64_t(kLanesX) * VEC - 1) / (int64_t(kLanesX) * VEC);
    const int64_t want = std::max<int64_t>(1, int64_t(sm_count(device)) * 4 / strips);
    int64_t band = (m + want - 1) / want;
    band = std::max<int64_t>(kLanesY, (band + kLanesY - 1) / kLanesY * kLanesY);
    const int64_t bands = (m + band - 1) / band;
    Tensor part = empty({bands, n}, input.options().dtype(std::is_same_v<M, double> ? kFloat64 : kFloat32));
    const dim3 grid{unsigned(strips), unsigned(bands)}, block{kLanesX, kLanesY};
    auto* dx = static_cast<T*>(grad_input.data_ptr());
    auto* p = static_cast<M*>(part.data_ptr());
    const auto* g = static_cast<const T*>(grad.data_ptr());
    const auto* x = static_cast<const T*>(input.data_ptr());
    if (tanh_form) gelu_bias_backward_kernel<T, true><<<grid, block, 0, stream>>>(dx, p, g, x, m, n, band);
    else gelu_bias_backward_kernel<T, false><<<grid, block, 0, stream>>>(dx, p, g, x, m, n, band);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
    sum_parts<M, T><<<grid_blocks((n + kSumCols - 1) / kSumCols, device), kBlock, 0, stream>>>(
        nullptr, p, nullptr, static_cast<T*>(bias_grad.data_ptr()), bands, n);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
    taken = true;
  });
  return taken;
}

}  // namespace wick::detail::gpu
