// RNN, LSTM and GRU layers on CUDA through cuDNN 9's RNN API (docs/design.md §18, "The cuDNN
// path"): cudnnRNNForward, cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8 on the
// current stream of the input's device. Built only with cuDNN (WICK_HAVE_CUDNN); without it
// cuda_cudnn_rnn_built() is false and the layers run by wick's ops.
//
// Data: always CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, which is PyTorch's packed layout
// (time-major rows, sequences sorted by decreasing length), with each sequence's length; a
// padded batch is the case where every length is T. h and c are [layers * dirs, batch, size],
// packed.
//
// Weights: cuDNN reads one flat weight space. cudnnGetRNNWeightParams says where each gate's
// matrix and bias of each pseudo-layer (layer * dirs + direction, as the parameters are
// registered) lives. cuDNN's linear layer IDs follow PyTorch's gate order: LSTM 0-3 the input
// matrices (W) of the input, forget, cell and output gates, 4-7 the recurrent ones (R) in the
// same order, 8 the recurrent projection; GRU 0-2 W of the reset, update and new gates, 3-5 R;
// RNN 0 W, 1 R. With CUDNN_RNN_DOUBLE_BIAS each ID has its own bias: b_ih's chunk for W, b_hh's
// for R. cuDNN's GRU takes h' = tanh(W_h x + b_Wh + r * (R_h h + b_Rh)), PyTorch's n gate with
// b_hn inside the product. The pieces (merged where a parameter's gates are adjacent, as cuDNN
// lays them out, so that each parameter is one piece) go back with the result: the backward
// maps the flat weight gradient onto the parameters. The module flattens its parameters once
// (cuda_cudnn_rnn_weight_space allocates the space, src/nn/rnn.cpp copies them in and makes
// each a view of it): a forward whose parameters are that space, one storage of exactly its
// size with each parameter the contiguous view at its piece's offset, hands it to cuDNN as it
// is. Otherwise each call allocates a space and copies the parameters' pieces into it.
//
// Dropout between layers: a dropout descriptor whose generator states are made on each training
// call from a seed drawn from wick's generator, kept with the node for the backward (restored
// there, as PyTorch does).
#include "core/cudnn_rnn.h"

#ifdef WICK_HAVE_CUDNN

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <mutex>
#include <vector>

#include <cudnn.h>

#include "core/backend_settings.h"
#include "core/host_upload.h"
#include "core/tensor_ops.h"
#include "cuda/cuda_check.h"
#include "cuda/cudnn_common.h"
#include "cuda/runtime.h"
#include "cuda/tool_marks.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

using gpu::cudnn_data_type;
using gpu::cudnn_fail;
using gpu::cudnn_handle;
using gpu::CudnnHandle;

const char* op_of(CudnnRnnMode m) {
  switch (m) {
    case CudnnRnnMode::RnnRelu:
    case CudnnRnnMode::RnnTanh:
      return "RNN";
    case CudnnRnnMode::Lstm:
      return "LSTM";
    case CudnnRnnMode::Gru:
      return "GRU";
  }
  return "RNN";
}

// A status that means "not this problem" (a dtype, a size, this GPU) rather than a failure.
bool refused(cudnnStatus_t st) { return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED; }

// float32 at "highest" matmul precision: FMA math (no TF32), so that results stay within
// float32 rounding of the CPU's; at "high" or "medium" the default math, which lets cuDNN use
// TF32 (PyTorch's choice under cudnn.allow_tf32). float16 and bfloat16 use tensor cores,
// accumulating in float: mathPrec is CUDNN_DATA_FLOAT for every dtype, as PyTorch promotes it.
cudnnMathType_t math_type(Dtype dt) {
  if (dt == kFloat32) return float32_matmul_precision_level() == 0 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  return CUDNN_TENSOR_OP_MATH;
}

