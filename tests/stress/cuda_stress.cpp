// Stress test of the CUDA runtime and the caching allocator on two GPUs: 8 host threads, each
// with 3 streams on each GPU, allocate random sizes (bytes to tens of MiB), compute (fill, add,
// sum, matmul), copy between the GPUs and back, use blocks on other streams (record_stream),
// free in random order, and check every result against a value computed on the host. One
// thread now and then sets a memory fraction on cuda:1 and asks for more than it allows: it
// must get wick's OutOfMemoryError while the other threads go on. At the end nothing is
// allocated, empty_cache gives every segment back, and the statistics agree.
//
// Its own program and ctest entries (label cuda_stress), skipped below 2 GPUs:
//   WICK_STRESS_SECONDS   how long the threads run (default 5)
//   WICK_CUDA_ALLOC_CONF  e.g. expandable_segments:True (the ctest entry cuda_stress_expandable)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

constexpr int kThreads = 8;
constexpr int kStreamsPerDevice = 3;
constexpr int kDevices = 2;
constexpr int64_t MiB = 1024 * 1024;

double stress_seconds() {
  const char* v = std::getenv("WICK_STRESS_SECONDS");
  if (!v || !*v) return 5;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return end && *end == '\0' && s > 0 ? s : 5;
}

// Failures seen by the worker threads, reported by the main thread.
struct Failures {
  std::mutex mu;
  std::vector<std::string> messages;
  void add(const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    if (messages.size() < 50) messages.push_back(m);
  }
};

TensorOptions opts(Dtype dt, int device) { return TensorOptions().dtype(dt).device(Device(kCUDA, device)); }

// Element counts from 1 to about 8 Mi (int64: bytes to 64 MiB), spread evenly in log scale.
int64_t random_count(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> e(0, 23);
  return std::max<int64_t>(1, int64_t(std::exp2(e(rng))));
}

struct Counters {
  std::atomic<int64_t> ops{0}, ooms{0}, cross_device{0};
};

class Worker {
 public:
  Worker(int id, Failures& f, Counters& c, const std::atomic<bool>& stop)
      : id_(id), rng_(0x5eed0000 + uint64_t(id)), failures_(f), counters_(c), stop_(stop) {
    for (int d = 0; d < kDevices; ++d)
      for (int s = 0; s < kStreamsPerDevice; ++s) streams_[d].push_back(cuda::Stream::create(d));
  }

