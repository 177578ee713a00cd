// wick::cuda::comm against values computed by hand: broadcast (plain and coalesced, mixed
// dtypes, buckets smaller than a tensor), reduce_add (plain and coalesced), scatter (torch.chunk
// sizes, explicit sizes, dims), gather (dims, CPU destination), stream ordering, and the errors.
// The planning helpers (buckets, chunk sizes) run everywhere; the rest needs 2 or more GPUs.
#include "wick/cuda_comm.h"

#include <vector>

#include <gtest/gtest.h>

#include "core/comm_plan.h"
#include "cuda_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace comm = wick::cuda::comm;

namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(Device(kCPU)).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// 0, 1, 2, ... (times scale) in the given sizes on device.
Tensor iota(IntArrayRef sizes, Device device, double scale = 1.0, Dtype dtype = kFloat32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return (arange(n, TensorOptions().dtype(kFloat64)) * scale).to(dtype).view(sizes).to(device);
}

std::vector<double> iota_values(int64_t n, double scale = 1.0, double offset = 0.0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(i) * scale + offset);
  return v;
}

Device gpu(int i) { return Device(kCUDA, i); }

}  // namespace

// ---- planning (no GPU needed)

TEST(CudaCommPlan, ChunkSizesAreTorchChunks) {
  EXPECT_EQ(wick::detail::chunk_sizes(33, 2), (std::vector<int64_t>{17, 16}));
  EXPECT_EQ(wick::detail::chunk_sizes(16, 2), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(wick::detail::chunk_sizes(10, 4), (std::vector<int64_t>{3, 3, 3, 1}));
  // torch.chunk(5 rows, 4) gives 3 pieces of 2, 2, 1
  EXPECT_EQ(wick::detail::chunk_sizes(5, 4), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(wick::detail::chunk_sizes(1, 2), (std::vector<int64_t>{1}));
  EXPECT_EQ(wick::detail::chunk_sizes(0, 3), (std::vector<int64_t>{0, 0, 0}));
}

TEST(CudaCommPlan, BucketsHoldOneDtypeAndAboutBufferSizeBytes) {
  // float32 of 4, 4, 8 elements (16, 16, 32 bytes), an int64 of 2 (16 bytes), a float32 of 1
  std::vector<Tensor> ts{zeros({4}), zeros({4}), zeros({8}), zeros({2}, TensorOptions().dtype(kInt64)),
                         zeros({1})};
  auto b = wick::detail::bucket_indices(ts, 32);
  // 0+1 fill 32 bytes; 2 opens a new float bucket (32 bytes on its own); 3 its own dtype;
  // 4 does not fit into bucket {2}, so a new one
  std::vector<std::vector<size_t>> want{{0, 1}, {2}, {3}, {4}};
  EXPECT_EQ(b, want);
  auto all = wick::detail::bucket_indices(ts, 1 << 20);
  std::vector<std::vector<size_t>> want_all{{0, 1, 2, 4}, {3}};
  EXPECT_EQ(all, want_all);
  // a tensor larger than the buffer is a bucket of its own
  auto small = wick::detail::bucket_indices({zeros({100}), zeros({1})}, 8);
  std::vector<std::vector<size_t>> want_small{{0}, {1}};
  EXPECT_EQ(small, want_small);
}

TEST(CudaComm, ErrorsNameTheOperation) {
  if (cuda::device_count() >= 64) GTEST_SKIP();
  try {
    comm::broadcast(zeros({2}), {0, 64});
    FAIL() << "expected an error";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[comm.broadcast] ", 0), 0u) << e.what();
  }
#ifdef WICK_WITH_CUDA
  EXPECT_THROW(comm::scatter(zeros({4}), {}), ValueError);
#else
  EXPECT_THROW(comm::scatter(zeros({4}), {}), DeviceError);  // "[comm.scatter] wick was built without CUDA"
#endif
}

// ---- broadcast

TEST(CudaComm, BroadcastCopiesToEveryDeviceAndKeepsTheSource) {
  WICK_REQUIRE_GPUS(2);
  const int n = cuda::device_count();
  std::vector<int> devices;
  for (int i = n - 1; i >= 0; --i) devices.push_back(i);  // the source in the middle or last
  Tensor src = iota({3, 5}, gpu(0), 0.5);
  auto out = comm::broadcast(src, devices);
  ASSERT_EQ(out.size(), devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(out[i].device(), gpu(devices[i]));
    EXPECT_EQ(out[i].sizes(), src.sizes());
    EXPECT_EQ(values(out[i]), iota_values(15, 0.5));
  }
  EXPECT_TRUE(out[devices.size() - 1].is_same(src));  // cuda:0's output is the input itself
  // a copy is independent of the source
  out[0].fill_(7.0);
  EXPECT_EQ(values(src), iota_values(15, 0.5));
}

TEST(CudaComm, BroadcastFromTheCpuAndOfNonContiguousTensors) {
  WICK_REQUIRE_GPUS(2);
  Tensor cpu = iota({4, 3}, Device(kCPU));
  auto out = comm::broadcast(cpu.t(), {0, 1});  // [3, 4], transposed
  std::vector<double> want;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) want.push_back(c * 3 + r);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(out[size_t(i)].device(), gpu(i));
    EXPECT_EQ(values(out[size_t(i)]), want);
  }
}

