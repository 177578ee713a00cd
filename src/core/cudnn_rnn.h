// The recurrent layers' fused CUDA path: cuDNN's RNN API (docs/design.md §18, "The cuDNN path").
// src/nn/rnn.cpp calls cudnn_rnn for a CUDA input; cudnn_rnn decides whether cuDNN takes the
// problem (a build with cuDNN, float32/float16/bfloat16 throughout, sizes within cuDNN's int),
// runs cuDNN's forward once and records one node, CudnnRnnBackward0, whose formula is cuDNN's
// backward data and backward weights. The module's parameters can be made views of one cuDNN
// weight space once (cudnn_rnn_weight_space, cudnn_rnn_weights_flat), which the forward then
// reads as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "wick/tensor.h"

namespace wick::detail {

// What the layers are: cuDNN's cell modes keep their values (cudnnRNNMode_t).
enum class CudnnRnnMode : int { RnnRelu = 0, RnnTanh = 1, Lstm = 2, Gru = 3 };

struct CudnnRnnConfig {
  CudnnRnnMode mode = CudnnRnnMode::Lstm;
  int64_t input_size = 0, hidden_size = 0;
  int64_t proj_size = 0;  // LSTM's projection (0: none)
  int64_t num_layers = 1;
  bool bidirectional = false, bias = true;
  double dropout = 0;  // between layers; 0 when not training
  // Time steps of the packed input (PyTorch's packed sequences: time-major, sequences sorted by
  // decreasing length; batch_sizes[t] sequences run at step t). A padded batch: all equal.
  std::vector<int64_t> batch_sizes;
};

// Where one piece of a parameter sits in cuDNN's flat weight space: numel elements from offset
// param_offset of parameter param (flattened) at flat_offset of the buffer.
struct CudnnRnnWeightPiece {
  int64_t param = 0, param_offset = 0, flat_offset = 0, numel = 0;
};

struct CudnnRnnForwardResult {
  bool ran = false;  // false: cuDNN refused the problem (the caller runs the layers by ops)
  Tensor y;          // [rows, dirs * h_out], packed as the input
  Tensor hy, cy;     // [layers * dirs, batch, h_out] and (LSTM) [layers * dirs, batch, hidden]
  Tensor weight_buf;  // the flat weights the call used: the parameters' own storage when flattened
  Tensor reserve;     // uint8: what the backward needs (training mode only)
  Tensor dropout_state;  // uint8: cuDNN's dropout generator states (dropout > 0 only)
  uint64_t dropout_seed = 0;
  std::vector<CudnnRnnWeightPiece> pieces;
  Tensor x, hx, cx;  // the inputs as cuDNN read them (contiguous)
};

struct CudnnRnnGrads {
  Tensor dx, dhx, dcx;  // like x, hx, cx
  Tensor dweight;       // flat, as weight_buf
};

// cuDNN's flat weight space for some layers, newly allocated (its values undefined), and where
// each parameter's pieces lie in it.
struct CudnnRnnWeightSpace {
  Tensor buf;  // 1-d, of the weights' dtype, on their device
  std::vector<CudnnRnnWeightPiece> pieces;
};

// The CUDA side (src/cuda/cudnn_rnn.cpp; src/no_cuda's and a build without cuDNN raise or say
// no). cuda_cudnn_rnn_built: whether the build has cuDNN's RNN API.
bool cuda_cudnn_rnn_built();
// The weight space of cfg's layers in dtype dt on device (cfg's batch sizes and dropout play no
// part in it); nullopt when cuDNN refuses the layers.
std::optional<CudnnRnnWeightSpace> cuda_cudnn_rnn_weight_space(const CudnnRnnConfig& cfg, Dtype dt,
                                                               Device device);
// x [rows, input_size] contiguous, hx/cx contiguous (cx undefined but for LSTM), weights as the
// module registers them per layer and direction (w_ih, w_hh[, b_ih, b_hh][, w_hr]), all on one
// CUDA device and of one dtype. Weights that are already cuDNN's weight space
// (cudnn_rnn_weights_flat) are read in place; others are copied into a new space. training:
// cuDNN's training mode, which keeps the reserve space a backward reads (and is the mode in
// which dropout acts). dropout_seed seeds cuDNN's dropout generator (cfg.dropout > 0).
CudnnRnnForwardResult cuda_cudnn_rnn_forward(const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx,
                                             const Tensor& cx, std::span<const Tensor> weights, bool training,
                                             uint64_t dropout_seed);
// The gradients from dy (contiguous like y), dhy, dcy (contiguous, or undefined: zeros), the
// saved forward; dweight only when need_weights.
CudnnRnnGrads cuda_cudnn_rnn_backward(const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx, const Tensor& cx,
                                      const Tensor& y, const Tensor& dy, const Tensor& dhy, const Tensor& dcy,
                                      const Tensor& weight_buf, const Tensor& reserve, const Tensor& dropout_state,
                                      uint64_t dropout_seed, bool need_weights);

struct CudnnRnnOutputs {
  Tensor output, h_n, c_n;
};

// The layers on x [rows, input_size] (packed as cfg.batch_sizes says), hx, cx (LSTM), and the
// weights in the module's order; op names errors ("LSTM"). Records CudnnRnnBackward0 when
// grad is needed. nullopt when the problem is not cuDNN's (above) or cuDNN refuses it: the
// caller runs the layers by ops.
std::optional<CudnnRnnOutputs> cudnn_rnn(const char* op, const CudnnRnnConfig& cfg, const Tensor& x, const Tensor& hx,
                                         const Tensor& cx, const std::vector<Tensor>& weights);

// Each parameter's gradient (params' shapes) from the flat dweight, by the pieces.
std::vector<Tensor> cudnn_rnn_weight_grads(const Tensor& dweight, const std::vector<CudnnRnnWeightPiece>& pieces,
                                           const std::vector<std::vector<int64_t>>& param_sizes);

// The weight space of cfg's layers for weights (the module's parameters, in its order) when
// cuDNN would take them: a build with cuDNN, CUDA weights of one device and of a dtype cuDNN's
// RNNs have, sizes within cuDNN's int; nullopt otherwise.
std::optional<CudnnRnnWeightSpace> cudnn_rnn_weight_space(const CudnnRnnConfig& cfg,
                                                          std::span<const Tensor> weights);
// Whether each weight is one piece, whole: cuDNN keeps its elements together and in their own
// order, so that the weight can be a view of the space.
bool cudnn_rnn_one_piece_each(std::span<const Tensor> weights,
                              const std::vector<CudnnRnnWeightPiece>& pieces);
// Whether weights are the weight space already: one storage of exactly space_numel elements of
// their dtype, each weight the contiguous view of it at its one piece's offset.
bool cudnn_rnn_weights_flat(std::span<const Tensor> weights, int64_t space_numel,
                            const std::vector<CudnnRnnWeightPiece>& pieces);

}  // namespace wick::detail