  void run() {
    int64_t iteration = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      ++iteration;
      try {
        // Thread 0 forces an out-of-memory error at its 5th step and every 50 after (force_oom).
        if (id_ == 0 && iteration % 50 == 5) force_oom();
        else step();
      } catch (const std::exception& e) {
        fail(std::string("exception: ") + e.what());
      }
    }
    // Check and free what is still held.
    try {
      for (auto& h : held_) check_held(h);
    } catch (const std::exception& e) {
      fail(std::string("exception at the end: ") + e.what());
    }
    held_.clear();
  }

 private:
  struct Held {
    Tensor t;
    cuda::Stream stream;  // the one it was made on
    int64_t want_sum;
  };

  void fail(const std::string& what) { failures_.add("thread " + std::to_string(id_) + ": " + what); }

  void check(bool ok, const std::string& what) {
    if (!ok) fail(what);
    counters_.ops.fetch_add(1, std::memory_order_relaxed);
  }

  void check_held(const Held& h) {
    cuda::StreamGuard g(h.stream);
    const int64_t got = h.t.sum(kInt64).item<int64_t>();
    check(got == h.want_sum, "held tensor sum " + std::to_string(got) + " != " + std::to_string(h.want_sum));
  }

  void step() {
    std::uniform_int_distribution<int> pick(0, 5);
    const int dev = int(rng_() % kDevices);
    const cuda::Stream& stream = streams_[dev][rng_() % kStreamsPerDevice];
    cuda::StreamGuard guard(stream);
    const int64_t n = random_count(rng_);
    const int64_t v = int64_t(rng_() % 100) - 50;
    switch (pick(rng_)) {
      case 0: {  // fill and sum
        Tensor t = full({n}, v, opts(kInt64, dev));
        check(t.sum().item<int64_t>() == v * n, "fill+sum of " + std::to_string(n));
        break;
      }
      case 1: {  // add, checked element by element on the host
        const int64_t m = std::min<int64_t>(n, 1 << 20);
        Tensor a = arange(int64_t(0), m, 1, opts(kInt64, dev));
        Tensor b = full({m}, v, opts(kInt64, dev));
        const std::vector<int64_t> c = (a + b).cpu().to_vector<int64_t>();
        bool ok = int64_t(c.size()) == m;
        for (int64_t i = 0; ok && i < m; ++i) ok = c[size_t(i)] == i + v;
        check(ok, "add of " + std::to_string(m));
        break;
      }
      case 2: {  // matmul of small integers: exact in float32
        std::uniform_int_distribution<int64_t> dim(1, 384);
        const int64_t r = dim(rng_), k = dim(rng_), c = dim(rng_);
        const double x = double(rng_() % 5) - 2, y = double(rng_() % 5) - 2;
        Tensor p = full({r, k}, x, opts(kFloat32, dev)).matmul(full({k, c}, y, opts(kFloat32, dev)));
        const std::vector<float> got = p.cpu().to_vector<float>();
        const float want = float(x * y * double(k));
        bool ok = int64_t(got.size()) == r * c;
        for (float g : got) ok = ok && g == want;
        check(ok, "matmul " + std::to_string(r) + "x" + std::to_string(k) + "x" + std::to_string(c));
        break;
      }
      case 3: {  // to the other GPU, compute there, and back
        const int other = 1 - dev;
        Tensor t = full({n}, v, opts(kInt64, dev));
        Tensor there = t.to(Device(kCUDA, other));
        Tensor back;
        {
          cuda::StreamGuard g(streams_[other][rng_() % kStreamsPerDevice]);
          // This stream must see the copy, made on the other GPU's previous current stream.
          cuda::current_stream(other).wait_stream(cuda::default_stream(other));
          Tensor plus = there + 1;
          back = plus.to(Device(kCUDA, dev));
        }
        check(back.device() == Device(kCUDA, dev) && back.sum().item<int64_t>() == (v + 1) * n,
              "cross-device round trip of " + std::to_string(n));
        counters_.cross_device.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      case 4: {  // a block used on another stream, freed while that stream may still run
        const cuda::Stream& side = streams_[dev][rng_() % kStreamsPerDevice];
        Tensor t = full({n}, v, opts(kInt64, dev));
        Tensor doubled;
        if (side != stream) {
          side.wait_stream(stream);
          cuda::StreamGuard g(side);
          doubled = t * 2;
          t.record_stream(side);
          stream.wait_stream(side);
        } else {
          doubled = t * 2;
        }
        t = Tensor();
        check(doubled.sum().item<int64_t>() == 2 * v * n, "record_stream of " + std::to_string(n));
        break;
      }
      default: {  // keep a tensor for a while; the oldest ones are checked and freed
        held_.push_back({full({n}, v, opts(kInt64, dev)), stream, v * n});
        if (held_.size() > 6) {
          const size_t k = size_t(rng_() % held_.size());
          check_held(held_[k]);
          held_.erase(held_.begin() + std::ptrdiff_t(k));
        }
        break;
      }
    }
  }

  // Half of cuda:1's memory for the process, and a request for more than that: wick's
  // OutOfMemoryError here, while the other threads' small allocations go on.
  void force_oom() {
    const int dev = 1;
    const int64_t total = cuda::get_device_properties(dev).total_memory;
    cuda::set_per_process_memory_fraction(0.5, dev);
    bool raised = false;
    try {
      Tensor t = empty({total * 6 / 10 / 8}, opts(kInt64, dev));
      fail("no OutOfMemoryError for " + std::to_string(t.nbytes()) + " bytes under a fraction of 0.5");
    } catch (const OutOfMemoryError& e) {
      raised = std::string(e.what()).find("set_per_process_memory_fraction") != std::string::npos;
      if (!raised) fail(std::string("OutOfMemoryError without the fraction in its message: ") + e.what());
    }
    cuda::set_per_process_memory_fraction(1.0, dev);
    counters_.ooms.fetch_add(raised ? 1 : 0, std::memory_order_relaxed);
    // This thread goes on too.
    cuda::StreamGuard g(streams_[dev][0]);
    Tensor t = full({MiB}, int64_t(3), opts(kInt64, dev));
    check(t.sum().item<int64_t>() == 3 * MiB, "allocation after the out-of-memory error");
  }

  const int id_;
  std::mt19937_64 rng_;
  Failures& failures_;
  Counters& counters_;
  const std::atomic<bool>& stop_;
  std::vector<cuda::Stream> streams_[kDevices];
  std::vector<Held> held_;
};

}  // namespace

