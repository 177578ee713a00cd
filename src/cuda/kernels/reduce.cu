/* Reductions on CUDA, the one reduce family: sum, mean, max, min, argmax, argmin, var, std and
 * norm over the middle dim of a contiguous [outer, n, inner] (core's plan, src/core/dim_plan.h:
 * a view of the input whenever its layout allows, so a sum over a leading dim reads columns in
 * place rather than a permuted copy). Every op is a policy (a State, add, merge, emit) run by
 * the same three kernels:
 *
 * - row_kernel (inner == 1, each reduced line contiguous): a group of threads (a warp for
 *   short rows, the whole 256-thread block for long ones) takes one (row, split) task, loads
 *   16 bytes per thread per step (four steps in flight for sums), then merges its states by warp
 *   shuffles and shared memory. Long rows with few of them (a full sum of 64M elements) are cut
 *   into splits so that every SM has work.
 * - column_kernel (inner > 1): one thread per output column walks n with stride inner, so a
 *   warp reads consecutive addresses; few columns over long n are cut into splits too.
 * - finalize_kernel: one warp per column merges the splits' partial states, in any order.
 *
 * The merge of every policy is order-independent up to rounding (argmax keeps the lowest index
 * among equals explicitly), so the split and tree orders don't change results beyond that.
 * Accumulation as the CPU's: sums in float for 16-bit floats and float32, double for float64,
 * int64 for integers and bool; var (Welford's update, Chan's merge) and norm in float for
 * 16-bit floats, double for float32 and float64. CUB's segmented reduce was the alternative:
 * it has no [outer, n, inner] column form and one launch per policy costs the same.
 */

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"
#include "wick/ops.h"

namespace wick::detail::gpu {

namespace {

template <class T> struct SumAccOf { using type = int64_t; };
template <> struct SumAccOf<Half> { using type = float; };
template <> struct SumAccOf<BFloat16> { using type = float; };
template <> struct SumAccOf<float> { using type = float; };
template <> struct SumAccOf<double> { using type = double; };

template <class T> struct WideAccOf { using type = double; };
template <> struct WideAccOf<Half> { using type = float; };
template <> struct WideAccOf<BFloat16> { using type = float; };

template <class M>
__device__ __forceinline__ bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>) return v != v;
  else return false;
}

// ---- policies

template <class T>
struct SumPolicy {
  using In = T;
  using A = typename SumAccOf<T>::type;
  using State = A;
  static constexpr int kUnroll = 4;  // 16-byte loads in flight per thread: the 64M-sum path
  T* out;
  bool mean;
  int64_t n;
  __device__ State init() const { return A(0); }
  __device__ void add(State& s, T x, int64_t) const { s += cast<A>(x); }
  __device__ void merge(State& a, const State& b) const { a += b; }
  __device__ void emit(int64_t col, State s) const {
    if (mean) {
      if constexpr (std::is_floating_point_v<A>) s = s / A(n);  // n == 0: nan
      else s = n ? s / n : 0;
    }
    out[col] = cast<T>(s);
  }
};

template <class T>
struct SelectPolicy {
  using In = T;
  static constexpr int kUnroll = 1;
  using M = opmath_t<T>;
  struct State {
    M v;
    int64_t i;  // -1: empty
  };
  T* values;           // may be null
  int64_t* indices;    // may be null
  bool is_max;
  __device__ State init() const { return {M(0), -1}; }
  // b replaces a: NaN beats numbers, then the larger (smaller) value, then the lower index.
  __device__ bool wins(const State& b, const State& a) const {
    const bool bn = is_nan(b.v), an = is_nan(a.v);
    if (bn != an) return bn;
    if (!bn && b.v != a.v) return is_max ? b.v > a.v : b.v < a.v;
    return b.i < a.i;
  }
  __device__ void merge(State& a, const State& b) const {
    if (b.i >= 0 && (a.i < 0 || wins(b, a))) a = b;
  }
  __device__ void add(State& s, T x, int64_t r) const { merge(s, State{cast<M>(x), r}); }
  __device__ void emit(int64_t col, const State& s) const {
    if (values) values[col] = cast<T>(s.v);
    if (indices) indices[col] = s.i;
  }
};

