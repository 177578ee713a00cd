// Conv2d on CUDA through cuDNN 9's legacy convolution API: the forward
// (cudnnConvolutionForward), dx (cudnnConvolutionBackwardData) and dw
// (cudnnConvolutionBackwardFilter); db is dy summed over N, H and W. These fill the CUDA kernel
// table's conv2d entries (src/cuda/kernel_table.cpp). Built only with cuDNN (WICK_HAVE_CUDNN);
// without it this file is empty and the CUDA table takes core's generic convolution.
//
// Layouts: descriptors take the tensors' own strides, so a sliced or transposed input is read
// in place (an overlapping or zero-stride one, as a broadcast dy, is copied first). When cuDNN
// refuses a problem as laid out (no algorithm, a "not supported" status, a misaligned pointer,
// "bad parameter" for strides it will not take), the inputs are copied packed and the call is
// tried once more; when it refuses that too, or the dtype is not one cuDNN has (integers), or a
// count passes its 32-bit limits, the generic implementation (im2col + GEMM, core/conv.h) does.
// Outputs (y, dx, dw) are new packed NCHW tensors; the filter is always described packed NCHW.
//
// Algorithms come from cuDNN's heuristics (the _v7 queries; no benchmarking): the first result
// that succeeds with an allowed math type and a workspace of at most 256 MiB. The descriptors
// and that choice are built once per problem (shapes, strides, dtype, parameters, math) and
// cached, as blas.cpp caches its matmul plans: the queries cost tens of microseconds of host
// time. PyTorch instead tries each result in turn and moves on when its workspace cannot be
// allocated; a fixed cap keeps the choice a function of the problem alone, so it can be cached.
//
// The handle (one per device, shared with the other cuDNN paths) is cudnn_common.h's.
#ifdef WICK_HAVE_CUDNN

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <cudnn.h>

#include "core/conv.h"
#include "cuda/cuda_check.h"
#include "cuda/cudnn_common.h"
#include "cuda/cudnn_conv.h"
#include "cuda/runtime.h"
#include "cuda/tool_marks.h"
#include "cuda/word_hash.h"
#include "core/backend_settings.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::detail::gpu {

namespace {

#define WICK_CUDNN_CHECK(expr) WICK_CUDNN_OP_CHECK("conv2d", expr)

// cuDNN's answers that mean "not this problem as laid out" rather than a failure: "not
// supported" (a layout, a shape, this GPU), a misaligned pointer, and, for tensors with strides
// other than packed ones, "bad parameter". Packed copies or the generic implementation may do.
bool refused(cudnnStatus_t st, bool strided) {
  return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED ||
         st == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER ||
         (strided && CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM);
}

constexpr int64_t kIntMax = INT_MAX;  // the legacy API counts in int
constexpr size_t kMaxWorkspaceBytes = size_t(256) << 20;

bool supported(Dtype dt) { return dt == kFloat32 || dt == kFloat64 || dt == kFloat16 || dt == kBFloat16; }

// The math cuDNN may use. float32 follows set_float32_matmul_precision: at "highest" (the
// default) FMA math, no TF32, so that CUDA results stay within float32 rounding of the CPU's; at
// "high" or "medium" CUDNN_DEFAULT_MATH, which lets cuDNN use TF32 tensor cores as PyTorch does
// under cudnn.allow_tf32. PyTorch turns TF32 on for convolutions by default and off for matmuls;
// wick keeps one switch for both, off by default. CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION lost:
// it also lets cuDNN round float32 operands to float16, a larger loss than TF32's.
// float16 and bfloat16 use tensor cores (accumulating in float); float64 the default math.
cudnnMathType_t math_type(Dtype dt) {
  if (dt == kFloat32) return float32_matmul_precision_level() == 0 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  if (dt == kFloat16 || dt == kBFloat16) return CUDNN_TENSOR_OP_MATH;
  return CUDNN_DEFAULT_MATH;
}

// A 4-D tensor as cuDNN is told about it.
struct Layout {
  int64_t sizes[4], strides[4];
};

// The layout to describe t with, or false when t must be copied first (a zero stride,
// overlapping elements, offsets past int). A packed NCHW or NHWC tensor gets the packed strides
// (size-1 dims included, whatever their strides, so that cuDNN recognizes the layout); any other
// layout without overlap (a slice, a transpose) keeps its strides, size-1 dims outermost.
bool describe(const Tensor& t, Layout& l) {
  const int64_t c = t.size(1), h = t.size(2), w = t.size(3);
  const int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {h * w * c, 1, w * c, c};
  auto follows = [&](const int64_t* packed) {
    for (int i = 0; i < 4; ++i)
      if (t.size(i) != 1 && t.stride(i) != packed[i]) return false;
    return true;
  };
  for (int i = 0; i < 4; ++i) l.sizes[i] = t.size(i);
  const int64_t* packed = follows(nchw) ? nchw : follows(nhwc) ? nhwc : nullptr;
  if (packed) {
    std::copy(packed, packed + 4, l.strides);
    return t.numel() <= kIntMax;
  }
  // Dims by increasing stride: each must step past everything the dims before it span.
  std::array<int, 4> order{0, 1, 2, 3};
  std::sort(order.begin(), order.end(), [&](int a, int b) { return t.stride(a) < t.stride(b); });
  int64_t extent = 1;  // elements spanned by the dims seen so far
  for (int d : order) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) < extent || t.stride(d) > kIntMax) return false;
    extent += t.stride(d) * (t.size(d) - 1);
    if (extent > kIntMax) return false;
  }
  for (int i = 0; i < 4; ++i) l.strides[i] = t.size(i) == 1 ? extent : t.stride(i);
  return true;
}