TEST(CudaComm, BroadcastOfInt64AndBool) {
  WICK_REQUIRE_GPUS(2);
  Tensor l = tensor<int64_t>({1, -2, 3}, TensorOptions().device(gpu(1)));
  auto out = comm::broadcast(l, {1, 0});
  EXPECT_EQ(out[1].dtype(), kInt64);
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, -2, 3}));
  Tensor b = tensor<bool>({true, false, true}, TensorOptions().device(gpu(0)));
  auto ob = comm::broadcast(b, {0, 1});
  EXPECT_EQ(ob[1].dtype(), kBool);
  EXPECT_EQ(values(ob[1]), (std::vector<double>{1, 0, 1}));
}

TEST(CudaComm, BroadcastCoalescedKeepsOrderAcrossBucketsAndDtypes) {
  WICK_REQUIRE_GPUS(2);
  std::vector<Tensor> ts{iota({2, 3}, gpu(0)), iota({4}, gpu(0), 1.0, kInt64), iota({5}, gpu(0), -1.0),
                         iota({2, 2}, gpu(0), 1.0, kFloat64), iota({1}, gpu(0), 3.0)};
  for (int64_t buffer : {int64_t(8), int64_t(24), comm::kDefaultBufferSize}) {
    auto out = comm::broadcast_coalesced(ts, {0, 1}, buffer);
    ASSERT_EQ(out.size(), 2u);
    for (size_t j = 0; j < ts.size(); ++j) {
      EXPECT_TRUE(out[0][j].is_same(ts[j]));
      EXPECT_EQ(out[1][j].device(), gpu(1));
      EXPECT_EQ(out[1][j].dtype(), ts[j].dtype());
      EXPECT_EQ(out[1][j].sizes(), ts[j].sizes());
      EXPECT_EQ(values(out[1][j]), values(ts[j])) << "tensor " << j << " buffer " << buffer;
    }
  }
}

TEST(CudaComm, BroadcastCoalescedNeedsTensorsOnTheFirstDevice) {
  WICK_REQUIRE_GPUS(2);
  try {
    comm::broadcast_coalesced({zeros({2}, TensorOptions().device(gpu(1)))}, {0, 1});
    FAIL() << "expected an error";
  } catch (const DeviceError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[comm.broadcast_coalesced] ", 0), 0u) << m;
    EXPECT_NE(m.find("cuda:1"), std::string::npos) << m;
  }
}

// ---- reduce_add

TEST(CudaComm, ReduceAddSumsOntoTheDestination) {
  WICK_REQUIRE_GPUS(2);
  const int n = cuda::device_count();
  std::vector<Tensor> inputs;
  for (int i = 0; i < n; ++i) inputs.push_back(iota({2, 3}, gpu(i), double(i + 1)));
  // sum over i of (i + 1) * k = k * n (n + 1) / 2
  const double f = n * (n + 1) / 2.0;
  for (int dest : {0, n - 1}) {
    Tensor s = comm::reduce_add(inputs, dest);
    EXPECT_EQ(s.device(), gpu(dest));
    EXPECT_EQ(s.sizes(), inputs[0].sizes());
    EXPECT_EQ(values(s), iota_values(6, f));
    EXPECT_FALSE(s.is_same(inputs[size_t(dest)]));
  }
  // the inputs are unchanged
  EXPECT_EQ(values(inputs[0]), iota_values(6));
  // default destination: the current device
  cuda::DeviceGuard g(1);
  EXPECT_EQ(comm::reduce_add(inputs).device(), gpu(1));
}