template <class T>
struct VarPolicy {
  using In = T;
  static constexpr int kUnroll = 1;
  using A = typename WideAccOf<T>::type;
  struct State {
    A mean, m2, count;
  };
  T* out;
  A correction;
  bool take_sqrt;
  __device__ State init() const { return {A(0), A(0), A(0)}; }
  __device__ void add(State& s, T v, int64_t) const {
    const A x = cast<A>(v);
    s.count += A(1);
    const A d = x - s.mean;
    s.mean += d / s.count;
    s.m2 += d * (x - s.mean);
  }
  __device__ void merge(State& a, const State& b) const {
    if (b.count == A(0)) return;
    if (a.count == A(0)) {
      a = b;
      return;
    }
    const A n = a.count + b.count, d = b.mean - a.mean;
    a.mean += d * (b.count / n);
    a.m2 += b.m2 + d * d * (a.count * b.count / n);
    a.count = n;
  }
  __device__ void emit(int64_t col, const State& s) const {
    const A denom = s.count - correction > A(0) ? s.count - correction : A(0);  // 0: inf or nan
    // An empty line: m2 is 0 and the mean undefined, nan either way (0 / 0).
    const A v = s.count == A(0) ? A(NAN) : s.m2 / denom;
    out[col] = cast<T>(take_sqrt ? m_sqrt(v) : v);
  }
};

enum class NormKind : uint8_t { Two, One, Zero, Inf, NegInf, P };

template <class T>
struct NormPolicy {
  using In = T;
  static constexpr int kUnroll = 1;
  using A = typename WideAccOf<T>::type;
  using State = A;
  T* out;
  NormKind kind;
  A p;
  __device__ State init() const { return kind == NormKind::NegInf ? A(INFINITY) : A(0); }
  __device__ void add(State& s, T v, int64_t) const {
    const A x = cast<A>(v), ax = x < A(0) ? -x : x;
    switch (kind) {
      case NormKind::Two: s += x * x; break;
      case NormKind::One: s += ax; break;
      case NormKind::Zero: s += A(x != A(0)); break;
      case NormKind::P: s += m_pow(ax, p); break;
      default: merge(s, ax); break;
    }
  }
  __device__ void merge(State& a, const State& b) const {
    if (kind == NormKind::Inf) a = is_nan(a) || a > b ? a : b;
    else if (kind == NormKind::NegInf) a = is_nan(a) || a < b ? a : b;
    else a += b;
  }
  __device__ void emit(int64_t col, State s) const {
    if (kind == NormKind::Two) s = m_sqrt(s);
    else if (kind == NormKind::P) s = m_pow(s, A(1) / p);
    out[col] = cast<T>(s);
  }
};

// ---- merging states across threads

// A policy's merge, as block_reduce.cuh's reductions take it.
template <class P>
struct PolicyMerge {
  const P& pol;
  template <class S>
  __device__ __forceinline__ void operator()(S& a, const S& b) const {
    pol.merge(a, b);
  }
};

// ---- kernels

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

struct RowTask {
  int64_t rows, n, splits, chunk;  // chunk: elements of a split, a multiple of 16
  int group;                       // threads per task: 32 or kBlock
};

