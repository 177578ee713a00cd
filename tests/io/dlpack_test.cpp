// DLPack: export and import of every dtype (the DLPack type codes written out by hand from the
// specification), zero copy both ways, strides and byte offsets, tensors made by hand from a
// std::vector, how often and when deleters run, and the errors. The CUDA tests skip without a GPU.
#include "wick/io/dlpack.h"

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

const std::vector<Dtype> kDtypes = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                    kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

// {code, bits} of each dtype in DLPack (kDLBool is code 6 since DLPack 0.8).
struct DlType {
  int code, bits;
};
DlType expected_dl(Dtype t) {
  switch (t) {
    case kBool:
      return {6, 8};
    case kUInt8:
      return {kDLUInt, 8};
    case kInt8:
      return {kDLInt, 8};
    case kInt16:
      return {kDLInt, 16};
    case kInt32:
      return {kDLInt, 32};
    case kInt64:
      return {kDLInt, 64};
    case kFloat16:
      return {kDLFloat, 16};
    case kBFloat16:
      return {kDLBfloat, 16};
    case kFloat32:
      return {kDLFloat, 32};
    case kFloat64:
      return {kDLFloat, 64};
    default:
      return {-1, -1};
  }
}

// 0, 1, ..., n - 1 in dtype t (0/1 alternating for bool), as a [2, 3] tensor.
Tensor sample(Dtype t, Device d = Device("cpu")) {
  auto v = arange(6.);
  if (t == kBool) v = v.remainder(2.);
  return v.to(t).view({2, 3}).to(d);
}

std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).to_vector<double>(); }

// A DLManagedTensor over a std::vector made here (not by wick), counting its deleter's calls.
struct Foreign {
  DLManagedTensor managed{};
  std::vector<double> data;
  std::vector<int64_t> shape, strides;
  int* deleted;
};

DLManagedTensor* make_foreign(std::vector<double> data, std::vector<int64_t> shape,
                              std::vector<int64_t> strides, uint64_t byte_offset, int* deleted) {
  auto* f = new Foreign;
  f->data = std::move(data);
  f->shape = std::move(shape);
  f->strides = std::move(strides);
  f->deleted = deleted;
  DLTensor& d = f->managed.dl_tensor;
  d.data = f->data.empty() ? nullptr : f->data.data();
  d.device = {kDLCPU, 0};
  d.ndim = int(f->shape.size());
  d.dtype = {kDLFloat, 64, 1};
  d.shape = f->shape.data();
  d.strides = f->strides.empty() ? nullptr : f->strides.data();
  d.byte_offset = byte_offset;
  f->managed.manager_ctx = f;
  f->managed.deleter = [](DLManagedTensor* self) {
    auto* f = static_cast<Foreign*>(self->manager_ctx);
    ++*f->deleted;
    delete f;
  };
  return &f->managed;
}

std::vector<double> iota(int n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = i;
  return v;
}

// Reads the elements of an exported DLTensor by hand, row-major, from data + byte_offset and strides.
std::vector<double> read_export_f64(const DLTensor& d) {
  std::vector<double> out;
  int64_t n = 1;
  for (int i = 0; i < d.ndim; ++i) n *= d.shape[i];
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat, off = 0;
    for (int i = d.ndim - 1; i >= 0; --i) {
      off += (rest % d.shape[i]) * d.strides[i];
      rest /= d.shape[i];
    }
    double v;
    std::memcpy(&v, static_cast<const char*>(d.data) + d.byte_offset + off * 8, 8);
    out.push_back(v);
  }
  return out;
}

template <class E>
void expect_error(const std::function<void()>& f, const std::string& prefix, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an error " << prefix << "... " << part;
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

}  // namespace

TEST(DLPack, ExportEveryDtypeDescribesTheTensor) {
  for (Dtype t : kDtypes) {
    SCOPED_TRACE(::testing::Message() << t);
    Tensor x = sample(t);
    DLManagedTensor* m = to_dlpack(x);
    const DLTensor& d = m->dl_tensor;
    EXPECT_EQ(d.device.device_type, kDLCPU);
    EXPECT_EQ(d.device.device_id, 0);
    EXPECT_EQ(d.ndim, 2);
    EXPECT_EQ(d.shape[0], 2);
    EXPECT_EQ(d.shape[1], 3);
    EXPECT_EQ(d.strides[0], 3);
    EXPECT_EQ(d.strides[1], 1);
    EXPECT_EQ(int(d.dtype.code), expected_dl(t).code);
    EXPECT_EQ(int(d.dtype.bits), expected_dl(t).bits);
    EXPECT_EQ(int(d.dtype.lanes), 1);
    EXPECT_EQ(d.data, x.data_ptr());
    EXPECT_EQ(d.byte_offset, 0u);
    m->deleter(m);
  }
}

