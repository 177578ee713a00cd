// Matrix products on CUDA through cuBLASLt, for float16, bfloat16, float32 and float64
// (integers go to gemm.cu's kernel).
//
// wick's GEMM is row-major; cuBLASLt is column-major. A row-major matrix with row stride ld
// is, read column-major with the same ld, its transpose; so C = A @ B is computed as
// C^T = B^T @ A^T: cuBLASLt's first operand is our b, its second our a, and no data moves.
//
// Host cost: building descriptors and asking the heuristic for an algorithm take tens of
// microseconds, so the result is cached per problem (shape, strides, dtype, alignment,
// precision). Alternatives that lost: cublasGemmStridedBatchedEx (cuBLAS picks the algorithm
// itself, but offers no per-stream workspace control and the same kernels); asking the
// heuristic on every call (PyTorch's way, ~20 us of host time per matmul).
#include "cuda/blas.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/tensor_ops.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/op_kernels.h"
#include "cuda/runtime.h"
#include "cuda/tool_marks.h"
#include "cuda/word_hash.h"
#include "core/backend_settings.h"
#include "wick/error.h"

namespace wick::detail::gpu {

namespace blas {

void cublas_fail(cublasStatus_t status, const char* op, const char* expr, const char* file, int line) {
  raise<DeviceError>(op, "cuBLAS error: ", cublasLtGetStatusName(status), " (", cublasLtGetStatusString(status),
                     ") (", file, ":", line, ": ", expr, ")");
}

cublasLtHandle_t handle(int device) {
  static std::array<std::once_flag, kMaxCudaDevices> once;
  static std::array<cublasLtHandle_t, kMaxCudaDevices> handles{};
  std::call_once(once[size_t(device)], [device] {
    CudaDeviceScope scope(device);
    RelaxedCaptureMode relaxed;
    WICK_CUBLAS_CHECK(cublasLtCreate(&handles[size_t(device)]), "matmul");
  });
  return handles[size_t(device)];
}

// 32 MiB, what PyTorch gives cuBLASLt on Hopper: the fastest fp16/bf16 kernels at 8192 use
// several MiB for split-K partials.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

Workspace workspace(int device, cudaStream_t stream) {
  static std::mutex mu;
  static std::unordered_map<cudaStream_t, void*> spaces[kMaxCudaDevices];
  std::lock_guard<std::mutex> lock(mu);
  void*& p = spaces[device][stream];
  if (!p) {
    CudaDeviceScope scope(device);
    RelaxedCaptureMode relaxed;  // kept for the process, not part of any graph
    WICK_CUDA_CHECK(cudaMalloc(&p, kWorkspaceBytes), "matmul");
  }
  return {p, kWorkspaceBytes};
}

}  // namespace blas

namespace {

// Everything the descriptors and the algorithm depend on; all int64 so the key has no padding.
struct PlanKey {
  int64_t device, dtype, precision, trans_a, trans_b, m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c,
      align_a, align_b, align_c, bias;
  bool operator==(const PlanKey& o) const { return std::memcmp(this, &o, sizeof *this) == 0; }
};

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our b), B (our a), C
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

void destroy(Plan& p) {
  if (p.op) cublasLtMatmulDescDestroy(p.op);
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
}

// The largest power of two up to 16 dividing the address and every step between matrices.
int64_t alignment(const void* ptr, int64_t ld, int64_t stride, int64_t elem) {
  uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(ptr)) | uint64_t(ld * elem) | uint64_t(stride * elem) | 16;
  return int64_t(bits & (~bits + 1));
}

cudaDataType_t data_type(Dtype t) {
  switch (t) {
    case kFloat16: return CUDA_R_16F;
    case kBFloat16: return CUDA_R_16BF;
    case kFloat32: return CUDA_R_32F;
    default: return CUDA_R_64F;
  }
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  WICK_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld), "matmul");
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    WICK_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                      "matmul");
    WICK_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
        "matmul");
  }
  return l;
}

