// The seam between core and the backends. Core checks, plans and allocates (DESIGN.md, "One
// path for every op"); a backend only runs kernels, through one table per device type. CPU
// (src/cpu) and CUDA (src/cuda) fill the same table; a CPU-only build links src/no_cuda,
// whose CUDA table throws "built without CUDA".
//
// Ops are grouped into families (unary, binary, reduce, ...), each a single entry taking an
// op code, so that a backend instantiates one generic kernel per family and dtype rather
// than one per op: that keeps CUDA compile time inside its budget.
#pragma once

#include <cstdint>

#include "core/tensor_iter.h"
#include "wick/tensor.h"

namespace wick::detail {

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div };
enum class ReduceOp : uint8_t { Sum, Mean };
enum class RandomOp : uint8_t { Uniform, Normal, RandInt };

struct GemmArgs {
  // c[b] = alpha * op(a[b]) @ op(b[b]) + beta * c[b], row-major, for b in [0, batch).
  // Each matrix is contiguous in its last dim (lda etc. are row strides in elements);
  // trans_a/trans_b say that a/b are stored transposed (column-major).
  Tensor a, b, c;
  int64_t batch, m, n, k;
  int64_t lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c;  // between batch items, in elements (0 = broadcast)
  bool trans_a, trans_b;
  double alpha = 1, beta = 0;
};

struct KernelTable {
  // out[...] = value, for any layout.
  void (*fill)(const Tensor& out, const Scalar& value);
  // it.output = cast(it.input(0)), elementwise; operands on this device, any dtypes.
  void (*copy)(const TensorIter& it);
  // it.output = a op b, or a op scalar when it has one input. Operands share it.dtype(),
  // except the output of comparison ops. alpha scales b for Add and Sub.
  void (*binary)(BinaryOp op, const TensorIter& it, const Scalar* scalar, const Scalar& alpha);
  // out[i] = reduce(in[i, :]) for contiguous in [outer, inner] and contiguous out [outer].
  void (*reduce)(ReduceOp op, const Tensor& out, const Tensor& in);
  void (*gemm)(const GemmArgs& args);
  // Fills contiguous out from the Philox-4x32-10 stream (seed, offset): element i of the draw
  // depends only on (seed, offset, i), on every device.
  void (*random)(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b);
};

const KernelTable& cpu_kernels();
const KernelTable& cuda_kernels();  // throws "built without CUDA" in a CPU-only build

inline const KernelTable& kernels(Device d) { return d.is_cpu() ? cpu_kernels() : cuda_kernels(); }

}  // namespace wick::detail