TEST(CudaComm, ReduceAddOfDoublesAndInt64) {
  WICK_REQUIRE_GPUS(2);
  Tensor a = tensor<double>({0.5, 1.25}, TensorOptions().device(gpu(0)));
  Tensor b = tensor<double>({2.0, -4.0}, TensorOptions().device(gpu(1)));
  EXPECT_EQ(values(comm::reduce_add({a, b}, 1)), (std::vector<double>{2.5, -2.75}));
  Tensor x = tensor<int64_t>({1, 2}, TensorOptions().device(gpu(0)));
  Tensor y = tensor<int64_t>({10, 20}, TensorOptions().device(gpu(1)));
  Tensor s = comm::reduce_add({x, y}, 0);
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(values(s), (std::vector<double>{11, 22}));
}

TEST(CudaComm, ReduceAddErrors) {
  WICK_REQUIRE_GPUS(2);
  Tensor a = zeros({2}, TensorOptions().device(gpu(0)));
  Tensor b = zeros({3}, TensorOptions().device(gpu(1)));
  EXPECT_THROW(comm::reduce_add({a, b}, 0), ValueError);                                           // sizes
  EXPECT_THROW(comm::reduce_add({a, zeros({2}, TensorOptions().device(gpu(0)))}, 0), ValueError);  // same GPU
  EXPECT_THROW(comm::reduce_add({a, zeros({2})}, 0), DeviceError);  // a CPU input
  if (cuda::device_count() >= 3) {
    try {
      comm::reduce_add({a, zeros({2}, TensorOptions().device(gpu(1)))}, 2);
      FAIL() << "expected an error";
    } catch (const DeviceError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("[comm.reduce_add] ", 0), 0u) << m;
      EXPECT_NE(m.find("[cuda:0, cuda:1]"), std::string::npos) << m;
    }
  }
}

TEST(CudaComm, ReduceAddCoalescedMatchesPerTensorSums) {
  WICK_REQUIRE_GPUS(2);
  std::vector<std::vector<Tensor>> inputs(2);
  for (int d = 0; d < 2; ++d) {
    inputs[size_t(d)] = {iota({3, 2}, gpu(d), d + 1.0), iota({7}, gpu(d), 1.0, kInt64),
                         iota({4}, gpu(d), 10.0 * (d + 1)), iota({2}, gpu(d), 1.0, kFloat64)};
  }
  for (int64_t buffer : {int64_t(4), int64_t(20), comm::kDefaultBufferSize}) {
    auto out = comm::reduce_add_coalesced(inputs, 0, buffer);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(values(out[0]), iota_values(6, 3.0));
    EXPECT_EQ(values(out[1]), iota_values(7, 2.0));
    EXPECT_EQ(values(out[2]), iota_values(4, 30.0));
    EXPECT_EQ(values(out[3]), iota_values(2, 2.0));
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(out[j].device(), gpu(0));
      EXPECT_EQ(out[j].dtype(), inputs[0][j].dtype());
      EXPECT_EQ(out[j].sizes(), inputs[0][j].sizes());
    }
  }
}

// ---- scatter and gather

TEST(CudaComm, ScatterUnevenBatchAsTorchChunk) {
  WICK_REQUIRE_GPUS(2);
  Tensor x = iota({33, 2}, gpu(0));
  auto parts = comm::scatter(x, {0, 1});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].sizes(), (std::vector<int64_t>{17, 2}));
  EXPECT_EQ(parts[1].sizes(), (std::vector<int64_t>{16, 2}));
  EXPECT_EQ(parts[0].device(), gpu(0));
  EXPECT_EQ(parts[1].device(), gpu(1));
  EXPECT_EQ(values(parts[0]), iota_values(34));
  EXPECT_EQ(values(parts[1]), iota_values(32, 1.0, 34.0));
  // the piece already on its device is a view of the input
  EXPECT_EQ(parts[0].data_ptr(), x.data_ptr());
}