TEST(DLPack, RoundTripEveryDtypeSharesMemory) {
  for (Dtype t : kDtypes) {
    SCOPED_TRACE(::testing::Message() << t);
    Tensor x = sample(t);
    Tensor y = from_dlpack(to_dlpack(x));
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.device(), Device("cpu"));
    EXPECT_EQ(y.sizes(), x.sizes());
    EXPECT_EQ(y.strides(), x.strides());
    EXPECT_EQ(y.data_ptr(), x.data_ptr());
    EXPECT_EQ(values(y), values(x));
    // A write through the import is seen by the original.
    y.fill_(1);
    EXPECT_EQ(values(x), std::vector<double>(6, 1.0));
  }
}

TEST(DLPack, ExportOfViewsKeepsStridesAndOffset) {
  // x[i][j] = 6 * i + j, a [4, 6] float64 tensor; views of it by hand.
  Tensor x = arange(24.).to(kFloat64).view({4, 6});
  struct Case {
    Tensor view;
    std::vector<double> expected;
  };
  std::vector<Case> cases = {
      {x.t(), {0, 6, 12, 18, 1, 7, 13, 19, 2, 8, 14, 20, 3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23}},
      {x.narrow(0, 1, 2).narrow(1, 2, 3), {8, 9, 10, 14, 15, 16}},
      {x.slice(1, 1, 6, 2).select(0, 3), {19, 21, 23}},
      {x.select(1, 4).unsqueeze(1).expand({4, 2}), {4, 4, 10, 10, 16, 16, 22, 22}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const Tensor& v = cases[i].view;
    DLManagedTensor* m = to_dlpack(v);
    const DLTensor& d = m->dl_tensor;
    ASSERT_EQ(d.ndim, v.dim());
    for (int k = 0; k < d.ndim; ++k) {
      EXPECT_EQ(d.shape[k], v.size(k));
      EXPECT_EQ(d.strides[k], v.stride(k));
    }
    // Element 0 of the view, within x's memory.
    EXPECT_EQ(static_cast<char*>(d.data) + d.byte_offset,
              static_cast<char*>(x.data_ptr()) + v.storage_offset() * 8);
    EXPECT_EQ(read_export_f64(d), cases[i].expected);
    Tensor back = from_dlpack(m);
    EXPECT_EQ(back.strides(), v.strides());
    EXPECT_EQ(values(back), cases[i].expected);
  }
}

TEST(DLPack, ExportKeepsTheTensorAliveUntilTheDeleter) {
  Tensor x = arange(4.).to(kFloat64);
  const int64_t before = x.use_count();
  DLManagedTensor* m = to_dlpack(x);
  EXPECT_EQ(x.use_count(), before + 1);
  // The export's data outlives every wick handle.
  void* data = x.data_ptr();
  x = Tensor();
  EXPECT_EQ(m->dl_tensor.data, data);
  EXPECT_EQ(read_export_f64(m->dl_tensor), (std::vector<double>{0, 1, 2, 3}));
  m->deleter(m);
}

TEST(DLPack, RoundTripReleasesTheOriginalWhenTheImportGoes) {
  Tensor x = arange(6.).view({2, 3});
  const int64_t before = x.use_count();
  {
    Tensor y = from_dlpack(to_dlpack(x));
    Tensor view = y.t();
    EXPECT_EQ(x.use_count(), before + 1);
    y = Tensor();
    EXPECT_EQ(x.use_count(), before + 1);  // the view still holds the import's memory
  }
  EXPECT_EQ(x.use_count(), before);
}

TEST(DLPack, ForeignTensorIsReadInPlace) {
  int deleted = 0;
  DLManagedTensor* m = make_foreign(iota(6), {2, 3}, {}, 0, &deleted);  // no strides: contiguous
  void* data = m->dl_tensor.data;
  Tensor t = from_dlpack(m);
  EXPECT_EQ(t.dtype(), kFloat64);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(t.data_ptr(), data);
  EXPECT_EQ(values(t), iota(6));
  EXPECT_DOUBLE_EQ(t.sum().item<double>(), 15.0);
  // Writes land in the vector.
  t[1][2].fill_(-1);
  EXPECT_EQ(static_cast<double*>(data)[5], -1.0);
  EXPECT_EQ(deleted, 0);
  t = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, ForeignStridesAndByteOffset) {
  int deleted = 0;
  // Element [i][j] at 3 + 6 * i + 2 * j of 0..23: byte offset 24, strides {6, 2}.
  DLManagedTensor* m = make_foreign(iota(24), {3, 3}, {6, 2}, 3 * sizeof(double), &deleted);
  Tensor t = from_dlpack(m);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{6, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(values(t), (std::vector<double>{3, 5, 7, 9, 11, 13, 15, 17, 19}));
  EXPECT_EQ(values(t.t().contiguous()), (std::vector<double>{3, 9, 15, 5, 11, 17, 7, 13, 19}));
  // A zero stride (broadcast) and a 0-d tensor.
  int deleted2 = 0;
  Tensor b = from_dlpack(make_foreign({7, 8}, {3, 2}, {0, 1}, 0, &deleted2));
  EXPECT_EQ(values(b), (std::vector<double>{7, 8, 7, 8, 7, 8}));
  Tensor s = from_dlpack(make_foreign({2.5}, {}, {}, 0, &deleted2));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_DOUBLE_EQ(s.item<double>(), 2.5);
  // An empty tensor with a null data pointer.
  Tensor e = from_dlpack(make_foreign({}, {0, 3}, {}, 0, &deleted2));
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{0, 3}));
  b = s = e = Tensor();
  EXPECT_EQ(deleted2, 3);
  t = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, DeleterRunsOnceWhenTheLastOwnerGoes) {
  int deleted = 0;
  Tensor t = from_dlpack(make_foreign(iota(12), {3, 4}, {}, 0, &deleted));
  Tensor copy = t;
  Tensor view = t.narrow(1, 1, 2);
  Tensor reshaped = t.view({12});
  Tensor cloned = t.clone();  // a copy of the values, not of the memory
  t = Tensor();
  copy = Tensor();
  reshaped = Tensor();
  EXPECT_EQ(deleted, 0);
  EXPECT_EQ(values(view), (std::vector<double>{1, 2, 5, 6, 9, 10}));
  view = Tensor();
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(values(cloned), iota(12));
  cloned = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, NullDeleterIsAllowed) {
  std::vector<float> data = {1, 2, 3};
  int64_t shape[] = {3};
  DLManagedTensor m{};
  m.dl_tensor.data = data.data();
  m.dl_tensor.device = {kDLCUDAHost, 0};  // pinned host memory reads as cpu
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype = {kDLFloat, 32, 1};
  m.dl_tensor.shape = shape;
  Tensor t = from_dlpack(&m);
  EXPECT_EQ(t.device(), Device("cpu"));
  EXPECT_EQ(t.to_vector<float>(), data);
}

