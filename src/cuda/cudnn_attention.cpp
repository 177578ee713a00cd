// scaled_dot_product_attention through cuDNN's fused flash attention (core/cudnn_attention.h):
// one operation graph forward and one backward, built with cuDNN's backend API from matmul,
// pointwise and reduction operations in the pattern its fused-attention engines recognize, as
// cuDNN's own frontend lowers its SDPA node (docs/design.md, "The cuDNN attention path"). A
// graph is built, its engine chosen by cuDNN's heuristics and its plan finalized once per
// problem (sizes, strides, dtype, device, causal) and kept; a call then only fills a variant
// pack and executes on the current stream. Built only with cuDNN (WICK_HAVE_CUDNN).
#include "core/cudnn_attention.h"

#ifdef WICK_HAVE_CUDNN

#include <cmath>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <cudnn.h>

#include "cuda/cuda_check.h"
#include "cuda/cudnn_common.h"
#include "cuda/runtime.h"
#include "cuda/tool_marks.h"
#include "wick/cuda.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// A graph cuDNN refuses while it is built: the reason, for "No available kernel".
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void ok(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) throw Refused(std::string(what) + ": " + cudnnGetErrorString(st));
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) { ok(cudnnBackendCreateDescriptor(type, &d_), "create"); }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* value) {
    ok(cudnnBackendSetAttribute(d_, name, type, count, value), "set attribute");
    return *this;
  }
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t d) {
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  }
  void finalize(const char* what) { ok(cudnnBackendFinalize(d_), what); }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::vector<int64_t>;

Dims packed_strides(const Dims& dims) {
  Dims s(dims.size());
  int64_t n = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = n;
    n *= dims[i];
  }
  return s;
}

// A finalized execution plan and everything it was made of (kept alive beside it).
struct Plan {
  std::vector<std::unique_ptr<Desc>> parts;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
};

// Builds one operation graph: tensors by unique id, operations in order, then the plan.
class Graph {
 public:
  explicit Graph(cudnnHandle_t handle) : handle_(handle), plan_(std::make_unique<Plan>()) {}

  // A tensor the variant pack names (uid >= 1) or a virtual one (uid 0: given the next free id).
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t dt, const Dims& dims, const Dims& strides,
                                  bool by_value = false) {
    const bool is_virtual = uid == 0;
    if (is_virtual) uid = next_virtual_++;
    const int64_t alignment = 16;
    Desc& d = part(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data())
        .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data())
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)
        .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) d.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    d.finalize("tensor");
    return d.get();
  }
  // A float32 virtual tensor of these dims, packed.
  cudnnBackendDescriptor_t virt(const Dims& dims, cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
    return tensor(0, dt, dims, packed_strides(dims));
  }
  // A scalar [1, 1, 1, 1] passed by value (its host address goes in the variant pack).
  cudnnBackendDescriptor_t scalar(int64_t uid, cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
    return tensor(uid, dt, {1, 1, 1, 1}, {1, 1, 1, 1}, true);
  }

  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Desc& m = part(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    m.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp).finalize("matmul");
    Desc& op = part(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, m.get())
        .finalize("matmul operation");
    ops_.push_back(op.get());
  }

  // y = mode(x[, b][, t]) elementwise, computed in float (comparisons in bool); axis for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, int64_t axis = -1) {
    const cudnnDataType_t prec = mode == CUDNN_POINTWISE_CMP_GE ? CUDNN_DATA_BOOLEAN : CUDNN_DATA_FLOAT;
    Desc& pw = part(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    pw.finalize("pointwise");
    Desc& op = part(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get()).set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t) op.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y).finalize("pointwise operation");
    ops_.push_back(op.get());
  }
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                     cudnnBackendDescriptor_t b, const Dims& dims) {
    cudnnBackendDescriptor_t y = virt(dims);
    pointwise(mode, x, b, nullptr, y);
    return y;
  }

  // y = reduce(x) over the dims where y has size 1, in float.
  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Desc& r = part(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp)
        .finalize("reduction");
    Desc& op = part(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r.get())
        .finalize("reduction operation");
    ops_.push_back(op.get());
  }

  // y = x laid out as y's descriptor says (a transpose when y's strides are x's swapped).
  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Desc& op = part(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x).set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y).finalize("reshape");
    ops_.push_back(op.get());
  }

  // The graph finalized, its engines ranked by cuDNN's heuristics, and the first whose plan
  // finalizes taken.
  std::unique_ptr<Plan> plan() {
    Desc& graph = part(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_)
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops_.size()), ops_.data())
        .finalize("operation graph");
    std::string last = "no engine";
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      Desc& heur = part(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.get())
          .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
          .finalize("heuristics");
      int64_t n = 0;
      ok(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                  nullptr),
         "heuristics results");
      std::vector<Desc*> cfgs;
      std::vector<cudnnBackendDescriptor_t> raw;
      for (int64_t i = 0; i < n; ++i) {
        cfgs.push_back(&part(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        raw.push_back(cfgs.back()->get());
      }
      int64_t got = 0;
      if (n > 0)
        ok(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                    &got, raw.data()),
           "heuristics results");
      for (int64_t i = 0; i < got; ++i) {
        auto p = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        try {
          p->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_)
              .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, raw[size_t(i)])
              .finalize("execution plan");
        } catch (const Refused& e) {
          last = e.what();
          continue;
        }
        int64_t ws = 0, count = 0;
        ok(cudnnBackendGetAttribute(p->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                    &ws),
           "workspace size");
        plan_->plan = p->get();
        plan_->workspace = ws;
        plan_->parts.push_back(std::move(p));
        return std::move(plan_);
      }
    }
    throw Refused("cuDNN has no engine for this attention graph (" + last + ")");
  }

 private:
  Desc& part(cudnnBackendDescriptorType_t type) {
    plan_->parts.push_back(std::make_unique<Desc>(type));
    return *plan_->parts.back();
  }

  cudnnHandle_t handle_;
  std::unique_ptr<Plan> plan_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = 100;
};

