// Micro-benchmarks of the CUDA op kernels at several sizes (bench/compare has the target rows
// against LibTorch; this is for tuning one kernel): reductions, softmax, matmul, elementwise
// math, broadcast elementwise (the strided kernel), random. Device time through CUDA events,
// reported as bytes or FLOPs per second.
//   build/bin/wick_cuda_ops_bench --benchmark_filter=Softmax
#include <benchmark/benchmark.h>

#include "wick/backends.h"
#include "wick/wick.h"

using namespace wick;

namespace {

// Runs f once per iteration and sets the iteration time from CUDA events on the current stream.
template <class F>
void timed(benchmark::State& st, const F& f) {
  if (!cuda::is_available()) {
    st.SkipWithError("no CUDA device");
    return;
  }
  f();  // warm-up: plans, handles, cached blocks
  cuda::Event start(true), stop(true);
  for (auto _ : st) {
    start.record();
    f();
    stop.record();
    stop.synchronize();
    st.SetIterationTime(start.elapsed_time(stop) / 1e3);
  }
}

void BM_Sum(benchmark::State& st) {  // Arg: elements; a full sum (split across blocks)
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  auto x = rand({st.range(0)}, Device("cuda"));
  timed(st, [&] { benchmark::DoNotOptimize(x.sum()); });
  st.SetBytesProcessed(int64_t(st.iterations()) * st.range(0) * 4);
}
BENCHMARK(BM_Sum)->Arg(1 << 20)->Arg(1 << 24)->Arg(1 << 26)->UseManualTime();

void BM_SumRows(benchmark::State& st) {  // Args: rows, cols; sum over the last dim, then dim 0
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  auto x = rand({st.range(0), st.range(1)}, Device("cuda"));
  const int64_t dim = st.range(2);
  timed(st, [&] { benchmark::DoNotOptimize(x.sum({dim})); });
  st.SetBytesProcessed(int64_t(st.iterations()) * x.numel() * 4);
}
BENCHMARK(BM_SumRows)->Args({8192, 8192, 1})->Args({1 << 20, 64, 1})->Args({8192, 8192, 0})->Args({1 << 20, 64, 0})
    ->UseManualTime();

void BM_Argmax(benchmark::State& st) {
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  auto x = rand({st.range(0), st.range(1)}, Device("cuda"));
  timed(st, [&] { benchmark::DoNotOptimize(argmax(x, 1)); });
  st.SetBytesProcessed(int64_t(st.iterations()) * x.numel() * 4);
}
BENCHMARK(BM_Argmax)->Args({8192, 8192})->Args({1 << 20, 10})->UseManualTime();

void BM_Softmax(benchmark::State& st) {  // Args: rows, cols, dtype (0 fp32, 1 fp16)
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  const Dtype t = st.range(2) ? kFloat16 : kFloat32;
  auto x = randn({st.range(0), st.range(1)}, TensorOptions(t).device("cuda"));
  timed(st, [&] { benchmark::DoNotOptimize(softmax(x, 1)); });
  st.SetBytesProcessed(int64_t(st.iterations()) * x.numel() * element_size(t) * 2);
}
BENCHMARK(BM_Softmax)->Args({8192, 8192, 0})->Args({8192, 8192, 1})->Args({65536, 1000, 0})->Args({4096, 32768, 0})
    ->Args({1 << 20, 10, 0})->UseManualTime();

void BM_Matmul(benchmark::State& st) {  // Args: n, dtype (0 fp32, 1 tf32, 2 fp16, 3 bf16)
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  const int64_t n = st.range(0);
  const Dtype t = st.range(1) >= 3 ? kBFloat16 : st.range(1) == 2 ? kFloat16 : kFloat32;
  set_float32_matmul_precision(st.range(1) == 1 ? "high" : "highest");
  auto a = randn({n, n}, TensorOptions(t).device("cuda")), b = randn({n, n}, TensorOptions(t).device("cuda"));
  timed(st, [&] { benchmark::DoNotOptimize(mm(a, b)); });
  set_float32_matmul_precision("highest");
  st.counters["TFLOP/s"] = benchmark::Counter(2.0 * double(n) * n * n * 1e-12 * double(st.iterations()),
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Matmul)->Args({4096, 0})->Args({8192, 1})->Args({8192, 2})->Args({8192, 3})->Args({1024, 2})
    ->UseManualTime();

// Small float32 products, as a small layer's forward and backward make them: 20 dependent
// calls captured once as a CUDA graph and replayed, so a figure is device time only, each
// product with its launch gap as a replayed step pays it (the Time column is 20 products).
// Args: m, n, k, a transposed, b transposed, bias (1). Compare with
// WICK_GEMM_SMALL_MAX_MACS=0 (cuBLASLt throughout).
void BM_SmallGemm(benchmark::State& st) {
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  const int64_t m = st.range(0), n = st.range(1), k = st.range(2);
  const bool ta = st.range(3) != 0, tb = st.range(4) != 0, with_bias = st.range(5) == 1;
  const Device gpu("cuda");
  auto a = ta ? randn({k, m}, gpu).t() : randn({m, k}, gpu);
  auto b = tb ? randn({n, k}, gpu).t() : randn({k, n}, gpu);
  auto bias = randn({n}, gpu);
  Tensor keep;
  auto calls = [&] {
    for (int i = 0; i < 20; ++i) keep = with_bias ? addmm(bias, a, b) : mm(a, b);
  };
  calls();  // plans and handles outside the capture
  cuda::synchronize();
  cuda::Graph graph;
  {
    cuda::GraphCapture capture(graph);
    calls();
  }
  timed(st, [&] { graph.replay(); });
}
// The small MLP's step (784-128-10, batch 64): forward with bias, weight gradients, input
// gradient; then squares around the kernel's bound.
BENCHMARK(BM_SmallGemm)
    ->Args({64, 128, 784, 0, 1, 1})
    ->Args({64, 10, 128, 0, 1, 1})
    ->Args({10, 128, 64, 1, 0, 0})
    ->Args({128, 784, 64, 1, 0, 0})
    ->Args({64, 128, 10, 0, 0, 0})
    ->Args({128, 128, 128, 0, 0, 0})
    ->Args({256, 256, 128, 0, 0, 0})
    ->Args({200, 200, 200, 0, 0, 0})
    ->Args({512, 512, 32, 0, 0, 0})
    ->Args({1024, 1024, 8, 0, 0, 0})
    ->Args({32, 32, 8192, 0, 0, 0})
    ->UseManualTime();

void BM_Unary(benchmark::State& st) {  // Arg: 0 relu, 1 gelu, 2 exp, 3 sigmoid; 64M floats
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  auto x = randn({int64_t(64) << 20}, Device("cuda"));
  const int op = int(st.range(0));
  timed(st, [&] {
    benchmark::DoNotOptimize(op == 0 ? relu(x) : op == 1 ? gelu(x) : op == 2 ? exp(x) : sigmoid(x));
  });
  st.SetBytesProcessed(int64_t(st.iterations()) * x.numel() * 8);
}
BENCHMARK(BM_Unary)->DenseRange(0, 3)->UseManualTime();

// The strided elementwise kernel: [8192, 8192] floats with a broadcast [8192, 1] operand.
// Arg: 0 add (a + col), 1 where(cond, a, col), 2 clamp(a, col, b); bytes of the full-size operands.
void BM_Broadcast(benchmark::State& st) {
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  const Device gpu("cuda");
  auto a = rand({8192, 8192}, gpu), b = rand({8192, 8192}, gpu), col = rand({8192, 1}, gpu);
  auto cond = a > 0.5;
  const int op = int(st.range(0));
  timed(st, [&] { benchmark::DoNotOptimize(op == 0 ? a + col : op == 1 ? where(cond, a, col) : clamp(a, col, b)); });
  const int64_t bytes = op == 0 ? 8 : op == 1 ? 9 : 12;  // out and a, plus cond or b
  st.SetBytesProcessed(int64_t(st.iterations()) * a.numel() * bytes);
}
BENCHMARK(BM_Broadcast)->DenseRange(0, 2)->UseManualTime();

void BM_Randn(benchmark::State& st) {
  if (!cuda::is_available()) return st.SkipWithError("no CUDA device");
  auto x = empty({int64_t(64) << 20}, Device("cuda"));
  timed(st, [&] { x.normal_(); });
  st.SetBytesProcessed(int64_t(st.iterations()) * x.numel() * 4);
}
BENCHMARK(BM_Randn)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