TEST(DLPack, ImportErrorsLeaveTheTensorWithTheCaller) {
  int deleted = 0;
  DLManagedTensor* m = make_foreign(iota(4), {4}, {}, 0, &deleted);
  DLTensor& d = m->dl_tensor;
  d.dtype = {kDLComplex, 64, 1};
  expect_error<TypeError>([&] { from_dlpack(m); }, "[from_dlpack] ", "complex64");
  d.dtype = {kDLFloat, 32, 4};
  expect_error<TypeError>([&] { from_dlpack(m); }, "[from_dlpack] ", "lanes = 4");
  d.dtype = {kDLFloat, 8, 1};
  expect_error<TypeError>([&] { from_dlpack(m); }, "[from_dlpack] ", "float8");
  d.dtype = {kDLUInt, 16, 1};
  expect_error<TypeError>([&] { from_dlpack(m); }, "[from_dlpack] ", "uint16");
  d.dtype = {kDLFloat, 64, 1};
  d.device = {kDLROCM, 0};
  expect_error<DeviceError>([&] { from_dlpack(m); }, "[from_dlpack] ", "ROCm");
  d.device = {kDLVulkan, 0};
  expect_error<DeviceError>([&] { from_dlpack(m); }, "[from_dlpack] ", "Vulkan");
  d.device = {kDLCPU, 0};
  int64_t negative[] = {-1};
  d.strides = negative;
  expect_error<ValueError>([&] { from_dlpack(m); }, "[from_dlpack] ", "");
  d.strides = nullptr;
  d.shape[0] = -4;
  expect_error<ValueError>([&] { from_dlpack(m); }, "[from_dlpack] ", "");
  d.shape[0] = 4;
  expect_error<ValueError>([] { from_dlpack(nullptr); }, "[from_dlpack] ", "null");
  if (!cuda::is_available()) {
    d.device = {kDLCUDA, 0};
    expect_error<DeviceError>([&] { from_dlpack(m); }, "[from_dlpack] ", "");
    d.device = {kDLCPU, 0};
  }
  EXPECT_EQ(deleted, 0);
  Tensor t = from_dlpack(m);  // still whole
  EXPECT_EQ(values(t), iota(4));
  t = Tensor();
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, ExportErrors) {
  expect_error<ValueError>([] { to_dlpack(Tensor()); }, "[to_dlpack] ", "undefined");
  Tensor w = ones({2}).requires_grad_();
  expect_error<Error>([&] { to_dlpack(w); }, "[to_dlpack] ", "detach()");
  DLManagedTensor* m = to_dlpack(w.detach());
  m->deleter(m);
  // Streams do not apply to CPU tensors.
  m = to_dlpack(ones({2}), std::intptr_t(-1));
  m->deleter(m);
}

