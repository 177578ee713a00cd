/* The sort, scatter and multinomial entries on CUDA (core/kernel_table.h).
 *
 * sort: each element becomes an unsigned radix key whose order is the comparison order the
 * CPU's sort uses (sign bit flipped for integers; for floats, positive bit patterns marked and
 * negative ones inverted, every NaN made the one quiet NaN above +inf, -0.0 made +0.0; all bits
 * inverted for a descending sort), paired with its index in the row; CUB's segmented radix sort
 * orders the pairs of every row. A radix sort is stable, so equal keys keep index order: the
 * CPU's tie rule, and the same indices on both devices. topk sorts the whole row and keeps the
 * first k (one sort, not a selection: O(n) per row either way for a radix sort). Rows are CUB's
 * int-sized segments: more than 2^31 - 1 elements in all throws NotImplementedError.
 *
 * scatter: one thread per element of the index's shape, the multi-index from 64-bit division
 * (the shapes are index-sized, rarely large); indices are checked first by a scan whose answer
 * the host waits for (as gather's), so a bad index throws before anything is written. The add
 * forms use hardware atomicAdd for float, double, int32 and int64; every other reduction (and
 * add of the other dtypes) is a compare-and-swap loop, on the element's own bits for 4- and
 * 8-byte dtypes and on the enclosing 32-bit word for the 1- and 2-byte ones (16-bit floats
 * reduce in float), which every architecture has. A float sum or product over repeated indices
 * comes out in whichever order the threads ran. A plain write with repeated indices keeps
 * whichever thread wrote last.
 *
 * multinomial with replacement: one thread per row adds the weights in double in index order
 * (the CPU's order, so the running sums are the same bits), then one thread per sample binary
 * searches its row; identical arithmetic gives identical samples on both devices. The per-row
 * sum is serial: n steps per row, all rows at once.
 */
#include <cub/device/device_segmented_radix_sort.cuh>

#include "core/op_math.h"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

// ---- scatter

struct Geometry {
  int nd = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t out[kMaxDims] = {}, src[kMaxDims] = {}, index[kMaxDims] = {};
};

__device__ __forceinline__ void element_offsets(const Geometry& g, int64_t i, int64_t& po, int64_t& ps,
                                                int64_t& pi) {
  po = ps = pi = 0;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t c = i % g.sizes[d];
    i /= g.sizes[d];
    po += c * g.out[d];
    ps += c * g.src[d];
    pi += c * g.index[d];
  }
}

template <class I>
__global__ void __launch_bounds__(kBlock) check_kernel(const I* ix, Geometry g, int64_t n, int64_t size,
                                                        unsigned long long* found) {
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += int64_t(gridDim.x) * kBlock) {
    int64_t po, ps, pi;
    element_offsets(g, i, po, ps, pi);
    const int64_t v = int64_t(ix[pi]);
    if (v < 0 || v >= size) {
      if (found == nullptr) {  // inside a graph capture (check_indices)
        printf("wick: index %lld is out of bounds for dimension with size %lld in a kernel captured in a CUDA "
               "graph\n", static_cast<long long>(v), static_cast<long long>(size));
        __trap();
      }
      if (atomicCAS(found, 0ull, 1ull) == 0ull) found[1] = (unsigned long long)v;
    }
  }
}

// v reduced into cur by sop (16-bit floats in float; bool: add and max or, prod and min and;
// NaN propagates through max and min).
template <class T>
__device__ __forceinline__ T combine(ScatterOp sop, T cur, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return (sop == ScatterOp::Add || sop == ScatterOp::Max) ? (cur || v) : (cur && v);
  } else {
    using M = std::conditional_t<is_half_v<T>, float, T>;
    M a, b;
    if constexpr (is_half_v<T>) {
      a = half_to_float(cur);
      b = half_to_float(v);
    } else {
      a = cur;
      b = v;
    }
    bool a_nan = false, b_nan = false;
    if constexpr (std::is_floating_point_v<M>) {
      a_nan = a != a;
      b_nan = b != b;
    }
    M r = b;
    switch (sop) {
      case ScatterOp::Add: r = M(a + b); break;
      case ScatterOp::Prod: r = M(a * b); break;
      case ScatterOp::Max: r = a_nan ? a : (b_nan || b > a) ? b : a; break;
      case ScatterOp::Min: r = a_nan ? a : (b_nan || b < a) ? b : a; break;
      default: break;
    }
    if constexpr (is_half_v<T>) return float_to_half<T>(r);
    else return T(r);
  }
}