Plan make_plan(const PlanKey& key, cublasLtHandle_t h, size_t workspace_bytes) {
  const Dtype dt = Dtype(key.dtype);
  const cudaDataType_t type = data_type(dt);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (dt == kFloat64) {
    compute = CUBLAS_COMPUTE_64F;
    scale = CUDA_R_64F;
  } else if (dt == kFloat32 && key.precision > 0) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  Plan p;
  try {
    WICK_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, compute, scale), "matmul");
    const cublasOperation_t ta = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our b
    const cublasOperation_t tb = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    WICK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "matmul");
    WICK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "matmul");
    if (key.bias) {  // 1: one value per row of cuBLASLt's column-major D (per column of ours);
      // 2 (3): sums over k of cuBLASLt's B, our a (of its A, our b); 4: 1, then GELU, the
      // value before it kept in the auxiliary matrix
      const cublasLtEpilogue_t epilogue = key.bias == 1   ? CUBLASLT_EPILOGUE_BIAS
                                          : key.bias == 2 ? CUBLASLT_EPILOGUE_BGRADB
                                          : key.bias == 3 ? CUBLASLT_EPILOGUE_BGRADA
                                                          : CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
      WICK_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "matmul");
    }
    // Stored shapes, column-major: our b is n x k (k x n when transposed), our a k x m (m x k).
    p.a = key.trans_b ? make_layout(type, key.k, key.n, key.ldb, key.batch, key.stride_b)
                      : make_layout(type, key.n, key.k, key.ldb, key.batch, key.stride_b);
    p.b = key.trans_a ? make_layout(type, key.m, key.k, key.lda, key.batch, key.stride_a)
                      : make_layout(type, key.k, key.m, key.lda, key.batch, key.stride_a);
    p.c = make_layout(type, key.n, key.m, key.ldc, key.batch, key.stride_c);

    cublasLtMatmulPreference_t pref = nullptr;
    WICK_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref), "matmul");
    auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, uint64_t v) {
      WICK_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v), "matmul");
    };
    const uint32_t align[] = {uint32_t(key.align_b), uint32_t(key.align_a), uint32_t(key.align_c)};
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    try {
      set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes);
      // No split-K over a short k: its partial products then cost less than the extra kernel
      // that adds them up (docs/design.md, "GEMM").
      static const int64_t no_split_max_k = [] {
        const char* v = std::getenv("WICK_GEMM_NO_SPLIT_K_MAX");
        return v && *v ? std::atoll(v) : int64_t(256);
      }();
      for (auto [attr, v] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align[0]},
                             std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align[1]},
                             std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align[2]},
                             std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align[2]}}) {
        uint32_t v32 = v;
        WICK_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v32, sizeof v32), "matmul");
      }
      auto set_reduction = [&](uint32_t mask) {
        WICK_CUBLAS_CHECK(
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask),
            "matmul");
      };
      if (key.k <= no_split_max_k) set_reduction(CUBLASLT_REDUCTION_SCHEME_NONE);
      st = cublasLtMatmulAlgoGetHeuristic(h, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
      if (key.k <= no_split_max_k && (st != CUBLAS_STATUS_SUCCESS || found == 0)) {  // none without split-K
        set_reduction(CUBLASLT_REDUCTION_SCHEME_MASK);
        found = 0;
        st = cublasLtMatmulAlgoGetHeuristic(h, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
      }
    } catch (...) {
      cublasLtMatmulPreferenceDestroy(pref);
      throw;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (key.bias >= 2 && (st != CUBLAS_STATUS_SUCCESS || found == 0)) {  // no such algorithm: the
      destroy(p);                                                        // caller sums instead
      return Plan{};
    }
    WICK_CUBLAS_CHECK(st, "matmul");
    WICK_CHECK(found > 0, NotImplementedError, "matmul", "cuBLASLt has no algorithm for ", dt, " ", key.m, "x",
               key.k, " @ ", key.k, "x", key.n, " (batch ", key.batch, ")");
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  } catch (...) {
    destroy(p);
    throw;
  }
  return p;
}

// The cached plan of key (built on first use). Plans live for the process; the cache is
// dropped whole if a program cycles through very many shapes.
const Plan& cached_plan(const PlanKey& key, cublasLtHandle_t h, size_t workspace_bytes) {
  static std::mutex mu;
  static std::unordered_map<PlanKey, Plan, WordHash<PlanKey>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 4096) {
    for (auto& [k, p] : cache) destroy(p);
    cache.clear();
  }
  return cache.emplace(key, make_plan(key, h, workspace_bytes)).first->second;
}