// ---- CUDA

TEST(DLPackCuda, RoundTripEveryDtypeSharesDeviceMemory) {
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU";
  const int dev = cuda::device_count() - 1;  // not only cuda:0
  for (Dtype t : kDtypes) {
    SCOPED_TRACE(::testing::Message() << t);
    Tensor x = sample(t, Device(kCUDA, dev));
    DLManagedTensor* m = to_dlpack(x);
    EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(m->dl_tensor.device.device_id, dev);
    EXPECT_EQ(m->dl_tensor.data, x.data_ptr());
    EXPECT_EQ(int(m->dl_tensor.dtype.code), expected_dl(t).code);
    Tensor y = from_dlpack(m);
    EXPECT_EQ(y.device(), Device(kCUDA, dev));
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.data_ptr(), x.data_ptr());
    EXPECT_EQ(values(y), values(sample(t)));
    y.fill_(1);
    EXPECT_EQ(values(x), std::vector<double>(6, 1.0));
  }
}

TEST(DLPackCuda, ViewsAndStreams) {
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU";
  Tensor x = arange(24.).to(kFloat64).view({4, 6}).cuda();
  Tensor v = x.narrow(0, 1, 2).narrow(1, 2, 3);
  Tensor y = from_dlpack(to_dlpack(v));
  EXPECT_EQ(y.strides(), v.strides());
  EXPECT_EQ(y.data_ptr(), v.data_ptr());
  EXPECT_EQ(values(y), (std::vector<double>{8, 9, 10, 14, 15, 16}));

  // A consumer on another stream: work queued on the producer's stream before the export is
  // done before the consumer's work on its stream starts.
  auto big = full({1 << 22}, 1.0, Device("cuda"));
  for (int i = 0; i < 8; ++i) big.add_(1.0);  // 9.0 everywhere once done
  auto s = cuda::Stream::create();
  DLManagedTensor* m = to_dlpack(big, s);
  Tensor total;
  {
    cuda::StreamGuard g(s);
    total = from_dlpack(m).sum(kFloat64);  // exact: float32 partial sums could round
  }
  s.synchronize();
  EXPECT_DOUBLE_EQ(total.item<double>(), 9.0 * (1 << 22));
  // The specification's integers: -1 (none), 1 (legacy default), 2 (per-thread default), a stream.
  for (std::intptr_t st :
       {std::intptr_t(-1), std::intptr_t(1), std::intptr_t(2), reinterpret_cast<std::intptr_t>(s.native())}) {
    DLManagedTensor* mm = to_dlpack(big, st);
    mm->deleter(mm);
  }
  cuda::synchronize();
  expect_error<ValueError>([&] { to_dlpack(big, std::intptr_t(0)); }, "[to_dlpack] ", "ambiguous");
  if (cuda::device_count() >= 2) {
    auto other = cuda::Stream::create(1);
    expect_error<ValueError>([&] { to_dlpack(big, other); }, "[to_dlpack] ", "cuda:1");
  }
}