// *p = combine(sop, *p, v) for the 1- and 2-byte dtypes: a compare-and-swap on the aligned
// 32-bit word holding p.
template <class T>
__device__ __forceinline__ void atomic_reduce_narrow(T* p, T v, ScatterOp sop) {
  static_assert(sizeof(T) <= 2);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
  const unsigned int shift = unsigned(addr & 3) * 8;
  const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    T cur;
    if constexpr (sizeof(T) == 1) {
      const uint8_t b = uint8_t((assumed & mask) >> shift);
      memcpy(&cur, &b, 1);
    } else {
      const uint16_t b = uint16_t((assumed & mask) >> shift);
      memcpy(&cur, &b, 2);
    }
    const T r = combine(sop, cur, v);
    unsigned int bits;
    if constexpr (sizeof(T) == 1) {
      uint8_t b;
      memcpy(&b, &r, 1);
      bits = b;
    } else {
      uint16_t b;
      memcpy(&b, &r, 2);
      bits = b;
    }
    old = atomicCAS(word, assumed, (assumed & ~mask) | (bits << shift));
  } while (assumed != old);
}

// *p = combine(sop, *p, v) for the 4- and 8-byte dtypes: a compare-and-swap loop on p's bits.
template <class T>
__device__ __forceinline__ void atomic_reduce_wide(T* p, T v, ScatterOp sop) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  using U = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
  U* word = reinterpret_cast<U*>(p);
  U old = *word, assumed;
  do {
    assumed = old;
    T cur;
    memcpy(&cur, &assumed, sizeof(T));
    const T r = combine(sop, cur, v);
    U bits;
    memcpy(&bits, &r, sizeof(T));
    if (bits == assumed) return;
    old = atomicCAS(word, assumed, bits);
  } while (assumed != old);
}

template <class T>
__device__ __forceinline__ void atomic_reduce(T* p, T v, ScatterOp sop) {
  if (sop == ScatterOp::Add) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
      atomicAdd(p, v);
      return;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
      return;
    }
  }
  if constexpr (sizeof(T) <= 2) atomic_reduce_narrow(p, v, sop);
  else atomic_reduce_wide(p, v, sop);
}

template <class T, class I, bool Reduce>
__global__ void __launch_bounds__(kBlock) scatter_kernel(T* out, const T* src, const I* ix, Geometry g, int64_t n,
                                                          int64_t dim_stride, ScatterOp sop) {
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += int64_t(gridDim.x) * kBlock) {
    int64_t po, ps, pi;
    element_offsets(g, i, po, ps, pi);
    T* dst = out + po + int64_t(ix[pi]) * dim_stride;
    if constexpr (Reduce) atomic_reduce(dst, src[ps], sop);
    else *dst = src[ps];
  }
}

template <class I>
void check_indices(const I* ix, const Geometry& g, int64_t n, int64_t size, int device, const char* op) {
  cudaStream_t stream = current_cuda_stream(device);
  if (stream_is_capturing(device, stream)) {  // the host cannot wait: the kernel stops on a bad index
    check_kernel<I><<<grid_blocks(blocks_for(n), device), kBlock, 0, stream>>>(ix, g, n, size, nullptr);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
    return;
  }
  Tensor flag = empty({2}, TensorOptions(kInt64).device(Device(kCUDA, device)));
  auto* found = static_cast<unsigned long long*>(flag.data_ptr());
  WICK_CUDA_CHECK(cudaMemsetAsync(found, 0, 16, stream), op);
  check_kernel<I><<<grid_blocks(blocks_for(n), device), kBlock, 0, stream>>>(ix, g, n, size, found);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  unsigned long long host[2] = {};
  WICK_CUDA_CHECK(cudaMemcpyAsync(host, found, 16, cudaMemcpyDeviceToHost, stream), op);
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  WICK_CHECK(!host[0], IndexError, op, "index ", int64_t(host[1]), " is out of bounds for dimension with size ",
             size);
}

// Writes move raw bits: one instance per element size.
template <class T>
struct Bits {
  using type = std::conditional_t<sizeof(T) == 1, uint8_t,
                                  std::conditional_t<sizeof(T) == 2, uint16_t,
                                                     std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
};

