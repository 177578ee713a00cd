/* uniform_, normal_ and randint on CUDA from the Philox-4x32-10 stream that the CPU uses
 * (src/core/philox.h): element i of a draw depends only on (seed, offset, i), so the same
 * seed gives the same tensor on either device, bit for bit.
 *
 * Work split: one thread per Philox block (4 floats, or 2 doubles / normals / integers), a
 * grid-stride loop over blocks. Each thread writes its elements as one vector store when the
 * output is aligned (16 bytes for float and double), else one by one. The per-block code is
 * the host/device code of philox.h, which rounds every double operation on its own, so the
 * numbers match the CPU's exactly; normals are compute-bound in double (Box-Muller with our
 * own log and sincos), which an H100 runs at its full fp64 rate.
 */
#include "core/philox.h"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

template <class T, int PER, class F>
__global__ void __launch_bounds__(kBlock) philox_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, F fill) {
  const int64_t blocks = (n + PER - 1) / PER;
  const bool aligned = reinterpret_cast<uintptr_t>(out) % sizeof(Vec<T, PER>) == 0;
  for (int64_t b = int64_t(blockIdx.x) * kBlock + threadIdx.x; b < blocks; b += int64_t(gridDim.x) * kBlock) {
    const philox::Block r = philox::draw_block(seed, offset, uint64_t(b));
    const int64_t first = b * PER;
    const int count = int(n - first < PER ? n - first : PER);
    Vec<T, PER> v;
    fill(r, v.v, count);
    if (aligned && count == PER) {
      reinterpret_cast<Vec<T, PER>*>(out)[b] = v;
    } else {
      for (int j = 0; j < count; ++j) out[first + j] = v.v[j];
    }
  }
}

template <class T, int PER, class F>
void launch(const Tensor& out, uint64_t seed, uint64_t offset, const F& fill, const char* op) {
  const int device = out.device().index();
  const int64_t n = out.numel();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t threads = (n + PER - 1) / PER;
  philox_kernel<T, PER><<<grid_blocks(blocks_for(threads), device), kBlock, 0, stream>>>(
      static_cast<T*>(out.data_ptr()), n, seed, offset, fill);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

template <class T>
struct UniformFill {
  double from, to;
  __device__ void operator()(const philox::Block& r, T* p, int count) const {
    philox::uniform_block(r, p, count, from, to);
  }
};

template <class T>
struct NormalFill {
  double mean, std;
  __device__ void operator()(const philox::Block& r, T* p, int count) const {
    philox::normal_block(r, p, count, mean, std);
  }
};

template <class T>
struct RandIntFill {
  int64_t low;
  uint64_t range;
  __device__ void operator()(const philox::Block& r, T* p, int count) const {
    philox::randint_block(r, p, count, low, range);
  }
};

}  // namespace

void random(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  if (out.numel() == 0) return;
  switch (op) {
    case RandomOp::Uniform: {
      auto body = [&]<class T>() {
        launch<T, philox::kUniformPerBlock<T>>(out, seed, offset, UniformFill<T>{a, b}, "uniform_");
      };
      WICK_DISPATCH_FLOATING(out.dtype(), "uniform_", body);
      return;
    }
    case RandomOp::Normal: {
      auto body = [&]<class T>() {
        launch<T, philox::kNormalPerBlock>(out, seed, offset, NormalFill<T>{a, b}, "normal_");
      };
      WICK_DISPATCH_FLOATING(out.dtype(), "normal_", body);
      return;
    }
    case RandomOp::RandInt: {
      // a = low, b = high, both exact integers (core checks |a|, |b| <= 2^53).
      const int64_t low = int64_t(a);
      const uint64_t range = uint64_t(int64_t(b)) - uint64_t(low);
      auto body = [&]<class T>() {
        launch<T, philox::kRandIntPerBlock>(out, seed, offset, RandIntFill<T>{low, range}, "randint");
      };
      WICK_DISPATCH_ALL(out.dtype(), "randint", body);
      return;
    }
  }
}

}  // namespace wick::detail::gpu