// Whether describe() gave l packed NCHW or NHWC strides.
bool is_packed(const Layout& l) {
  const int64_t *s = l.sizes, *st = l.strides;
  const bool nchw = st[3] == 1 && st[2] == s[3] && st[1] == s[2] * s[3] && st[0] == s[1] * s[2] * s[3];
  const bool nhwc = st[1] == 1 && st[3] == s[1] && st[2] == s[3] * s[1] && st[0] == s[2] * s[3] * s[1];
  return nchw || nhwc;
}

enum class Direction : int64_t { kForward, kBackwardData, kBackwardFilter };
using enum Direction;

// Everything the descriptors and the algorithm depend on; all int64 so the key has no padding.
struct PlanKey {
  int64_t direction, device, dtype, math;
  Layout x, y;      // x or dx; y or dy
  int64_t w[4];     // w or dw, packed NCHW
  int64_t conv[7];  // padding, stride, dilation (h, w), groups
  bool operator==(const PlanKey& o) const { return std::memcmp(this, &o, sizeof *this) == 0; }
};
static_assert(sizeof(PlanKey) == 31 * sizeof(int64_t));

// The descriptors of one problem and the algorithm chosen for it.
struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;  // its math type is the chosen algorithm's
  int algo = -1;                                // -1: cuDNN has no algorithm for this problem
  size_t workspace = 0;                         // bytes

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

// Describes l; false when cuDNN refuses its strides.
bool set_tensor(cudnnTensorDescriptor_t desc, cudnnDataType_t type, const Layout& l) {
  int sizes[4], strides[4];
  for (int i = 0; i < 4; ++i) sizes[i] = int(l.sizes[i]), strides[i] = int(l.strides[i]);
  const cudnnStatus_t st = cudnnSetTensorNdDescriptor(desc, type, 4, sizes, strides);
  if (st == CUDNN_STATUS_SUCCESS) return true;
  if (refused(st, !is_packed(l))) return false;
  cudnn_fail("conv2d", st, "cudnnSetTensorNdDescriptor", __FILE__, __LINE__);
}