// The variant pack's unique ids.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kScale, kNegInf, kDO, kDQ, kDK, kDV, kOne, kDelta, kDQAccum };

// Strides as cuDNN is told them: a dim of size 1 gets the stride a packed layout would give it
// (any stride addresses its one index; cuDNN's layout checks look at all of them).
Dims strides_of(const int64_t (&s)[4], const Dims& dims) {
  Dims out(s, s + 4);
  for (int d = 2; d >= 0; --d)
    if (dims[size_t(d)] == 1) out[size_t(d)] = out[size_t(d) + 1] * dims[size_t(d) + 1];
  return out;
}

// k as kᵀ: dims [B, H, E, S] over k's memory.
Dims transposed(const Dims& s) { return {s[0], s[1], s[3], s[2]}; }

struct Shapes {
  cudnnDataType_t io;
  Dims q, k, v, o, kt, vt, scores, rows;
  Dims qs, ks, vs, os, dqs, dks, dvs, kts, vts, rows_s;
  explicit Shapes(const CudnnAttentionProblem& p) : io(gpu::cudnn_data_type(p.dtype)) {
    q = {p.B, p.H, p.L, p.E};
    k = {p.B, p.Hkv, p.S, p.E};
    v = k;
    o = q;
    kt = {p.B, p.Hkv, p.E, p.S};
    vt = kt;
    scores = {p.B, p.H, p.L, p.S};
    rows = {p.B, p.H, p.L, 1};
    qs = strides_of(p.q_strides, q);
    ks = strides_of(p.k_strides, k);
    vs = strides_of(p.v_strides, v);
    os = strides_of(p.o_strides, o);
    dqs = strides_of(p.dq_strides, q);
    dks = strides_of(p.dk_strides, k);
    dvs = strides_of(p.dv_strides, v);
    kts = transposed(ks);
    vts = transposed(vs);
    rows_s = packed_strides(rows);
  }
};

// x with -inf where key j > query i (causal, upper-left aligned): cuDNN's row and column index
// generation, compare and select.
cudnnBackendDescriptor_t causal_masked(Graph& g, const Shapes& s, cudnnBackendDescriptor_t x) {
  cudnnBackendDescriptor_t row = g.virt(s.scores, CUDNN_DATA_INT32), col = g.virt(s.scores, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, nullptr, row, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, nullptr, col, 3);
  cudnnBackendDescriptor_t keep = g.virt(s.scores, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, nullptr, keep);
  cudnnBackendDescriptor_t masked = g.virt(s.scores);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, g.scalar(kNegInf), keep, masked);
  return masked;
}

// (q kᵀ) scale
cudnnBackendDescriptor_t scaled_scores(Graph& g, const Shapes& s, cudnnBackendDescriptor_t q,
                                       cudnnBackendDescriptor_t kt) {
  cudnnBackendDescriptor_t qk = g.virt(s.scores);
  g.matmul(q, kt, qk);
  return g.pointwise(CUDNN_POINTWISE_MUL, qk, g.scalar(kScale), s.scores);
}

