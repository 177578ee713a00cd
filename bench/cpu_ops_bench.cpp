// CPU micro-benchmarks: host time of one tiny op, and memory bandwidth of large elementwise ops,
// reductions and matmul. Inputs are random (never zeros: some
// kernels take shortcuts on zeros).
//   build/bin/wick_cpu_ops_bench                            # all
//   build/bin/wick_cpu_ops_bench --benchmark_filter=Tiny    # host overhead per op only
#include <cstdint>

#include <benchmark/benchmark.h>

#include <wick/wick.h>

namespace {

constexpr int64_t kLarge = int64_t(1) << 24;  // 16M float32 = 64 MiB per tensor

// ---- host time per op on one-element tensors: the op path without the arithmetic
void BM_TinyAdd(benchmark::State& state) {
  auto a = wick::rand({1}), b = wick::rand({1});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
}
BENCHMARK(BM_TinyAdd);

void BM_TinyAddScalar(benchmark::State& state) {
  auto a = wick::rand({1});
  for (auto _ : state) {
    auto c = a + 2.5;
    benchmark::DoNotOptimize(c.data_ptr());
  }
}
BENCHMARK(BM_TinyAddScalar);

void BM_TinyAddInPlace(benchmark::State& state) {
  auto a = wick::rand({1}), b = wick::rand({1});
  for (auto _ : state) {
    a.add_(b);
    benchmark::DoNotOptimize(a.data_ptr());
  }
}
BENCHMARK(BM_TinyAddInPlace);

void BM_TinyEmpty(benchmark::State& state) {
  for (auto _ : state) {
    auto t = wick::empty({1});
    benchmark::DoNotOptimize(t.data_ptr());
  }
}
BENCHMARK(BM_TinyEmpty);

void BM_TinyView(benchmark::State& state) {
  auto a = wick::rand({2, 3});
  for (auto _ : state) {
    auto v = a.view({3, 2});
    benchmark::DoNotOptimize(v.data_ptr());
  }
}
BENCHMARK(BM_TinyView);

// ---- host time of a tiny training step (Linear(8,8), ReLU, Linear(8,2), batch 2, SGD with
// momentum, cross-entropy): the autograd engine's and the optimizer's per-step overhead
struct TinyMlp {
  static wick::nn::Sequential make_net() {
    wick::manual_seed(0);
    return wick::nn::Sequential(wick::nn::Linear(8, 8), wick::nn::ReLU(), wick::nn::Linear(8, 2));
  }
  wick::Tensor loss() { return wick::nn::functional::cross_entropy(net->forward(x), y); }
  wick::nn::Sequential net = make_net();
  wick::optim::SGD opt{net->parameters(), wick::optim::SGDOptions(0.01).momentum(0.9)};
  wick::Tensor x = wick::randn({2, 8});
  wick::Tensor y = wick::randint(2, {2}, wick::TensorOptions(wick::kInt64));
};

// zero_grad, forward, loss, backward and step
void BM_TinyMlpStep(benchmark::State& state) {
  TinyMlp m;
  for (auto _ : state) {
    m.opt.zero_grad();
    auto loss = m.loss();
    loss.backward();
    m.opt.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}
BENCHMARK(BM_TinyMlpStep);

// backward() alone, over a fresh graph each time (the rest of the step untimed)
void BM_TinyBackward(benchmark::State& state) {
  TinyMlp m;
  for (auto _ : state) {
    state.PauseTiming();
    m.opt.zero_grad();
    auto loss = m.loss();
    state.ResumeTiming();
    loss.backward();
  }
}
BENCHMARK(BM_TinyBackward);

// ---- bandwidth on large float32 tensors; bytes = what the op must read and write
void set_bytes(benchmark::State& state, int64_t tensors, int64_t n) {
  state.SetBytesProcessed(int64_t(state.iterations()) * tensors * n * int64_t(sizeof(float)));
}

void BM_Add(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = wick::rand({n}), b = wick::rand({n});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_bytes(state, 3, n);
}
BENCHMARK(BM_Add)->Arg(int64_t(1) << 16)->Arg(kLarge)->UseRealTime();

void BM_AddInPlace(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = wick::rand({n}), b = wick::rand({n});
  for (auto _ : state) {
    a.add_(b);
    benchmark::DoNotOptimize(a.data_ptr());
  }
  set_bytes(state, 3, n);
}
BENCHMARK(BM_AddInPlace)->Arg(kLarge)->UseRealTime();

// A broadcast row: reads n + cols, writes n; counted as 2 tensors of n.
void BM_AddBroadcastRow(benchmark::State& state) {
  const int64_t cols = 4096, rows = kLarge / cols;
  auto a = wick::rand({rows, cols}), b = wick::rand({cols});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_bytes(state, 2, kLarge);
}
BENCHMARK(BM_AddBroadcastRow)->UseRealTime();

void BM_Copy(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = wick::rand({n}), b = wick::empty({n});
  for (auto _ : state) {
    b.copy_(a);
    benchmark::DoNotOptimize(b.data_ptr());
  }
  set_bytes(state, 2, n);
}
BENCHMARK(BM_Copy)->Arg(kLarge)->UseRealTime();

// A transposed source: the strided path of the elementwise iteration.
void BM_CopyTransposed(benchmark::State& state) {
  const int64_t side = 4096;
  auto a = wick::rand({side, side}).t(), b = wick::empty({side, side});
  for (auto _ : state) {
    b.copy_(a);
    benchmark::DoNotOptimize(b.data_ptr());
  }
  set_bytes(state, 2, side * side);
}
BENCHMARK(BM_CopyTransposed)->UseRealTime();

void BM_Fill(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = wick::empty({n});
  for (auto _ : state) {
    a.fill_(1.5);
    benchmark::DoNotOptimize(a.data_ptr());
  }
  set_bytes(state, 1, n);
}
BENCHMARK(BM_Fill)->Arg(kLarge)->UseRealTime();

void BM_Sum(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = wick::rand({n});
  for (auto _ : state) {
    auto s = a.sum();
    benchmark::DoNotOptimize(s.data_ptr());
  }
  set_bytes(state, 1, n);
}
BENCHMARK(BM_Sum)->Arg(kLarge)->UseRealTime();

// ---- matmul through the CPU GEMM library (WICK_CPU_BLAS), in FLOP/s
void BM_Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = wick::rand({n, n}), b = wick::rand({n, n});
  for (auto _ : state) {
    auto c = wick::matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * double(n) * double(n) * double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Matmul)->Arg(256)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