// Takes the first heuristic result that succeeds, with an allowed math type and a workspace
// within the cap; p.algo stays -1 when none does. The convolution descriptor keeps that result's
// math type: cuDNN chooses its kernels from the algorithm and the math type together.
template <class Perf, class WorkspaceSize>
void pick(Plan& p, const std::vector<Perf>& perf, int found, cudnnMathType_t math,
          WorkspaceSize workspace_size) {
  for (int i = 0; i < found; ++i) {
    const Perf& r = perf[size_t(i)];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    cudnnMathType_t m = r.mathType;
    if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && math != m) continue;
    if (math == CUDNN_FMA_MATH) {  // float32 at "highest": nothing that may use TF32
      if (m != CUDNN_FMA_MATH && m != CUDNN_DEFAULT_MATH) continue;
      m = CUDNN_FMA_MATH;
    }
    WICK_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv, m));
    size_t bytes = 0;
    if (workspace_size(r.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxWorkspaceBytes) continue;
    p.algo = int(r.algo);
    p.workspace = bytes;
    return;
  }
}

// The status of a heuristic query: true when it answered, false when cuDNN refuses the problem.
bool answered(cudnnStatus_t st, bool strided, const char* call, int line) {
  if (st == CUDNN_STATUS_SUCCESS) return true;
  if (refused(st, strided)) return false;
  cudnn_fail("conv2d", st, call, __FILE__, line);
}

std::shared_ptr<const Plan> make_plan(const PlanKey& k, CudnnHandle& dh) {
  auto p = std::make_shared<Plan>();
  const Dtype dt = Dtype(k.dtype);
  const cudnnDataType_t type = cudnn_data_type(dt);
  const bool strided = !is_packed(k.x) || !is_packed(k.y);
  WICK_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
  WICK_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
  if (!set_tensor(p->x, type, k.x) || !set_tensor(p->y, type, k.y)) return p;  // algo -1: refused
  WICK_CUDNN_CHECK(cudnnCreateFilterDescriptor(&p->w));
  WICK_CUDNN_CHECK(cudnnSetFilter4dDescriptor(p->w, type, CUDNN_TENSOR_NCHW, int(k.w[0]), int(k.w[1]),
                                              int(k.w[2]), int(k.w[3])));
  WICK_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
  const int64_t* c = k.conv;
  WICK_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(p->conv, int(c[0]), int(c[1]), int(c[2]), int(c[3]),
                                                   int(c[4]), int(c[5]), CUDNN_CROSS_CORRELATION,
                                                   dt == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
  WICK_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv, int(c[6])));
  const auto math = cudnnMathType_t(k.math);
  WICK_CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, math));

  // The output size is wick's (conv_out_size); cuDNN has to agree.
  int on = 0, oc = 0, oh = 0, ow = 0;
  WICK_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &on, &oc, &oh, &ow));
  WICK_CHECK(on == k.y.sizes[0] && oc == k.y.sizes[1] && oh == k.y.sizes[2] && ow == k.y.sizes[3],
             DeviceError, "conv2d", "cuDNN computes an output of [", on, ", ", oc, ", ", oh, ", ", ow,
             "] where wick expects [", k.y.sizes[0], ", ", k.y.sizes[1], ", ", k.y.sizes[2], ", ",
             k.y.sizes[3], "]");

  std::lock_guard<std::mutex> lock(dh.mu);
  cudnnHandle_t h = dh.handle;
  int count = 0, found = 0;
  switch (Direction(k.direction)) {
    case kForward: {
      WICK_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(count, 1)));
      if (!answered(cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->w, p->conv, p->y, count, &found,
                                                           perf.data()),
                    strided, "cudnnGetConvolutionForwardAlgorithm_v7", __LINE__))
        break;
      pick(*p, perf, found, math, [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->w, p->conv, p->y, a, bytes);
      });
      break;
    }
    case kBackwardData: {
      WICK_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(count, 1)));
      if (!answered(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w, p->y, p->conv, p->x, count, &found,
                                                                perf.data()),
                    strided, "cudnnGetConvolutionBackwardDataAlgorithm_v7", __LINE__))
        break;
      pick(*p, perf, found, math, [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w, p->y, p->conv, p->x, a, bytes);
      });
      break;
    }
    case kBackwardFilter: {
      WICK_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(count, 1)));
      if (!answered(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x, p->y, p->conv, p->w, count, &found,
                                                                  perf.data()),
                    strided, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", __LINE__))
        break;
      pick(*p, perf, found, math, [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->conv, p->w, a, bytes);
      });
      break;
    }
  }
  return p;
}