// Forward: stats = max + log(sum(exp(scores - max))), out = (exp(scores - max) / sum) v.
std::unique_ptr<Plan> build_forward(cudnnHandle_t h, const CudnnAttentionProblem& p) {
  const Shapes s(p);
  Graph g(h);
  cudnnBackendDescriptor_t q = g.tensor(kQ, s.io, s.q, s.qs), kt = g.tensor(kK, s.io, s.kt, s.kts),
                           v = g.tensor(kV, s.io, s.v, s.vs), o = g.tensor(kO, s.io, s.o, s.os),
                           stats = g.tensor(kStats, CUDNN_DATA_FLOAT, s.rows, s.rows_s);
  cudnnBackendDescriptor_t scores = scaled_scores(g, s, q, kt);
  if (p.causal) scores = causal_masked(g, s, scores);
  cudnnBackendDescriptor_t mx = g.virt(s.rows);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scores, mx);
  cudnnBackendDescriptor_t centered = g.pointwise(CUDNN_POINTWISE_SUB, scores, mx, s.scores);
  cudnnBackendDescriptor_t e = g.pointwise(CUDNN_POINTWISE_EXP, centered, nullptr, s.scores);
  cudnnBackendDescriptor_t sum = g.virt(s.rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  cudnnBackendDescriptor_t log_sum = g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, s.rows);
  g.pointwise(CUDNN_POINTWISE_ADD, mx, log_sum, nullptr, stats);
  cudnnBackendDescriptor_t probs = g.virt(s.scores, s.io);
  g.pointwise(CUDNN_POINTWISE_DIV, e, sum, nullptr, probs);
  g.matmul(probs, v, o);
  return g.plan();
}

// Backward: delta = rowsum(dO O); P = exp(scores - stats); dV = Pᵀ dO; dP = dO Vᵀ;
// dS = P (dP - delta) scale; dK = dSᵀ Q; dQ = dS K, accumulated in float32 and converted.
std::unique_ptr<Plan> build_backward(cudnnHandle_t h, const CudnnAttentionProblem& p) {
  // Limits of cuDNN's fused backward that its heuristics do not report (its frontend knows them)
  if (p.L == 1 && p.S == 1) throw Refused("no fused backward for one query and one key");
  // GQA's dK and dV as per-query-head products summed over each group by a reduction gave
  // wrong gradients on an H100 with cuDNN 9.14: not taken (docs/design.md, "The cuDNN
  // attention path")
  if (p.Hkv != p.H) throw Refused("takes GQA (fewer key/value heads) in the forward only, not when a gradient is wanted");
  if (cudnnGetVersion() < 91600 && p.S % 128 != 0)
    throw Refused("before cuDNN 9.16 the fused backward needs a key length that is a multiple of 128");
  const Shapes s(p);
  Graph g(h);
  cudnnBackendDescriptor_t q = g.tensor(kQ, s.io, s.q, s.qs), kt = g.tensor(kK, s.io, s.kt, s.kts),
                           vt = g.tensor(kV, s.io, s.vt, s.vts), o = g.tensor(kO, s.io, s.o, s.os),
                           dout = g.tensor(kDO, s.io, s.o, s.os),
                           stats = g.tensor(kStats, CUDNN_DATA_FLOAT, s.rows, s.rows_s),
                           dq = g.tensor(kDQ, s.io, s.q, s.dqs), dk = g.tensor(kDK, s.io, s.k, s.dks),
                           dv = g.tensor(kDV, s.io, s.v, s.dvs),
                           delta = g.tensor(kDelta, CUDNN_DATA_FLOAT, s.rows, s.rows_s),
                           dq_accum = g.tensor(kDQAccum, CUDNN_DATA_FLOAT, s.q, packed_strides(s.q));
  // delta
  cudnnBackendDescriptor_t dout_o = g.pointwise(CUDNN_POINTWISE_MUL, dout, o, s.o);
  cudnnBackendDescriptor_t rowsum = g.virt(s.rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, dout_o, rowsum);
  g.pointwise(CUDNN_POINTWISE_MUL, rowsum, g.scalar(kOne), nullptr, delta);
  // P from the saved statistics
  cudnnBackendDescriptor_t x = g.pointwise(CUDNN_POINTWISE_SUB, scaled_scores(g, s, q, kt), stats, s.scores);
  if (p.causal) x = causal_masked(g, s, x);
  cudnnBackendDescriptor_t probs = g.pointwise(CUDNN_POINTWISE_EXP, x, nullptr, s.scores);
  // dV = Pᵀ dO
  const Dims st = {p.B, p.H, p.S, p.L}, st_strides = {p.H * p.L * p.S, p.L * p.S, 1, p.S};
  cudnnBackendDescriptor_t probs_t = g.tensor(0, s.io, st, st_strides);
  g.reshape(probs, probs_t);
  g.matmul(probs_t, dout, dv);
  // dS = P (dO Vᵀ - delta) scale
  cudnnBackendDescriptor_t dprobs = g.virt(s.scores);
  g.matmul(dout, vt, dprobs);
  cudnnBackendDescriptor_t ds = g.pointwise(CUDNN_POINTWISE_SUB, dprobs, delta, s.scores);
  ds = g.pointwise(CUDNN_POINTWISE_MUL, ds, probs, s.scores);
  ds = g.pointwise(CUDNN_POINTWISE_MUL, ds, g.scalar(kScale), s.scores);
  // dK = dSᵀ Q
  cudnnBackendDescriptor_t ds_t = g.tensor(0, s.io, st, st_strides);
  g.reshape(ds, ds_t);
  g.matmul(ds_t, q, dk);
  // dQ = dS K, K read back through kᵀ's descriptor
  cudnnBackendDescriptor_t k = g.tensor(0, s.io, s.k, s.ks);
  g.reshape(kt, k);
  g.matmul(ds, k, dq_accum);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_accum, nullptr, nullptr, dq);
  return g.plan();
}