TEST(CudaStress, ThreadsStreamsAndTwoGpus) {
  if (!cuda::is_available() || cuda::device_count() < kDevices) GTEST_SKIP() << "needs 2 CUDA devices";
  const double seconds = stress_seconds();
  for (int d = 0; d < kDevices; ++d) {
    cuda::synchronize(d);
    cuda::empty_cache();
    ASSERT_EQ(cuda::memory_allocated(d), 0);
  }
  Failures failures;
  Counters counters;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      try {
        Worker w(i, failures, counters, stop);
        w.run();
      } catch (const std::exception& e) {
        failures.add("thread " + std::to_string(i) + " setup: " + e.what());
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  std::printf(
      "cuda stress: %.1f s, %d threads, %lld checked operations (%lld across GPUs, %lld out-of-memory errors "
      "raised on purpose)\n",
      seconds, kThreads, (long long)counters.ops.load(), (long long)counters.cross_device.load(),
      (long long)counters.ooms.load());
  for (const std::string& m : failures.messages) ADD_FAILURE() << m;
  EXPECT_GT(counters.ops.load(), 0);
  EXPECT_GT(counters.cross_device.load(), 0);
  EXPECT_GT(counters.ooms.load(), 0);

  for (int d = 0; d < kDevices; ++d) {
    cuda::synchronize(d);
    EXPECT_EQ(cuda::memory_allocated(d), 0) << "cuda:" << d;
  }
  cuda::empty_cache();
  for (int d = 0; d < kDevices; ++d) {
    SCOPED_TRACE("cuda:" + std::to_string(d));
    EXPECT_EQ(cuda::memory_reserved(d), 0) << cuda::memory_summary(d);
    auto s = cuda::memory_stats(d);
    std::printf(
        "cuda:%d: %lld allocations, peak allocated %lld MiB, peak reserved %lld MiB, %lld OOMs, %lld "
        "retries\n",
        d, (long long)s["allocation.all.allocated"], (long long)(s["allocated_bytes.all.peak"] / MiB),
        (long long)(s["reserved_bytes.all.peak"] / MiB), (long long)s["num_ooms"],
        (long long)s["num_alloc_retries"]);
    for (const char* pool : {"all", "small_pool", "large_pool"}) {
      const std::string p = std::string(".") + pool + ".";
      EXPECT_EQ(s["allocation" + p + "current"], 0) << pool;
      EXPECT_EQ(s["allocation" + p + "allocated"], s["allocation" + p + "freed"]) << pool;
      EXPECT_EQ(s["allocated_bytes" + p + "allocated"], s["allocated_bytes" + p + "freed"]) << pool;
      EXPECT_EQ(s["requested_bytes" + p + "current"], 0) << pool;
      EXPECT_EQ(s["active" + p + "current"], 0) << pool;
      EXPECT_EQ(s["active_bytes" + p + "current"], 0) << pool;
      EXPECT_EQ(s["segment" + p + "current"], 0) << pool;
      EXPECT_EQ(s["reserved_bytes" + p + "current"], 0) << pool;
      EXPECT_EQ(s["reserved_bytes" + p + "allocated"], s["reserved_bytes" + p + "freed"]) << pool;
      EXPECT_EQ(s["inactive_split" + p + "current"], 0) << pool;
      EXPECT_GE(s["allocated_bytes" + p + "peak"], 0) << pool;
      EXPECT_GE(s["reserved_bytes" + p + "peak"], s["allocated_bytes" + p + "peak"]) << pool;
    }
    EXPECT_EQ(s["num_device_alloc"], s["num_device_free"]);
    EXPECT_GT(s["allocation.all.allocated"], 0);
  }
  EXPECT_GT(cuda::memory_stats(1)["num_ooms"], 0);
}
