/* Column sums of partial rows, the second step of the kernels that sum a [m, n] tensor's
 * columns as they go (norm.cu's weight and bias gradients, gelu_bias_backward.cu's bias
 * gradient): each block of the first kernel writes one partial row of sums over the rows it
 * visited, and sum_parts adds the partial rows in an order fixed by their count.
 */
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/elementwise.cuh"

namespace wick::detail::gpu {

// dweight[j], dbias[j] = the sums of the parts partial rows' column j. A block takes kSumCols
// columns; its threads split the partial rows into kSumSlices interleaved slices (slice s adds
// rows s, s + kSumSlices, ...), and one thread per column adds the slices' sums in slice order,
// so the order of every addition is fixed by parts alone and runs repeat bit for bit. One
// thread per column walking all the partial rows in turn left the kernel bound by the latency
// of its loads (n threads, hundreds of dependent steps each).
constexpr int kSumCols = 8, kSumSlices = kBlock / kSumCols;

template <class M, class W>
__global__ void __launch_bounds__(kBlock)
    sum_parts(const M* part_w, const M* part_b, W* dw, W* db, int64_t parts, int64_t n) {
  __shared__ M sw[kSumSlices][kSumCols], sb[kSumSlices][kSumCols];
  const int c = int(threadIdx.x) % kSumCols, s = int(threadIdx.x) / kSumCols;
  for (int64_t j0 = int64_t(blockIdx.x) * kSumCols; j0 < n; j0 += int64_t(gridDim.x) * kSumCols) {
    const int64_t j = j0 + c;
    M aw = 0, ab = 0;
    if (j < n) {
      for (int64_t p = s; p < parts; p += kSumSlices) {
        if (part_w) aw += part_w[p * n + j];
        if (part_b) ab += part_b[p * n + j];
      }
    }
    sw[s][c] = aw;
    sb[s][c] = ab;
    __syncthreads();
    if (s == 0 && j < n) {
      M tw = 0, tb = 0;
      for (int k = 0; k < kSumSlices; ++k) {
        tw += sw[k][c];
        tb += sb[k][c];
      }
      if (dw) dw[j] = cast<W>(tw);
      if (db) db[j] = cast<W>(tb);
    }
    __syncthreads();
  }
}

}  // namespace wick::detail::gpu
