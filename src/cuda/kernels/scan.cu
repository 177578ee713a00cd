/* Cumulative sums and products on CUDA along the middle dim of contiguous [outer, n, inner]
 * tensors (KernelTable::scan), forward or reverse. Two kernels:
 *
 * - rows_kernel (inner == 1): a block per row walks it in tiles of kBlock elements; each tile
 *   is one CUB BlockScan, offset by the carry of the tiles before it.
 * - cols_kernel (inner > 1): a thread per column runs down it sequentially; adjacent threads
 *   read adjacent addresses.
 *
 * 16-bit floats accumulate in float, every other dtype in itself (integers wrap as PyTorch's).
 */
#include <cub/block/block_scan.cuh>

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

template <class M, bool Prod>
struct Combine {
  __device__ __forceinline__ M operator()(const M& a, const M& b) const {
    if constexpr (Prod) return static_cast<M>(a * b);
    else return static_cast<M>(a + b);
  }
};

template <class T, bool Prod>
__global__ void __launch_bounds__(kBlock) rows_kernel(const T* in, T* out, int64_t rows, int64_t n, bool reverse) {
  using M = opmath_t<T>;
  using BlockScan = cub::BlockScan<M, kBlock>;
  __shared__ typename BlockScan::TempStorage temp;
  const Combine<M, Prod> combine;
  const M identity = Prod ? M(1) : M(0);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * n;
    T* y = out + row * n;
    M carry = identity;
    for (int64_t base = 0; base < n; base += kBlock) {
      const int64_t s = base + threadIdx.x;
      const int64_t i = reverse ? n - 1 - s : s;
      const M v = s < n ? cast<M>(x[i]) : identity;
      M r, total;
      BlockScan(temp).InclusiveScan(v, r, combine, total);
      if (s < n) y[i] = cast<T>(combine(carry, r));
      carry = combine(carry, total);
      __syncthreads();  // temp is reused by the next tile
    }
  }
}

template <class T, bool Prod>
__global__ void __launch_bounds__(kBlock)
    cols_kernel(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  using M = opmath_t<T>;
  const Combine<M, Prod> combine;
  for (int64_t c = int64_t(blockIdx.x) * kBlock + threadIdx.x; c < outer * inner;
       c += int64_t(gridDim.x) * kBlock) {
    const int64_t o = c / inner, j = c - o * inner;
    const int64_t base = o * n * inner + j;
    M acc = Prod ? M(1) : M(0);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t k = base + (reverse ? n - 1 - s : s) * inner;
      acc = combine(acc, cast<M>(in[k]));
      out[k] = cast<T>(acc);
    }
  }
}

template <class T, bool Prod>
void scan_typed(const Tensor& out, const Tensor& in, bool reverse, const char* op) {
  const int64_t outer = in.size(0), n = in.size(1), inner = in.size(2);
  const int device = in.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  if (inner > 1) {
    cols_kernel<T, Prod><<<grid_blocks(blocks_for(outer * inner), device, 4), kBlock, 0, stream>>>(
        x, y, outer, n, inner, reverse);
  } else {
    rows_kernel<T, Prod><<<grid_blocks(outer, device, 4), kBlock, 0, stream>>>(x, y, outer, n, reverse);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

}  // namespace

void scan(ScanOp op, const Tensor& out, const Tensor& in, bool reverse) {
  if (in.numel() == 0) return;
  const char* name = op == ScanOp::Prod ? "cumprod" : "cumsum";
  WICK_DISPATCH_NUMERIC(in.dtype(), name, [&]<class T>() {
    if (op == ScanOp::Prod) scan_typed<T, true>(out, in, reverse, name);
    else scan_typed<T, false>(out, in, reverse, name);
  });
}

}  // namespace wick::detail::gpu