template <class I>
void scatter_indexed(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size,
                     ScatterOp sop, const char* op) {
  const int device = out.device().index();
  CudaDeviceScope scope(device);
  const int64_t n = index.numel();
  WICK_CHECK(index.dim() <= kMaxDims, NotImplementedError, op, "more than ", kMaxDims, " dims on cuda");
  Geometry g;
  g.nd = int(index.dim());
  for (int d = 0; d < g.nd; ++d) {
    g.sizes[d] = index.size(d);
    g.out[d] = out.stride(d);
    g.src[d] = src.stride(d);
    g.index[d] = index.stride(d);
  }
  const I* ix = static_cast<const I*>(index.data_ptr());
  check_indices<I>(ix, g, n, size, device, op);
  cudaStream_t stream = current_cuda_stream(device);
  const int grid = grid_blocks(blocks_for(n), device, 4);
  auto launch = [&]<class T, bool Reduce>() {
    scatter_kernel<T, I, Reduce><<<grid, kBlock, 0, stream>>>(static_cast<T*>(out.data_ptr()),
                                                              static_cast<const T*>(src.data_ptr()), ix, g, n,
                                                              dim_stride, sop);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
  };
  if (sop != ScatterOp::Write) {
    WICK_DISPATCH_ALL(out.dtype(), op, [&]<class T>() { launch.template operator()<T, true>(); });
  } else {
    WICK_DISPATCH_ALL(out.dtype(), op, [&]<class T>() { launch.template operator()<typename Bits<T>::type, false>(); });
  }
}

// ---- sort

template <class T>
struct RadixKey {
  using type = std::conditional_t<sizeof(T) == 1, uint8_t,
                                  std::conditional_t<sizeof(T) == 2, uint16_t,
                                                     std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
};

// The unsigned key of v whose unsigned order is the CPU comparator's order (ascending).
template <class T, class K>
__device__ __forceinline__ K radix_key(T v) {
  constexpr K sign = K(K(1) << (sizeof(K) * 8 - 1));
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) {
    return K(v);
  } else if constexpr (std::is_integral_v<T>) {
    K b;
    memcpy(&b, &v, sizeof(K));
    return K(b ^ sign);
  } else {
    K b;
    memcpy(&b, &v, sizeof(K));
    // The exponent-all-ones mask and one quiet NaN of each format.
    K exp_mask, quiet;
    if constexpr (std::is_same_v<T, Half>) {
      exp_mask = K(0x7c00);
      quiet = K(0x7e00);
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      exp_mask = K(0x7f80);
      quiet = K(0x7fc0);
    } else if constexpr (std::is_same_v<T, float>) {
      exp_mask = K(0x7f800000u);
      quiet = K(0x7fc00000u);
    } else {
      exp_mask = K(0x7ff0000000000000ull);
      quiet = K(0x7ff8000000000000ull);
    }
    const K mag = K(b & K(~sign));
    if (mag > exp_mask) b = quiet;  // NaN
    else if (b == sign) b = K(0);   // -0.0
    return (b & sign) ? K(~b) : K(b | sign);
  }
}

template <class T, class K>
__global__ void __launch_bounds__(kBlock) keys_kernel(const T* x, K* keys, int64_t* values, int64_t total, int64_t n,
                                                       bool descending) {
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < total; i += int64_t(gridDim.x) * kBlock) {
    const K k = radix_key<T, K>(x[i]);
    keys[i] = descending ? K(~k) : k;
    values[i] = i % n;
  }
}

__global__ void __launch_bounds__(kBlock) offsets_kernel(int* offsets, int64_t rows, int64_t n) {
  for (int64_t r = int64_t(blockIdx.x) * kBlock + threadIdx.x; r <= rows; r += int64_t(gridDim.x) * kBlock)
    offsets[r] = int(r * n);
}

__global__ void __launch_bounds__(kBlock) first_k_kernel(const int64_t* sorted, int64_t* out, int64_t rows, int64_t n,
                                                          int64_t k) {
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < rows * k; i += int64_t(gridDim.x) * kBlock)
    out[i] = sorted[(i / k) * n + i % k];
}

