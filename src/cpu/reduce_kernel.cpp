// Row reductions on the CPU: out[i] = reduce(in[i, :]) over a contiguous [outer, inner] input.
// Floating sums use blocked pairwise summation (error O(log n) rather than O(n)), in float
// for float16/bfloat16/float32 and double for float64; integer sums accumulate in int64.
#include <omp.h>

#include <cmath>
#include <vector>

#include "cpu/cpu_kernels.h"
#include "cpu/loops.h"

namespace wick::detail {

namespace {

template <class Acc, class T>
Acc pairwise_sum(const T* p, int64_t n) {
  constexpr int64_t kBlock = 128;
  if (n <= kBlock) {
    Acc lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) lanes[j] += Acc(p[i + j]);
    Acc s = 0;
    for (; i < n; ++i) s += Acc(p[i]);
    return s + ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }
  int64_t half = (n / 2 + kBlock - 1) / kBlock * kBlock;
  return pairwise_sum<Acc>(p, half) + pairwise_sum<Acc>(p + half, n - half);
}

template <class T> struct SumAcc { using type = opmath_t<T>; };
template <> struct SumAcc<bool> { using type = int64_t; };
template <> struct SumAcc<uint8_t> { using type = int64_t; };
template <> struct SumAcc<int8_t> { using type = int64_t; };
template <> struct SumAcc<int16_t> { using type = int64_t; };
template <> struct SumAcc<int32_t> { using type = int64_t; };

}  // namespace

namespace {

template <class T>
void reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in) {
  using Acc = typename SumAcc<T>::type;
  const int64_t outer = out.numel();
  const int64_t inner = outer ? in.numel() / outer : 0;
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
  auto finish = [&](Acc s) {
    if (op != ReduceOp::Mean) return convert<T>(s);
    if constexpr (std::is_floating_point_v<Acc>) return convert<T>(inner ? s / Acc(inner) : Acc(NAN));
    else return convert<T>(inner ? s / Acc(inner) : Acc(0));
  };
  if (outer == 1 && inner >= 4 * kParallelGrain && !omp_in_parallel()) {
    // One long row: a partial sum per thread over its piece, then combined in order.
    const int nt = omp_get_max_threads();
    std::vector<Acc> part(size_t(nt), Acc(0));
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      const int64_t b = inner * t / n, e = inner * (t + 1) / n;
      part[size_t(t)] = pairwise_sum<Acc>(src + b, e - b);
    }
    Acc s = 0;
    for (Acc v : part) s += v;
    dst[0] = finish(s);
    return;
  }
#pragma omp parallel for if (outer * inner > kParallelGrain && outer > 1) schedule(static)
  for (int64_t i = 0; i < outer; ++i) dst[i] = finish(pairwise_sum<Acc>(src + i * inner, inner));
}

}  // namespace

void cpu_reduce(ReduceOp op, const Tensor& out, const Tensor& in) {
  WICK_DISPATCH_ALL(in.dtype(), "sum", [&]<class T>() { reduce_rows<T>(op, out, in); });
}

}  // namespace wick::detail