int64_t gate_count(CudnnRnnMode m) {
  return m == CudnnRnnMode::Lstm ? 4 : m == CudnnRnnMode::Gru ? 3 : 1;
}

// The descriptors of one call.
struct Descriptors {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr, c = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (rnn) cudnnDestroyRNNDescriptor(rnn);
    if (dropout) cudnnDestroyDropoutDescriptor(dropout);
    if (x) cudnnDestroyRNNDataDescriptor(x);
    if (y) cudnnDestroyRNNDataDescriptor(y);
    if (h) cudnnDestroyTensorDescriptor(h);
    if (c) cudnnDestroyTensorDescriptor(c);
  }
};

// Everything about one call but the tensors' addresses.
struct Problem {
  const char* op;
  const CudnnRnnConfig& cfg;
  Dtype dtype;
  int64_t T = 0, B = 0, dirs = 1, h_out = 0;
  std::vector<int> lengths;  // per sequence, longest first
};

Problem problem(const CudnnRnnConfig& cfg, Dtype dt) {
  Problem p{op_of(cfg.mode), cfg, dt, 0, 0, 1, 0, {}};
  p.T = int64_t(cfg.batch_sizes.size());
  p.B = p.T ? cfg.batch_sizes[0] : 0;
  p.dirs = cfg.bidirectional ? 2 : 1;
  p.h_out = cfg.proj_size > 0 ? cfg.proj_size : cfg.hidden_size;
  // sequence b runs at every step t with batch_sizes[t] > b
  p.lengths.assign(size_t(p.B), 0);
  for (int64_t bs : cfg.batch_sizes)
    for (int64_t b = 0; b < bs; ++b) ++p.lengths[size_t(b)];
  return p;
}

// Fills d for p on handle h (whose stream is set: setting a dropout descriptor runs a kernel).
// dropout_state: the generator states (cfg.dropout > 0), made from seed when make_state, else
// restored. Returns the status of a refusal (SUCCESS when all went well); other failures throw.
cudnnStatus_t describe(Descriptors& d, const Problem& p, cudnnHandle_t h, const Tensor& dropout_state, uint64_t seed,
                       bool make_state) {
  const char* op = p.op;
  const CudnnRnnConfig& cfg = p.cfg;
  const cudnnDataType_t type = cudnn_data_type(p.dtype);
  WICK_CUDNN_OP_CHECK(op, cudnnCreateDropoutDescriptor(&d.dropout));
  if (cfg.dropout > 0) {
    void* states = dropout_state.data_ptr();
    const size_t bytes = size_t(dropout_state.numel());
    if (make_state)
      WICK_CUDNN_OP_CHECK(op, cudnnSetDropoutDescriptor(d.dropout, h, float(cfg.dropout), states, bytes, seed));
    else
      WICK_CUDNN_OP_CHECK(op, cudnnRestoreDropoutDescriptor(d.dropout, h, float(cfg.dropout), states, bytes, seed));
  } else {
    WICK_CUDNN_OP_CHECK(op, cudnnSetDropoutDescriptor(d.dropout, h, 0.f, nullptr, 0, 0));
  }

  cudnnRNNMode_t cell = CUDNN_LSTM;
  switch (cfg.mode) {
    case CudnnRnnMode::RnnRelu: cell = CUDNN_RNN_RELU; break;
    case CudnnRnnMode::RnnTanh: cell = CUDNN_RNN_TANH; break;
    case CudnnRnnMode::Lstm: cell = CUDNN_LSTM; break;
    case CudnnRnnMode::Gru: cell = CUDNN_GRU; break;
  }
  WICK_CUDNN_OP_CHECK(op, cudnnCreateRNNDescriptor(&d.rnn));
  // projSize equals hiddenSize when there is no projection
  cudnnStatus_t st = cudnnSetRNNDescriptor_v8(
      d.rnn, CUDNN_RNN_ALGO_STANDARD, cell, cfg.bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
      cfg.bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, type, CUDNN_DATA_FLOAT,
      math_type(p.dtype), int32_t(cfg.input_size), int32_t(cfg.hidden_size), int32_t(p.h_out),
      int32_t(cfg.num_layers), d.dropout, CUDNN_RNN_PADDED_IO_DISABLED);
  if (refused(st)) return st;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnSetRNNDescriptor_v8", __FILE__, __LINE__);

  WICK_CUDNN_OP_CHECK(op, cudnnCreateRNNDataDescriptor(&d.x));
  WICK_CUDNN_OP_CHECK(op, cudnnCreateRNNDataDescriptor(&d.y));
  st = cudnnSetRNNDataDescriptor(d.x, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, int(p.T), int(p.B),
                                 int(cfg.input_size), p.lengths.data(), nullptr);
  if (refused(st)) return st;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnSetRNNDataDescriptor(x)", __FILE__, __LINE__);
  st = cudnnSetRNNDataDescriptor(d.y, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, int(p.T), int(p.B),
                                 int(p.dirs * p.h_out), p.lengths.data(), nullptr);
  if (refused(st)) return st;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnSetRNNDataDescriptor(y)", __FILE__, __LINE__);

  WICK_CUDNN_OP_CHECK(op, cudnnCreateTensorDescriptor(&d.h));
  WICK_CUDNN_OP_CHECK(op, cudnnCreateTensorDescriptor(&d.c));
  const int layers = int(cfg.num_layers * p.dirs), B = int(p.B);
  const int h_dims[3] = {layers, B, int(p.h_out)}, h_strides[3] = {B * int(p.h_out), int(p.h_out), 1};
  const int c_dims[3] = {layers, B, int(cfg.hidden_size)},
            c_strides[3] = {B * int(cfg.hidden_size), int(cfg.hidden_size), 1};
  WICK_CUDNN_OP_CHECK(op, cudnnSetTensorNdDescriptor(d.h, type, 3, h_dims, h_strides));
  WICK_CUDNN_OP_CHECK(op, cudnnSetTensorNdDescriptor(d.c, type, 3, c_dims, c_strides));
  return CUDNN_STATUS_SUCCESS;
}