template <class T>
void sort_typed(const Tensor& indices, const Tensor& in, int64_t k, bool descending) {
  using K = typename RadixKey<T>::type;
  const char* op = "sort";
  const int device = in.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t rows = in.size(0), n = in.size(1), total = rows * n;
  WICK_CHECK(total < (int64_t(1) << 31), NotImplementedError, op, "sorting more than 2^31 - 1 elements at once on cuda");
  const TensorOptions bytes = TensorOptions(kUInt8).device(in.device());
  const TensorOptions longs = TensorOptions(kInt64).device(in.device());
  Tensor keys_in = empty({total * int64_t(sizeof(K))}, bytes), keys_out = empty({total * int64_t(sizeof(K))}, bytes);
  Tensor values_in = empty({total}, longs);
  Tensor values_out = k == n ? indices : empty({total}, longs);
  Tensor offsets = empty({rows + 1}, TensorOptions(kInt32).device(in.device()));
  K* kin = static_cast<K*>(keys_in.data_ptr());
  K* kout = static_cast<K*>(keys_out.data_ptr());
  int64_t* vin = static_cast<int64_t*>(values_in.data_ptr());
  int64_t* vout = static_cast<int64_t*>(values_out.data_ptr());
  int* off = static_cast<int*>(offsets.data_ptr());
  keys_kernel<T, K><<<grid_blocks(blocks_for(total), device, 4), kBlock, 0, stream>>>(
      static_cast<const T*>(in.data_ptr()), kin, vin, total, n, descending);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  offsets_kernel<<<grid_blocks(blocks_for(rows + 1), device), kBlock, 0, stream>>>(off, rows, n);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  size_t temp_bytes = 0;
  WICK_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, temp_bytes, kin, kout, vin, vout, int(total),
                                                           int(rows), off, off + 1, 0, int(sizeof(K) * 8), stream),
                  op);
  Tensor temp = empty({int64_t(temp_bytes) + 1}, bytes);
  WICK_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(temp.data_ptr(), temp_bytes, kin, kout, vin, vout,
                                                           int(total), int(rows), off, off + 1, 0,
                                                           int(sizeof(K) * 8), stream),
                  op);
  if (k != n) {
    first_k_kernel<<<grid_blocks(blocks_for(rows * k), device, 4), kBlock, 0, stream>>>(
        vout, static_cast<int64_t*>(indices.data_ptr()), rows, n, k);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
  }
}

// ---- multinomial

template <class T>
__global__ void __launch_bounds__(kBlock) cdf_kernel(const T* p, double* cdf, int64_t* last, int64_t rows, int64_t n) {
  for (int64_t r = int64_t(blockIdx.x) * kBlock + threadIdx.x; r < rows; r += int64_t(gridDim.x) * kBlock) {
    double acc = 0;
    int64_t nz = 0;
    for (int64_t c = 0; c < n; ++c) {
      const double w = double(opmath_t<T>(p[r * n + c]));
      acc = __dadd_rn(acc, w);
      cdf[r * n + c] = acc;
      if (w > 0) nz = c;
    }
    last[r] = nz;
  }
}

__global__ void __launch_bounds__(kBlock) search_kernel(const double* cdf, const int64_t* last, const double* u,
                                                         int64_t* out, int64_t rows, int64_t n, int64_t s) {
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < rows * s; i += int64_t(gridDim.x) * kBlock) {
    const int64_t r = i / s;
    const double* row = cdf + r * n;
    const double target = __dmul_rn(u[i], row[n - 1]);
    int64_t lo = 0, hi = n;  // the first c with row[c] > target
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (row[mid] > target) hi = mid;
      else lo = mid + 1;
    }
    out[i] = lo < n ? lo : last[r];
  }
}

}  // namespace

void scatter(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size,
             ScatterOp sop, const char* op) {
  if (index.numel() == 0) return;
  if (index.dtype() == kInt32) scatter_indexed<int32_t>(out, src, index, dim_stride, size, sop, op);
  else scatter_indexed<int64_t>(out, src, index, dim_stride, size, sop, op);
}

void sort(const Tensor& indices, const Tensor& in, int64_t k, bool descending) {
  if (indices.numel() == 0) return;
  WICK_DISPATCH_ALL(in.dtype(), "sort", [&]<class T>() { sort_typed<T>(indices, in, k, descending); });
}

void multinomial(const Tensor& out, const Tensor& probs, const Tensor& uniforms) {
  if (out.numel() == 0) return;
  const int device = out.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t rows = probs.size(0), n = probs.size(1), s = out.size(1);
  Tensor cdf = empty({rows, n}, TensorOptions(kFloat64).device(out.device()));
  Tensor last = empty({rows}, TensorOptions(kInt64).device(out.device()));
  WICK_DISPATCH_FLOATING(probs.dtype(), "multinomial", [&]<class T>() {
    cdf_kernel<T><<<grid_blocks(blocks_for(rows), device), kBlock, 0, stream>>>(
        static_cast<const T*>(probs.data_ptr()), static_cast<double*>(cdf.data_ptr()),
        static_cast<int64_t*>(last.data_ptr()), rows, n);
  });
  WICK_CUDA_AFTER_LAUNCH("multinomial", stream);
  search_kernel<<<grid_blocks(blocks_for(rows * s), device, 4), kBlock, 0, stream>>>(
      static_cast<const double*>(cdf.data_ptr()), static_cast<const int64_t*>(last.data_ptr()),
      static_cast<const double*>(uniforms.data_ptr()), static_cast<int64_t*>(out.data_ptr()), rows, n, s);
  WICK_CUDA_AFTER_LAUNCH("multinomial", stream);
}

}  // namespace wick::detail::gpu
