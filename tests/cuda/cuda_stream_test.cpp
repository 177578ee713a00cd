// Streams and events: the pool, current streams per thread and device, StreamGuard, the
// ordering wait_stream and wait_event give, event timing.
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda_hooks.h"
#include "cuda_test_util.h"
#include "wick/wick.h"

using namespace wick;

namespace {

// Queues about `ms` milliseconds of work on the current stream: repeated fills of a large
// buffer (a memory-bound kernel writes about 3 bytes per picosecond on an H100).
Tensor busy_work(int fills, int64_t n = int64_t(64) << 20) {
  auto t = empty({n}, Device("cuda"));
  for (int i = 1; i <= fills; ++i) t.fill_(i);
  return t;
}

}  // namespace

TEST(CudaStream, DefaultAndPool) {
  WICK_REQUIRE_CUDA();
  const int d = cuda::current_device();
  EXPECT_EQ(cuda::current_stream(), cuda::default_stream());
  EXPECT_EQ(cuda::current_stream().native(), nullptr);  // the legacy default stream, as PyTorch
  EXPECT_EQ(cuda::current_stream().device(), Device(kCUDA, d));
  // 32 streams per priority, handed out round robin.
  std::vector<cuda::Stream> got;
  for (int i = 0; i < 33; ++i) got.push_back(cuda::Stream::create());
  std::set<cudaStream_t> distinct;
  for (int i = 0; i < 32; ++i) {
    EXPECT_NE(got[i].native(), nullptr);
    EXPECT_EQ(got[i].device_index(), d);
    distinct.insert(got[i].native());
  }
  EXPECT_EQ(distinct.size(), 32u);
  EXPECT_EQ(got[32], got[0]);
  auto high = cuda::Stream::create(-1, -1);
  EXPECT_EQ(distinct.count(high.native()), 0u);
  EXPECT_TRUE(high.query());
}

TEST(CudaStream, GuardSetsAndRestores) {
  WICK_REQUIRE_CUDA();
  auto s = cuda::Stream::create();
  {
    cuda::StreamGuard g(s);
    EXPECT_EQ(cuda::current_stream(), s);
    auto t = full({1000}, 3.0, Device("cuda"));  // runs on s
    s.synchronize();
    EXPECT_EQ(t.cpu().to_vector<float>(), std::vector<float>(1000, 3.f));
  }
  EXPECT_EQ(cuda::current_stream(), cuda::default_stream());
  // The current stream is per thread.
  cuda::set_current_stream(s);
  cudaStream_t seen = s.native();
  std::thread([&] { seen = cuda::current_stream().native(); }).join();
  EXPECT_EQ(seen, nullptr);
  EXPECT_EQ(cuda::current_stream(), s);
  cuda::set_current_stream(cuda::default_stream());

  if (cuda::device_count() < 2) return;
  cuda::set_device(0);
  auto s1 = cuda::Stream::create(1);
  EXPECT_EQ(s1.device(), Device(kCUDA, 1));
  {
    cuda::StreamGuard g(s1);  // makes cuda:1 current too
    EXPECT_EQ(cuda::current_device(), 1);
    EXPECT_EQ(cuda::current_stream(1), s1);
    EXPECT_EQ(cuda::current_stream(0), cuda::default_stream(0));
    EXPECT_EQ(empty({4}, Device("cuda")).device(), Device(kCUDA, 1));
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_EQ(cuda::current_stream(1), cuda::default_stream(1));
}

// The side-stream example: without wait_stream, work on s could start before normal_ (here fill_) ends.
TEST(CudaStream, WaitStreamOrdersWork) {
  WICK_REQUIRE_CUDA();
  const int fills = 40;                                // ~3.5 ms of writes on an H100
  (empty({8}, Device("cuda")).fill_(1) + 1).fill_(0);  // loads the kernels: a first launch is slow
  cuda::synchronize();
  // The stream first: making one may take longer than the busy work runs.
  auto s = cuda::Stream::create();
  auto a = busy_work(fills);
  s.wait_stream(cuda::current_stream());
  Tensor b;
  cuda::Event done;
  {
    cuda::StreamGuard g(s);
    b = a + 1;
    a.record_stream(s);
    done.record();
  }
  // s's work waits behind the fills still running on the default stream.
  EXPECT_FALSE(done.query());
  EXPECT_FALSE(s.query());
  cuda::synchronize();
  EXPECT_TRUE(done.query());
  auto v = b.cpu().to_vector<float>();
  EXPECT_EQ(std::count(v.begin(), v.end(), float(fills + 1)), int64_t(v.size()));
}

TEST(CudaStream, WaitEventAndTiming) {
  WICK_REQUIRE_CUDA();
  // The stream first: making one may take longer than the busy work runs.
  auto s = cuda::Stream::create();
  cuda::Event start(true), end(true);
  start.record();
  auto a = busy_work(20);
  end.record();
  s.wait_event(end);
  cuda::Event after;
  after.record(s);
  EXPECT_FALSE(after.query());
  end.synchronize();
  EXPECT_TRUE(end.query());
  float ms = start.elapsed_time(end);
  // 20 fills of 256 MiB: at most ~6 TB/s of writes means at least ~0.8 ms; well under a minute.
  EXPECT_GT(ms, 0.5f);
  EXPECT_LT(ms, 60000.f);
  s.synchronize();
  EXPECT_TRUE(after.query());

  cuda::Event never;
  EXPECT_TRUE(never.query());  // nothing recorded: nothing pending
  EXPECT_THROW(never.elapsed_time(end), ValueError);
  cuda::Event untimed;
  untimed.record();
  EXPECT_THROW(untimed.elapsed_time(end), ValueError);
  cuda::Event moved = std::move(start);
  EXPECT_TRUE(moved.query());
}

// A gradient made on a side stream and consumed on the default stream: the consumer waits for
// the point the producer reached (after slow work queued on the side stream), and two
// gradients of one input, one from each stream, are summed.
TEST(CudaStream, BackwardAcrossStreamsWaitsAndSums) {
  WICK_REQUIRE_CUDA();
  const int64_t n = int64_t(16) << 20;
  auto x = full({n}, 1.5f, TensorOptions().device(Device("cuda"))).requires_grad_(true);
  auto s = cuda::Stream::create();
  s.wait_stream(cuda::current_stream());
  Tensor a;
  {
    cuda::StreamGuard g(s);
    a = x * 2.0;  // its backward runs on s
  }
  cuda::current_stream().wait_stream(s);
  auto b = x * 3.0;            // on the default stream
  auto y = (a * a + b).sum();  // d/dx: 8x + 3
  {
    cuda::StreamGuard g(s);
    busy_work(40);  // the side stream is busy when the backward queues its work
  }
  y.backward();
  auto v = x.grad().cpu().to_vector<float>();
  EXPECT_EQ(std::count(v.begin(), v.end(), 15.0f), n);
}