// The elements a weight-params descriptor describes.
int64_t described_numel(const char* op, cudnnTensorDescriptor_t desc) {
  cudnnDataType_t type;
  int nb = 0, dims[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
  WICK_CUDNN_OP_CHECK(op, cudnnGetTensorNdDescriptor(desc, 3, &type, &nb, dims, strides));
  int64_t n = 1;
  for (int i = 0; i < nb && i < 3; ++i) n *= dims[i];
  return n;
}

// Where each parameter's gates sit in the weight space at base (weight_bytes long): the pieces,
// merged where a parameter continues in the next piece of the space.
std::vector<CudnnRnnWeightPiece> weight_pieces(const Problem& p, cudnnHandle_t h, const Descriptors& d,
                                               const void* base, size_t weight_bytes, size_t elem) {
  const char* op = p.op;
  const CudnnRnnConfig& cfg = p.cfg;
  const int64_t gates = gate_count(cfg.mode), H = cfg.hidden_size;
  const int64_t per = 2 + (cfg.bias ? 2 : 0) + (cfg.proj_size > 0 ? 1 : 0);
  cudnnTensorDescriptor_t m_desc = nullptr, b_desc = nullptr;
  WICK_CUDNN_OP_CHECK(op, cudnnCreateTensorDescriptor(&m_desc));
  WICK_CUDNN_OP_CHECK(op, cudnnCreateTensorDescriptor(&b_desc));
  struct Free {
    cudnnTensorDescriptor_t a, b;
    ~Free() {
      cudnnDestroyTensorDescriptor(a);
      cudnnDestroyTensorDescriptor(b);
    }
  } free_descs{m_desc, b_desc};

  std::vector<CudnnRnnWeightPiece> pieces;
  auto add = [&](int64_t param, int64_t param_offset, const void* addr, int64_t numel, int64_t expected) {
    WICK_CHECK(addr != nullptr && numel == expected, DeviceError, op,
               "cuDNN lays out the RNN weights unlike the parameters (a piece of ", numel, " elements where ",
               expected, " were expected)");
    const std::ptrdiff_t bytes = static_cast<const char*>(addr) - static_cast<const char*>(base);
    WICK_CHECK(bytes >= 0 && size_t(bytes) % elem == 0 && size_t(bytes) + size_t(numel) * elem <= weight_bytes,
               DeviceError, op, "cuDNN placed an RNN weight outside its weight space");
    const int64_t flat = int64_t(size_t(bytes) / elem);
    if (!pieces.empty()) {
      CudnnRnnWeightPiece& last = pieces.back();
      if (last.param == param && last.param_offset + last.numel == param_offset && last.flat_offset + last.numel == flat) {
        last.numel += numel;
        return;
      }
    }
    pieces.push_back({param, param_offset, flat, numel});
  };

  for (int64_t k = 0; k < cfg.num_layers * p.dirs; ++k) {
    const int64_t layer = k / p.dirs, in = layer == 0 ? cfg.input_size : p.dirs * p.h_out;
    const int64_t base_param = k * per;
    // matrices: W (w_ih's gates), then R (w_hh's)
    for (int64_t lin = 0; lin < 2 * gates; ++lin) {
      void* m_addr = nullptr;
      WICK_CUDNN_OP_CHECK(op, cudnnGetRNNWeightParams(h, d.rnn, int32_t(k), weight_bytes, base, int32_t(lin), m_desc,
                                                       &m_addr, nullptr, nullptr));
      const bool rec = lin >= gates;
      const int64_t g = rec ? lin - gates : lin, cols = rec ? p.h_out : in;
      add(base_param + (rec ? 1 : 0), g * H * cols, m_addr, described_numel(op, m_desc), H * cols);
    }
    if (cfg.bias) {
      for (int64_t lin = 0; lin < 2 * gates; ++lin) {
        void* b_addr = nullptr;
        WICK_CUDNN_OP_CHECK(op, cudnnGetRNNWeightParams(h, d.rnn, int32_t(k), weight_bytes, base, int32_t(lin),
                                                         nullptr, nullptr, b_desc, &b_addr));
        const bool rec = lin >= gates;
        const int64_t g = rec ? lin - gates : lin;
        add(base_param + (rec ? 3 : 2), g * H, b_addr, described_numel(op, b_desc), H);
      }
    }
    if (cfg.proj_size > 0) {  // LSTM's recurrent projection: linear layer 8
      void* m_addr = nullptr;
      WICK_CUDNN_OP_CHECK(op, cudnnGetRNNWeightParams(h, d.rnn, int32_t(k), weight_bytes, base, 8, m_desc, &m_addr,
                                                       nullptr, nullptr));
      add(base_param + per - 1, 0, m_addr, described_numel(op, m_desc), cfg.proj_size * H);
    }
  }
  return pieces;
}

void mark(const Tensor& t, cudaStream_t stream) {
  if (t.defined() && t.numel() > 0) gpu::mark_initialized(t.data_ptr(), size_t(t.numel() * t.element_size()), stream);
}

// The sequence lengths in device memory, as cudnnRNNForward and the backward read them, sent
// without waiting for the stream (a pageable copy would, on every forward and backward).
Tensor device_lengths(const Problem& p, Device device) {
  Tensor host = wick::empty({int64_t(p.lengths.size())}, TensorOptions(kInt32));
  std::copy(p.lengths.begin(), p.lengths.end(), host.data_ptr<int32_t>());
  return to_device_async(host, device);
}

Tensor bytes_on(Device device, size_t n) { return wick::empty({int64_t(n)}, TensorOptions(kUInt8).device(device)); }

}  // namespace

