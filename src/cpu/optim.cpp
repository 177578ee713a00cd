// The multi-tensor optimizer steps on the CPU (KernelTable's sgd_step and adam_step): the
// parameters' elements are cut into chunks, which OpenMP shares out, and each element gets its
// whole update (core/optim_math.h) in one pass over its operands.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include <omp.h>

#include "core/optim_math.h"
#include "cpu/kernels.h"

namespace wick::detail::cpu {

namespace {

constexpr int64_t kChunk = 32768;

struct Chunk {
  int64_t tensor, begin, end;
};

std::vector<Chunk> chunks_of(std::span<const Tensor> params) {
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < params.size(); ++t) {
    const int64_t n = params[t].numel();
    for (int64_t b = 0; b < n; b += kChunk) chunks.push_back({int64_t(t), b, std::min(n, b + kChunk)});
  }
  return chunks;
}

// Runs f(chunk) for every chunk, in parallel when there is enough work (more than one chunk's
// worth of elements: a few small tensors are not worth waking the threads).
template <class F>
void for_chunks(const std::vector<Chunk>& chunks, F&& f) {
  const int64_t n = int64_t(chunks.size());
  int64_t total = 0;
  for (const Chunk& c : chunks) total += c.end - c.begin;
  if (n <= 1 || total <= kChunk || omp_in_parallel()) {
    for (const Chunk& c : chunks) f(c);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) f(chunks[size_t(i)]);
}

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

}  // namespace

void sgd_step(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> bufs,
                  const SgdStepArgs& a) {
  if (params.empty()) return;
  WICK_DISPATCH_FLOATING(params[0].dtype(), "sgd_step", [&]<class T>() {
    using M = opmath_t<T>;
    const SgdScalars<M> s = sgd_scalars<M>(a);
    for_chunks(chunks_of(params), [&](const Chunk& c) {
      T* p = ptr<T>(params[size_t(c.tensor)]);
      const T* g = ptr<T>(grads[size_t(c.tensor)]);
      T* buf = s.has_momentum ? ptr<T>(bufs[size_t(c.tensor)]) : nullptr;
      for (int64_t i = c.begin; i < c.end; ++i) {
        M pv = M(p[i]), bv = buf ? M(buf[i]) : M(0);
        sgd_update(s, pv, M(g[i]), bv);
        p[i] = T(pv);
        if (buf) buf[i] = T(bv);
      }
    });
  });
}

void unscale_check(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale) {
  if (grads.empty()) return;
  const float inv = *static_cast<const float*>(inv_scale.data_ptr());
  std::atomic<bool> any{false};
  WICK_DISPATCH_FLOATING(grads[0].dtype(), "unscale_", [&]<class T>() {
    using M = opmath_t<T>;
    for_chunks(chunks_of(grads), [&](const Chunk& c) {
      T* g = ptr<T>(grads[size_t(c.tensor)]);
      bool bad = false;
      for (int64_t i = c.begin; i < c.end; ++i) {
        const M v = M(g[i]);
        bad |= !std::isfinite(v);
        if (inv != 1.0f) g[i] = T(v * M(inv));
      }
      if (bad) any.store(true, std::memory_order_relaxed);
    });
  });
  if (any.load()) *static_cast<float*>(found_inf.data_ptr()) = 1.0f;
}

void adam_step(std::span<const Tensor> params, std::span<const Tensor> grads,
                   std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
                   std::span<const Tensor> max_exp_avg_sqs, const AdamStepArgs& a) {
  if (params.empty()) return;
  WICK_DISPATCH_FLOATING(params[0].dtype(), "adam_step", [&]<class T>() {
    using M = opmath_t<T>;
    const AdamScalars<M> s = adam_scalars<M>(a);
    for_chunks(chunks_of(params), [&](const Chunk& c) {
      const size_t t = size_t(c.tensor);
      T* p = ptr<T>(params[t]);
      const T* g = ptr<T>(grads[t]);
      T* m = ptr<T>(exp_avgs[t]);
      T* v = ptr<T>(exp_avg_sqs[t]);
      T* vmax = s.amsgrad ? ptr<T>(max_exp_avg_sqs[t]) : nullptr;
      for (int64_t i = c.begin; i < c.end; ++i) {
        M pv = M(p[i]), mv = M(m[i]), vv = M(v[i]), xv = vmax ? M(vmax[i]) : M(0);
        adam_update(s, pv, M(g[i]), mv, vv, xv);
        p[i] = T(pv);
        m[i] = T(mv);
        v[i] = T(vv);
        if (vmax) vmax[i] = T(xv);
      }
    });
  });
}

}  // namespace wick::detail::cpu