TEST(CudaComm, ScatterExplicitSizesAlongDimOneFromTheCpu) {
  WICK_REQUIRE_GPUS(2);
  Tensor x = iota({2, 5}, Device(kCPU));
  auto parts = comm::scatter(x, {1, 0}, std::vector<int64_t>{1, 4}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].device(), gpu(1));
  EXPECT_EQ(parts[1].device(), gpu(0));
  EXPECT_EQ(values(parts[0]), (std::vector<double>{0, 5}));
  EXPECT_EQ(values(parts[1]), (std::vector<double>{1, 2, 3, 4, 6, 7, 8, 9}));
  EXPECT_THROW(comm::scatter(x, {0, 1}, std::vector<int64_t>{1, 1}, 1), ValueError);  // sum 2, not 5
  EXPECT_THROW(comm::scatter(x, {0, 1}, std::vector<int64_t>{5}, 1), ValueError);     // one size, two devices
}

TEST(CudaComm, ScatterFewerRowsThanDevices) {
  WICK_REQUIRE_GPUS(2);
  auto parts = comm::scatter(iota({1, 3}, gpu(0)), {0, 1});
  ASSERT_EQ(parts.size(), 1u);  // torch.chunk gives one piece
  EXPECT_EQ(values(parts[0]), iota_values(3));
}

TEST(CudaComm, GatherConcatenatesOnTheDestination) {
  WICK_REQUIRE_GPUS(2);
  Tensor a = iota({2, 3}, gpu(0));
  Tensor b = iota({1, 3}, gpu(1), 1.0) + 100.0;
  Tensor g = comm::gather({a, b}, 0, gpu(1));
  EXPECT_EQ(g.device(), gpu(1));
  EXPECT_EQ(values(g), (std::vector<double>{0, 1, 2, 3, 4, 5, 100, 101, 102}));
  Tensor c = iota({2, 2}, gpu(1), 1.0) + 10.0;
  Tensor h = comm::gather({a, c}, 1, Device(kCPU));
  EXPECT_FALSE(h.is_cuda());
  EXPECT_EQ(values(h), (std::vector<double>{0, 1, 2, 10, 11, 3, 4, 5, 12, 13}));
  // default destination: the current device
  {
    cuda::DeviceGuard guard(1);
    EXPECT_EQ(comm::gather({a, b}).device(), gpu(1));
  }
  // scatter then gather is the identity
  Tensor x = iota({33, 4}, gpu(0), 0.25);
  EXPECT_EQ(values(comm::gather(comm::scatter(x, {0, 1}), 0, gpu(0))), values(x));
}

TEST(CudaComm, GatherErrors) {
  WICK_REQUIRE_GPUS(2);
  Tensor a = zeros({2, 3}, TensorOptions().device(gpu(0)));
  EXPECT_THROW(comm::gather({a, zeros({2, 4}, TensorOptions().device(gpu(1)))}, 0, gpu(0)), ValueError);
  EXPECT_THROW(comm::gather({a, zeros({2, 3})}, 0, gpu(0)), DeviceError);
  EXPECT_THROW(comm::gather({}, 0, gpu(0)), ValueError);
}

// ---- streams: the collectives follow work queued on the current streams

TEST(CudaComm, BroadcastAndReduceFollowTheCurrentStreams) {
  WICK_REQUIRE_GPUS(2);
  auto s0 = cuda::Stream::create(0), s1 = cuda::Stream::create(1);
  Tensor big0, big1;
  std::vector<Tensor> out;
  Tensor sum;
  {
    cuda::StreamGuard g0(s0);
    cuda::StreamGuard g1(s1);
    // enough work on s0 that a broadcast not ordered after it would read stale values
    big0 = zeros({1 << 22}, TensorOptions().device(gpu(0)));
    for (int i = 0; i < 20; ++i) big0.add_(1.0);
    out = comm::broadcast(big0, {0, 1});
    big1 = ones({1 << 22}, TensorOptions().device(gpu(1)));
    sum = comm::reduce_add({big0, big1}, 0);
    s0.synchronize();
    s1.synchronize();
  }
  EXPECT_EQ(out[1].max().item<float>(), 20.0f);
  EXPECT_EQ(out[1].min().item<float>(), 20.0f);
  EXPECT_EQ(sum.min().item<float>(), 21.0f);
  EXPECT_EQ(sum.max().item<float>(), 21.0f);
}
