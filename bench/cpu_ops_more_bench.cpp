// CPU micro-benchmarks of the ops beyond + - * / and sum: unary math, comparisons, reductions
// over dims, softmax, the matmul family and gather, on large random float32 inputs (never
// zeros). Bandwidth counts what an op must read and write; matmul counts 2*m*n*k FLOPs.
//   build/bin/wick_cpu_ops_more_bench --benchmark_filter=Softmax
#include <cstdint>

#include <benchmark/benchmark.h>

#include <wick/wick.h>

namespace {

constexpr int64_t kLarge = int64_t(1) << 24;  // 16M float32 = 64 MiB per tensor

void set_bytes(benchmark::State& state, int64_t bytes) {
  state.SetBytesProcessed(int64_t(state.iterations()) * bytes);
}

// ---- elementwise: one read and one write of n float32
template <class F>
void unary_case(benchmark::State& state, F f) {
  auto a = wick::randn({kLarge});
  for (auto _ : state) {
    auto c = f(a);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_bytes(state, 2 * kLarge * 4);
}
void BM_Relu(benchmark::State& s) {
  unary_case(s, [](const wick::Tensor& a) { return wick::relu(a); });
}
void BM_Exp(benchmark::State& s) {
  unary_case(s, [](const wick::Tensor& a) { return wick::exp(a); });
}
void BM_Sigmoid(benchmark::State& s) {
  unary_case(s, [](const wick::Tensor& a) { return wick::sigmoid(a); });
}
void BM_Gelu(benchmark::State& s) {
  unary_case(s, [](const wick::Tensor& a) { return wick::gelu(a); });
}
void BM_PowScalar2(benchmark::State& s) {
  unary_case(s, [](const wick::Tensor& a) { return wick::pow(a, 2); });
}
BENCHMARK(BM_Relu)->UseRealTime();
BENCHMARK(BM_Exp)->UseRealTime();
BENCHMARK(BM_Sigmoid)->UseRealTime();
BENCHMARK(BM_Gelu)->UseRealTime();
BENCHMARK(BM_PowScalar2)->UseRealTime();

// In place: the kernel alone, without the first-touch page faults of a fresh 64 MiB output.
template <class F>
void in_place_case(benchmark::State& state, F f) {
  auto a = wick::randn({kLarge});
  for (auto _ : state) {
    f(a);
    benchmark::DoNotOptimize(a.data_ptr());
  }
  set_bytes(state, 2 * kLarge * 4);
}
void BM_ReluInPlace(benchmark::State& s) {
  in_place_case(s, [](wick::Tensor& a) { a.relu_(); });
}
void BM_ExpInPlace(benchmark::State& s) {
  in_place_case(s, [](wick::Tensor& a) { a.exp_(); });
}
void BM_SigmoidInPlace(benchmark::State& s) {
  in_place_case(s, [](wick::Tensor& a) { a.sigmoid_(); });
}
BENCHMARK(BM_ReluInPlace)->UseRealTime();
BENCHMARK(BM_ExpInPlace)->UseRealTime();
BENCHMARK(BM_SigmoidInPlace)->UseRealTime();

// Reads two float32, writes one bool.
void BM_CompareLt(benchmark::State& state) {
  auto a = wick::randn({kLarge}), b = wick::randn({kLarge});
  for (auto _ : state) {
    auto c = a < b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_bytes(state, kLarge * (4 + 4 + 1));
}
BENCHMARK(BM_CompareLt)->UseRealTime();

// Reads a bool and two float32, writes float32.
void BM_Where(benchmark::State& state) {
  auto a = wick::randn({kLarge}), b = wick::randn({kLarge});
  auto c = a > 0;
  for (auto _ : state) {
    auto r = wick::where(c, a, b);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  set_bytes(state, kLarge * (1 + 4 + 4 + 4));
}
BENCHMARK(BM_Where)->UseRealTime();

// ---- reductions: one read of n float32 (outputs are small)
template <class F>
void reduce_case(benchmark::State& state, int64_t rows, F f) {
  auto a = wick::randn({rows, kLarge / rows});
  for (auto _ : state) {
    auto r = f(a);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  set_bytes(state, kLarge * 4);
}
void BM_MaxAll(benchmark::State& s) {
  reduce_case(s, 1, [](const wick::Tensor& a) { return wick::max(a); });
}
void BM_ArgmaxLastDim(benchmark::State& s) {
  reduce_case(s, 4096, [](const wick::Tensor& a) { return wick::argmax(a, 1); });
}
void BM_MaxDim0(benchmark::State& s) {
  reduce_case(s, 4096, [](const wick::Tensor& a) { return std::get<0>(wick::max(a, 0)); });
}
void BM_VarLastDim(benchmark::State& s) {
  reduce_case(s, 4096, [](const wick::Tensor& a) { return wick::var(a, {1}); });
}
void BM_NormAll(benchmark::State& s) {
  reduce_case(s, 1, [](const wick::Tensor& a) { return wick::norm(a); });
}
BENCHMARK(BM_MaxAll)->UseRealTime();
BENCHMARK(BM_ArgmaxLastDim)->UseRealTime();
BENCHMARK(BM_MaxDim0)->UseRealTime();
BENCHMARK(BM_VarLastDim)->UseRealTime();
BENCHMARK(BM_NormAll)->UseRealTime();

// ---- softmax over rows of a 4096 x 4096 float32 matrix: one read, one write
void BM_Softmax(benchmark::State& state) {
  const int64_t side = 4096;
  auto a = wick::randn({side, side});
  const int64_t dim = state.range(0);
  for (auto _ : state) {
    auto r = wick::softmax(a, dim);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  set_bytes(state, 2 * side * side * 4);
}
BENCHMARK(BM_Softmax)->Arg(1)->Arg(0)->UseRealTime();

void BM_LogSoftmax(benchmark::State& state) {
  const int64_t side = 4096;
  auto a = wick::randn({side, side});
  for (auto _ : state) {
    auto r = wick::log_softmax(a, 1);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  set_bytes(state, 2 * side * side * 4);
}
BENCHMARK(BM_LogSoftmax)->UseRealTime();

// ---- the matmul family through the CPU GEMM library (WICK_CPU_BLAS), in FLOP/s
void set_flops(benchmark::State& state, double flops) {
  state.counters["FLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()), benchmark::Counter::kIsRate);
}

// A layer's forward: x [batch, in] @ w.T + b.
void BM_Linear(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto x = wick::randn({n, n}), w = wick::randn({n, n}), b = wick::randn({n});
  for (auto _ : state) {
    auto y = wick::linear(x, w, b);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  set_flops(state, 2.0 * double(n) * double(n) * double(n));
}
BENCHMARK(BM_Linear)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Bmm(benchmark::State& state) {
  const int64_t batch = 32, n = state.range(0);
  auto a = wick::randn({batch, n, n}), b = wick::randn({batch, n, n});
  for (auto _ : state) {
    auto c = wick::bmm(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, 2.0 * double(batch) * double(n) * double(n) * double(n));
}
BENCHMARK(BM_Bmm)->Arg(128)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- indexing: read n (random rows), write n
void BM_IndexSelectRows(benchmark::State& state) {
  const int64_t rows = 16384, cols = 1024;
  auto a = wick::randn({rows, cols});
  auto idx = wick::randint(0, rows, {rows});
  for (auto _ : state) {
    auto r = wick::index_select(a, 0, idx);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  set_bytes(state, 2 * rows * cols * 4);
}
BENCHMARK(BM_IndexSelectRows)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