template <class P>
__global__ void __launch_bounds__(kBlock)
    row_kernel(P pol, const typename P::In* in, RowTask t, typename P::State* partial) {
  using T = typename P::In;
  using S = typename P::State;
  constexpr int VEC = int(16 / sizeof(T)) > 0 ? int(16 / sizeof(T)) : 1;
  const int g = t.group, lane = int(threadIdx.x) % g;
  const int64_t groups_per_block = kBlock / g;
  const int64_t tasks = t.rows * t.splits;
  for (int64_t task = int64_t(blockIdx.x) * groups_per_block + threadIdx.x / g; task < tasks;
       task += int64_t(gridDim.x) * groups_per_block) {
    const int64_t row = task / t.splits, split = task % t.splits;
    const int64_t r0 = split * t.chunk, r1 = imin(t.n, r0 + t.chunk);
    const T* p = in + row * t.n;
    S s = pol.init();
    // Unaligned head, then 16-byte vectors (kUnroll in flight), then the tail.
    const int64_t mis = int64_t((reinterpret_cast<uintptr_t>(p + r0) / sizeof(T)) % VEC);
    const int64_t a0 = imin(r1, r0 + (mis ? VEC - mis : 0));
    const int64_t nv = r0 < r1 ? (r1 - a0) / VEC : 0;
    const int64_t a1 = a0 + nv * VEC;
    for (int64_t r = r0 + lane; r < a0; r += g) pol.add(s, p[r], r);
    const Vec<T, VEC>* pv = reinterpret_cast<const Vec<T, VEC>*>(p + a0);
    constexpr int U = P::kUnroll;
    int64_t v = lane;
    for (; v + (U - 1) * g < nv; v += U * g) {
      Vec<T, VEC> x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = pv[v + u * g];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < VEC; ++k) pol.add(s, x[u].v[k], a0 + (v + u * g) * VEC + k);
    }
    for (; v < nv; v += g) {
      const Vec<T, VEC> x = pv[v];
#pragma unroll
      for (int k = 0; k < VEC; ++k) pol.add(s, x.v[k], a0 + v * VEC + k);
    }
    for (int64_t r = a1 + lane; r < r1; r += g) pol.add(s, p[r], r);
    s = g == 32 ? warp_reduce(s, PolicyMerge<P>{pol}) : block_reduce(s, PolicyMerge<P>{pol}, pol.init());
    if (lane == 0) {
      if (t.splits == 1) pol.emit(row, s);
      else partial[task] = s;
    }
  }
}

struct ColumnTask {
  int64_t outer, n, inner, splits, chunk;
};

template <class P>
__global__ void __launch_bounds__(kBlock)
    column_kernel(P pol, const typename P::In* in, ColumnTask t, typename P::State* partial) {
  const int64_t cols = t.outer * t.inner, total = cols * t.splits;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < total; i += int64_t(gridDim.x) * kBlock) {
    const int64_t j = i % t.inner, rest = i / t.inner, o = rest % t.outer, split = rest / t.outer;
    const int64_t col = o * t.inner + j;
    const int64_t r0 = split * t.chunk, r1 = imin(t.n, r0 + t.chunk);
    const typename P::In* p = in + o * t.n * t.inner + j;
    typename P::State s = pol.init();
    for (int64_t r = r0; r < r1; ++r) pol.add(s, p[r * t.inner], r);
    if (t.splits == 1) pol.emit(col, s);
    else partial[col * t.splits + split] = s;
  }
}

// group threads (a warp, or the block when there are many splits) merge one column's splits.
template <class P>
__global__ void __launch_bounds__(kBlock) finalize_kernel(P pol, const typename P::State* partial, int64_t cols,
                                                          int64_t splits, int group) {
  const int lane = int(threadIdx.x) % group;
  const int64_t groups_per_block = kBlock / group;
  for (int64_t col = int64_t(blockIdx.x) * groups_per_block + threadIdx.x / group; col < cols;
       col += int64_t(gridDim.x) * groups_per_block) {
    typename P::State s = pol.init();
    for (int64_t k = lane; k < splits; k += group) pol.merge(s, partial[col * splits + k]);
    s = group == 32 ? warp_reduce(s, PolicyMerge<P>{pol}) : block_reduce(s, PolicyMerge<P>{pol}, pol.init());
    if (lane == 0) pol.emit(col, s);
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks of kernel that are resident on the whole device at once (one full wave).
template <class K>
int64_t wave_blocks(K kernel, int device) {
  static int per_sm = 0;  // the same for every device of a build's single architecture
  if (!per_sm) {
    int n = 0;
    WICK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kBlock, 0), "sum");
    per_sm = std::max(n, 1);
  }
  return int64_t(per_sm) * sm_count(device);
}