struct Key {
  CudnnAttentionProblem p;
  bool backward;
  auto tie() const {
    return std::make_tuple(p.B, p.H, p.Hkv, p.L, p.S, p.E, p.q_strides[0], p.q_strides[1], p.q_strides[2],
                           p.k_strides[0], p.k_strides[1], p.k_strides[2], p.v_strides[0], p.v_strides[1],
                           p.v_strides[2], std::to_array(p.o_strides), std::to_array(p.dq_strides),
                           std::to_array(p.dk_strides), std::to_array(p.dv_strides), int(p.dtype), p.device,
                           p.causal, backward);
  }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

// A problem's plan, or why cuDNN refused it.
struct Entry {
  std::unique_ptr<Plan> plan;
  std::string refused;
};

std::mutex g_mu;
std::map<Key, Entry> g_plans;

// The plan of (p, backward), built on first use (with the device's handle held); the refusal
// when cuDNN has none.
const Entry& plan_for(const CudnnAttentionProblem& p, bool backward) {
  std::lock_guard<std::mutex> lock(g_mu);
  const Key key{p, backward};
  auto it = g_plans.find(key);
  if (it != g_plans.end()) return it->second;
  Entry e;
  // What no graph on this device can overcome, asked once per problem here rather than on every
  // call (the answer is kept with the problem's entry)
  const size_t version = cudnnGetVersion();
  if (wick::cuda::get_device_properties(p.device).major < 8) e.refused = "needs compute capability 8.0 or newer";
  else if (version >= 91000 && version < 91100) e.refused = "cuDNN 9.10's fused attention is not used for 16-bit inputs";
  else {
    CudaDeviceScope scope(p.device);
    gpu::RelaxedCaptureMode relaxed;
    gpu::CudnnHandle& h = gpu::cudnn_handle(p.device, kOp);
    std::lock_guard<std::mutex> hl(h.mu);
    try {
      e.plan = backward ? build_backward(h.handle, p) : build_forward(h.handle, p);
    } catch (const Refused& r) {
      e.refused = std::string("cuDNN refused the ") + (backward ? "backward" : "forward") + " graph: " + r.what();
    }
  }
  return g_plans.emplace(key, std::move(e)).first->second;
}

// Executes plan on the current stream of device dev with the variant pack (uids, pointers).
void execute(const Plan& plan, int dev, const std::vector<std::pair<int64_t, const void*>>& pack,
             std::initializer_list<Tensor> written) {
  const cudaStream_t stream = gpu::current_cuda_stream(dev);
  Tensor ws;
  if (plan.workspace > 0) ws = wick::empty({plan.workspace}, TensorOptions(kUInt8).device(Device(kCUDA, dev)));
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  for (const auto& [uid, ptr] : pack) {
    uids.push_back(uid);
    ptrs.push_back(const_cast<void*>(ptr));
  }
  gpu::CudnnHandle& h = gpu::cudnn_handle(dev, kOp);
  {
    std::lock_guard<std::mutex> lock(h.mu);
    WICK_CUDNN_OP_CHECK(kOp, cudnnSetStream(h.handle, stream));
    cudnnBackendDescriptor_t vp = nullptr;
    WICK_CUDNN_OP_CHECK(kOp, cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    void* wsp = ws.defined() ? ws.data_ptr() : nullptr;
    cudnnStatus_t st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                                int64_t(uids.size()), uids.data());
    if (st == CUDNN_STATUS_SUCCESS)
      st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                    int64_t(ptrs.size()), ptrs.data());
    if (st == CUDNN_STATUS_SUCCESS)
      st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(vp);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendExecute(h.handle, plan.plan, vp);
    cudnnBackendDestroyDescriptor(vp);
    WICK_CUDNN_OP_CHECK(kOp, st);
  }
  WICK_CUDA_AFTER_LAUNCH(kOp, stream);
  for (const Tensor& t : written) gpu::mark_initialized(t.data_ptr(), size_t(t.numel() * t.element_size()), stream);
}