void lt_gemm(const GemmArgs& g, int64_t batch, const char* a, const char* b, char* c) {
  const int device = g.c.device().index();
  const Dtype dt = g.c.dtype();
  const int64_t es = element_size(dt);
  cudaStream_t stream = current_cuda_stream(device);
  cublasLtHandle_t h = blas::handle(device);
  const blas::Workspace ws = blas::workspace(device, stream);
  const int64_t sa = batch > 1 ? g.stride_a : 0, sb = batch > 1 ? g.stride_b : 0, sc = batch > 1 ? g.stride_c : 0;
  PlanKey key{device, int64_t(dt), dt == kFloat32 ? float32_matmul_precision_level() : 0,
              g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, batch, sa, sb, sc,
              alignment(a, g.lda, sa, es), alignment(b, g.ldb, sb, es), alignment(c, g.ldc, sc, es),
              g.bias.defined() ? 1 : 0};
  const bool sums = g.operand_sums != 0 && batch == 1 && g.sums.defined() && !g.bias.defined() && g.beta == 0;
  if (sums) key.bias = 1 + g.operand_sums;
  const bool gelu = g.gelu_aux.defined() && g.bias.defined() && batch == 1;
  if (gelu) key.bias = 4;
  const Plan* pp = &cached_plan(key, h, ws.bytes);
  if (gelu && !pp->op) return;  // no GELU epilogue for this problem: the caller applies it
  if (sums && !pp->op) {  // the library has no bias-gradient algorithm here: a plain GEMM
    key.bias = 0;
    pp = &cached_plan(key, h, ws.bytes);
  }
  const Plan& p = *pp;
  const void* epilogue_ptr = nullptr;
  if (g.bias.defined()) epilogue_ptr = g.bias.data_ptr();
  else if (key.bias >= 2) epilogue_ptr = g.sums.data_ptr();
  const float alpha_f = float(g.alpha), beta_f = float(g.beta);
  const void* alpha = dt == kFloat64 ? static_cast<const void*>(&g.alpha) : &alpha_f;
  const void* beta = dt == kFloat64 ? static_cast<const void*>(&g.beta) : &beta_f;
  if (epilogue_ptr) {
    // The bias address lives in the plan's (shared) descriptor: set and used under one lock.
    static std::mutex bias_mu;
    std::lock_guard<std::mutex> lock(bias_mu);
    const void* bias = epilogue_ptr;
    WICK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                      "matmul");
    if (gelu) {  // the auxiliary matrix is laid out as c
      void* aux = g.gelu_aux.data_ptr();
      const int64_t aux_ld = g.ldc;
      WICK_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux), "matmul");
      WICK_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld),
          "matmul");
    }
    WICK_CUBLAS_CHECK(cublasLtMatmul(h, p.op, alpha, b, p.a, a, p.b, beta, c, p.c, c, p.c, &p.algo, ws.ptr,
                                     p.workspace, stream),
                      "matmul");
  } else {
    WICK_CUBLAS_CHECK(cublasLtMatmul(h, p.op, alpha, b, p.a, a, p.b, beta, c, p.c, c, p.c, &p.algo, ws.ptr,
                                     p.workspace, stream),
                      "matmul");
  }
  WICK_CUDA_AFTER_LAUNCH("matmul", stream);
  if (key.bias == 2 || key.bias == 3) {
    mark_initialized(g.sums.data_ptr(), size_t(g.sums.numel() * es), stream);
    if (g.sums_done) *g.sums_done = true;
  }
  if (gelu) {
    mark_initialized(g.gelu_aux.data_ptr(), size_t(g.gelu_aux.numel() * es), stream);
    if (g.gelu_done) *g.gelu_done = true;
  }
  // c's rows: n elements every ldc, batch items every sc. One range when they are dense.
  const int64_t rows = batch * g.m;
  if (g.ldc == g.n && (batch == 1 || sc == g.m * g.ldc)) mark_initialized(c, size_t(rows * g.n * es), stream);
  else if (batch == 1) mark_initialized(c, size_t(((g.m - 1) * g.ldc + g.n) * es), stream);
}

}  // namespace

void gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const Dtype dt = g.c.dtype();
  if (!is_floating_point(dt)) return gemm_integer(g);
  CudaDeviceScope scope(g.c.device().index());
  if (g.k == 0) {  // no products: beta * c (beta == 0 ignores c, nan included)
    Tensor c = g.c;
    if (g.beta == 0) fill_values(c, 0);
    else c.mul_(g.beta);
    return;
  }
  const char* a = static_cast<const char*>(g.a.data_ptr());
  const char* b = static_cast<const char*>(g.b.data_ptr());
  char* c = static_cast<char*>(g.c.data_ptr());
  // A broadcast operand (batch stride 0) is not a documented cuBLASLt layout: one call per item.
  const bool broadcast = g.batch > 1 && (g.stride_a == 0 || g.stride_b == 0);
  if (!g.gelu_aux.defined() && gemm_small_f32(g)) return;  // small float32 products: wick's own kernel
  if (!broadcast) return lt_gemm(g, g.batch, a, b, c);
  const int64_t es = element_size(dt);
  for (int64_t i = 0; i < g.batch; ++i)
    lt_gemm(g, 1, a + i * g.stride_a * es, b + i * g.stride_b * es, c + i * g.stride_c * es);
}

}  // namespace wick::detail::gpu
