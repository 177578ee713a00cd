// The timing harness shared by wick's benchmark program and its LibTorch twin: the same
// clocks, repetitions and output format on both sides, so that only the library differs.
//
//   double us = compare::host_us([&] { auto c = a + b; }, 1000, 21, sync);   // per call
//   double ms = compare::device_ms(stream, [&] { auto c = a + b; }, 5, 11);  // per call
//   compare::report("add_fp32_64M", bytes / (ms * 1e-3) / 1e9, "GB/s");
// Device work is timed with CUDA events on the library's current stream around a group of
// calls; host work with steady_clock. Every figure is the median of several groups after a
// warm-up group.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace compare {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

inline double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Host microseconds per call of f: `reps` groups of n calls (after one warm-up group);
// after() runs between groups, outside the clock (a synchronize, say).
template <class F, class G>
double host_us(const F& f, int n, int reps, const G& after) {
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) f();
    const double t1 = now_us();
    after();
    if (r > 0) t.push_back((t1 - t0) / n);
  }
  return median(t);
}

// Device milliseconds per call of f, measured with events on stream around n calls.
template <class F>
double device_ms(cudaStream_t stream, const F& f, int n, int reps) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < n; ++i) f();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (r > 0) t.push_back(ms / n);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(t);
}

// Host milliseconds of one call of f followed by after() (a synchronize), median of reps.
template <class F, class G>
double wall_ms(const F& f, int reps, const G& after) {
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    const double t0 = now_us();
    f();
    after();
    if (r > 0) t.push_back((now_us() - t0) / 1e3);
  }
  return median(t);
}

// One result line: "name value unit"; bench/compare/table.py joins the two programs' lines.
inline void report(const char* name, double value, const char* unit) {
  std::printf("%s %.6g %s\n", name, value, unit);
  std::fflush(stdout);
}

// argv[1], when given, is a substring that selects workloads.
// The workloads whose name contains argv[1] (all without one); "name$" picks that one alone.
inline bool selected(int argc, char** argv, const char* name) {
  if (argc < 2) return true;
  const size_t n = std::strlen(argv[1]);
  if (n > 0 && argv[1][n - 1] == '$') return std::strlen(name) == n - 1 && std::strncmp(name, argv[1], n - 1) == 0;
  return std::strstr(name, argv[1]) != nullptr;
}

}  // namespace compare