const Plan& plan_or_raise(const CudnnAttentionProblem& p, bool backward) {
  const Entry& e = plan_for(p, backward);
  if (!e.plan) raise<Error>(kOp, e.refused);
  return *e.plan;
}

constexpr float kNegInfValue = -std::numeric_limits<float>::infinity();
constexpr float kOneValue = 1;

}  // namespace

std::string cuda_cudnn_attention_unusable(const CudnnAttentionProblem& p, bool with_backward) {
  const Entry& f = plan_for(p, false);
  if (!f.plan) return f.refused;
  if (with_backward) {
    const Entry& b = plan_for(p, true);
    if (!b.plan) return b.refused;
  }
  return "";
}

void cuda_cudnn_attention_forward(const CudnnAttentionArgs& a) {
  const Plan& plan = plan_or_raise(a.problem, false);
  CudaDeviceScope scope(a.problem.device);
  std::vector<std::pair<int64_t, const void*>> pack = {{kQ, a.q.data_ptr()},      {kK, a.k.data_ptr()},
                                                       {kV, a.v.data_ptr()},      {kO, a.out.data_ptr()},
                                                       {kStats, a.stats.data_ptr()}, {kScale, &a.scale}};
  if (a.problem.causal) pack.emplace_back(kNegInf, &kNegInfValue);
  execute(plan, a.problem.device, pack, {a.out, a.stats});
}

void cuda_cudnn_attention_backward(const CudnnAttentionArgs& a) {
  const Plan& plan = plan_or_raise(a.problem, true);
  CudaDeviceScope scope(a.problem.device);
  // delta is written before it is read; dQ's float32 accumulator must start at zero before
  // cuDNN 9.6, later ones initialize it themselves
  const TensorOptions f32 = TensorOptions(kFloat32).device(a.q.device());
  const Tensor delta = wick::empty(a.stats.sizes(), f32);
  const Tensor dq_accum = cudnnGetVersion() < 90600 ? wick::zeros(a.q.sizes(), f32) : wick::empty(a.q.sizes(), f32);
  std::vector<std::pair<int64_t, const void*>> pack = {
      {kQ, a.q.data_ptr()},         {kK, a.k.data_ptr()},   {kV, a.v.data_ptr()},   {kO, a.out.data_ptr()},
      {kDO, a.dout.data_ptr()},     {kDQ, a.dq.data_ptr()}, {kDK, a.dk.data_ptr()}, {kDV, a.dv.data_ptr()},
      {kStats, a.stats.data_ptr()}, {kScale, &a.scale},     {kOne, &kOneValue},     {kDelta, delta.data_ptr()},
      {kDQAccum, dq_accum.data_ptr()}};
  if (a.problem.causal) pack.emplace_back(kNegInf, &kNegInfValue);
  execute(plan, a.problem.device, pack, {a.dq, a.dk, a.dv});
}

}  // namespace wick::detail

#else  // no cuDNN: the selection passes this path over

#include "wick/error.h"

namespace wick::detail {

std::string cuda_cudnn_attention_unusable(const CudnnAttentionProblem&, bool) {
  return "wick was built without cuDNN";
}
void cuda_cudnn_attention_forward(const CudnnAttentionArgs&) {
  raise<DeviceError>("scaled_dot_product_attention", "wick was built without cuDNN");
}
void cuda_cudnn_attention_backward(const CudnnAttentionArgs&) {
  raise<DeviceError>("scaled_dot_product_attention", "wick was built without cuDNN");
}

}  // namespace wick::detail

#endif  // WICK_HAVE_CUDNN