bool cuda_cudnn_rnn_built() { return true; }

std::optional<CudnnRnnWeightSpace> cuda_cudnn_rnn_weight_space(const CudnnRnnConfig& layers, Dtype dt,
                                                               Device device) {
  // The weight space depends on the layers alone: one sequence of one step, without dropout,
  // describes them.
  CudnnRnnConfig cfg = layers;
  cfg.dropout = 0;
  cfg.batch_sizes = {1};
  const Problem p = problem(cfg, dt);
  const char* op = p.op;
  const int dev = device.index();
  const size_t elem = size_t(element_size(dt));
  CudaDeviceScope scope(dev);
  CudnnHandle& dh = cudnn_handle(dev, op);
  const cudaStream_t stream = gpu::current_cuda_stream(dev);
  Descriptors d;
  size_t weight_bytes = 0;
  std::lock_guard<std::mutex> lock(dh.mu);
  cudnnHandle_t h = dh.handle;
  WICK_CUDNN_OP_CHECK(op, cudnnSetStream(h, stream));
  if (describe(d, p, h, Tensor(), 0, true) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  const cudnnStatus_t st = cudnnGetRNNWeightSpaceSize(h, d.rnn, &weight_bytes);
  if (refused(st)) return std::nullopt;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnGetRNNWeightSpaceSize", __FILE__, __LINE__);
  WICK_CHECK(weight_bytes % elem == 0, DeviceError, op, "cuDNN's RNN weight space is ", weight_bytes,
             " bytes, not a whole number of elements");
  CudnnRnnWeightSpace w;
  w.buf = wick::empty({int64_t(weight_bytes / elem)}, TensorOptions(dt).device(device));
  w.pieces = weight_pieces(p, h, d, w.buf.data_ptr(), weight_bytes, elem);
  return w;
}

CudnnRnnForwardResult cuda_cudnn_rnn_forward(const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx,
                                             const Tensor& cx, std::span<const Tensor> weights, bool training,
                                             uint64_t dropout_seed) {
  CudnnRnnForwardResult r;
  const Device device = x.device();
  const int dev = device.index();
  const Problem p = problem(cfg, x.dtype());
  const char* op = p.op;
  const bool lstm = cfg.mode == CudnnRnnMode::Lstm;
  const size_t elem = size_t(x.element_size());
  CudaDeviceScope scope(dev);
  CudnnHandle& dh = cudnn_handle(dev, op);
  const cudaStream_t stream = gpu::current_cuda_stream(dev);
  const TensorOptions opts = x.options();
  const Tensor lengths = device_lengths(p, device);

  Descriptors d;
  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  const cudnnForwardMode_t mode = training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
  Tensor work;
  std::lock_guard<std::mutex> lock(dh.mu);
  cudnnHandle_t h = dh.handle;
  WICK_CUDNN_OP_CHECK(op, cudnnSetStream(h, stream));
  if (cfg.dropout > 0) {
    size_t state_bytes = 0;
    WICK_CUDNN_OP_CHECK(op, cudnnDropoutGetStatesSize(h, &state_bytes));
    r.dropout_state = bytes_on(device, state_bytes);
    r.dropout_seed = dropout_seed;
  }
  if (describe(d, p, h, r.dropout_state, dropout_seed, true) != CUDNN_STATUS_SUCCESS) return r;
  cudnnStatus_t st = cudnnGetRNNWeightSpaceSize(h, d.rnn, &weight_bytes);
  if (refused(st)) return r;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnGetRNNWeightSpaceSize", __FILE__, __LINE__);
  st = cudnnGetRNNTempSpaceSizes(h, d.rnn, mode, d.x, &work_bytes, &reserve_bytes);
  if (refused(st)) return r;
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnGetRNNTempSpaceSizes", __FILE__, __LINE__);
  WICK_CHECK(weight_bytes % elem == 0, DeviceError, op, "cuDNN's RNN weight space is ", weight_bytes,
             " bytes, not a whole number of elements");

  // The flat weights: the parameters' own storage when they are views of one weight space (the
  // module flattened them), read as it is; else a new space, from the parameters' pieces
  // (copies queued on this stream).
  const int64_t space_numel = int64_t(weight_bytes / elem);
  const Storage& shared = weights[0].impl()->storage();
  if (shared && shared->nbytes() == weight_bytes && shared->data() != nullptr) {
    std::vector<CudnnRnnWeightPiece> pieces = weight_pieces(p, h, d, shared->data(), weight_bytes, elem);
    if (cudnn_rnn_weights_flat(weights, space_numel, pieces)) {
      r.weight_buf = make_tensor(shared, x.dtype(), {space_numel}, {1}, 0);
      r.pieces = std::move(pieces);
    }
  }
  if (!r.weight_buf.defined()) {
    r.weight_buf = wick::empty({space_numel}, opts);
    r.pieces = weight_pieces(p, h, d, r.weight_buf.data_ptr(), weight_bytes, elem);
    for (const CudnnRnnWeightPiece& w : r.pieces)
      r.weight_buf.narrow(0, w.flat_offset, w.numel)
          .copy_(weights[size_t(w.param)].reshape({-1}).narrow(0, w.param_offset, w.numel));
  }

  r.y = wick::empty({x.size(0), p.dirs * p.h_out}, opts);
  r.hy = wick::empty(hx.sizes(), opts);
  if (lstm) r.cy = wick::empty(cx.sizes(), opts);
  if (work_bytes > 0) work = bytes_on(device, work_bytes);
  if (training && reserve_bytes > 0) r.reserve = bytes_on(device, reserve_bytes);
  else if (training) r.reserve = bytes_on(device, 0);
  st = cudnnRNNForward(h, d.rnn, mode, lengths.data_ptr<int32_t>(), d.x, x.data_ptr(), d.y, r.y.data_ptr(), d.h,
                       hx.data_ptr(), r.hy.data_ptr(), d.c, lstm ? cx.data_ptr() : nullptr,
                       lstm ? r.cy.data_ptr() : nullptr, weight_bytes, r.weight_buf.data_ptr(), work_bytes,
                       work.defined() ? work.data_ptr() : nullptr, training ? reserve_bytes : 0,
                       training && reserve_bytes > 0 ? r.reserve.data_ptr() : nullptr);
  if (refused(st)) return CudnnRnnForwardResult{};
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(op, st, "cudnnRNNForward", __FILE__, __LINE__);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  for (const Tensor* t : {&r.y, &r.hy, &r.cy, &r.reserve}) mark(*t, stream);
  r.x = x;
  r.hx = hx;
  r.cx = cx;
  r.ran = true;
  return r;
}

CudnnRnnGrads cuda_cudnn_rnn_backward(const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx, const Tensor& cx,
                                      const Tensor& y, const Tensor& dy, const Tensor& dhy, const Tensor& dcy,
                                      const Tensor& weight_buf, const Tensor& reserve, const Tensor& dropout_state,
                                      uint64_t dropout_seed, bool need_weights) {
  CudnnRnnGrads g;
  const Device device = x.device();
  const int dev = device.index();
  const Problem p = problem(cfg, x.dtype());
  const char* op = p.op;
  const bool lstm = cfg.mode == CudnnRnnMode::Lstm;
  CudaDeviceScope scope(dev);
  CudnnHandle& dh = cudnn_handle(dev, op);
  const cudaStream_t stream = gpu::current_cuda_stream(dev);
  const Tensor lengths = device_lengths(p, device);
  const size_t weight_bytes = size_t(weight_buf.numel() * weight_buf.element_size());

  Descriptors d;
  size_t work_bytes = 0, reserve_bytes = 0;
  std::lock_guard<std::mutex> lock(dh.mu);
  cudnnHandle_t h = dh.handle;
  WICK_CUDNN_OP_CHECK(op, cudnnSetStream(h, stream));
  const cudnnStatus_t described = describe(d, p, h, dropout_state, dropout_seed, false);
  if (described != CUDNN_STATUS_SUCCESS) cudnn_fail(op, described, "describe (backward)", __FILE__, __LINE__);
  WICK_CUDNN_OP_CHECK(op, cudnnGetRNNTempSpaceSizes(h, d.rnn, CUDNN_FWD_MODE_TRAINING, d.x, &work_bytes,
                                                     &reserve_bytes));
  WICK_CHECK(size_t(reserve.numel()) == reserve_bytes, DeviceError, op, "cuDNN asks for a reserve space of ",
             reserve_bytes, " bytes where the forward kept ", reserve.numel());
  Tensor work;
  if (work_bytes > 0) work = bytes_on(device, work_bytes);
  void* work_ptr = work.defined() ? work.data_ptr() : nullptr;
  void* reserve_ptr = reserve_bytes > 0 ? reserve.data_ptr() : nullptr;

  g.dx = wick::empty(x.sizes(), x.options());
  g.dhx = wick::empty(hx.sizes(), hx.options());
  if (lstm) g.dcx = wick::empty(cx.sizes(), cx.options());
  // backward data first: backward weights reads what it leaves in the reserve space
  WICK_CUDNN_OP_CHECK(
      op, cudnnRNNBackwardData_v8(h, d.rnn, lengths.data_ptr<int32_t>(), d.y, y.data_ptr(), dy.data_ptr(), d.x,
                                  g.dx.data_ptr(), d.h, hx.data_ptr(), dhy.defined() ? dhy.data_ptr() : nullptr,
                                  g.dhx.data_ptr(), d.c, lstm ? cx.data_ptr() : nullptr,
                                  lstm && dcy.defined() ? dcy.data_ptr() : nullptr,
                                  lstm ? g.dcx.data_ptr() : nullptr, weight_bytes, weight_buf.data_ptr(), work_bytes,
                                  work_ptr, reserve_bytes, reserve_ptr));
  if (need_weights) {
    // cudnnRNNBackwardWeights_v8 adds into dweight (CUDNN_WGRAD_MODE_ADD): it starts at zero
    g.dweight = wick::zeros(weight_buf.sizes(), weight_buf.options());
    WICK_CUDNN_OP_CHECK(
        op, cudnnRNNBackwardWeights_v8(h, d.rnn, CUDNN_WGRAD_MODE_ADD, lengths.data_ptr<int32_t>(), d.x, x.data_ptr(),
                                       d.h, hx.data_ptr(), d.y, y.data_ptr(), weight_bytes, g.dweight.data_ptr(),
                                       work_bytes, work_ptr, reserve_bytes, reserve_ptr));
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  for (const Tensor* t : {&g.dx, &g.dhx, &g.dcx, &g.dweight}) mark(*t, stream);
  return g;
}

}  // namespace wick::detail

#else  // no cuDNN: the layers run by wick's ops

#include "wick/error.h"

namespace wick::detail {

bool cuda_cudnn_rnn_built() { return false; }

std::optional<CudnnRnnWeightSpace> cuda_cudnn_rnn_weight_space(const CudnnRnnConfig&, Dtype, Device) {
  return std::nullopt;
}

CudnnRnnForwardResult cuda_cudnn_rnn_forward(const CudnnRnnConfig&, const Tensor&, const Tensor&, const Tensor&,
                                             std::span<const Tensor>, bool, uint64_t) {
  return {};
}

CudnnRnnGrads cuda_cudnn_rnn_backward(const CudnnRnnConfig&, const Tensor&, const Tensor&, const Tensor&,
                                      const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                      const Tensor&, const Tensor&, uint64_t, bool) {
  raise<NotImplementedError>("RNN", "wick was built without cuDNN");
}

}  // namespace wick::detail

#endif  // WICK_HAVE_CUDNN
