/* gather and index_select on CUDA: one kernel over a TensorIter (out, src, index) whose src
 * operand core restrided with stride 0 along the indexed dim, so that
 * out[i] = *(src[i] + index[i] * dim_stride).
 *
 * Indices are checked first by a scan kernel (ternary.cuh's find_any), and the host waits for
 * its answer, so an out-of-range index raises IndexError before anything is written, as on the
 * CPU. That costs a synchronization per call; PyTorch instead asserts inside the kernel, which
 * poisons the CUDA context. Elements move as raw bits: one instance per element size, not per
 * dtype.
 */
#include "cuda/kernels/op_kernels.h"
#include "cuda/kernels/ternary.cuh"

namespace wick::detail::gpu {

namespace {

template <class I>
struct OutOfRange {
  int64_t size;
  __device__ bool operator()(char* const* ptrs, const int64_t (&off)[3], int64_t& value) const {
    value = int64_t(*reinterpret_cast<const I*>(ptrs[2] + off[2]));
    return value < 0 || value >= size;
  }
};

template <bool WIDE, class B, class I>
__global__ void __launch_bounds__(kBlock) gather_kernel(IterArgs<3> args, int64_t dim_stride) {
  const int64_t step = int64_t(gridDim.x) * kBlock;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < args.numel; i += step) {
    int64_t off[3];
    args.template offsets<WIDE>(i, off);
    const int64_t v = int64_t(*reinterpret_cast<const I*>(args.ptrs[2] + off[2]));
    *reinterpret_cast<B*>(args.ptrs[0] + off[0]) = *reinterpret_cast<const B*>(args.ptrs[1] + off[1] + v * dim_stride);
  }
}

template <class B, class I>
void launch_gather(const IterArgs<3>& args, int device, int64_t dim_stride, const char* op) {
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  if (needs_wide_index(args.numel))
    gather_kernel<true, B, I><<<grid_size(args.numel, device), kBlock, 0, stream>>>(args, dim_stride);
  else
    gather_kernel<false, B, I><<<grid_size(args.numel, device), kBlock, 0, stream>>>(args, dim_stride);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

template <class I>
void gather_typed(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op) {
  const IterArgs<3> args = iter_args<3>(it, op);
  const int device = it.device().index();
  const auto bad = find_any(args, device, op, OutOfRange<I>{size});
  WICK_CHECK(!bad, IndexError, op, "index ", bad.value_or(0), " is out of bounds for dimension with size ", size);
  switch (it.output().element_size()) {
    case 1: return launch_gather<uint8_t, I>(args, device, dim_stride, op);
    case 2: return launch_gather<uint16_t, I>(args, device, dim_stride, op);
    case 4: return launch_gather<uint32_t, I>(args, device, dim_stride, op);
    default: return launch_gather<uint64_t, I>(args, device, dim_stride, op);
  }
}

}  // namespace

void gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op) {
  if (it.numel() == 0) return;
  if (it.input(1).dtype() == kInt32) gather_typed<int32_t>(it, dim_stride, size, op);
  else gather_typed<int64_t>(it, dim_stride, size, op);
}

}  // namespace wick::detail::gpu