// The cached plan of key (built on first use). Callers hold a plan by shared_ptr, so dropping
// the whole cache (when a program cycles through very many shapes) frees no plan in use. The
// cache is never destroyed: at exit cuDNN may be gone before wick's statics.
std::shared_ptr<const Plan> cached_plan(const PlanKey& key, CudnnHandle& dh) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<PlanKey, std::shared_ptr<const Plan>, WordHash<PlanKey>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  if (cache->size() >= 4096) cache->clear();
  std::shared_ptr<const Plan> p = make_plan(key, dh);
  cache->emplace(key, p);
  return p;
}

// The operands of one call, as cuDNN reads or writes them: x (or dx), w (or dw), y (or dy).
struct Operands {
  Tensor x, w, y;
};

// Whether t is packed NCHW at a 16-byte aligned address, as the allocator's tensors are.
bool is_plain(const Tensor& t) {
  return t.is_contiguous() && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// One direction on the current stream of the operands' device (the caller's CudaDeviceScope).
// False when cuDNN refuses the problem as laid out; other failures throw.
bool run(Direction dir, const Operands& o, const Conv2dParams& p) {
  PlanKey key{};
  if (!describe(o.x, key.x) || !describe(o.y, key.y)) return false;
  const int device = o.x.device().index();
  const Dtype dt = o.x.dtype();
  key.direction = int64_t(dir);
  key.device = device;
  key.dtype = int64_t(dt);
  key.math = int64_t(math_type(dt));
  for (int i = 0; i < 4; ++i) key.w[i] = o.w.size(i);
  const int64_t conv[7] = {p.padding[0],  p.padding[1],  p.stride[0], p.stride[1],
                           p.dilation[0], p.dilation[1], p.groups};
  std::copy(conv, conv + 7, key.conv);

  CudnnHandle& dh = cudnn_handle(device, "conv2d");
  const std::shared_ptr<const Plan> plan = cached_plan(key, dh);
  if (plan->algo < 0) return false;
  // From the caching allocator on the current stream; freed when this returns, its block then
  // reused only by work queued after this call on the same stream.
  Tensor ws;
  if (plan->workspace > 0)
    ws = wick::empty({int64_t(plan->workspace)}, TensorOptions(kUInt8).device(o.x.device()));
  void* ws_ptr = ws.defined() ? ws.data_ptr() : nullptr;
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;  // the scale type of float, float16 and bfloat16 data
  const void* one = dt == kFloat64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = dt == kFloat64 ? static_cast<const void*>(&zero_d) : &zero_f;

  cudaStream_t stream = current_cuda_stream(device);
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  const char* call = "";
  {
    std::lock_guard<std::mutex> lock(dh.mu);
    WICK_CUDNN_CHECK(cudnnSetStream(dh.handle, stream));
    switch (dir) {
      case kForward:
        call = "cudnnConvolutionForward";
        st = cudnnConvolutionForward(dh.handle, one, plan->x, o.x.data_ptr(), plan->w, o.w.data_ptr(),
                                     plan->conv, cudnnConvolutionFwdAlgo_t(plan->algo), ws_ptr,
                                     plan->workspace, zero, plan->y, o.y.data_ptr());
        break;
      case kBackwardData:
        call = "cudnnConvolutionBackwardData";
        st = cudnnConvolutionBackwardData(dh.handle, one, plan->w, o.w.data_ptr(), plan->y, o.y.data_ptr(),
                                          plan->conv, cudnnConvolutionBwdDataAlgo_t(plan->algo), ws_ptr,
                                          plan->workspace, zero, plan->x, o.x.data_ptr());
        break;
      case kBackwardFilter:
        call = "cudnnConvolutionBackwardFilter";
        st = cudnnConvolutionBackwardFilter(dh.handle, one, plan->x, o.x.data_ptr(), plan->y, o.y.data_ptr(),
                                            plan->conv, cudnnConvolutionBwdFilterAlgo_t(plan->algo), ws_ptr,
                                            plan->workspace, zero, plan->w, o.w.data_ptr());
        break;
    }
  }
  // The inputs a retry would copy: x and w forward, w and dy for dx, x and dy for dw.
  const bool strided = (dir != kBackwardData && !is_plain(o.x)) ||
                       (dir != kBackwardFilter && !is_plain(o.w)) || (dir != kForward && !is_plain(o.y));
  if (refused(st, strided)) return false;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail("conv2d", st, call, __FILE__, __LINE__);
  WICK_CUDA_AFTER_LAUNCH("conv2d", stream);
  const Tensor& written = dir == kForward ? o.y : dir == kBackwardData ? o.x : o.w;
  mark_initialized(written.data_ptr(), size_t(written.numel() * written.element_size()), stream);
  return true;
}

// t packed (NCHW) at a 16-byte aligned address: t itself when it is one, else a copy.
Tensor packed(const Tensor& t) { return is_plain(t) ? t : t.clone(MemoryFormat::Contiguous); }

// run, tried once more with packed copies of the inputs when cuDNN refuses them as they are.
// The outputs are fresh, packed tensors already.
bool run_or_repack(Direction dir, Operands o, const Conv2dParams& p) {
  if (run(dir, o, p)) return true;
  bool changed = false;
  auto repack = [&](Tensor& t) {
    Tensor q = packed(t);
    changed = changed || !q.is_same(t);
    t = q;
  };
  if (dir != kBackwardData) repack(o.x);
  if (dir != kBackwardFilter) repack(o.w);
  if (dir != kForward) repack(o.y);
  return changed && run(dir, o, p);
}

// Whether cuDNN may take the problem at all: its dtypes, nothing empty, counts within int.
bool usable(const Tensor& x, const Tensor& w, const Conv2dParams& p) {
  if (!supported(x.dtype()) || w.dtype() != x.dtype() || x.dim() != 4 || w.dim() != 4) return false;
  const int64_t oh = conv_out_size(x.size(2), w.size(2), p.stride[0], p.padding[0], p.dilation[0]);
  const int64_t ow = conv_out_size(x.size(3), w.size(3), p.stride[1], p.padding[1], p.dilation[1]);
  for (int64_t n : {x.numel(), w.numel(), x.size(0) * w.size(0) * oh * ow})
    if (n <= 0 || n > kIntMax) return false;
  for (int i = 0; i < 2; ++i)
    if (p.stride[i] > kIntMax || p.padding[i] > kIntMax || p.dilation[i] > kIntMax) return false;
  return p.groups <= kIntMax;
}

}  // namespace

