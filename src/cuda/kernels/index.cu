/* gather and index_select on CUDA: the strided elementwise kernel (elementwise.cuh's
 * launch_strided) over a TensorIter (out, src, index) whose src operand core restrided with
 * stride 0 along the indexed dim, so that out[i] = *(src[i] + index[i] * dim_stride).
 *
 * Indices are checked first by a scan on the same kernel (find_any), and the host waits for
 * its answer, so an out-of-range index raises IndexError before anything is written, as on the
 * CPU. That costs a synchronization per call; PyTorch instead asserts inside the kernel, which
 * poisons the CUDA context. Elements move as raw bits: one instance per element size, not per
 * dtype.
 */
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

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

template <class B, class I>
struct GatherBody {
  int64_t dim_stride;
  __device__ __forceinline__ void operator()(char* const* ptrs, const int64_t (&off)[3]) const {
    const int64_t v = int64_t(*reinterpret_cast<const I*>(ptrs[2] + off[2]));
    *reinterpret_cast<B*>(ptrs[0] + off[0]) = *reinterpret_cast<const B*>(ptrs[1] + off[1] + v * dim_stride);
  }
};

template <class I>
void gather_typed(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op) {
  const Plan p = make_plan(it, op);
  const auto bad = find_any<3>(op, p, OutOfRange<I>{size});
  WICK_CHECK(!bad, IndexError, op, "index ", bad.value_or(0), " is out of bounds for dimension with size ", size);
  switch (it.output().element_size()) {
    case 1: return launch_strided<3>(op, p, GatherBody<uint8_t, I>{dim_stride});
    case 2: return launch_strided<3>(op, p, GatherBody<uint16_t, I>{dim_stride});
    case 4: return launch_strided<3>(op, p, GatherBody<uint32_t, I>{dim_stride});
    default: return launch_strided<3>(op, p, GatherBody<uint64_t, I>{dim_stride});
  }
}

}  // namespace

void gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op) {
  if (it.numel() == 0) return;
  if (it.input(1).dtype() == kInt32) gather_typed<int32_t>(it, dim_stride, size, op);
  else gather_typed<int64_t>(it, dim_stride, size, op);
}

}  // namespace wick::detail::gpu