// Runs pol over contiguous in [outer, n, inner] (outer * inner output columns).
template <class P>
void run(const P& pol, const Tensor& in, int64_t outer, int64_t n, int64_t inner, const char* op) {
  using S = typename P::State;
  const int64_t cols = outer * inner;
  if (cols == 0) return;
  const int device = in.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const auto* src = static_cast<const typename P::In*>(in.data_ptr());
  int64_t splits = 1;
  Tensor scratch;  // freed after the launches: the allocator orders its reuse on this stream
  S* partial = nullptr;
  auto make_partials = [&] {
    scratch = empty({int64_t(cols * splits * sizeof(S))}, TensorOptions(kUInt8).device(in.device()));
    partial = static_cast<S*>(scratch.data_ptr());
  };
  if (inner == 1) {
    const int64_t wave = wave_blocks(row_kernel<P>, device);
    RowTask t{outer, n, 1, n, 32};
    if (n > 4096) {  // a block per task; few long rows are split to fill exactly one wave
      t.group = kBlock;
      splits = std::clamp<int64_t>(wave / outer, 1, ceil_div(n, 8192));
    }
    t.splits = splits;
    t.chunk = ceil_div(ceil_div(n, splits), 16) * 16;
    if (splits > 1) make_partials();
    const int64_t blocks = std::min(ceil_div(outer * splits, kBlock / t.group), wave * 8);
    row_kernel<P><<<int(blocks), kBlock, 0, stream>>>(pol, src, t, partial);
  } else {
    const int64_t wave = wave_blocks(column_kernel<P>, device);
    splits = std::clamp<int64_t>(wave * kBlock / cols, 1, std::max<int64_t>(1, ceil_div(n, 32)));
    ColumnTask t{outer, n, inner, splits, ceil_div(n, splits)};
    if (splits > 1) make_partials();
    column_kernel<P><<<int(std::min(ceil_div(cols * splits, kBlock), wave * 8)), kBlock, 0, stream>>>(pol, src, t,
                                                                                                    partial);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  if (splits > 1) {
    const int group = splits >= 256 ? kBlock : 32;
    const int64_t blocks = std::min<int64_t>(ceil_div(cols, kBlock / group), sm_count(device) * 32);
    finalize_kernel<P><<<int(blocks), kBlock, 0, stream>>>(pol, partial, cols, splits, group);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
  }
}

}  // namespace

void reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg) {
  const int64_t outer = in.size(0), n = in.size(1), inner = in.size(2);
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: {
      const char* name = op_name(op);
      auto body = [&]<class T>() {
        run(SumPolicy<T>{static_cast<T*>(values.data_ptr()), op == ReduceOp::Mean, n}, in, outer, n, inner,
            name);
      };
      WICK_DISPATCH_ALL(in.dtype(), name, body);
      return;
    }
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      const char* name = op_name(op);
      const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
      auto body = [&]<class T>() {
        SelectPolicy<T> pol{values.defined() ? static_cast<T*>(values.data_ptr()) : nullptr,
                            indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr, is_max};
        run(pol, in, outer, n, inner, name);
      };
      WICK_DISPATCH_ALL(in.dtype(), name, body);
      return;
    }
    case ReduceOp::Var:
    case ReduceOp::Std: {
      const char* name = op_name(op);
      auto body = [&]<class T>() {
        using A = typename VarPolicy<T>::A;
        run(VarPolicy<T>{static_cast<T*>(values.data_ptr()), A(arg), op == ReduceOp::Std}, in, outer, n,
            inner, name);
      };
      WICK_DISPATCH_FLOATING(in.dtype(), name, body);
      return;
    }
    case ReduceOp::Norm: {
      const NormKind kind = arg == 2                ? NormKind::Two
                            : arg == 1              ? NormKind::One
                            : arg == 0              ? NormKind::Zero
                            : arg == double(INFINITY)  ? NormKind::Inf
                            : arg == -double(INFINITY) ? NormKind::NegInf
                                                       : NormKind::P;
      auto body = [&]<class T>() {
        using A = typename NormPolicy<T>::A;
        run(NormPolicy<T>{static_cast<T*>(values.data_ptr()), kind, A(arg)}, in, outer, n, inner, "norm");
      };
      WICK_DISPATCH_FLOATING(in.dtype(), "norm", body);
      return;
    }
  }
}

}  // namespace wick::detail::gpu