Tensor cudnn_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  if (!usable(x, w, p)) return generic_conv2d_forward(x, w, b, p);
  CudaDeviceScope scope(x.device().index());
  const int64_t oh = conv_out_size(x.size(2), w.size(2), p.stride[0], p.padding[0], p.dilation[0]);
  const int64_t ow = conv_out_size(x.size(3), w.size(3), p.stride[1], p.padding[1], p.dilation[1]);
  Tensor y = wick::empty({x.size(0), w.size(0), oh, ow}, x.options());
  if (!run_or_repack(kForward, {x, w.contiguous(), y}, p)) return generic_conv2d_forward(x, w, b, p);
  if (b.defined()) y.add_(b.view({1, w.size(0), 1, 1}));
  return y;
}

std::array<Tensor, 3> cudnn_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                            const Conv2dParams& p, std::array<bool, 3> needs) {
  if (!usable(x, w, p) || dy.dtype() != x.dtype()) return generic_conv2d_backward(dy, x, w, p, needs);
  CudaDeviceScope scope(x.device().index());
  std::array<Tensor, 3> r;
  if (needs[0]) {
    Tensor dx = wick::empty(x.sizes(), x.options());
    r[0] = run_or_repack(kBackwardData, {dx, w.contiguous(), dy}, p)
               ? dx
               : generic_conv2d_backward(dy, x, w, p, {true, false, false})[0];
  }
  if (needs[1]) {
    Tensor dw = wick::empty(w.sizes(), w.options());
    r[1] = run_or_repack(kBackwardFilter, {x, dw, dy}, p)
               ? dw
               : generic_conv2d_backward(dy, x, w, p, {false, true, false})[1];
  }
  if (needs[2]) r[2] = dy.sum({0, 2, 3});
  return r;
}

}  // namespace wick::detail::gpu

#endif  // WICK_HAVE_CUDNN
